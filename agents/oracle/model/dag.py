"""The episode's workflows as the oracle's programs read them: precedence and the workflow terms.

A workflow task is released (submitted to the scheduler) at the later of its own arrival and its
last parent's completion (:mod:`digital_twin.sim.tables.workflow_events`). The programs keep the
tasks' options and add, per edge and per workflow, rows over them
(:mod:`agents.oracle.milp.workflow_rows`); the per-option terms judged from a job's release (wait,
lost utility) are charged from the latest release a start allows
(:func:`agents.oracle.model.release.release_floor_s`).

Example:
    >>> from digital_twin.workload import Workload
    >>> from digital_twin import JobSpec
    >>> jobs = Workload.of([JobSpec("a", 0.0, 60.0, "batch", 1, 1, workflow="w"),
    ...                     JobSpec("b", 0.0, 60.0, "batch", 1, 1, workflow="w", parents=("a",)),
    ...                     JobSpec("x", 5.0, 60.0, "batch", 1, 1)])
    >>> dag = oracle_dag(jobs, horizon_s=3600.0)
    >>> dag.has_parents.tolist(), dag.edges, dag.counted.tolist()
    ([False, True, False], ((0, 1),), [True])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from digital_twin.sim.tables.workflow_events import WorkflowTables
from digital_twin.workload import Workload


@dataclass(frozen=True, eq=False)
class OracleDag:
    """The DAG of an episode's ``J`` jobs in ``W`` workflows (independent jobs belong to none).

    Attributes:
        has_parents: ``(J,)`` bool, the job is a task released by its parents' completions.
        parents: Per job, its parents' job indices (empty for roots and independent jobs).
        order: Every task's job index, parents first (the workflow graph's topological order).
        edges: ``(parent, child)`` job index pairs, in child order.
        workflow_of: ``(J,)`` int64 workflow index of each job, ``-1`` for an independent job.
        tasks: Per workflow, its job indices.
        submitted_s: ``(W,)`` each workflow's submission, the least arrival of its tasks, seconds.
        weight: ``(W,)`` the weight of its hours in the ``workflow`` term.
        deadline_s: ``(W,)`` its latest completion, seconds (``inf``: none).
        counted: ``(W,)`` bool, submitted before the horizon (a later workflow counts nothing).
    """

    has_parents: np.ndarray
    parents: tuple[tuple[int, ...], ...]
    order: tuple[int, ...]
    edges: tuple[tuple[int, int], ...]
    workflow_of: np.ndarray
    tasks: tuple[tuple[int, ...], ...]
    submitted_s: np.ndarray
    weight: np.ndarray
    deadline_s: np.ndarray
    counted: np.ndarray

    @property
    def n_workflows(self) -> int:
        """``W``."""
        return len(self.tasks)

    def parents_first(self) -> list[int]:
        """Every job index, the independent ones in index order, then the tasks parents first."""
        return [int(j) for j in np.flatnonzero(self.workflow_of < 0)] + list(self.order)


def oracle_dag(jobs: Workload, horizon_s: float) -> OracleDag | None:
    """The DAG of ``jobs`` (``None`` when no job is a workflow task)."""
    graph = jobs.graph()
    if graph is None:
        return None
    tables = WorkflowTables.of(graph, [float(a) for a in jobs.arrival_s])
    submitted = np.array(tables.submitted_s, dtype=np.float64)
    return OracleDag(
        has_parents=np.array([n > 0 for n in tables.n_parents], dtype=bool),
        parents=tuple(tuple(p) for p in tables.parents),
        order=tuple(graph.order),
        edges=tuple((p, c) for c, parents in enumerate(tables.parents) for p in parents),
        workflow_of=np.array(tables.workflow_of, dtype=np.int64),
        tasks=tuple(tuple(t) for t in graph.tasks),
        submitted_s=submitted,
        weight=np.array(tables.weight, dtype=np.float64),
        deadline_s=np.array([math.inf if d is None else d for d in tables.deadline_s], dtype=np.float64),
        counted=submitted < horizon_s,
    )


def earliest_releases_s(dag: OracleDag, arrival_s: np.ndarray, duration_s: np.ndarray) -> np.ndarray:
    """``(J,)`` the earliest each job can be released, seconds: ``r(j) = max(a_j, max over parents p of r(p) + d_p)``.

    A parent completes no earlier than its release plus its nominal duration (a run starts at
    or after the release, and contention and interference only lengthen it), and a task is
    released no earlier than its arrival and its last parent's completion. Independent jobs
    and roots: their arrival.
    """
    release = np.array(arrival_s, dtype=np.float64)
    for j in dag.order:
        for p in dag.parents[j]:
            release[j] = max(release[j], release[p] + float(duration_s[p]))
    return release
