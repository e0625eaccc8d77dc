"""Decisions per job and wall time at scale: first-fit and ACO, each under its deferral rule.

A deferring agent asked after every event can take hundreds of decisions per job on a large
fleet (the ACO scheduler keeps latency-critical jobs off spot nodes and defers them while the
on-demand nodes are full). Under the ``new-fit`` rule, which the ACO agents declare
(:mod:`digital_twin.sim.deferral`), a deferred job is asked again only once it fits somewhere new:
the same episode with far fewer decisions. The twin itself parks jobs that cannot change their
answer (:mod:`digital_twin.sim.job_queue`), so a long queue costs nothing at events that cannot
change it. This section plays whole episodes and reports both rules for ACO, on the bundled
500-node scenario and, when ``ACO_ENV_TRACES`` holds it, on an hour of the Azure LLM inference
trace (19,366 GPU requests) sent to the default 5-node fleet: an overloaded queue.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import scenarios
from aco_env import ClusterSchedulingEnv, EnvConfig
from aco_env.hindsight import scenario_of
from agents import agent_deferral, make_agent
from digital_twin import NEXT_EVENT
from digital_twin.scenario import Scenario
from training.evaluation.rollout import play_episode

RUNS: tuple[tuple[str, str, str | None], ...] = (
    ("fleet5-synthetic", "first-fit", None),
    ("fleet5-synthetic", "aco", None),
    ("fleet5-synthetic", "aco", NEXT_EVENT),
    ("fleet500-synthetic", "first-fit", None),
    ("fleet500-synthetic", "aco", None),
    ("fleet500-synthetic", "aco", NEXT_EVENT),
)
"""(scenario, agent, deferral rule or ``None`` for the agent's own). The last run, ACO asked after
every event on 500 nodes, takes minutes on 2 cores: the run without the rule, beside the run with it."""
LLM_RUNS: tuple[tuple[str, str, str | None], ...] = (
    ("fleet5-azure-llm", "first-fit", None),
    ("fleet5-azure-llm", "aco", None),
)
"""Runs on the real-trace scenario, when its data is present."""

LLM_SCENARIO = """\
schema_version: 2
name: fleet5-azure-llm
description: One hour of the Azure LLM inference trace (conversation) on the default 5-node fleet.
horizon_s: 3600
queue_ttl_s: 1800
fleet: {preset: default-5}
telemetry: {reader: constant, cpu_pct: 30, mem_pct: 30, tick_s: 300}
workload:
  source: azure-llm
  path: ${ACO_ENV_TRACES}/azure-llm-inference-2023-conv/AzureLLMInferenceTrace_conv.csv
"""


def play_timed(scenario: Scenario, agent_name: str, deferral: str | None, seed: int) -> dict[str, Any]:
    """One episode of ``agent_name``: wall seconds (agent + env), decisions, decisions per job, objective."""
    rule = deferral or agent_deferral(agent_name)
    env = ClusterSchedulingEnv(scenario, config=EnvConfig(deferral=rule))
    agent = make_agent(agent_name, env)
    started = time.perf_counter()
    result = play_episode(env, agent, seed)
    wall_s = time.perf_counter() - started
    metrics = result.metrics
    submitted = sum(metrics[f"{status}_jobs"] for status in ("completed", "failed", "rejected", "running", "pending"))
    return {
        "scenario": scenario_of(env).name,
        "nodes": env.n_nodes,
        "agent": agent_name,
        "deferral": rule,
        "seed": seed,
        "wall_s": wall_s,
        "decisions": int(metrics["decisions"]),
        "jobs": int(submitted),
        "decisions_per_job": metrics["decisions"] / max(submitted, 1),
        "objective_usd": metrics["objective_usd"],
    }


def bench_scale(
    seed: int = 0, runs: tuple[tuple[str, str, str | None], ...] = RUNS, real_trace: bool = True
) -> dict[str, Any]:
    """Every run of ``runs`` (and of :data:`LLM_RUNS` with ``real_trace`` and its data) on ``seed``.

    Each scenario is loaded once, its data read before any run is timed, and shared by its
    runs. Returns the rows and ACO's wall time over first-fit's per scenario.
    """
    loaded = {name: _with_data_read(scenarios.load(name)) for name in dict.fromkeys(name for name, _, _ in runs)}
    rows = [play_timed(loaded[scenario], agent, deferral, seed) for scenario, agent, deferral in runs]
    if real_trace and os.environ.get(scenarios.TRACES_ENV):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "fleet5-azure-llm.yaml"
            path.write_text(LLM_SCENARIO)
            llm = scenarios.load(path)
            if not llm.missing_data():
                _with_data_read(llm)
                rows += [play_timed(llm, agent, deferral, seed) for _, agent, deferral in LLM_RUNS]
    ratios = {}
    for scenario in dict.fromkeys(row["scenario"] for row in rows):
        own = {
            row["agent"]: row
            for row in rows
            if row["scenario"] == scenario and row["deferral"] == (agent_deferral(row["agent"]))
        }
        if {"aco", "first-fit"} <= own.keys():
            ratios[scenario] = own["aco"]["wall_s"] / own["first-fit"]["wall_s"]
    return {"runs": rows, "aco_vs_first_fit_wall": ratios}


def _with_data_read(scenario: Scenario) -> Scenario:
    """``scenario`` with its fleet, telemetry and jobs read (cached), so no timed run pays for reading them."""
    scenario.make_spec(np.random.default_rng(scenario.seed))
    return scenario
