"""Online agents decide only from the past: two episodes that agree up to t get the same decisions up to t.

Spot traces too: two replayed traces that agree up to t (an outage on at t that ends at
different times after it; an interruption after t in one only) give the same decisions up to t.

Each pair is an episode and a copy of it that differs only after a time t: the jobs arriving
after t (some dropped, the rest moved and resized), the telemetry ticks after t, the spot
interruptions after t, and the *true* durations of the jobs whose runs cannot end by t (their
declarations unchanged). Every online agent plays both with the same seed; at every decision
up to t the observations, the masks, the views' contents and the actions must be identical.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import scenarios
from aco_env import ClusterSchedulingEnv
from agents import make_agent
from digital_twin import DigitalTwin, Telemetry, TwinSpec
from digital_twin.scenario import Scenario
from digital_twin.workload import Workload
from tests.digital_twin.spot_scenarios import replayed_default, write_trace
from tests.helpers import online_agent_params

LOOKAHEAD = "lookahead[samples=2,rollout_window_s=900,candidates=3]"
AGENTS = [  # every online agent (marked as agent_params marks them), the lookahead with small options
    pytest.param(LOOKAHEAD, marks=param.marks) if param.values[0] == "lookahead" else param
    for param in online_agent_params()
]


class _OneEpisode:
    """A scenario stand-in whose every episode is ``spec`` (for the env's ``_scenario``)."""

    def __init__(self, scenario: Scenario, spec: TwinSpec) -> None:
        self._scenario, self._spec = scenario, spec
        self.planted = False
        self.name = scenario.name

    def make_spec(self, rng: np.random.Generator) -> TwinSpec:
        del rng
        return self._spec

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scenario, name)


def _episode(scenario: Scenario, seed: int) -> TwinSpec:
    """An episode of ``scenario`` with its spot interruptions drawn and given."""
    spec = scenario.make_spec(np.random.default_rng(seed))
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(seed))
    return dataclasses.replace(spec, fixed_interruptions_s=twin.hindsight().interruptions_s)


def _other_future(spec: TwinSpec, t: float, rng: np.random.Generator) -> TwinSpec:
    """``spec`` up to ``t``, another future after it (see the module docstring)."""
    jobs = spec.jobs
    past = np.flatnonzero(jobs.arrival_s <= t)
    true = jobs.duration_s[past].copy()
    may_change = jobs.arrival_s[past] + true > t  # no run of these ends by t
    true[may_change] *= rng.uniform(1.1, 3.0, size=int(may_change.sum()))
    kept = jobs.take(past, duration_s=true)
    later = np.flatnonzero(jobs.arrival_s > t)
    later = later[rng.random(len(later)) < 0.5]
    if len(later):
        moved = np.sort(rng.uniform(t + 1.0, float(spec.settings.horizon_s), size=len(later)))
        future = [
            dataclasses.replace(jobs[j], arrival_s=float(a), cpu_cores=jobs[j].cpu_cores * 0.5)
            for j, a in zip(later.tolist(), moved.tolist(), strict=True)
        ]
        kept = kept.then(Workload.of(future))
    background = spec.telemetry.background_pct.copy()
    first_later_tick = int(t // spec.telemetry.tick_s) + 1
    background[first_later_tick:] = rng.uniform(0.0, 90.0, size=background[first_later_tick:].shape)
    assert spec.fixed_interruptions_s is not None
    interruptions = tuple(
        tuple(x for x in times if x <= t) + ((t + float(rng.uniform(60, 3600)),) if times else ())
        for times in spec.fixed_interruptions_s
    )
    return dataclasses.replace(
        spec, jobs=kept, telemetry=Telemetry(background, spec.telemetry.tick_s), fixed_interruptions_s=interruptions
    )


def _decisions_to(env: ClusterSchedulingEnv, agent_spec: str, seed: int, t: float) -> list[tuple[Any, ...]]:
    """Each decision up to ``t``: the time, the observation, the view's contents and the action."""
    agent = make_agent(agent_spec, env)
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    seen: list[tuple[Any, ...]] = []
    while env.cluster_view().time_s <= t:
        view = env.cluster_view()
        action = int(agent.predict(obs)[0])
        known_spec = env.known_spec()
        known = (view.job, tuple(view.queue), view.free_cpu_cores.tolist(), view.up.tolist(),
                 view.telemetry.cpu_pct().tolist(), known_spec.jobs.duration_s.tolist(),
                 known_spec.fixed_interruptions_s, known_spec.fixed_recoveries_s)  # fmt: skip
        seen.append((view.time_s, {k: v.tolist() for k, v in obs.items()}, known, action))
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    return seen


@pytest.mark.parametrize("scenario_name", ["fleet5-synthetic", "fleet20-synthetic"])
@pytest.mark.parametrize("agent_spec", AGENTS)
def test_online_agents__same_past_other_future__same_decisions(scenario_name: str, agent_spec: str) -> None:
    scenario = scenarios.load(scenario_name)
    rng = np.random.default_rng(7)
    for seed in (0, 1):
        spec = _episode(scenario, seed)
        t = float(rng.uniform(0.2, 0.6)) * float(spec.settings.horizon_s)
        other = _other_future(spec, t, rng)
        played = []
        for episode in (spec, other):
            env = ClusterSchedulingEnv(scenario)
            env._scenario = _OneEpisode(scenario, episode)  # type: ignore[assignment]  # this test's stand-in
            played.append(_decisions_to(env, agent_spec, seed, t))
        assert played[0], "the episode should have decisions before t"
        assert played[0] == played[1], f"{agent_spec} decided differently before t={t:.0f} s"


def _replayed(folder: Path, gpu_counts: list[int], cpu_counts: list[int]) -> Scenario:
    """The default scenario with its spot nodes replaying the two written traces from their start."""
    gpu, cpu = write_trace(folder / "gpu.json", gpu_counts, 30), write_trace(folder / "cpu.json", cpu_counts, 60)
    traces = [{"path": str(gpu), "nodes": ["node-gpu-05"]}, {"path": str(cpu), "nodes": ["node-arm-02"]}]
    return replayed_default(folder, traces, start_s=0.0)


@pytest.mark.parametrize("agent_spec", AGENTS)
def test_online_agents__spot_traces_that_agree_up_to_t__same_decisions(tmp_path: Path, agent_spec: str) -> None:
    """Two traces agree up to t = 6000 s: both nodes are down from 3000 s (the GPU node comes back at
    6600 s in one, 12000 s in the other) and the CPU node goes down at 7000 s in one only."""
    t = 6000.0
    gpu = [[1] * 100 + [0] * 120 + [1] * 400, [1] * 100 + [0] * 300 + [1] * 220]
    cpu = [[1] * 50 + [0] * 30 + [1] * 36 + [0] * 10 + [1] * 200, [1] * 50 + [0] * 30 + [1] * 216]
    played = []
    for k in range(2):
        folder = tmp_path / str(k)
        folder.mkdir()
        env = ClusterSchedulingEnv(_replayed(folder, gpu[k], cpu[k]))
        played.append(_decisions_to(env, agent_spec, 3, t))
    assert any(not all(seen[2][3]) for seen in played[0]), "some decisions are taken while a spot node is down"
    assert played[0] == played[1], f"{agent_spec} decided differently before t={t:.0f} s"
