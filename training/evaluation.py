"""Agents x scenarios x seeds -> per-episode metrics, means with 95 % CIs, optimality gaps.

Every agent plays the same seeds (a paired comparison). When ``oracle`` is among the agents,
each episode's oracle lower bound (valid for every policy) and plan objective are kept, and
every agent gets ``optimality_gap`` = (objective - bound) / bound (conservative) and
``optimality_gap_vs_plan`` = (objective - plan) / plan. An oracle whose program would not fit
its memory budget is left out of the scenario's results with a note (``skipped``) instead.

The scenario is loaded once (its data read once) and each agent plays in an env built with the
deferral rule it declares (:func:`agents.agent_deferral`): the same episodes, fewer decisions
for agents that may wait until a job fits somewhere new.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from scipy import stats

import scenarios
from aco_env import ClusterSchedulingEnv, EnvConfig, PlacementEnv
from agents import agent_deferral, make_agent
from agents.oracle import OracleTooLargeError
from digital_twin.scenario import Scenario
from training.progress import Progress
from training.rollout import play_episode

logger = logging.getLogger(__name__)

ORACLE = "oracle"
HEADLINE_METRICS = (
    "objective_usd", "cost_usd", "sla_violations", "qos_compliance", "failed_jobs", "rejected_jobs",
    "completed_jobs", "optimality_gap", "optimality_gap_vs_plan", "decision_latency_ms_p50",
    "decision_latency_ms_p99",
)


@dataclass
class AgentResults:
    """One agent on one scenario: per-episode metrics and their summaries."""

    per_episode: list[dict[str, float]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """``{"mean": {...}, "ci95": {...}, "per_episode": [...]}`` (CI = t-interval half-width)."""
        keys = sorted({k for episode in self.per_episode for k in episode})
        mean, ci95 = {}, {}
        for key in keys:
            values = np.array([e[key] for e in self.per_episode if e.get(key) is not None], dtype=float)
            mean[key] = float(values.mean()) if values.size else None
            ci95[key] = _ci95(values)
        return {"mean": mean, "ci95": ci95, "per_episode": self.per_episode}


def _ci95(values: np.ndarray) -> float | None:
    if values.size < 2:
        return None
    return float(stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size))


def evaluate(
    scenario: str | Scenario,
    agents: Sequence[str],
    episodes: int,
    seed: int,
    progress: bool = True,
    placement: bool = False,
    deterministic: bool = True,
) -> dict[str, Any]:
    """Play every agent on ``episodes`` seeds ``seed, seed + 1, ...`` of one scenario.

    Args:
        scenario: Bundled name, YAML path or a loaded scenario.
        agents: Registry names or ``sb3:PATH``.
        episodes: Episodes per agent (>= 1).
        seed: First episode seed.
        progress: Show progress (a bar on a terminal, else one summary line).
        placement: Evaluate on the one-step placement env (optimality rate and regret).
        deterministic: False makes learned agents sample actions from their policy (seeded per
            episode) instead of taking the most likely one; heuristics are unaffected.

    Returns:
        The ``results.json`` document for this scenario (see :mod:`training.commands.evaluate`);
        ``document["skipped"]`` maps agents left out (an oracle too large to solve) to why.
    """
    if episodes < 1:
        raise ValueError("episodes must be >= 1")
    loaded = scenarios.load(scenario)
    seeds = [seed + k for k in range(episodes)]
    results = {name: AgentResults() for name in agents}
    skipped: dict[str, str] = {}
    with Progress(len(agents) * episodes, f"evaluate {loaded.name}", "episode", enabled=progress) as bar:
        for name in agents:
            try:
                _play_agent(loaded, name, seeds, results[name], bar, placement, deterministic)
            except OracleTooLargeError as exc:  # every seed or none: gaps need the oracle on each
                played = len(results.pop(name).per_episode)
                logger.warning("%s: %s left out of the evaluation: %s", loaded.name, name, exc)
                skipped[name] = str(exc)
                bar.update(episodes - played)
    if ORACLE in results and not placement:
        _add_gaps(results, results[ORACLE].per_episode)
    document = {
        "scenario": loaded.name,
        "env": "placement" if placement else "episode",
        "episodes": episodes,
        "seed": seed,
        "seeds": seeds,
        "deterministic": deterministic,
        "agents": {name: r.summary() for name, r in results.items()},
    }
    if skipped:
        document["skipped"] = skipped
    document["_latencies_ms"] = {name: r.latencies_ms for name, r in results.items()}
    return document


def _play_agent(
    scenario: Scenario,
    name: str,
    seeds: list[int],
    results: AgentResults,
    bar: Progress,
    placement: bool,
    deterministic: bool,
) -> None:
    """Play agent ``name`` on every seed, appending each episode's metrics to ``results``."""
    env: gym.Env = (
        PlacementEnv(scenario) if placement
        else ClusterSchedulingEnv(scenario, config=EnvConfig(deferral=agent_deferral(name)))
    )
    agent = make_agent(name, env)
    for episode_seed in seeds:
        result = play_episode(env, agent, episode_seed, deterministic=deterministic)
        metrics = dict(result.metrics)
        metrics["seed"] = episode_seed
        metrics["decision_latency_ms_p50"] = float(np.percentile(result.decision_latency_ms, 50))
        metrics["decision_latency_ms_p99"] = float(np.percentile(result.decision_latency_ms, 99))
        oracle_result = getattr(agent, "last_result", None)
        if oracle_result is not None:
            metrics["objective_lower_bound_usd"] = float(oracle_result.lower_bound_usd)
            metrics["oracle_plan_objective_usd"] = float(oracle_result.plan_objective_usd)
            metrics["oracle_solve_time_s"] = float(oracle_result.solve_time_s)
            metrics["oracle_proven_optimal"] = float(oracle_result.proven_optimal)
        results.per_episode.append(metrics)
        results.latencies_ms.extend(result.decision_latency_ms.tolist())
        bar.update(note=f"{name} seed {episode_seed}")


def with_optimality_gaps(summary: dict[str, Any], oracle_summary: dict[str, Any]) -> dict[str, Any]:
    """An agent's summary (from another evaluation on the same seeds) with gaps to this oracle."""
    results = AgentResults(per_episode=[dict(e) for e in summary["per_episode"]])
    _add_gaps({"agent": results}, oracle_summary["per_episode"])
    return results.summary()


def _add_gaps(results: dict[str, AgentResults], oracle_episodes: list[dict[str, float]]) -> None:
    """Per-episode optimality gaps against the oracle's bound and plan (same seeds)."""
    for agent_results in results.values():
        for episode, oracle_episode in zip(agent_results.per_episode, oracle_episodes, strict=True):
            bound = oracle_episode["objective_lower_bound_usd"]
            plan = oracle_episode["oracle_plan_objective_usd"]
            episode["optimality_gap"] = _relative_gap(episode["objective_usd"], bound)
            episode["optimality_gap_vs_plan"] = _relative_gap(episode["objective_usd"], plan)


def _relative_gap(value: float, reference: float) -> float:
    """``(value - reference) / reference`` (absolute difference when the reference is ~0)."""
    return (value - reference) / reference if abs(reference) > 1e-12 else value - reference

