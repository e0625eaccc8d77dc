"""What an online agent may know at a decision point: the present and the past, never the future.

:class:`ClusterView` is the whole of it: the fleet, the episode's settings
(:class:`digital_twin.EpisodeSettings`) and tick grid (:class:`digital_twin.TickGrid`), the
telemetry recorded so far (:class:`TelemetrySoFar`), the node state now, the current job and
the queue. :func:`cluster_view_of` builds it from a twin at its current decision. What will
happen later (future arrivals, future telemetry, spot interruptions) and how long a job will
really run are hindsight: :mod:`aco_env.hindsight`, for the oracle only.

A view holds only the past and present, and not by convention: its jobs are copies whose
``duration_s`` is the declared duration (:class:`KnownJobs`), and its telemetry is a copy of
the ticks so far (:class:`TelemetryRecord`). Nothing reachable from a view (private
attributes, array bases included) refers to a later job, tick or interruption (tested by
walking its object graph).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from aco_env.actions import action_mask
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TickGrid
from digital_twin.energy.model import EnergyModel, known_energy_model
from digital_twin.identity_cache import IdentityCache
from digital_twin.sim.node_arrays import FREE_CPU_M, FREE_GPUS, FREE_MEM_MIB, RUNNING, UP
from digital_twin.telemetry import CPU, MEM
from digital_twin.workflows.task_features import TaskFeatures
from digital_twin.workload import Workload


class TelemetryRecord:
    """The background telemetry of one episode, recorded tick by tick as the ticks pass.

    A live monitor holds the ticks it has seen and no others; so does this record: its buffer
    holds copies of ticks ``0..k`` (the ticks recorded so far) and nothing of the episode's
    later ticks, so the arrays it hands out cannot lead to them. Recording tick ``k`` copies
    only the ticks since the last call (amortised ``O(N)`` per tick: the buffer doubles).

    Args:
        telemetry: The episode's telemetry (read up to the requested tick only).
    """

    __slots__ = ("_buffer", "_recorded", "_telemetry")

    def __init__(self, telemetry: Telemetry) -> None:
        self._telemetry = telemetry
        self._buffer = np.empty((0, telemetry.n_nodes, 2), dtype=np.float64)
        self._recorded = 0  # ticks 0.._recorded-1 are in the buffer

    def so_far(self, tick_index: int) -> TelemetrySoFar:
        """The ticks ``0..tick_index``, recording the ones not yet recorded (ticks never go back)."""
        if not 0 <= tick_index < self._telemetry.n_ticks:
            raise IndexError(f"tick {tick_index} is outside the telemetry's [0, {self._telemetry.n_ticks})")
        rows = tick_index + 1
        if rows > self._recorded:
            if rows > len(self._buffer):
                grown = np.full((max(rows, 2 * len(self._buffer), 16), *self._buffer.shape[1:]), np.nan)
                grown[: self._recorded] = self._buffer[: self._recorded]
                self._buffer = grown
            self._buffer[self._recorded : rows] = self._telemetry.background_pct[self._recorded : rows]
            self._recorded = rows
        past = self._buffer[:rows]
        past.flags.writeable = False
        return TelemetrySoFar(past, self._telemetry.tick_s)


class TelemetrySoFar:
    """The background telemetry recorded up to the current tick, as a live monitor would hold it.

    It holds the ticks ``0..tick_index`` and nothing later (:class:`TelemetryRecord` builds it
    from copies), and every read returns a fresh array.

    Args:
        past: ``(k + 1, N, 2)`` background % of ticks ``0..k`` (cpu, mem), an array that refers
            to no later tick.
        tick_s: Tick length in seconds.

    Attributes:
        tick_index: The current tick, k.
        tick_s: Tick length in seconds.
    """

    __slots__ = ("_past", "tick_index", "tick_s")

    def __init__(self, past: np.ndarray, tick_s: float) -> None:
        if past.ndim != 3 or len(past) == 0:
            raise ValueError(f"past must be (k + 1, N, 2) with k >= 0, got shape {past.shape}")
        self._past = past
        self.tick_index = len(past) - 1
        self.tick_s = tick_s

    def __repr__(self) -> str:
        return f"TelemetrySoFar(ticks 0..{self.tick_index} of {self.n_nodes} nodes, tick {self.tick_s:g} s)"

    @property
    def n_nodes(self) -> int:
        """N, the number of node columns."""
        return int(self._past.shape[1])

    def cpu_pct(self, window: int | None = None) -> np.ndarray:
        """``(W, N)`` background cpu % of the last W ticks, oldest first, ending at the current tick.

        ``window=None`` is every tick so far (W = k + 1); a window reaching before tick 0
        repeats tick 0.
        """
        return self._last(CPU, window)

    def mem_pct(self, window: int | None = None) -> np.ndarray:
        """``(W, N)`` background mem %, as :meth:`cpu_pct`."""
        return self._last(MEM, window)

    def _last(self, channel: int, window: int | None) -> np.ndarray:
        k = self.tick_index
        if window is None:
            return self._past[:, :, channel].copy()
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if window <= k + 1:
            return self._past[k + 1 - window :, :, channel].copy()
        ticks = np.maximum(np.arange(k - window + 1, k + 1), 0)  # tick 0 repeated before the start
        return self._past[ticks, :, channel]  # fancy indexing: a copy


@dataclass(frozen=True, eq=False)
class ClusterView:
    """What an agent may know at a decision point: the present and the past, never the future.

    Returned by :meth:`aco_env.ClusterSchedulingEnv.cluster_view`; arrays are fresh copies.

    Attributes:
        time_s: Simulated time in seconds.
        fleet: The nodes in action order.
        job: The job to place (``None`` once the episode is over); its ``duration_s`` is the
            declared duration, as for every job of the view.
        queue: Jobs queued behind it, in the order they will be asked (:class:`KnownJobs`:
            copies, each ``JobSpec`` built when it is read).
        free_cpu_cores, free_mem_gb, free_gpus: ``(N,)`` free allocatable resources.
        up: ``(N,)`` bool, node up (spot nodes go down when interrupted).
        background_cpu_pct, background_mem_pct: ``(N,)`` other tenants' load now, in %.
        background_cpu_history_pct: ``(N, W)`` background cpu % over the last W ticks, oldest
            first, ending with the current tick (before tick 0 repeats tick 0).
        utilization_pct: ``(N,)`` background cpu % + allocated cpu / node cpu x 100.
        running_by_type: ``(N, 3)`` running jobs per workload type (latency-critical, batch, stream).
        action_mask: ``(N + 1,)`` bool, valid actions; the last entry (defer) is always True.
        tick_index: Index of the current telemetry tick.
        grid: The episode's ticks: ``grid.tick_s`` (tick length, seconds) and ``grid.n_ticks``
            (the ticks that start before the horizon; every decision's tick index is below it).
        settings: The episode's settings (horizon, TTL, SLA threshold, spot, cost model,
            interference, objective rules and weights, start hour).
        telemetry: The background telemetry up to the current tick (e.g. for load predictors).
        energy: The nodes' power and their grids' carbon intensity as known now: each series
            up to the current time, then its current value held
            (:func:`~digital_twin.energy.model.known_energy_model`).
        preference_weight: ``(N,)`` what placing ``job`` on each node now would count in the
            objective's ``preferences`` term (the soft placement rules it breaks there, by their
            weights; :mod:`digital_twin.placement.rules`); zeros without rules.
        tasks: With workflows, each listed job's DAG features (:class:`TaskFeatures`: its
            critical path, children, descendants' work and workflow weight, from what was
            declared at its workflow's submission), rows in the order ``job`` then ``queue``;
            ``None`` when the episode's jobs are independent.
    """

    time_s: float
    fleet: tuple[NodeSpec, ...]
    job: JobSpec | None
    queue: Sequence[JobSpec]
    free_cpu_cores: np.ndarray  # (N,)
    free_mem_gb: np.ndarray  # (N,)
    free_gpus: np.ndarray  # (N,)
    up: np.ndarray  # (N,) bool
    background_cpu_pct: np.ndarray  # (N,)
    background_mem_pct: np.ndarray  # (N,)
    background_cpu_history_pct: np.ndarray  # (N, W)
    utilization_pct: np.ndarray  # (N,)
    running_by_type: np.ndarray  # (N, 3)
    action_mask: np.ndarray  # (N + 1,) bool
    tick_index: int
    grid: TickGrid
    settings: EpisodeSettings
    telemetry: TelemetrySoFar
    energy: EnergyModel
    preference_weight: np.ndarray  # (N,)
    tasks: TaskFeatures | None


def cluster_view_of(twin: DigitalTwin, history_ticks: int, record: TelemetryRecord | None = None) -> ClusterView:
    """The :class:`ClusterView` of a twin at its current decision point.

    Args:
        twin: A twin after ``reset``.
        history_ticks: W, the window of ``background_cpu_history_pct``.
        record: The episode's telemetry record (an env keeps one per episode, so that each
            view copies only the ticks since the last); ``None`` records ticks ``0..k`` afresh.
    """
    spec = twin.spec
    telemetry = (record or TelemetryRecord(spec.telemetry)).so_far(twin.tick_index)
    arrays = twin.node_arrays()
    values = arrays.values  # (7, N): read, not kept (the next step changes it)
    pending = twin.pending_jobs()
    known = known_jobs(spec.jobs, pending)
    current = twin.current_job is not None
    background_cpu = telemetry.cpu_pct(1)[0]
    capacity_m = arrays.cpu_m
    return ClusterView(
        time_s=twin.time_s,
        fleet=spec.fleet,
        job=known[0] if current else None,
        queue=known[1:] if current else known,
        free_cpu_cores=values[FREE_CPU_M] / 1000.0,
        free_mem_gb=values[FREE_MEM_MIB] / 1024.0,
        free_gpus=values[FREE_GPUS].copy(),
        up=values[UP] != 0.0,
        background_cpu_pct=background_cpu,
        background_mem_pct=telemetry.mem_pct(1)[0],
        background_cpu_history_pct=np.ascontiguousarray(telemetry.cpu_pct(history_ticks).T),
        utilization_pct=background_cpu + 100.0 * (capacity_m - values[FREE_CPU_M]) / capacity_m,
        running_by_type=values[RUNNING:].T.astype(np.int64),
        action_mask=action_mask(twin),
        tick_index=telemetry.tick_index,
        grid=spec.grid,
        settings=spec.settings,
        telemetry=telemetry,
        energy=known_energy_model(spec.energy_model, twin.time_s, spec.settings.horizon_s),
        preference_weight=twin.preference_weights(),
        tasks=spec.jobs.task_features().rows(np.asarray(pending, dtype=np.int64)) if spec.jobs.has_workflows else None,
    )


_FEW_JOBS = 16
"""Up to this many jobs are copied as ``JobSpec`` s one by one (cheaper than a workload of their own)."""
_declared_specs: IdentityCache[Workload, dict[int, JobSpec]] = IdentityCache(lambda _: {}, size=4)
"""Per workload, the copies of its jobs with their declared durations made so far, by job index."""


def known_jobs(jobs: Workload, indices: Sequence[int]) -> KnownJobs:
    """Jobs ``indices`` of an episode as an online agent knows them: copies, with their declared durations.

    A task keeps only the parents listed with it (as :meth:`digital_twin.workload.Workload.take`
    does: a queue's tasks, whose parents have completed, are roots).

    Args:
        jobs: The episode's workload.
        indices: The jobs, in the order to list them (a queue's order).
    """
    if not len(indices):
        return KnownJobs(Workload.of(()), ())
    if len(indices) <= _FEW_JOBS:
        return KnownJobs.of_specs(tuple(_known_spec(jobs, j, indices) for j in indices))
    order = np.asarray(indices, dtype=np.int64)
    ascending = np.unique(order)  # Workload.take keeps arrival order; the queue's order is listed apart
    taken = jobs.take(ascending, duration_s=jobs.declared_or_true_s()[ascending])
    return KnownJobs(taken, tuple(np.searchsorted(ascending, order).tolist()))


def _known_spec(jobs: Workload, j: int, listed: Sequence[int]) -> JobSpec:
    """Job ``j`` as known: a copy with its declared duration, its parents among the ``listed`` jobs only."""
    declared = _declared_specs(jobs)
    job = declared.get(j)
    if job is None:
        true = jobs[j]  # its declaration is None or > 0, so `or` picks the declaration when there is one
        job = declared[j] = dataclasses.replace(true, duration_s=true.declared_duration_s or true.duration_s)
    if not job.parents:
        return job
    ids = {jobs.job_ids[k] for k in listed}
    return dataclasses.replace(job, parents=tuple(p for p in job.parents if p in ids))



class KnownJobs(Sequence[JobSpec]):
    """Jobs as an online agent knows them (a queue): a tuple of ``JobSpec`` built when read.

    Each job's ``duration_s`` is its *declared* duration (what the submitter stated; the true
    run time is hindsight). The jobs are copies: nothing here refers to the episode's workload.
    """

    __slots__ = ("_jobs", "_order")

    def __init__(self, jobs: Workload | tuple[JobSpec, ...], order: tuple[int, ...]) -> None:
        self._jobs = jobs
        self._order = order

    @classmethod
    def of_specs(cls, specs: tuple[JobSpec, ...]) -> KnownJobs:
        """The jobs ``specs`` (copies already), in this order."""
        return cls(specs, tuple(range(len(specs))))

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> JobSpec: ...

    @overload
    def __getitem__(self, index: slice) -> KnownJobs: ...

    def __getitem__(self, index: int | slice) -> JobSpec | KnownJobs:
        if isinstance(index, slice):
            return KnownJobs(self._jobs, self._order[index])
        return self._jobs[self._order[index]]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"KnownJobs({len(self)} jobs)"
