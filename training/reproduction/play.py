"""Playing registered agents through :class:`aco_env.ClusterSchedulingEnv`: the full-twin runs.

Agents come from the registry (:func:`agents.make_agent`) and play whole episodes with
:func:`training.evaluation.rollout.play_episode`. A thin wrapper notes where each job was first started
(the reproduction's routing metrics need it); the wrapper's bookkeeping runs inside each timed
``predict``, so decision latencies are not reported from here (T1.3 times agents unwrapped).
The oracle is used through the registry when :mod:`agents.oracle` can be imported; otherwise
its column is "n/a".

The unit of work is one agent's episode on one seed (:class:`PlayUnit`, its oracle solve
included), played with a new env and agent by :func:`play_unit`; :func:`play_agents` runs a
batch of them on a :class:`training.execution.backend.Backend` (``aco-env reproduce --backend``), so
every backend gives the same records.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aco_env import ClusterSchedulingEnv
from agents import Agent, make_agent
from agents.base import AgentState
from agents.oracle import OracleAgent
from agents.oracle.milp.limits import SolveLimits
from digital_twin.scenario import Scenario
from training.evaluation.rollout import play_episode
from training.execution.backend import Backend, SerialBackend
from training.reproduction.stats import paired_savings, summarize

ORACLE = "oracle"


def oracle_available() -> bool:
    """Whether the oracle agent can be built (:mod:`agents.oracle` imports and registers it)."""
    try:
        importlib.import_module("agents.oracle")
    except ImportError:
        return False
    from agents import agent_names

    return ORACLE in agent_names()


def oracle_options(limits: SolveLimits | None) -> dict[str, Any] | None:
    """The oracle's factory options when a tier plays it, else ``None``.

    It plays when limits are given (``None`` means ``--no-oracle``) and :func:`oracle_available`;
    its options are then the limits of each HiGHS solve (``node_limit``, ``time_limit_s``).
    """
    if limits is None or not oracle_available():
        return None
    return {"node_limit": limits.node_limit, "time_limit_s": limits.time_limit_s}


@dataclass
class EpisodeRecord:
    """One agent's episode on one seed.

    Attributes:
        seed: The env seed.
        metrics: The env's ``episode_metrics`` (objective terms, job counts, QoS compliance...).
        placements: ``job_id -> node index`` of each job's first start.
        oracle: For the oracle: ``plan_objective_usd``, ``lower_bound_usd``, ``gap``,
            ``proven_optimal``, ``status``, ``solve_time_s``; ``None`` for other agents.
    """

    seed: int
    metrics: dict[str, float]
    placements: dict[str, int]
    oracle: dict[str, Any] | None = None


@dataclass
class _PlacementRecorder:
    """An :class:`agents.Agent` wrapper that notes the node of each job's first start."""

    inner: Agent
    env: ClusterSchedulingEnv
    placements: dict[str, int] = field(default_factory=dict)
    name: str = field(init=False)
    """The wrapped agent's name."""

    def __post_init__(self) -> None:
        self.name = self.inner.name

    def reset(self, seed: int | None = None) -> None:
        """Reset the wrapped agent and forget the placements."""
        self.placements = {}
        self.inner.reset(seed)

    def predict(
        self,
        observation: dict[str, np.ndarray],
        state: AgentState = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, AgentState]:
        """The wrapped agent's action; a node action is recorded for the current job."""
        action, new_state = self.inner.predict(observation, state, episode_start, deterministic)
        node = int(np.asarray(action).reshape(-1)[0])
        job = self.env.cluster_view().job
        if job is not None and node < self.env.n_nodes and self.env.action_masks()[node]:
            self.placements.setdefault(job.job_id, node)
        return action, new_state


def _oracle_summary(agent: Agent) -> dict[str, Any] | None:
    """The oracle's numbers of the episode just played (``None`` for other agents)."""
    if not isinstance(agent, OracleAgent):
        return None
    result = agent.episode_result()
    return {
        "plan_objective_usd": float(result.plan_objective_usd),
        "lower_bound_usd": float(result.lower_bound_usd),
        "gap": float(result.gap),
        "proven_optimal": bool(result.proven_optimal),
        "status": str(result.status),
        "solve_time_s": float(result.solve_time_s),
    }


@dataclass(frozen=True)
class PlayUnit:
    """One agent's episode on one seed: the reproduction's unit of work.

    It depends on nothing but its fields (:func:`play_unit` builds its own env and agent and
    resets both with ``seed``) and pickles (the scenario with the data it has loaded), so it
    gives the same record in any process, on any machine.

    Attributes:
        scenario: The episode's scenario.
        agent: A registry name.
        seed: The episode's seed (env and agent).
        options: Keyword options of the agent's factory (e.g. the oracle's ``node_limit``).
    """

    scenario: Scenario
    agent: str
    seed: int
    options: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.scenario.name}: {self.agent} seed {self.seed}"


