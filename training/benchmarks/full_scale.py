"""The GPU fleets at full scale: whole episodes on 1,523 and 4,278 nodes, wall time, decisions/s and peak memory.

Each run plays one whole episode (seed 0) of a bundled whole-cluster scenario in a fresh Python
process, so that its peak memory is its own: ``openb1523-alibaba2023`` (the Alibaba GPU 2023
cluster, 1,523 nodes) and ``spotgpu4278-alibaba2026`` (the Alibaba spot-GPU 2026 fleet, 4,278
nodes), both fed the 7,255 placed pods of the openb default pod list over 149 days. Per run:

* ``wall_s``: the episode through the env, agent and twin (the scenario's data read before);
* ``decisions_per_s``: the agent's decisions over that wall time;
* ``rss_before_mb``: the process's resident set once the scenario's data is read, before the
  episode; ``peak_rss_mb``: its high-water mark (VmHWM) at the end, so the episode's own peak is
  at most the difference.

The ``twin`` rows drive the twin alone, without the env or an agent, by first-fit
(:func:`training.benchmarks.twin.first_fit_run`): the twin's own decisions per second at this
size. Runs whose scenario data is absent (``ACO_ENV_TRACES``) are left out and named in ``skipped``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import scenarios

SCENARIOS = ("openb1523-alibaba2023", "spotgpu4278-alibaba2026")
"""The whole-cluster scenarios measured."""
AGENTS = ("twin", "first-fit", "best-fit", "aco")
"""The runs per scenario: ``twin`` (the twin alone under first-fit), then registered agents."""

_CHILD = r"""
import json, sys
import numpy as np
import scenarios
from training.benchmarks.scale import play_timed
from training.benchmarks.twin import first_fit_run


def rss_kb(field):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field + ":"))


name, agent, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
scenario = scenarios.load(name)
spec = scenario.make_spec(np.random.default_rng(seed))  # the data read (and cached) before timing
before = rss_kb("VmRSS")
if agent == "twin":
    run = first_fit_run(spec, seed=seed)
    row = {"wall_s": run["wall_s"], "decisions": run["decisions"], "jobs": run["jobs"], "objective_usd": None}
else:
    row = play_timed(scenario, agent, None, seed)
# VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across fork + exec.
print(json.dumps({**row, "rss_before_mb": before / 1024, "peak_rss_mb": rss_kb("VmHWM") / 1024}))
"""


def bench_full_scale(
    seed: int = 0, scenario_names: tuple[str, ...] = SCENARIOS, agents: tuple[str, ...] = AGENTS
) -> dict[str, Any]:
    """One episode of each of ``agents`` on each of ``scenario_names``, each in a fresh process.

    Returns ``{"runs": [...], "skipped": [...]}``: per run the scenario, its nodes, the agent,
    jobs, decisions, ``wall_s``, ``decisions_per_s``, ``objective_usd`` (``None`` for ``twin``),
    ``rss_before_mb`` and ``peak_rss_mb``; ``skipped`` names scenarios whose data is absent.
    """
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for name in scenario_names:
        scenario = scenarios.load(name)
        if scenario.missing_data():
            skipped.append(name)
            continue
        nodes = len(scenario.fleet)
        for agent in agents:
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, name, agent, str(seed)], capture_output=True, text=True, check=True
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append({
                "scenario": name, "nodes": nodes, "agent": agent, **row,
                "decisions_per_s": row["decisions"] / row["wall_s"],
            })
    return {"runs": rows, "skipped": skipped}
