"""What an online agent may know at a decision point: the present and the past, never the future.

:class:`ClusterView` is the whole of it: the fleet, the episode's settings
(:class:`digital_twin.EpisodeSettings`) and tick grid (:class:`digital_twin.TickGrid`), the
telemetry recorded so far (:class:`TelemetrySoFar`), the node state now, the current job and
the queue. :func:`cluster_view_of` builds it from a twin at its current decision. What will
happen later (future arrivals, future telemetry, spot interruptions) is hindsight:
:meth:`aco_env.ClusterSchedulingEnv.hindsight`, for the oracle only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aco_env.actions import action_mask
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TickGrid
from digital_twin.telemetry import CPU, MEM


class TelemetrySoFar:
    """The background telemetry recorded up to the current tick, as a live monitor would hold it.

    Every read returns a fresh array of ticks ``0..tick_index`` at most: the ticks after the
    current one cannot be read through this object.

    Args:
        telemetry: The episode's telemetry.
        tick_index: The current tick (``0 <= tick_index < telemetry.n_ticks``).

    Attributes:
        tick_index: The current tick, k.
        tick_s: Tick length in seconds.
    """

    __slots__ = ("_background_pct", "tick_index", "tick_s")

    def __init__(self, telemetry: Telemetry, tick_index: int) -> None:
        if not 0 <= tick_index < telemetry.n_ticks:
            raise IndexError(f"tick {tick_index} is outside the telemetry's [0, {telemetry.n_ticks})")
        self._background_pct = telemetry.background_pct  # (T, N, 2), read-only; read up to tick_index only
        self.tick_index = tick_index
        self.tick_s = telemetry.tick_s

    @property
    def n_nodes(self) -> int:
        """N, the number of node columns."""
        return int(self._background_pct.shape[1])

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
            return self._background_pct[: k + 1, :, channel].copy()
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if window <= k + 1:
            return self._background_pct[k + 1 - window : k + 1, :, channel].copy()
        ticks = np.maximum(np.arange(k - window + 1, k + 1), 0)  # tick 0 repeated before the start
        return self._background_pct[ticks, :, channel]  # fancy indexing: a copy


@dataclass(frozen=True, eq=False)
class ClusterView:
    """What an agent may know at a decision point: the present and the past, never the future.

    Returned by :meth:`aco_env.ClusterSchedulingEnv.cluster_view`; arrays are fresh copies.

    Attributes:
        time_s: Simulated time in seconds.
        fleet: The nodes in action order.
        job: The job to place (``None`` once the episode is over).
        queue: Jobs queued behind it, in the order they will be asked (a sequence of
            ``JobSpec`` that builds each when it is read: cheap for long queues).
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


def cluster_view_of(twin: DigitalTwin, history_ticks: int) -> ClusterView:
    """The :class:`ClusterView` of a twin at its current decision point.

    Args:
        twin: A twin after ``reset``.
        history_ticks: W, the window of ``background_cpu_history_pct``.
    """
    spec = twin.spec
    telemetry = TelemetrySoFar(spec.telemetry, twin.tick_index)
    free_cpu, free_mem, free_gpus = twin.node_free()
    pending = twin.pending_jobs()
    return ClusterView(
        time_s=twin.time_s,
        fleet=spec.fleet,
        job=twin.current_job,
        queue=spec.jobs.select(pending[1:] if twin.current_job is not None else pending),
        free_cpu_cores=free_cpu,
        free_mem_gb=free_mem,
        free_gpus=free_gpus,
        up=twin.node_up(),
        background_cpu_pct=telemetry.cpu_pct(1)[0],
        background_mem_pct=telemetry.mem_pct(1)[0],
        background_cpu_history_pct=np.ascontiguousarray(telemetry.cpu_pct(history_ticks).T),
        utilization_pct=twin.utilization_pct(),
        running_by_type=twin.running_by_type(),
        action_mask=action_mask(twin),
        tick_index=telemetry.tick_index,
        grid=spec.grid,
        settings=spec.settings,
        telemetry=telemetry,
    )
