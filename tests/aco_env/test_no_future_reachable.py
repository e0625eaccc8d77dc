"""Nothing an online agent is handed reaches the future, by walking its whole object graph.

At a decision at time t of a built episode, the test collects what lies beyond t: the jobs
still to arrive (their ids and ``JobSpec`` s), the interruptions after t, the true durations of
the jobs that have not completed, and the episode's own objects (its spec, workload, telemetry,
twin and scenario). It then walks everything reachable from what an agent is handed: the
observation, the env's public attributes, ``cluster_view()``, ``known_spec()`` and
``known_twin()`` (private attributes, containers, slots, closures and numpy array bases
included; modules, classes and functions are not data and are not walked) and fails if any of
it is reached, or any array shares memory with the episode's telemetry or job columns.
"""

from __future__ import annotations

import gc
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import scenarios
from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of, scenario_of
from digital_twin.sim.job_states import COMPLETED

_NOT_DATA = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.CodeType, types.MethodType)
_SCENARIOS = ("fleet5-synthetic", "fleet20-synthetic", "planted5", "fleet5-utility", "hpc-swf", "fleet5-alibaba2018",
              "fleet5-spot-replayed")  # fmt: skip
_RANDOM_TIMES = ("fleet5-synthetic", "fleet20-synthetic", "fleet5-utility", "fleet5-spot-replayed")
"""Scenarios whose arrivals, durations and interruptions are continuous draws: no float of the
past equals one of them by chance (a replayed trace starts at a drawn offset), so reaching an
equal float means reaching the value (on the
others, e.g. round planted times or whole trace seconds, only objects, ids and arrays are checked)."""


def _reachable(roots: list[Any]) -> Iterator[Any]:
    """Every object reachable from ``roots`` (each once), by the garbage collector's referents and array bases."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _NOT_DATA):
            continue
        seen.add(id(obj))
        yield obj
        if isinstance(obj, np.ndarray):
            if obj.base is not None:
                stack.append(obj.base)
            if obj.dtype == object:
                stack.extend(obj.ravel().tolist())
            continue
        stack.extend(gc.get_referents(obj))


def _handed_to_an_agent(env: ClusterSchedulingEnv, obs: dict[str, np.ndarray]) -> list[Any]:
    public = [value for name, value in vars(env).items() if not name.startswith("_")]
    return [obs, *public, env.action_space, env.observation_space, env.cluster_view(), env.known_spec(),
            env.known_twin(), env.decisions(), env.episode_metrics(), env.action_masks()]  # fmt: skip


def _future_of(env: ClusterSchedulingEnv) -> tuple[dict[int, Any], set[str], set[float], list[np.ndarray]]:
    """The episode beyond now: objects (by id; the dict keeps them alive, so that no id is reused
    while the graph is walked), job ids, floats (times, true durations), arrays."""
    twin = env._twin
    assert twin is not None
    s, spec, now = twin._s, twin.spec, twin.time_s
    later = range(s.next_arrival, len(spec.jobs))
    objects = {id(o): o for o in (env, twin, s, twin._c, spec, spec.jobs, spec.telemetry, scenario_of(env),
                                  hindsight_of(env), s.outages.interruptions_s, s.outages.recoveries_s)}  # fmt: skip
    objects |= {id(job): job for job in (spec.jobs[j] for j in later)}
    job_ids = {spec.jobs.job_ids[j] for j in later}
    floats = {t for times in s.outages.interruptions_s for t in times if t > now}
    if spec.fixed_recoveries_s is not None:  # replayed outages' ends to come (a Poisson one's is a known setting)
        floats |= {end for ends in s.outages.recoveries_s for end in ends if now < end < float("inf")}
    floats |= {float(spec.jobs.arrival_s[j]) for j in later}
    declared = spec.jobs.declared_or_true_s()
    floats |= {  # a job's true duration is known once it completed (and where it is declared exactly)
        float(d) for j, d in enumerate(spec.jobs.duration_s[: s.next_arrival])
        if s.jobs.status[j] != COMPLETED and d != declared[j]
    }  # fmt: skip
    arrays = [spec.telemetry.background_pct, *(getattr(spec.jobs, name) for name in ("arrival_s", "duration_s"))]
    return objects, job_ids, floats, arrays


def _decisions_into(env: ClusterSchedulingEnv, seed: int, steps: int) -> dict[str, np.ndarray] | None:
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if terminated or truncated:
            return None
    return obs


@pytest.mark.parametrize("scenario", _SCENARIOS)
def test_nothing_handed_to_an_agent_reaches_the_future(scenario: str) -> None:
    """Walk everything an online agent is handed at a mid-episode decision: no future job, tick or interruption."""
    loaded = scenarios.load(scenario)
    if loaded.missing_data():
        pytest.skip(f"data not present: {loaded.missing_data()[0]}")
    env = ClusterSchedulingEnv(loaded)
    for seed, steps in ((0, 25), (1, 60)):
        obs = _decisions_into(env, seed, steps)
        if obs is None:
            continue
        objects, job_ids, floats, arrays = _future_of(env)
        assert job_ids, "the decision should have jobs still to arrive"
        for obj in _reachable(_handed_to_an_agent(env, obs)):
            assert id(obj) not in objects, f"{scenario}: an agent can reach {type(obj).__name__} of the episode"
            if isinstance(obj, str):
                assert obj not in job_ids, f"{scenario}: future job {obj!r} is reachable"
            elif isinstance(obj, float) and scenario in _RANDOM_TIMES:
                assert obj not in floats, f"{scenario}: a future time or a true duration ({obj}) is reachable"
            elif isinstance(obj, np.ndarray) and obj.dtype != object:
                assert not any(np.shares_memory(obj, a) for a in arrays), f"{scenario}: an array reads the episode's"


def test_view_reprs_count_only_known_jobs() -> None:
    """repr(view.queue) counts the queue, not the workload (future arrivals included)."""
    env = ClusterSchedulingEnv()
    obs = _decisions_into(env, 0, 10)
    assert obs is not None
    view = env.cluster_view()
    assert repr(view.queue) == f"KnownJobs({len(view.queue)} jobs)"
    assert repr(view.telemetry) == f"TelemetrySoFar(ticks 0..{view.tick_index} of 5 nodes, tick 300 s)"
