"""Evaluation results, typed: one scenario, its agents, their episodes; and the results.json document.

:func:`training.evaluation.evaluator.evaluate` returns an :class:`Evaluation`; :mod:`training.evaluation.results_writer`
writes it (results.json, plots, TensorBoard) and :mod:`training.evaluation.leaderboard` prints it.
Summaries and optimality gaps are derived when asked for, never stored beside what they derive
from, so renaming or adding an agent cannot leave a stale one behind.

``results.json`` (:meth:`Evaluation.to_json`) holds ``{"scenario", "env", "episodes", "seed",
"seeds", ["split"], ["deterministic"], "agents": {NAME: {"mean": {METRIC: v}, "ci95": {METRIC:
half-width}, "per_episode": [{METRIC: v}, ...]}}, ["paired"], ["skipped": {NAME: why}],
["trained_steps"]}``. ``split`` names the protocol's seed range the seeds were drawn from
(``"validation"`` or ``"test"``: :mod:`training.evaluation.protocol`). ``paired`` compares every
agent with the reference agent seed by seed (:mod:`training.evaluation.paired`): ``{"reference",
"metric", "agents": {NAME: {"episodes", "mean_difference", "ci95", "wins", "ties", "losses"}}}``. A
per-episode row holds the env's episode metrics, ``seed``, ``decision_latency_ms_p50/p99``, for
the oracle ``objective_lower_bound_usd``, ``oracle_plan_objective_usd``, ``oracle_solve_time_s``
and ``oracle_proven_optimal``, and, when the oracle played the same seeds of the full episode
env, every agent's ``optimality_gap`` (against the oracle's lower bound) and
``optimality_gap_vs_plan`` (against its plan). On a planted scenario every row also holds
``planted_optimum_usd`` (the episode's proven optimum), ``planted_gap`` (``objective / optimum -
1``, exact), ``planted_agreement`` and ``planted_on_trajectory`` (per-step agreement with the
planted schedule: :mod:`training.evaluation.agreement`). Files without them read as before.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from training.evaluation.agreement import PlantedScore
from training.evaluation.paired import PairedDifference, paired_differences
from training.evaluation.stats import ci95_half_width

ORACLE = "oracle"
"""The agent whose per-episode bound and plan the other agents' gaps are measured against."""
EPISODE_ENV_NAME = "episode"
"""``Evaluation.env`` of the full episode env (the one where optimality gaps are defined)."""
SAMPLED_SUFFIX = "-sampled"
"""The name suffix of a trained policy evaluated by sampling its actions (a training run's evaluation)."""
GAP_KEYS = ("optimality_gap", "optimality_gap_vs_plan")
"""Per-episode gap metrics: against the oracle's lower bound, and against its plan."""
PLANTED_GAP = "planted_gap"
"""Per-episode gap to the proven optimum of a planted episode: ``objective / optimum - 1``."""
LATENCY_KEYS = ("decision_latency_ms_p50", "decision_latency_ms_p99")
"""Per-episode decision latency percentiles (ms)."""
TIMING_KEYS = (*LATENCY_KEYS, "oracle_solve_time_s")
"""Per-episode metrics that measure wall time: they vary between runs, machines and execution
backends; every other number of a results.json is fixed by the seeds."""


@dataclass(frozen=True)
class OracleEpisode:
    """The oracle's hindsight numbers for one episode (USD, seconds).

    Attributes:
        lower_bound_usd: No policy can do better on this episode.
        plan_objective_usd: The objective of the oracle's plan (what it achieves).
        solve_time_s: Wall time of the oracle's solves.
        proven_optimal: The plan meets the bound.
    """

    lower_bound_usd: float
    plan_objective_usd: float
    solve_time_s: float
    proven_optimal: bool

    KEYS: ClassVar[tuple[str, ...]] = (
        "objective_lower_bound_usd",
        "oracle_plan_objective_usd",
        "oracle_solve_time_s",
        "oracle_proven_optimal",
    )
    """Their names in a results.json row, in field order."""

    def metrics(self) -> dict[str, float]:
        """The four numbers under their results.json names (``oracle_proven_optimal`` as 0.0 / 1.0)."""
        values = (self.lower_bound_usd, self.plan_objective_usd, self.solve_time_s, float(self.proven_optimal))
        return {key: float(value) for key, value in zip(self.KEYS, values, strict=True)}