def play_unit(unit: PlayUnit) -> EpisodeRecord:
    """Play one unit with a new env and agent (the agent is reset with the seed, as the evaluator does)."""
    env = ClusterSchedulingEnv(unit.scenario)
    try:
        recorder = _PlacementRecorder(make_agent(unit.agent, env, **unit.options), env)
        result = play_episode(env, recorder, unit.seed)
    finally:
        env.close()
    return EpisodeRecord(
        seed=unit.seed,
        metrics=dict(result.metrics),
        placements=dict(recorder.placements),
        oracle=_oracle_summary(recorder.inner),
    )


def play_agents(
    scenario_of: Callable[[int], Scenario],
    agents: Sequence[tuple[str, Mapping[str, Any]]],
    seeds: Sequence[int],
    backend: Backend | None = None,
) -> dict[str, list[EpisodeRecord]]:
    """Play every agent on one episode per seed, as one batch of units on ``backend``.

    Seed ``s`` plays ``scenario_of(s)`` reset with ``s``. The records do not depend on the
    backend: each unit has its own env and agent.

    Args:
        scenario_of: Seed -> scenario (may return the same object for every seed).
        agents: ``(registry name, factory options)`` pairs; a name once (``"oracle"`` needs
            :func:`oracle_available`).
        seeds: Episode seeds.
        backend: A started backend; ``None`` plays in this process.

    Returns:
        Agent name -> its records, one per seed in ``seeds`` order, in ``agents`` order.

    Raises:
        training.execution.backend.UnitsFailedError: An episode failed every attempt.
    """
    units = [PlayUnit(scenario_of(seed), name, seed, dict(options)) for name, options in agents for seed in seeds]
    records = (backend or SerialBackend()).map(play_unit, units)
    return {name: records[i * len(seeds) : (i + 1) * len(seeds)] for i, (name, _) in enumerate(agents)}


def play_seeds(
    scenario_of: Callable[[int], Scenario],
    agent: str,
    seeds: Sequence[int],
    agent_options: Mapping[str, Any] | None = None,
    backend: Backend | None = None,
) -> list[EpisodeRecord]:
    """Play one agent on one episode per seed (:func:`play_agents` with one agent)."""
    return play_agents(scenario_of, [(agent, agent_options or {})], seeds, backend)[agent]


def metric_values(records: Sequence[EpisodeRecord], key: str) -> list[float]:
    """The per-seed values of one episode metric (e.g. ``"objective_usd"``)."""
    return [float(record.metrics[key]) for record in records]


def metric_savings(
    records: Mapping[str, Sequence[EpisodeRecord]], baseline: str, agent: str, key: str
) -> dict[str, Any]:
    """``agent``'s paired saving against ``baseline`` in one episode metric, seed by seed.

    Args:
        records: Agent name -> its records, one per seed, in the same seed order for every agent.
        baseline: The agent saved against (e.g. ``"first-fit"``).
        agent: The agent whose saving is reported.
        key: The episode metric, e.g. ``"cost_usd"``.

    Returns:
        :func:`~training.reproduction.stats.paired_savings` of the two agents' values.
    """
    return paired_savings(metric_values(records[baseline], key), metric_values(records[agent], key))


def oracle_over_seeds(records: Sequence[EpisodeRecord], limits: SolveLimits) -> dict[str, Any]:
    """The oracle's solves over its episodes, as a tier's result reports them.

    Episodes without an oracle summary (``record.oracle is None``) are left out.

    Returns:
        ``lower_bound_usd`` and ``gap`` (:func:`~training.reproduction.stats.summarize` over the
        episodes; ``gap`` a fraction), ``proven_optimal`` (how many episodes), ``episodes`` (how
        many solved), ``work_limited`` and ``time_limited`` (how many stopped at the node limit,
        at the wall-time cap: only the latter can differ on another machine) and ``limits``
        (:meth:`SolveLimits.describe`).
    """
    solved = [r.oracle for r in records if r.oracle is not None]
    return {
        "lower_bound_usd": summarize([s["lower_bound_usd"] for s in solved]),
        "gap": summarize([s["gap"] for s in solved]),
        "proven_optimal": sum(s["proven_optimal"] for s in solved),
        "episodes": len(solved),
        "work_limited": sum(s["status"] == "work-limit" for s in solved),
        "time_limited": sum(s["status"] == "time-limit" for s in solved),
        "limits": limits.describe(),
    }
