"""Play agents on the suite's tasks: per task, its reference and every agent on its test seeds.

:func:`run_suite` evaluates each agent on each task's test seeds with the evaluator (so on any
execution backend, with the same numbers under each: :mod:`training.evaluation.evaluator`), takes
the task's reference from the store (computed once, then cached), and returns a :class:`SuiteRun`:
per task and agent, the objective of every test episode and its normalised score. The aggregates
are derived from it (:meth:`SuiteRun.aggregates`), never stored beside it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

import scenarios
from training.evaluation.evaluator import evaluate
from training.execution.backend import Backend
from training.suite.definition import Suite, SuiteError, SuiteTask
from training.suite.references import ReferenceStore, TaskReference
from training.suite.scores import Aggregate, aggregate, normalised, score_matrix

logger = logging.getLogger(__name__)

OBJECTIVE = "objective_usd"
"""The episode metric every task minimises (each scenario's own objective, in USD)."""
AGGREGATE_GROUPS = ("held-out", "train", "all")
"""The groups aggregates are reported over (``all``: every task played)."""


@dataclass(frozen=True)
class AgentOnTask:
    """One agent's test episodes on one task.

    Attributes:
        objectives_usd: ``(episodes,)`` objective of each test seed, in seed order.
        seconds: Wall time of the agent's episodes on the task (not compared between runs).
    """

    objectives_usd: tuple[float, ...]
    seconds: float = field(default=0.0, compare=False)


@dataclass(frozen=True)
class TaskRun:
    """One task's reference and every agent's episodes on it."""

    task: SuiteTask
    reference: TaskReference
    agents: Mapping[str, AgentOnTask]

    def scores(self, agent: str) -> np.ndarray:
        """``(episodes,)`` normalised scores of ``agent`` (:func:`training.suite.scores.normalised`)."""
        return normalised(
            np.array(self.agents[agent].objectives_usd), self.reference.baseline_mean, self.reference.one_mean
        )

    def bound_score(self) -> float:
        """The mean lower bound, normalised: no policy's mean score on the task can exceed it."""
        return float(
            normalised(np.array(self.reference.bound_mean), self.reference.baseline_mean, self.reference.one_mean)
        )


@dataclass(frozen=True)
class SuiteRun:
    """Agents played on tasks of one suite (every agent on every task, on the task's test seeds).

    Attributes:
        suite: The suite.
        agents: The agents, in the order played.
        tasks: Per task played, its reference and every agent's episodes.
        commands: The commands that played them, each ``"DATE aco-env ..."`` (several when runs were merged).
    """

    suite: Suite
    agents: tuple[str, ...]
    tasks: tuple[TaskRun, ...]
    commands: tuple[str, ...] = ()
    _aggregates: dict[str, dict[str, Aggregate]] = field(default_factory=dict, init=False, compare=False, repr=False)

    def tasks_of(self, group: str) -> tuple[TaskRun, ...]:
        """The played tasks of a group (``"all"``: every one)."""
        return tuple(run for run in self.tasks if group == "all" or run.task.group == group)

    def missing(self, agent: str, group: str = "all") -> tuple[str, ...]:
        """The tasks of ``group`` that ``agent`` did not play (it has no aggregate over the group then)."""
        return tuple(run.task.name for run in self.tasks_of(group) if agent not in run.agents)

    def aggregates(self, group: str) -> dict[str, Aggregate]:
        """The aggregates over the group's tasks of every agent that played them all; computed once.

        Empty when the group has no task played.
        """
        runs = self.tasks_of(group)
        if group not in self._aggregates and runs:
            names = [run.task.name for run in runs]
            matrices = {
                agent: score_matrix({run.task.name: run.scores(agent) for run in runs}, names)
                for agent in self.agents
                if not self.missing(agent, group)
            }
            self._aggregates[group] = aggregate(matrices)
        return self._aggregates.get(group, {})

    def merged(self, other: SuiteRun) -> SuiteRun:
        """This run with ``other``'s episodes added: on the tasks of either, in the suite's order.

        An agent may be in both runs, on different tasks (played in parts).

        Raises:
            SuiteError: An agent played a task in both runs, or the runs hold different references
                for a task.
        """
        mine, theirs = {run.task.name: run for run in self.tasks}, {run.task.name: run for run in other.tasks}
        shared = sorted(
            f"{agent} on {name}"
            for name in set(mine) & set(theirs)
            for agent in set(mine[name].agents) & set(theirs[name].agents)
        )
        if shared:
            raise SuiteError(f"cannot merge: played in both runs: {', '.join(shared)}")
        tasks = []
        for task in self.suite.tasks:
            runs = [run for run in (mine.get(task.name), theirs.get(task.name)) if run is not None]
            if not runs:
                continue
            if len({json.dumps(run.reference.to_json(), sort_keys=True) for run in runs}) > 1:
                raise SuiteError(f"cannot merge: the runs hold different references for {task.name}")
            played = {name: result for run in runs for name, result in run.agents.items()}
            tasks.append(TaskRun(task, runs[0].reference, played))
        agents = tuple(dict.fromkeys((*self.agents, *other.agents)))
        return SuiteRun(self.suite, agents, tuple(tasks), (*self.commands, *other.commands))


def run_suite(
    suite: Suite,
    agents: Sequence[str],
    tasks: Sequence[SuiteTask],
    store: ReferenceStore,
    backend: Backend | None = None,
    progress: bool = True,
    on_task: Callable[[TaskRun], None] | None = None,
    agent_modules: Sequence[str] = (),
    command: str = "",
) -> SuiteRun:
    """Every agent on every task's test seeds, with the tasks' references.

    Args:
        suite: The suite.
        agents: Registry names or ``sb3:PATH``, each once.
        tasks: The tasks to play (of ``suite``), in order.
        store: Where references are read (or computed and cached).
        backend: Where episodes run (entered), ``None`` = this process, one after another.
        progress: Show a progress bar per agent and task.
        on_task: Called with each task's results as soon as it is done (to report as it goes).
        agent_modules: Modules that register agents of their own (see :func:`training.evaluation.evaluator.evaluate`).
        command: How the run was asked for, ``"DATE aco-env ..."`` (kept in the results and on the leaderboard).

    Raises:
        training.execution.backend.UnitsFailedError: An episode failed every attempt.
        training.suite.definition.SuiteError: A reference could not be computed.
    """
    runs = []
    for task in tasks:
        reference = store.get(task, backend)
        scenario = scenarios.load(task.scenario)
        seeds = task.test_seeds
        played: dict[str, AgentOnTask] = {}
        for agent in agents:
            started = time.perf_counter()
            evaluation = evaluate(
                scenario, [agent], len(seeds), seeds[0], progress=progress, backend=backend, agent_modules=agent_modules
            )
            if agent not in evaluation.agents:
                raise SuiteError(f"{task.name}: {agent} was left out: {evaluation.skipped.get(agent)}")
            episodes = evaluation.agents[agent].episodes
            played[agent] = AgentOnTask(
                tuple(float(episode.metrics[OBJECTIVE]) for episode in episodes), time.perf_counter() - started
            )
        run = TaskRun(task, reference, played)
        runs.append(run)
        if on_task is not None:
            on_task(run)
    return SuiteRun(suite, tuple(agents), tuple(runs), (command,) if command else ())