@dataclass(frozen=True)
class EpisodeEvaluation:
    """One agent's episode on one seed.

    Attributes:
        seed: The env seed.
        metrics: The env's ``info["episode_metrics"]`` of the final step.
        decision_latency_ms_p50: Median wall time of the agent's ``predict`` calls (ms).
        decision_latency_ms_p99: Their 99th percentile (ms).
        oracle: The oracle's bound and plan when the agent is the oracle, else ``None``.
        planted: On a planted scenario, the episode's optimum and the agent's agreement with
            the planted schedule, else ``None``.
    """

    seed: int
    metrics: Mapping[str, float]
    decision_latency_ms_p50: float
    decision_latency_ms_p99: float
    oracle: OracleEpisode | None = None
    planted: PlantedScore | None = None

    def row(self, gaps: Mapping[str, float] | None = None) -> dict[str, Any]:
        """The episode's results.json row, with ``gaps`` (:data:`GAP_KEYS`) appended when given.

        A planted episode's row has its :data:`PLANTED_GAP` too (derived from its optimum).
        """
        planted: dict[str, float] = {}
        if self.planted is not None:
            planted = self.planted.metrics()
            planted[PLANTED_GAP] = relative_gap(self.metrics["objective_usd"], self.planted.optimum_usd)
        return {
            **self.metrics,
            "seed": self.seed,
            **dict(zip(LATENCY_KEYS, (self.decision_latency_ms_p50, self.decision_latency_ms_p99), strict=True)),
            **(self.oracle.metrics() if self.oracle is not None else {}),
            **planted,
            **(gaps or {}),
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> EpisodeEvaluation:
        """The episode of a results.json row (gaps are dropped: they are derived again)."""
        derived = (*GAP_KEYS, PLANTED_GAP, *LATENCY_KEYS, "seed")
        rest = {key: value for key, value in row.items() if key not in derived}
        oracle = planted = None
        if all(key in rest for key in OracleEpisode.KEYS):
            bound, plan, solve_time, proven = (rest.pop(key) for key in OracleEpisode.KEYS)
            oracle = OracleEpisode(bound, plan, solve_time, proven_optimal=bool(proven))
        if all(key in rest for key in PlantedScore.KEYS):
            planted = PlantedScore(*(float(rest.pop(key)) for key in PlantedScore.KEYS))
        p50, p99 = (float(row[key]) for key in LATENCY_KEYS)
        return cls(int(row["seed"]), rest, p50, p99, oracle, planted)


@dataclass(frozen=True)
class Summary:
    """Means and 95 % CI half-widths (:func:`training.evaluation.stats.ci95_half_width`) of each per-episode metric.

    A metric missing from some episodes is summarised over those that have it; ``None`` when no
    episode has a value (mean) or fewer than two do (half-width).
    """

    mean: dict[str, float | None]
    ci95: dict[str, float | None]

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any]]) -> Summary:
        """The summary of results.json rows, metrics in name order."""
        mean: dict[str, float | None] = {}
        ci95: dict[str, float | None] = {}
        for key in sorted({key for row in rows for key in row}):
            values = np.array([row[key] for row in rows if row.get(key) is not None], dtype=float)
            mean[key] = float(values.mean()) if values.size else None
            ci95[key] = ci95_half_width(values)
        return cls(mean, ci95)


@dataclass(frozen=True)
class AgentEvaluation:
    """One agent on one scenario.

    Attributes:
        episodes: One per seed, in seed order.
        latencies_ms: Wall time of every ``predict`` call over all episodes (ms); empty for
            results read back from results.json, which keeps only the percentiles.
    """

    episodes: tuple[EpisodeEvaluation, ...]
    latencies_ms: tuple[float, ...] = ()


