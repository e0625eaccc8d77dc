"""Agents x seeds of one scenario -> an :class:`~training.evaluation.results.Evaluation` (a paired comparison).

Every agent plays the same seeds. When ``oracle`` is among the agents, each episode's oracle
lower bound (valid for every policy) and plan objective are kept, and every agent's results
carry optimality gaps against them (:mod:`training.evaluation.results`). An episode whose exact programs
would not fit the oracle's memory budget is decomposed (:mod:`agents.oracle.bounds.capacity_free`: a weaker,
still valid bound and a greedy plan with hindsight), with a warning; an oracle told to refuse
such episodes (``too_large="refuse"``) is left out of the results with a note (``skipped``).

The work is split into units, one (agent, seed) episode each (:class:`EpisodeUnit`; the
oracle's includes its solve), that an execution backend runs (:mod:`training.execution.backend`: in this
process, in a pool of processes, or on Ray). Each unit builds its own env and agent and seeds
them from its seed only, so the numbers are the same under every backend and in any order;
results are assembled in agent order, then seed order. No agent's results depend on the
episodes it played before (every agent restarts in ``reset(seed)``; a test checks it), so a new
agent per unit gives the numbers one agent playing every seed in turn gave.

The scenario is loaded once by the caller (or here, from a name), its data read once, and
shared by every unit. Which env the agents play is an :class:`EvalEnv`: :data:`EPISODE_ENV`
(the full episode, built with the deferral rule each agent declares,
:func:`agents.agent_deferral`: the same episodes, fewer decisions for agents that may wait
until a job fits somewhere new) or :data:`PLACEMENT_ENV` (one decision per episode, scored by
optimality rate and regret).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

import scenarios
from aco_env import ClusterSchedulingEnv, EnvConfig, PlacementEnv
from agents import Agent, agent_deferral, make_agent
from agents.oracle import OracleAgent, OracleTooLargeError
from digital_twin.scenario import Scenario
from training.evaluation.protocol import split_of
from training.evaluation.results import EPISODE_ENV_NAME, AgentEvaluation, EpisodeEvaluation, Evaluation, OracleEpisode
from training.evaluation.rollout import play_episode
from training.execution.backend import Backend, SerialBackend
from training.progress import Progress

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalEnv:
    """An env the evaluator plays agents in.

    Attributes:
        name: Its name in results.json (``"env"``) and on the leaderboard.
        make: ``make(scenario, agent_name)``: the env one agent plays (every unit of an
            evaluation builds its own, on the unit's scenario). A module-level function, so
            that units pickle.
    """

    name: str
    make: Callable[[Scenario, str], gym.Env]


def _episode_env(scenario: Scenario, agent: str) -> gym.Env:
    """The full episode env, asking deferred jobs again under the agent's declared deferral rule."""
    return ClusterSchedulingEnv(scenario, config=EnvConfig(deferral=agent_deferral(agent)))


def _placement_env(scenario: Scenario, agent: str) -> gym.Env:
    """The one-step placement env; its warm-up is the env's own, the same for every agent."""
    del agent
    return PlacementEnv(scenario)


EPISODE_ENV = EvalEnv(EPISODE_ENV_NAME, _episode_env)
"""Whole episodes of :class:`aco_env.ClusterSchedulingEnv`: objective, its terms, job counts, gaps."""
PLACEMENT_ENV = EvalEnv("placement", _placement_env)
"""One decision per episode in :class:`aco_env.PlacementEnv`: optimality rate and regret."""
EVAL_ENVS = {env.name: env for env in (EPISODE_ENV, PLACEMENT_ENV)}
"""The envs an evaluation can play, by name."""


@dataclass(frozen=True)
class EpisodeUnit:
    """The unit of an evaluation's work: agent ``agent`` plays the episode of seed ``seed``.

    For the oracle, the episode includes its solve (made at the episode's reset). A unit
    depends on nothing but its fields: :func:`play_unit` builds its own env and agent and seeds
    both from ``seed`` only, so a unit gives the same numbers wherever and whenever it runs
    (timings aside). It pickles (the scenario with the data it has loaded), so it can run in
    another process or on another machine.

    Attributes:
        scenario: The scenario (shared by every unit of an evaluation in this process).
        env: The env the agent plays.
        agent: A registry name or ``sb3:PATH``.
        seed: The episode's seed (env and agent).
        deterministic: False makes learned agents sample their actions.
        agent_modules: Modules to import before building the agent: ones that register agents
            of their own (:func:`agents.register_agent`) for a worker process to know them.
    """

    scenario: Scenario
    env: EvalEnv
    agent: str
    seed: int
    deterministic: bool = True
    agent_modules: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.agent} seed {self.seed}"


@dataclass(frozen=True)
class UnitResult:
    """What one :class:`EpisodeUnit` gives.

    Attributes:
        episode: The episode's results; ``None`` when the oracle refused the episode.
        latencies_ms: ``(steps,)`` wall time of each ``predict`` call (ms); empty when refused.
        refused: Why the oracle refused the episode (too large for its memory budget), else ``None``.
    """

    episode: EpisodeEvaluation | None
    latencies_ms: np.ndarray  # (steps,) ms
    refused: str | None = None


