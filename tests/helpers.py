"""Reusable conformance helpers for the twin's invariants (called from short tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from aco_env.placement import apply as apply_action
from aco_env.placement import first_fit  # noqa: F401  (the tests' first-fit policy on the twin)
from aco_env.registration import FLEET5_ID, PLANTED5_ID
from digital_twin import DigitalTwin, JobSpec, Telemetry
from digital_twin.objective import USD_KEYS

TERM_FIELDS = USD_KEYS
AGENT_NEEDS = {
    "aco-lstm": pytest.mark.training,
    "oracle": pytest.mark.heavy,
    "lookahead": pytest.mark.heavy,
    "lookahead-clairvoyant": pytest.mark.heavy,
}
"""What playing an agent needs beyond the fast layer: the LSTM predictor trains, the oracle solves MILPs, the
lookahead agents roll every action out (seconds of CPU a fleet5 episode)."""
AGENT_ENV_IDS = {"planted": PLANTED5_ID}
"""Agents that play only some envs: the planted expert follows a planted episode's schedule."""


def agent_params() -> list[Any]:
    """Every registered agent's name as a ``pytest.param``, marked with what playing it needs."""
    from agents import agent_names

    return [pytest.param(name, marks=AGENT_NEEDS.get(name, ())) for name in agent_names()]


QUICK_OPTIONS = {"oracle": {"node_limit": 10, "compute_bound": False, "replayed_rounds": 0}}
"""Options for tests that check what an agent answers, not how good it is: the oracle's plan from at
most 10 branch-and-bound nodes per solve, no bound, no replayed rounds (a limit in work, so the
same seed still gives the same plan; a third of the default's CPU). Its quality: tests/agents/oracle/."""


def make_quick_agent(name: str, env: gym.Env) -> Any:
    """``agents.make_agent(name, env)`` with the agent's :data:`QUICK_OPTIONS`."""
    from agents import make_agent

    return make_agent(name, env, **QUICK_OPTIONS.get(name, {}))


def agent_env_id(name: str) -> str:
    """The env id the agent-generic tests play ``name`` in: its own (:data:`AGENT_ENV_IDS`), else Fleet5."""
    return AGENT_ENV_IDS.get(name, FLEET5_ID)


def online_agent_params() -> list[Any]:
    """:func:`agent_params` of the online agents: the hindsight ones (``AgentEntry.hindsight``) left out."""
    from agents import is_hindsight_agent

    return [param for param in agent_params() if not is_hindsight_agent(param.values[0])]


def assert_twin_invariants(twin: DigitalTwin) -> None:
    """No node over capacity, allocations equal the running jobs, counts add up, terms >= 0."""
    spec = twin.spec
    free_cpu, free_mem, free_gpu = twin.node_free()
    assert (free_cpu >= -1e-9).all() and (free_mem >= -1e-9).all() and (free_gpu >= 0).all()
    jobs = spec.jobs
    statuses = [twin.job_status(j) for j in range(len(jobs))]
    nodes = np.array([twin.job_node(j) for j in range(len(jobs))], dtype=np.int64)
    running = nodes >= 0
    assert running.tolist() == [status == "running" for status in statuses]
    assert np.asarray(twin.node_up())[nodes[running]].all(), "a job runs on a down node"
    used_cpu, used_mem, used_gpu = (
        np.bincount(nodes[running], weights=np.asarray(size, dtype=float)[running], minlength=spec.n_nodes)
        for size in (jobs.cpu_cores, jobs.mem_gb, jobs.gpu_count)
    )
    capacity_cpu = np.array([n.cpu_cores for n in spec.fleet], dtype=float)
    capacity_mem = np.array([n.mem_gb for n in spec.fleet], dtype=float)
    capacity_gpu = np.array([n.gpu_count for n in spec.fleet], dtype=float)
    _assert_close(used_cpu + free_cpu, capacity_cpu, 1e-6, "cpu: used + free != capacity")
    _assert_close(used_mem + free_mem, capacity_mem, 1e-6, "memory: used + free != capacity")
    _assert_close(used_gpu + free_gpu, capacity_gpu, 0.0, "gpus: used + free != capacity")
    counts = twin.job_counts()
    assert sum(counts.values()) == len(spec.jobs)
    for name, count in counts.items():
        assert statuses.count(name) == count
    objective = twin.objective()
    for term in TERM_FIELDS:
        assert objective[term] >= 0.0, term


def _assert_close(actual: np.ndarray, expected: np.ndarray, atol: float, what: str) -> None:
    """``numpy.testing.assert_allclose``'s test (rtol 1e-7) at a tenth of its cost; the message names the nodes."""
    bad = np.abs(actual - expected) > atol + 1e-7 * np.abs(expected)
    assert not bad.any(), f"{what} on nodes {np.flatnonzero(bad).tolist()}: {actual[bad]} vs {expected[bad]}"


