"""The DAG of a workload's tasks: checked once, then held by job index for the twin and the agents.

:func:`check_workflows` is the workload's check (every parent is a job of the workload and of
the same workflow; no cycle, found with networkx); :class:`WorkflowGraph` is the checked DAG by
job index (the workload's arrival order), with each workflow's attributes and the quantities
DAG-aware schedulers rank tasks by (critical path to an exit, children, descendants' work).

Example:
    >>> from digital_twin.jobs import JobSpec
    >>> a = JobSpec("a", 0.0, 60.0, "batch", 1, 1, workflow="w")
    >>> b = JobSpec("b", 0.0, 30.0, "batch", 1, 1, workflow="w", parents=("a",))
    >>> g = WorkflowGraph.build([a, b], {})
    >>> g.parents, g.children, g.critical_path_s([60.0, 30.0])
    ([(), (0,)], [(1,), ()], [90.0, 30.0])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import networkx as nx

from digital_twin.errors import SpecError, short_repr
from digital_twin.jobs import JobSpec
from digital_twin.workflows.spec import WorkflowSpec


def check_workflows(jobs: Sequence[JobSpec], workflows: Mapping[str, WorkflowSpec]) -> None:
    """Check the tasks' dependencies; raise :class:`SpecError` naming the job or the cycle.

    Every parent must be a job of ``jobs`` in the same workflow that arrives no later than the
    task (a task is submitted after its parents anyway; this keeps every parent of an arrived
    task known), and each workflow's tasks must form a DAG. ``workflows`` may describe
    workflows with no task here (they are unused); its keys must be the specs' ids.
    """
    for key, spec in workflows.items():
        if key != spec.workflow_id:
            raise SpecError(f"workflow {short_repr(key)} is described under the id {short_repr(spec.workflow_id)}")
    workflow_of = {job.job_id: job.workflow for job in jobs}
    arrival_of = {job.job_id: job.arrival_s for job in jobs}
    graph = nx.DiGraph()
    for job in jobs:
        for parent in job.parents:
            if parent not in workflow_of:
                raise SpecError(f"job {short_repr(job.job_id)}: parent {short_repr(parent)} is not in the workload")
            if workflow_of[parent] != job.workflow:
                raise SpecError(
                    f"job {short_repr(job.job_id)} (workflow {short_repr(job.workflow)}): parent "
                    f"{short_repr(parent)} is a task of workflow {short_repr(workflow_of[parent])}"
                )
            if arrival_of[parent] > job.arrival_s:
                raise SpecError(
                    f"job {short_repr(job.job_id)} arrives at {job.arrival_s:g} s, before its parent "
                    f"{short_repr(parent)} ({arrival_of[parent]:g} s)"
                )
            graph.add_edge(parent, job.job_id)
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return
    path = " -> ".join([*(edge[0] for edge in cycle), cycle[0][0]])
    raise SpecError(f"workflow {short_repr(workflow_of[cycle[0][0]])} has a cycle: {path}")


def kept_with_parents(parents: Sequence[tuple[str, ...]], job_ids: Sequence[str], n: int) -> list[int]:
    """The indices ``< n`` of the jobs whose ancestors are all among the first ``n`` (a cut workload's DAG).

    Args:
        parents: Each job's parent ids, in workload order.
        job_ids: The jobs' ids, in workload order.
        n: How many jobs are kept before the DAG is trimmed.
    """
    keep = list(range(min(n, len(job_ids))))
    while True:
        kept = {job_ids[j] for j in keep}
        orphans = {j for j in keep if any(p not in kept for p in parents[j])}
        if not orphans:
            return keep
        keep = [j for j in keep if j not in orphans]


@dataclass(frozen=True, slots=True)
class WorkflowGraph:
    """A checked DAG by job index (the workload's order); build it with :meth:`build`.

    Attributes:
        parents: ``(n_jobs,)`` tuples of parent job indices (``()`` for a root or an independent job).
        children: ``(n_jobs,)`` tuples of child job indices.
        workflow_of: ``(n_jobs,)`` each job's workflow index, -1 for an independent job.
        workflow_ids: ``(n_workflows,)`` ids, in order of each workflow's first task.
        tasks: ``(n_workflows,)`` tuples of each workflow's job indices, ascending.
        weight: ``(n_workflows,)`` weights (1 where the workload describes none).
        deadline_s: ``(n_workflows,)`` deadlines in seconds from the episode start, ``None`` for none.
        order: Every task's job index in a topological order (parents first; ties by index).
    """

    parents: list[tuple[int, ...]]
    children: list[tuple[int, ...]]
    workflow_of: list[int]
    workflow_ids: list[str]
    tasks: list[tuple[int, ...]]
    weight: list[float]
    deadline_s: list[float | None]
    order: list[int]

    @classmethod
    def build(cls, jobs: Sequence[JobSpec], workflows: Mapping[str, WorkflowSpec]) -> WorkflowGraph:
        """The graph of ``jobs`` (checked with :func:`check_workflows`), workflows described by ``workflows``."""
        check_workflows(jobs, workflows)
        index = {job.job_id: j for j, job in enumerate(jobs)}
        workflow_index: dict[str, int] = {}
        workflow_of = []
        for job in jobs:
            if job.workflow is not None and job.workflow not in workflow_index:
                workflow_index[job.workflow] = len(workflow_index)
            workflow_of.append(-1 if job.workflow is None else workflow_index[job.workflow])
        parents = [tuple(sorted(index[p] for p in job.parents)) for job in jobs]
        children: list[list[int]] = [[] for _ in jobs]
        for j, mine in enumerate(parents):
            for p in mine:
                children[p].append(j)
        tasks: list[list[int]] = [[] for _ in workflow_index]
        for j, w in enumerate(workflow_of):
            if w >= 0:
                tasks[w].append(j)
        ids = list(workflow_index)
        specs = [workflows.get(w, WorkflowSpec(w)) for w in ids]
        dag = nx.DiGraph()
        dag.add_nodes_from(j for j, w in enumerate(workflow_of) if w >= 0)
        dag.add_edges_from((p, j) for j, mine in enumerate(parents) for p in mine)
        return cls(
            parents=parents,
            children=[tuple(c) for c in children],
            workflow_of=workflow_of,
            workflow_ids=ids,
            tasks=[tuple(t) for t in tasks],
            weight=[float(s.weight) for s in specs],
            deadline_s=[None if s.deadline_s is None else float(s.deadline_s) for s in specs],
            order=list(nx.lexicographical_topological_sort(dag)),
        )

    @property
    def n_workflows(self) -> int:
        """How many workflows have a task in the workload."""
        return len(self.workflow_ids)

    def critical_path_s(self, duration_s: Sequence[float]) -> list[float]:
        """``(n_jobs,)`` seconds: each job's duration plus its longest chain of descendants' durations.

        HEFT's upward rank without communication costs: the least time from the job's start to
        its workflow's end. An independent job's is its own duration.
        """
        rank = [float(d) for d in duration_s]
        for j in reversed(self.order):
            if self.children[j]:
                rank[j] = float(duration_s[j]) + max(rank[c] for c in self.children[j])
        return rank

    def descendants(self) -> list[frozenset[int]]:
        """``(n_jobs,)`` each job's descendants (children, their children, ...), as job indices."""
        below: list[frozenset[int]] = [frozenset() for _ in self.parents]
        for j in reversed(self.order):
            below[j] = frozenset().union(*(below[c] | {c} for c in self.children[j]))
        return below