def play_unit(unit: EpisodeUnit) -> UnitResult:
    """Play one unit with a new env and a new agent (in whatever process runs it).

    An oracle too large for its memory budget (told to refuse, ``too_large="refuse"``) is a
    result, not a failure: ``refused`` says why.
    """
    for module in unit.agent_modules:
        importlib.import_module(module)
    env = unit.env.make(unit.scenario, unit.agent)
    try:
        agent = make_agent(unit.agent, env)
        result = play_episode(env, agent, unit.seed, deterministic=unit.deterministic)
    except OracleTooLargeError as exc:
        return UnitResult(None, np.empty(0), refused=str(exc))
    finally:
        env.close()
    episode = EpisodeEvaluation(
        seed=unit.seed,
        metrics=dict(result.metrics),
        decision_latency_ms_p50=float(np.percentile(result.decision_latency_ms, 50)),
        decision_latency_ms_p99=float(np.percentile(result.decision_latency_ms, 99)),
        oracle=_oracle_episode(agent),
        planted=result.planted,
    )
    return UnitResult(episode, result.decision_latency_ms)


def evaluate(
    scenario: str | Scenario,
    agents: Sequence[str],
    episodes: int,
    seed: int,
    progress: bool = True,
    env: EvalEnv = EPISODE_ENV,
    deterministic: bool = True,
    backend: Backend | None = None,
    agent_modules: Sequence[str] = (),
) -> Evaluation:
    """Play every agent on ``episodes`` seeds ``seed, seed + 1, ...`` of one scenario.

    Each (agent, seed) episode is one :class:`EpisodeUnit`, run by ``backend`` with a new env
    and agent, so the results are the same under every backend (timings aside), in agent order
    then seed order whatever order the units finish in.

    Args:
        scenario: A loaded scenario (what commands pass: loaded once), or a bundled name or
            YAML path (loaded here). Its data is read here, once, and travels with the units.
        agents: Registry names or ``sb3:PATH``.
        episodes: Episodes per agent (>= 1).
        seed: First episode seed.
        progress: Show progress (a bar on a terminal, else one summary line).
        env: The env the agents play (:data:`EPISODE_ENV` or :data:`PLACEMENT_ENV`).
        deterministic: False makes learned agents sample their actions from their policy (seeded per
            episode) instead of taking the most likely one; heuristics are unaffected.
        backend: Where the units run, already entered (:mod:`training.execution.backend`); ``None`` =
            one after another in this process.
        agent_modules: Modules that register agents of their own, imported by each unit (see
            :class:`EpisodeUnit`); the bundled agents need none.

    Returns:
        The results, with agents left out (an oracle too large to solve) in ``skipped``, and
        the protocol's range the seeds fall in as ``split`` (:mod:`training.evaluation.protocol`).

    Raises:
        training.execution.backend.UnitsFailedError: An episode failed every attempt (nothing is returned).
    """
    if episodes < 1:
        raise ValueError("episodes must be >= 1")
    loaded = _with_data_loaded(scenarios.load(scenario))
    seeds = tuple(seed + k for k in range(episodes))
    units = [
        EpisodeUnit(loaded, env, name, episode_seed, deterministic, tuple(agent_modules))
        for name in agents
        for episode_seed in seeds
    ]
    runner = backend if backend is not None else SerialBackend()
    with Progress(len(units), f"evaluate {loaded.name}", "episode", enabled=progress) as bar:
        played = runner.map(play_unit, units, on_done=lambda unit: bar.update(note=str(unit)))
    results: dict[str, AgentEvaluation] = {}
    skipped: dict[str, str] = {}
    for position, name in enumerate(agents):
        mine = played[position * episodes : (position + 1) * episodes]  # units are agent-major
        refused = [result.refused for result in mine if result.refused is not None]
        if refused:  # every seed or none: gaps need the oracle on each
            logger.warning("%s: %s left out of the evaluation: %s", loaded.name, name, refused[0])
            skipped[name] = refused[0]
            continue
        latencies = np.concatenate([result.latencies_ms for result in mine]).tolist()
        episodes_played = tuple(result.episode for result in mine if result.episode is not None)  # none refused
        results[name] = AgentEvaluation(episodes_played, tuple(latencies))
    return Evaluation(loaded.name, env.name, seed, seeds, results, deterministic, skipped, split=split_of(seeds))


def _with_data_loaded(scenario: Scenario) -> Scenario:
    """``scenario``, with its fleet, telemetry and fixed jobs read (they then pickle with it).

    Every unit's copy of the scenario then carries the data: no worker reads a trace file
    (nor needs one: a cluster's nodes may not have the traces).
    """
    scenario.make_spec(np.random.default_rng(scenario.seed))
    return scenario


def _oracle_episode(agent: Agent) -> OracleEpisode | None:
    """The oracle's bound and plan of the episode it just played (``None`` for other agents)."""
    if not isinstance(agent, OracleAgent):
        return None
    result = agent.episode_result()
    if result.status == "decomposed":
        logger.warning(
            "oracle: %s, above the memory budget: decomposed (per-job bound with capacity priced in, "
            "%s plan; gap %.1f %%)",
            result.memory_estimate.describe(),
            result.plan_source,
            100.0 * result.gap,
        )
    return OracleEpisode(
        lower_bound_usd=float(result.lower_bound_usd),
        plan_objective_usd=float(result.plan_objective_usd),
        solve_time_s=float(result.solve_time_s),
        proven_optimal=bool(result.proven_optimal),
    )
