"""What DAG-aware schedulers rank a workflow's tasks by, per job, from the DAG and the declared durations.

Everything here is known when a workflow is submitted (its DAG and its tasks' declared run
times and requests), so online agents may read a task's features once it is in the queue.
Independent jobs are their own one-task workflows of weight 1.

Example:
    >>> from digital_twin.jobs import JobSpec
    >>> from digital_twin.workload import Workload
    >>> a = JobSpec("a", 0.0, 60.0, "batch", 2, 1, workflow="w", declared_duration_s=100.0)
    >>> b = JobSpec("b", 0.0, 30.0, "batch", 4, 1, workflow="w", parents=("a",), declared_duration_s=50.0)
    >>> jobs = Workload.of([a, b])
    >>> f = TaskFeatures.of(jobs.graph(), jobs.declared_or_true_s(), jobs.cpu_cores)
    >>> f.critical_path_s.tolist(), f.children.tolist(), f.descendants_work_core_s.tolist()
    ([150.0, 50.0], [1, 0], [200.0, 0.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from digital_twin.workflows.graph import WorkflowGraph


@dataclass(frozen=True, slots=True, eq=False)
class TaskFeatures:
    """Per job (``M`` rows, the workload's order; or a view's rows, :meth:`rows`).

    Attributes:
        is_task: ``(M,)`` bool, whether the job is a task of a workflow.
        critical_path_s: ``(M,)`` seconds: its declared duration plus the longest chain of its
            descendants' declared durations (HEFT's upward rank without communication costs).
        children: ``(M,)`` int, the tasks that wait for it directly.
        descendants_work_core_s: ``(M,)`` core-seconds its descendants declare (cores x
            declared duration, summed).
        weight: ``(M,)`` its workflow's weight (1 for an independent job).
    """

    is_task: np.ndarray
    critical_path_s: np.ndarray
    children: np.ndarray
    descendants_work_core_s: np.ndarray
    weight: np.ndarray

    @classmethod
    def of(cls, graph: WorkflowGraph | None, declared_s: np.ndarray, cpu_cores: np.ndarray) -> TaskFeatures:
        """The features of ``M`` jobs from their DAG (``None``: all independent).

        Args:
            graph: The jobs' DAG.
            declared_s: ``(M,)`` declared durations, seconds.
            cpu_cores: ``(M,)`` requested cores.
        """
        declared = np.asarray(declared_s, dtype=np.float64)
        if graph is None:
            m = len(declared)
            return cls(np.zeros(m, bool), declared, np.zeros(m, np.int64), np.zeros(m), np.ones(m))
        work = declared * cpu_cores
        below = graph.descendants()
        return cls(
            is_task=np.array([w >= 0 for w in graph.workflow_of], dtype=bool),
            critical_path_s=np.array(graph.critical_path_s(declared.tolist())),
            children=np.array([len(c) for c in graph.children], dtype=np.int64),
            descendants_work_core_s=np.array([float(work[list(d)].sum()) if d else 0.0 for d in below]),
            weight=np.array([graph.weight[w] if w >= 0 else 1.0 for w in graph.workflow_of]),
        )

    def rows(self, indices: np.ndarray) -> TaskFeatures:
        """The features of jobs ``indices`` (``(K,)`` job indices), in that order."""
        return TaskFeatures(
            self.is_task[indices], self.critical_path_s[indices], self.children[indices],
            self.descendants_work_core_s[indices], self.weight[indices],
        )  # fmt: skip