@dataclass(frozen=True)
class Evaluation:
    """Agents played on the same seeds of one scenario (a paired comparison).

    Attributes:
        scenario: The scenario's name.
        env: Which env the agents played (``"episode"``: the full episode env, ``"placement"``:
            the one-step placement env; see :data:`training.evaluation.evaluator.EVAL_ENVS`).
        seed: The first episode seed.
        seeds: Every episode seed, in order.
        agents: Agent name -> its results, in the order the agents were given.
        deterministic: True when learned agents took their deterministic action, False when they
            sampled, ``None`` when the agents were played both ways (a training run's evaluation).
        skipped: Agents left out, with why (an oracle too large for its memory budget).
        trained_steps: The trained model's steps (a training run's evaluation), else ``None``.
        split: The protocol's seed range holding every seed (``"validation"``, ``"test"``, ...:
            :func:`training.evaluation.protocol.split_of`), ``None`` when no range holds them all
            (or a results.json written before the protocol).
        reference: The agent every other is compared with seed by seed (:meth:`paired`);
            ``None`` = the first agent.
    """

    scenario: str
    env: str
    seed: int
    seeds: tuple[int, ...]
    agents: dict[str, AgentEvaluation]
    deterministic: bool | None = True
    skipped: dict[str, str] = field(default_factory=dict)
    trained_steps: int | None = None
    split: str | None = None
    reference: str | None = None

    @property
    def episodes(self) -> int:
        """Episodes per agent."""
        return len(self.seeds)

    def oracle_references(self) -> list[OracleEpisode] | None:
        """The oracle's bound and plan per seed, when optimality gaps are defined, else ``None``.

        Gaps are defined when the oracle played every seed of the full episode env.
        """
        oracle = self.agents.get(ORACLE)
        if self.env != EPISODE_ENV_NAME or oracle is None:
            return None
        references = [episode.oracle for episode in oracle.episodes if episode.oracle is not None]
        return references if len(references) == len(oracle.episodes) else None

    def rows(self, agent: str) -> list[dict[str, Any]]:
        """The agent's results.json rows, with optimality gaps when the oracle's references exist."""
        episodes = self.agents[agent].episodes
        references = self.oracle_references()
        if references is None:
            return [episode.row() for episode in episodes]
        return [
            episode.row(_gaps(episode.metrics["objective_usd"], reference))
            for episode, reference in zip(episodes, references, strict=True)
        ]

    def summary(self, agent: str) -> Summary:
        """Mean and CI of each of the agent's per-episode metrics (gaps included)."""
        return Summary.of(self.rows(agent))

    def paired(self) -> dict[str, PairedDifference]:
        """Every agent's ``objective_usd`` against the reference's, seed by seed (:mod:`training.evaluation.paired`).

        ``{}`` when there is one agent or none, or no objective (the placement env).

        Raises:
            training.evaluation.paired.UnpairedError: ``reference`` was not evaluated, or the
                agents played other seeds.
        """
        if len(self.agents) < 2:
            return {}
        return paired_differences({name: self.rows(name) for name in self.agents}, self.reference)

    @property
    def reference_agent(self) -> str | None:
        """The reference of :meth:`paired`: ``reference``, else the first agent (``None`` with no agents)."""
        return self.reference if self.reference is not None else next(iter(self.agents), None)

    def renamed(self, names: Mapping[str, str]) -> Evaluation:
        """The same results with the agents of ``names`` (old -> new) renamed, in the same order."""
        agents = {names.get(name, name): results for name, results in self.agents.items()}
        reference = names.get(self.reference, self.reference) if self.reference is not None else None
        return dataclasses.replace(self, agents=agents, reference=reference)

    def with_agents(self, extra: Mapping[str, AgentEvaluation]) -> Evaluation:
        """The same results with ``extra`` agents (played on the same seeds) appended."""
        for name, results in extra.items():
            if [episode.seed for episode in results.episodes] != list(self.seeds):
                raise ValueError(f"{name} played other seeds than {list(self.seeds)}; results must be paired")
        return dataclasses.replace(self, agents={**self.agents, **extra})

    def to_json(self) -> dict[str, Any]:
        """The results.json document (module docstring)."""
        document: dict[str, Any] = {
            "scenario": self.scenario,
            "env": self.env,
            "episodes": self.episodes,
            "seed": self.seed,
            "seeds": list(self.seeds),
        }
        if self.split is not None:
            document["split"] = self.split
        if self.deterministic is not None:
            document["deterministic"] = self.deterministic
        document["agents"] = {name: self._agent_json(name) for name in self.agents}
        paired = self.paired()
        if paired:
            first = next(iter(paired.values()))
            document["paired"] = {
                "reference": first.reference,
                "metric": first.metric,
                "agents": {name: difference.to_json() for name, difference in paired.items()},
            }
        if self.skipped:
            document["skipped"] = dict(self.skipped)
        if self.trained_steps is not None:
            document["trained_steps"] = self.trained_steps
        return document

    def _agent_json(self, agent: str) -> dict[str, Any]:
        rows = self.rows(agent)
        summary = Summary.of(rows)
        return {"mean": summary.mean, "ci95": summary.ci95, "per_episode": rows}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Evaluation:
        """The evaluation a results.json (or a run's eval.json) holds; latencies beyond p50/p99 are not kept.

        Raises:
            KeyError, TypeError, ValueError: Not a results.json document.
        """
        agents = {
            name: AgentEvaluation(tuple(EpisodeEvaluation.from_row(row) for row in summary["per_episode"]))
            for name, summary in document["agents"].items()
        }
        return cls(
            scenario=str(document["scenario"]),
            env=str(document.get("env", EPISODE_ENV_NAME)),
            seed=int(document["seed"]),
            seeds=tuple(int(seed) for seed in document["seeds"]),
            agents=agents,
            deterministic=document.get("deterministic"),
            skipped=dict(document.get("skipped", {})),
            trained_steps=document.get("trained_steps"),
            split=document.get("split"),
            reference=document.get("paired", {}).get("reference"),
        )