Policy = Callable[[DigitalTwin], int | None]
"""Returns a node index to place the current job on, or None to defer."""


def run_twin(twin: DigitalTwin, policy: Policy, seed: int, check: bool = True, check_every: int = 1) -> list[float]:
    """Reset with ``seed``, play ``policy`` to the end checking invariants; returns decision times.

    ``check_every`` > 1 checks the (O(jobs)) invariants at every that many decisions only, for
    large scenarios; the end state is always checked.
    """
    twin.reset(np.random.default_rng(seed))
    times = [twin.time_s]
    while not twin.done:
        if check and (len(times) - 1) % check_every == 0:
            assert_twin_invariants(twin)
            assert twin.current_job is not None
            assert any(twin.feasible_mask()), "a decision was asked for a job that fits nowhere"
        apply_action(twin, policy(twin))
        assert twin.time_s >= times[-1], "simulated time went back"
        times.append(twin.time_s)
    if check:
        assert_twin_invariants(twin)
        counts = twin.job_counts()
        assert twin.terminated == (counts["pending"] + counts["running"] + counts["future"] == 0)
    return times


def seeded_random_policy(seed: int, defer_prob: float = 0.2) -> Policy:
    """A policy choosing uniformly among feasible nodes, deferring with ``defer_prob``."""
    rng = np.random.default_rng(seed)

    def policy(twin: DigitalTwin) -> int | None:
        feasible = [i for i, ok in enumerate(twin.feasible_mask()) if ok]
        if rng.random() < defer_prob:
            return None
        return int(feasible[rng.integers(len(feasible))])

    return policy



def check_agent_protocol(agent: Any, env: gym.Env) -> None:
    """The agent satisfies :class:`agents.Agent` and answers a fresh env with a valid action."""
    from agents import Agent

    assert isinstance(agent, Agent), f"{agent!r} does not implement the Agent protocol"
    assert isinstance(agent.name, str) and agent.name
    obs, _ = env.reset(seed=0)
    agent.reset(seed=0)
    action, state = agent.predict(obs)
    assert isinstance(action, np.ndarray) and action.shape == ()
    assert np.issubdtype(action.dtype, np.integer) and state is None
    assert env.unwrapped.action_masks()[int(action)]


def run_episode(env: gym.Env, agent: Any, seed: int, max_steps: int = 100_000) -> dict[str, float]:
    """Play a full episode checking every action is valid; the episode metrics plus ``return``."""
    obs, _ = env.reset(seed=seed)
    agent.reset(seed=seed)
    total_reward = 0.0
    for _ in range(max_steps):
        action, _ = agent.predict(obs)
        assert env.unwrapped.action_masks()[int(action)], f"{agent.name}: invalid action {action}"
        obs, reward, terminated, truncated, info = env.step(action)
        assert not info["invalid_action"]
        total_reward += float(reward)
        if terminated or truncated:
            metrics = dict(info["episode_metrics"])
            metrics["return"] = total_reward
            return metrics
    raise AssertionError(f"the episode did not end within {max_steps} steps")


def make_job(
    workload: str = "batch",
    gpus: int = 0,
    preemptible: bool = False,
    deadline_s: float | None = None,
    cpu: float = 2.0,
    mem: float = 4.0,
) -> JobSpec:
    """A job ``"j"`` arriving at 0 s for 600 s (the fields agents' rules look at are arguments)."""
    return JobSpec(
        "j", 0.0, 600.0, workload, cpu, mem, gpu_count=gpus, preemptible=preemptible,
        deadline_s=deadline_s,
    )


def drawn_background(draw: Any, n_ticks: int, n_nodes: int, tick_s: float = 300.0) -> Telemetry:
    """A hypothesis-drawn background: each node's cpu per tick from 0, 20, 50, 85 and 100 %, memory 0."""
    from hypothesis import strategies as st

    cells = n_ticks * n_nodes
    cpu = draw(st.lists(st.sampled_from((0.0, 20.0, 50.0, 85.0, 100.0)), min_size=cells, max_size=cells))
    background = np.zeros((n_ticks, n_nodes, 2))
    background[:, :, 0] = np.array(cpu).reshape(n_ticks, n_nodes)
    return Telemetry(background, tick_s)


def replayed_with_log(env: gym.Env) -> DigitalTwin:
    """The env's episode replayed decision by decision in a recording twin (the same interruptions).

    Asserts the replay reaches the env's objective exactly.
    """
    played = env.unwrapped._require_twin()
    spec = played.hindsight().replayable_spec()
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    for _, node in played.decisions():
        if node is None:
            twin.defer(env.unwrapped.config.deferral)
        else:
            twin.place(node)
    assert twin.objective() == played.objective()
    return twin
