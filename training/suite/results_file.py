"""A suite run as a JSON document (``suite.json``), and read back.

``suite.json`` holds ``{"suite", "name", "version", "env", "weak_baseline", "agents": [NAME, ...],
"commands": [what played them, with dates],
"tasks": {TASK: {"group", "scenario", "about", "seeds": [...], "reference": {the task's reference
entry (:class:`training.suite.references.TaskReference`), "describe", "baseline_mean_usd",
"reference_mean_usd", "bound_mean_usd", "one_mean_usd" (what scores 1),
"bound_score"}, "agents": {NAME: {"objective_mean_usd",
"objective_ci95_usd", "score_mean", "objectives_usd": [...], "scores": [...], "seconds"}}}},
"aggregates": {GROUP: {NAME: {METRIC: {"point", "low", "high"}}}}, "profiles": {"taus": [...],
GROUP: {NAME: {"share": [...], "low": [...], "high": [...]}}}}``. Groups are ``held-out``,
``train`` and ``all``; metrics are ``IQM``, ``median``, ``mean`` and ``optimality gap``
(:mod:`training.suite.scores`). Per-episode objectives and the references are what the rest is
derived from; :func:`read_suite_run` reads them back (to add agents to a run, or to check one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from digital_twin.atomic_files import AtomicBatch, atomic_open
from training.evaluation.stats import ci95_half_width
from training.suite.definition import Suite, SuiteError
from training.suite.references import TaskReference
from training.suite.runner import AGGREGATE_GROUPS, AgentOnTask, SuiteRun, TaskRun
from training.suite.scores import PROFILE_TAUS

SUITE_JSON = "suite.json"
"""The results file's name in a run's folder."""


def suite_run_json(run: SuiteRun) -> dict[str, Any]:
    """The whole document of :mod:`this module's <training.suite.results_file>` docstring."""
    aggregates = {group: run.aggregates(group) for group in AGGREGATE_GROUPS}
    return {
        "suite": run.suite.label,
        "name": run.suite.name,
        "version": run.suite.version,
        "env": run.suite.env,
        "weak_baseline": run.suite.weak_baseline,
        "agents": list(run.agents),
        "commands": list(run.commands),
        "tasks": {task_run.task.name: _task_json(task_run) for task_run in run.tasks},
        "aggregates": {
            group: {
                agent: {
                    metric: {"point": value.point, "low": value.low, "high": value.high}
                    for metric, value in result.intervals.items()
                }
                for agent, result in by_agent.items()
            }
            for group, by_agent in aggregates.items()
            if by_agent
        },
        "profiles": {
            "taus": PROFILE_TAUS.tolist(),
            **{
                group: {
                    agent: {
                        "share": result.profile.tolist(),
                        "low": result.profile_low.tolist(),
                        "high": result.profile_high.tolist(),
                    }
                    for agent, result in by_agent.items()
                }
                for group, by_agent in aggregates.items()
                if by_agent
            },
        },
    }


def _task_json(task_run: TaskRun) -> dict[str, Any]:
    """One task's entry: its reference, then every agent's episodes and their summary."""
    reference = task_run.reference
    agents = {}
    for agent, played in task_run.agents.items():
        objectives = np.array(played.objectives_usd)
        scores = task_run.scores(agent)
        agents[agent] = {
            "objective_mean_usd": float(objectives.mean()),
            "objective_ci95_usd": ci95_half_width(objectives),
            "score_mean": float(scores.mean()),
            "objectives_usd": objectives.tolist(),
            "scores": scores.tolist(),
            "seconds": played.seconds,
        }
    return {
        "group": task_run.task.group,
        "scenario": task_run.task.scenario,
        "about": task_run.task.about,
        "seeds": list(task_run.task.test_seeds),
        "reference": {
            **reference.to_json(),
            "describe": task_run.task.reference.describe(),
            "baseline_mean_usd": reference.baseline_mean,
            "reference_mean_usd": reference.reference_mean,
            "bound_mean_usd": reference.bound_mean,
            "one_mean_usd": reference.one_mean,
            "bound_score": task_run.bound_score(),
        },
        "agents": agents,
    }


def write_suite_run(run: SuiteRun, out_dir: Path, batch: AtomicBatch | None = None) -> Path:
    """Write ``out_dir/suite.json`` atomically (staged in ``batch`` when given); returns its path."""
    path = out_dir / SUITE_JSON
    text = json.dumps(suite_run_json(run), indent=1) + "\n"
    with batch.open(path) if batch is not None else atomic_open(path) as handle:
        handle.write(text)
    return path


def read_suite_run(path: Path, suite: Suite) -> SuiteRun:
    """A run of ``suite`` read back from its ``suite.json`` (aggregates are derived again).

    Raises:
        SuiteError: The file is not a results file of this suite and version, or names a task the
            suite does not have.
    """
    try:
        document = json.loads(path.read_text())
        label = document["suite"]
        agents = tuple(document["agents"])
        raw_tasks = document["tasks"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SuiteError(f"{path}: not a suite results file: {exc}") from None
    if label != suite.label:
        raise SuiteError(f"{path}: results of {label}, not of {suite.label}")
    runs = []
    for name, raw in raw_tasks.items():
        task = suite.task(name)
        reference_fields = {key: raw["reference"][key] for key in TaskReference.__dataclass_fields__}
        played = {
            agent: AgentOnTask(tuple(values["objectives_usd"]), values.get("seconds", 0.0))
            for agent, values in raw["agents"].items()
        }
        runs.append(TaskRun(task, TaskReference.from_json(reference_fields), played))
    return SuiteRun(suite, agents, tuple(runs), tuple(document.get("commands", ())))


def without_seconds(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of a ``suite.json`` document without wall times: what two runs of the same agents agree on.

    >>> without_seconds({"tasks": {"t": {"reference": {"seconds": 2.0, "kind": "planted"},
    ...     "agents": {"a": {"seconds": 1.0, "scores": [0.5]}}}}})
    {'tasks': {'t': {'reference': {'kind': 'planted'}, 'agents': {'a': {'scores': [0.5]}}}}}
    """
    copy = json.loads(json.dumps(document))
    for task in copy.get("tasks", {}).values():
        task["reference"].pop("seconds", None)
        for agent in task["agents"].values():
            agent.pop("seconds", None)
    return copy
