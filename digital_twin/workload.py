"""A workload: jobs sorted by arrival, held as columns, with each :class:`JobSpec` made on demand.

The twin and the observation encoder read a few numbers per job (arrival, size, duration...).
A synthetic workload is drawn afresh at every env reset, and building a frozen, validated
``JobSpec`` for each of its jobs costs more than the rest of the draw; most episodes never look
at most of them (an agent reads the current job, the oracle reads them all). So a
:class:`Workload` keeps the columns and builds a job's ``JobSpec`` the first time it is asked
for, then keeps it.

A ``Workload`` behaves as a tuple of ``JobSpec``: ``len``, indexing (negative too), slicing (a
tuple), iteration, ``==`` with any tuple, list or workload of equal jobs, and hashing.

Example:
    >>> from digital_twin.jobs import JobSpec
    >>> w = Workload.of([JobSpec("b", 5.0, 60.0, "batch", 2, 4), JobSpec("a", 1.0, 30.0, "stream", 1, 2)])
    >>> [job.job_id for job in w], w.arrival_s.tolist()
    (['a', 'b'], [1.0, 5.0])
    >>> w == (w[0], w[1])
    True
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.jobs import WORKLOAD_TYPES, JobSpec, check_unique_ids, validate_workload
from digital_twin.workflows import WorkflowGraph, WorkflowSpec, check_workflows
from digital_twin.workflows.graph import kept_with_parents
from digital_twin.workflows.spec import workflows_by_id
from digital_twin.workflows.task_features import TaskFeatures
from digital_twin.workload_columns import check_columns, frozen_copy, frozen_in_place

_ARRAY_COLUMNS = (
    "arrival_s", "duration_s", "cpu_cores", "mem_gb", "gpu_count", "gpu_vram_gb", "priority", "preemptible",
    "deadline_s", "workload_index", "declared_duration_s",
)  # fmt: skip
"""The columns held as arrays."""
_LIST_COLUMNS = ("job_ids", "allowed_gpu_models", "required_arch", "workflow", "parents")
"""The columns held as lists."""
_NUMERIC_FIELDS = ("cpu_cores", "mem_gb", "gpu_count", "gpu_vram_gb", "priority", "duration_s", "arrival_s")


class Workload(Sequence[JobSpec]):
    """Jobs sorted by arrival (ties keep their order), job ids unique; immutable.

    Build one with :meth:`of` (from ``JobSpec`` objects) or :meth:`from_columns` (from arrays,
    as the synthetic generator does). The columns are read-only numpy arrays, one entry per
    job in workload order:

    Attributes:
        job_ids: ``list[str]``.
        arrival_s, duration_s, cpu_cores, mem_gb, gpu_vram_gb: ``(n,)`` float64.
        gpu_count, priority: ``(n,)`` int64.
        preemptible: ``(n,)`` bool.
        deadline_s: ``(n,)`` float64, NaN for jobs without a deadline.
        declared_duration_s: ``(n,)`` float64 seconds, the run time each submitter declared;
            NaN where the source declared none (a scenario fills them all:
            :mod:`digital_twin.declared_durations`). :meth:`declared_or_true_s` reads it with
            the true duration in the gaps.
        workload_index: ``(n,)`` int64 index into ``WORKLOAD_TYPES``.
        allowed_gpu_models, required_arch: ``list`` of the jobs' values (``None`` entries = any).
        workflow, parents: ``list`` of the jobs' workflow ids (``None``: independent) and parent
            job ids (``()``: none).
        workflows: ``dict`` workflow id -> :class:`~digital_twin.workflows.WorkflowSpec` for the
            workflows described (a workflow of the jobs that is not described has weight 1 and
            no deadline); empty for a workload of independent jobs.
    """

    def __init__(self, columns: dict[str, Any], jobs: list[JobSpec | None], copy: bool = True) -> None:
        _frozen = frozen_copy if copy else frozen_in_place
        self.job_ids: list[str] = columns["job_ids"]
        self.arrival_s: np.ndarray = _frozen(columns["arrival_s"], np.float64)
        self.duration_s: np.ndarray = _frozen(columns["duration_s"], np.float64)
        self.cpu_cores: np.ndarray = _frozen(columns["cpu_cores"], np.float64)
        self.mem_gb: np.ndarray = _frozen(columns["mem_gb"], np.float64)
        self.gpu_count: np.ndarray = _frozen(columns["gpu_count"], np.int64)
        self.gpu_vram_gb: np.ndarray = _frozen(columns["gpu_vram_gb"], np.float64)
        self.priority: np.ndarray = _frozen(columns["priority"], np.int64)
        self.preemptible: np.ndarray = _frozen(columns["preemptible"], np.bool_)
        self.deadline_s: np.ndarray = _frozen(columns["deadline_s"], np.float64)
        self.workload_index: np.ndarray = _frozen(columns["workload_index"], np.int64)
        self.declared_duration_s: np.ndarray = _frozen(columns["declared_duration_s"], np.float64)
        self.allowed_gpu_models: list[tuple[str, ...] | None] = columns["allowed_gpu_models"]
        self.required_arch: list[str | None] = columns["required_arch"]
        self.workflow: list[str | None] = columns["workflow"]
        self.parents: list[tuple[str, ...]] = columns["parents"]
        self.workflows: dict[str, WorkflowSpec] = columns.get("workflows", {})
        self._jobs = jobs  # JobSpec per job, None until first asked for
        self._forget_derived()

    def _forget_derived(self) -> None:
        """Empty the caches of what the columns give (each filled when first asked for)."""
        self._graph: WorkflowGraph | None = None  # graph()
        self._has_workflows: bool | None = None  # has_workflows
        self._task_features: TaskFeatures | None = None  # task_features()
        self._values: list[list[Any]] | None = None  # the columns as Python lists, for _make()
        self._deadlines: list[float | None] | None = None  # deadlines() (never handed out)

    # ------------------------------------------------------------------ construction
    @classmethod
    def of(cls, jobs: Iterable[JobSpec], workflows: Iterable[WorkflowSpec] = ()) -> Workload:
        """The workload of existing jobs (sorted by arrival, stable), with the workflows they form.

        Raises:
            SpecError: A duplicate id, or a bad DAG (:func:`~digital_twin.workflows.check_workflows`).
        """
        described = workflows_by_id(workflows)
        if isinstance(jobs, Workload) and not described:
            return jobs
        ordered = validate_workload(jobs)
        if described or any(job.workflow is not None for job in ordered):
            check_workflows(ordered, described)
        n = len(ordered)
        numeric = np.array([[getattr(j, name) for name in _NUMERIC_FIELDS] for j in ordered], dtype=np.float64)
        numeric = numeric.reshape(n, len(_NUMERIC_FIELDS))
        cpu, mem, gpus, vram, priority, duration, arrival = numeric.T
        columns = {
            "job_ids": [j.job_id for j in ordered],
            "arrival_s": arrival,
            "duration_s": duration,
            "cpu_cores": cpu,
            "mem_gb": mem,
            "gpu_count": gpus.astype(np.int64),
            "gpu_vram_gb": vram,
            "priority": priority.astype(np.int64),
            "preemptible": np.array([j.preemptible for j in ordered], dtype=np.bool_),
            "deadline_s": np.array([math.nan if j.deadline_s is None else j.deadline_s for j in ordered]),
            "workload_index": np.array([WORKLOAD_TYPES.index(j.workload) for j in ordered], dtype=np.int64),
            "declared_duration_s": np.array(
                [math.nan if j.declared_duration_s is None else j.declared_duration_s for j in ordered],
                dtype=np.float64,
            ),
            "allowed_gpu_models": [j.allowed_gpu_models for j in ordered],
            "required_arch": [j.required_arch for j in ordered],
            "workflow": [j.workflow for j in ordered],
            "parents": [j.parents for j in ordered],
            "workflows": described,
        }
        return cls(columns, list(ordered))

    @classmethod
    def from_columns(
        cls,
        job_ids: list[str],
        arrival_s: np.ndarray,
        duration_s: np.ndarray,
        workload_index: np.ndarray,
        cpu_cores: np.ndarray,
        mem_gb: np.ndarray,
        gpu_count: np.ndarray,
        gpu_vram_gb: np.ndarray,
        priority: np.ndarray,
        preemptible: np.ndarray,
        deadline_s: np.ndarray,
        declared_duration_s: np.ndarray | None = None,
    ) -> Workload:
        """A workload from one array per field (no GPU model or arch constraints).

        Checked as :class:`JobSpec` checks one job, all at once: the error names the first bad
        job and field. ``arrival_s`` must already be sorted; ``deadline_s`` is NaN for none;
        ``declared_duration_s`` is NaN for none (``None``: no job declares one).

        Raises:
            SpecError: Mismatched lengths, unsorted arrivals, a duplicate id or a bad value.
        """
        n = len(job_ids)
        if declared_duration_s is None:
            declared_duration_s = np.full(n, math.nan)
        arrays = {
            "arrival_s": arrival_s, "duration_s": duration_s, "workload_index": workload_index,
            "cpu_cores": cpu_cores, "mem_gb": mem_gb, "gpu_count": gpu_count, "gpu_vram_gb": gpu_vram_gb,
            "priority": priority, "preemptible": preemptible, "deadline_s": deadline_s,
            "declared_duration_s": declared_duration_s,
        }
        check_columns(job_ids, arrays)
        return cls.from_valid_columns(job_ids, **{name: np.array(values) for name, values in arrays.items()})

    @classmethod
    def from_valid_columns(
        cls, job_ids: list[str], arrival_s: np.ndarray, duration_s: np.ndarray, workload_index: np.ndarray,
        cpu_cores: np.ndarray, mem_gb: np.ndarray, gpu_count: np.ndarray, gpu_vram_gb: np.ndarray,
        priority: np.ndarray, preemptible: np.ndarray, deadline_s: np.ndarray,
        declared_duration_s: np.ndarray | None = None,
    ) -> Workload:  # fmt: skip
        """:meth:`from_columns` without its checks, for columns that are valid by construction.

        The synthetic generator's columns are valid by how they are drawn at every reset
        (:func:`digital_twin.workloads.synthetic.generate_jobs` says why; a test checks it), and
        checking them again cost more than drawing them. Columns from elsewhere go through
        :meth:`from_columns`. The arrays become the columns, made read-only, not copied (pass
        new arrays); ``declared_duration_s`` ``None``: no job declares a duration (NaN).
        """
        n = len(job_ids)
        if declared_duration_s is None:
            declared_duration_s = np.full(n, math.nan)
        no_constraint: list[Any] = [None] * n
        columns: dict[str, Any] = {
            "job_ids": list(job_ids), "arrival_s": arrival_s, "duration_s": duration_s,
            "workload_index": workload_index, "cpu_cores": cpu_cores, "mem_gb": mem_gb, "gpu_count": gpu_count,
            "gpu_vram_gb": gpu_vram_gb, "priority": priority, "preemptible": preemptible, "deadline_s": deadline_s,
            "declared_duration_s": declared_duration_s,
            "allowed_gpu_models": no_constraint, "required_arch": no_constraint, "workflow": no_constraint,
            "parents": [()] * n,
        }
        return cls(columns, [None] * n, copy=False)

    def with_declared_durations(self, declared_duration_s: np.ndarray) -> Workload:
        """This workload with its ``declared_duration_s`` column replaced (the other columns shared).

        Args:
            declared_duration_s: ``(n,)`` seconds per job, each finite and > 0, or NaN for none.

        Raises:
            SpecError: A wrong shape, or a value that is neither NaN nor finite and > 0 (names the job).
        """
        declared = np.array(declared_duration_s, dtype=np.float64)
        if declared.shape != (len(self),):
            raise SpecError(f"declared_duration_s has shape {declared.shape}, expected ({len(self)},)")
        bad = ~(np.isnan(declared) | (np.isfinite(declared) & (declared > 0)))
        if bad.any():
            j = int(np.argmax(bad))
            raise SpecError(
                f"job {self.job_ids[j]!r}: declared_duration_s must be a finite number > 0, got {declared[j]!r}"
            )
        declared.flags.writeable = False
        replaced = object.__new__(Workload)  # every other column is read-only: shared, not checked again
        replaced.__dict__.update(self.__dict__, declared_duration_s=declared, _jobs=[None] * len(self))
        replaced._forget_derived()
        return replaced

    def declared_or_true_s(self) -> np.ndarray:
        """``(n,)`` float64 seconds: each job's declared duration, its true ``duration_s`` where none is declared.

        A new (writable) array. Once a scenario has filled the declarations it equals
        ``declared_duration_s``.
        """
        return np.where(np.isnan(self.declared_duration_s), self.duration_s, self.declared_duration_s)

    # ------------------------------------------------------------------ tuple behaviour
    def __len__(self) -> int:
        return len(self._jobs)

    @overload
    def __getitem__(self, index: int) -> JobSpec: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[JobSpec, ...]: ...

    def __getitem__(self, index: int | slice) -> JobSpec | tuple[JobSpec, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        i = operator.index(index)
        if i < 0:
            i += len(self._jobs)
        if not 0 <= i < len(self._jobs):
            raise IndexError(f"job index {index} out of range for {len(self._jobs)} jobs")
        job = self._jobs[i]
        if job is None:
            job = self._jobs[i] = self._make(i)
        return job

    def __iter__(self) -> Iterator[JobSpec]:
        return (self[i] for i in range(len(self._jobs)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Workload | tuple | list):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Workload({len(self)} jobs)"

    def head(self, n: int) -> Workload:
        """The first ``n`` jobs (this workload when ``n >= len``), cut from the columns: no job is built again.

        A task whose parent is cut off is dropped too (with its descendants): the workflow's
        remaining tasks form a DAG of their own.
        """
        if n >= len(self):
            return self
        if self.has_workflows:
            return self.take(kept_with_parents(self.parents, self.job_ids, n))
        columns: dict[str, Any] = {name: getattr(self, name)[:n] for name in _ARRAY_COLUMNS}  # read-only views
        columns.update({name: getattr(self, name)[:n] for name in _LIST_COLUMNS})
        return Workload(columns, self._jobs[:n], copy=False)

    def then(self, later: Workload) -> Workload:
        """This workload followed by ``later``, whose jobs arrive at or after this one's last.

        The columns are joined and the ``JobSpec`` s already built are kept: no job is built or
        checked again (a forecast appends a few jobs to thousands at every decision).

        Raises:
            SpecError: A job of ``later`` arrives before this workload's last job, or reuses an id.
        """
        if not len(later):
            return self
        if len(self) and later.arrival_s[0] < self.arrival_s[-1]:
            raise SpecError(
                f"job {later.job_ids[0]!r} arrives at {later.arrival_s[0]:g} s, before the last job "
                f"{self.job_ids[-1]!r} ({self.arrival_s[-1]:g} s)"
            )
        job_ids = self.job_ids + later.job_ids
        if len(set(job_ids)) < len(job_ids):
            check_unique_ids(job_ids)
        columns: dict[str, Any] = {
            name: np.concatenate((getattr(self, name), getattr(later, name))) for name in _ARRAY_COLUMNS
        }
        columns.update({name: getattr(self, name) + getattr(later, name) for name in _LIST_COLUMNS})
        columns["workflows"] = {**self.workflows, **later.workflows}
        joined = Workload(columns, self._jobs + later._jobs, copy=False)
        if later.has_workflows:
            check_workflows(joined, joined.workflows)
        return joined

    def take(
        self, indices: Sequence[int] | np.ndarray, duration_s: Sequence[float] | np.ndarray | None = None
    ) -> Workload:
        """The jobs at ``indices`` (in arrival order) as a workload of their own, every column copied.

        Unlike :meth:`head` and :meth:`select`, which read this workload's columns, nothing of
        the result refers to this workload: handing it out hands out these jobs and no others.
        A task keeps the parents taken with it only (e.g. a queue's tasks, whose parents have
        completed, become roots).

        Args:
            indices: Job indices, ascending (the result keeps arrival order).
            duration_s: ``(len(indices),)`` durations that replace the jobs' (e.g. what is
                known of them online); ``None`` keeps theirs and shares the ``JobSpec`` s already built.
        """
        index = np.asarray(indices, dtype=np.int64)
        columns: dict[str, Any] = {name: getattr(self, name)[index] for name in _ARRAY_COLUMNS}  # copies
        picked = index.tolist()
        columns.update({name: [getattr(self, name)[i] for i in picked] for name in _LIST_COLUMNS})
        cut = False
        if self.has_workflows:
            kept = set(columns["job_ids"])
            parents = [tuple(p for p in mine if p in kept) for mine in columns["parents"]]
            cut, columns["parents"], taken = parents != columns["parents"], parents, set(columns["workflow"])
            columns["workflows"] = {w: spec for w, spec in self.workflows.items() if w in taken}
        if duration_s is None:
            return Workload(columns, [None] * len(picked) if cut else [self._jobs[i] for i in picked], copy=False)
        if np.shape(duration_s) != index.shape:
            raise ValueError(f"duration_s has shape {np.shape(duration_s)}, expected {index.shape}")
        columns["duration_s"] = np.array(duration_s, dtype=np.float64)
        return Workload(columns, [None] * len(picked), copy=False)

    def deadlines(self) -> list[float | None]:
        """Each job's ``deadline_s`` as in its ``JobSpec`` (``None`` = no deadline), in a new list."""
        if self._deadlines is None:  # computed once: the twin and the observation encoder both ask
            self._deadlines = [None if d != d else d for d in self.deadline_s.tolist()]  # d != d: d is NaN
        return self._deadlines.copy()

    @property
    def has_workflows(self) -> bool:
        """Whether a job is a task of a workflow, or a workflow is described (computed once)."""
        if self._has_workflows is None:
            self._has_workflows = bool(self.workflows) or any(w is not None for w in self.workflow)
        return self._has_workflows

    def task_features(self) -> TaskFeatures:
        """What DAG-aware schedulers rank the jobs by (:class:`TaskFeatures`; computed once)."""
        if self._task_features is None:
            self._task_features = TaskFeatures.of(self.graph(), self.declared_or_true_s(), self.cpu_cores)
        return self._task_features

    def graph(self) -> WorkflowGraph | None:
        """The DAG of the workload's tasks by job index (built once), ``None`` when no job is a task."""
        if self._graph is None and self.has_workflows:
            self._graph = WorkflowGraph.build(self, self.workflows)
        return self._graph

    # ------------------------------------------------------------------ internals
    def _make(self, i: int) -> JobSpec:
        if self._values is None:
            self._values = [
                self.job_ids, self.arrival_s.tolist(), self.duration_s.tolist(),
                [WORKLOAD_TYPES[w] for w in self.workload_index.tolist()], self.cpu_cores.tolist(),
                self.mem_gb.tolist(), self.gpu_count.tolist(), self.gpu_vram_gb.tolist(),
                self.allowed_gpu_models, self.required_arch, self.priority.tolist(),
                self.preemptible.tolist(), self.deadlines(),
                [None if d != d else d for d in self.declared_duration_s.tolist()],  # d != d: d is NaN
                self.workflow, self.parents,
            ]
        return JobSpec(*(column[i] for column in self._values))  # the columns are in field order