def read_evaluation(path: Path) -> Evaluation:
    """The :class:`Evaluation` in a results.json (or a training run's eval.json) file.

    Raises:
        OSError: The file cannot be read.
        ValueError, KeyError, TypeError: It is not a results.json document.
    """
    return Evaluation.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def without_timing(document: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a results.json document without the :data:`TIMING_KEYS` (rows, means and CIs).

    What two evaluations of the same agents on the same seeds must agree on exactly, wherever
    they ran.

    >>> without_timing({"agents": {"a": {"mean": {"x": 1.0, "decision_latency_ms_p50": 0.1},
    ...     "ci95": {}, "per_episode": [{"x": 1.0, "oracle_solve_time_s": 2.0}]}}})
    {'agents': {'a': {'mean': {'x': 1.0}, 'ci95': {}, 'per_episode': [{'x': 1.0}]}}}
    """
    copy = json.loads(json.dumps(dict(document), default=float))
    for agent in copy.get("agents", {}).values():
        for row in (agent["mean"], agent["ci95"], *agent["per_episode"]):
            for key in TIMING_KEYS:
                row.pop(key, None)
    return copy


def _gaps(objective_usd: float, oracle: OracleEpisode) -> dict[str, float]:
    """``optimality_gap`` against the oracle's bound and ``optimality_gap_vs_plan`` against its plan."""
    return {
        "optimality_gap": relative_gap(objective_usd, oracle.lower_bound_usd),
        "optimality_gap_vs_plan": relative_gap(objective_usd, oracle.plan_objective_usd),
    }


def relative_gap(value: float, reference: float) -> float:
    """``(value - reference) / reference``; the absolute difference when the reference is ~0.

    >>> relative_gap(1.5, 1.0), relative_gap(0.25, 0.0)
    (0.5, 0.25)
    """
    return (value - reference) / reference if abs(reference) > 1e-12 else value - reference
