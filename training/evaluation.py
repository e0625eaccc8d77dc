"""Agents x seeds of one scenario -> an :class:`~training.results.Evaluation` (a paired comparison).

Every agent plays the same seeds. When ``oracle`` is among the agents, each episode's oracle
lower bound (valid for every policy) and plan objective are kept, and every agent's results
carry optimality gaps against them (:mod:`training.results`). An episode whose exact programs
would not fit the oracle's memory budget is decomposed (:mod:`agents.oracle.scale`: a weaker,
still valid bound and a greedy plan with hindsight), with a warning; an oracle told to refuse
such episodes (``too_large="refuse"``) is left out of the results with a note (``skipped``).

The scenario is loaded once by the caller (or here, from a name) and shared by every agent's
env. Which env the agents play is an :class:`EvalEnv`: :data:`EPISODE_ENV` (the full episode,
built with the deferral rule each agent declares, :func:`agents.agent_deferral`: the same
episodes, fewer decisions for agents that may wait until a job fits somewhere new) or
:data:`PLACEMENT_ENV` (one decision per episode, scored by optimality rate and regret).
"""

from __future__ import annotations

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
from training.progress import Progress
from training.results import EPISODE_ENV_NAME, AgentEvaluation, EpisodeEvaluation, Evaluation, OracleEpisode
from training.rollout import play_episode

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalEnv:
    """An env the evaluator plays agents in.

    Attributes:
        name: Its name in results.json (``"env"``) and on the leaderboard.
        make: ``make(scenario, agent_name)``: the env one agent plays (every agent of an
            evaluation gets its own, on the same scenario object).
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


def evaluate(
    scenario: str | Scenario,
    agents: Sequence[str],
    episodes: int,
    seed: int,
    progress: bool = True,
    env: EvalEnv = EPISODE_ENV,
    deterministic: bool = True,
) -> Evaluation:
    """Play every agent on ``episodes`` seeds ``seed, seed + 1, ...`` of one scenario.

    Args:
        scenario: A loaded scenario (what commands pass: loaded once), or a bundled name or
            YAML path (loaded here).
        agents: Registry names or ``sb3:PATH``.
        episodes: Episodes per agent (>= 1).
        seed: First episode seed.
        progress: Show progress (a bar on a terminal, else one summary line).
        env: The env the agents play (:data:`EPISODE_ENV` or :data:`PLACEMENT_ENV`).
        deterministic: False makes learned agents sample actions from their policy (seeded per
            episode) instead of taking the most likely one; heuristics are unaffected.

    Returns:
        The results, with agents left out (an oracle too large to solve) in ``skipped``.
    """
    if episodes < 1:
        raise ValueError("episodes must be >= 1")
    loaded = scenarios.load(scenario)
    seeds = tuple(seed + k for k in range(episodes))
    results: dict[str, AgentEvaluation] = {}
    skipped: dict[str, str] = {}
    with Progress(len(agents) * episodes, f"evaluate {loaded.name}", "episode", enabled=progress) as bar:
        for name in agents:
            played: list[EpisodeEvaluation] = []
            latencies: list[float] = []
            try:
                _play_agent(env.make(loaded, name), name, seeds, deterministic, played, latencies, bar)
            except OracleTooLargeError as exc:  # every seed or none: gaps need the oracle on each
                logger.warning("%s: %s left out of the evaluation: %s", loaded.name, name, exc)
                skipped[name] = str(exc)
                bar.update(episodes - len(played))
                continue
            results[name] = AgentEvaluation(tuple(played), tuple(latencies))
    return Evaluation(loaded.name, env.name, seed, seeds, results, deterministic, skipped)


def _play_agent(
    env: gym.Env,
    name: str,
    seeds: Sequence[int],
    deterministic: bool,
    played: list[EpisodeEvaluation],
    latencies: list[float],
    bar: Progress,
) -> None:
    """Play agent ``name`` in ``env`` on every seed, appending each episode and its decision latencies."""
    agent = make_agent(name, env)
    for episode_seed in seeds:
        result = play_episode(env, agent, episode_seed, deterministic=deterministic)
        played.append(
            EpisodeEvaluation(
                seed=episode_seed,
                metrics=dict(result.metrics),
                decision_latency_ms_p50=float(np.percentile(result.decision_latency_ms, 50)),
                decision_latency_ms_p99=float(np.percentile(result.decision_latency_ms, 99)),
                oracle=_oracle_episode(agent),
            )
        )
        latencies.extend(result.decision_latency_ms.tolist())
        bar.update(note=f"{name} seed {episode_seed}")


def _oracle_episode(agent: Agent) -> OracleEpisode | None:
    """The oracle's bound and plan of the episode it just played (``None`` for other agents)."""
    if not isinstance(agent, OracleAgent):
        return None
    result = agent.episode_result()
    if result.status == "decomposed":
        logger.warning(
            "oracle: %s, above the memory budget: decomposed (capacity-free bound, greedy plan with hindsight; "
            "gap %.1f %%)", result.memory_estimate.describe(), 100.0 * result.gap,
        )
    return OracleEpisode(
        lower_bound_usd=float(result.lower_bound_usd),
        plan_objective_usd=float(result.plan_objective_usd),
        solve_time_s=float(result.solve_time_s),
        proven_optimal=bool(result.proven_optimal),
    )
