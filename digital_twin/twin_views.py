"""The read-only views of :class:`digital_twin.twin.DigitalTwin`: objective, counts, node state.

Split from ``twin.py`` so that the simulation (events, placement, accounting) and what callers
may read about it live in separate files; :class:`TwinViews` is the base class that holds the
accessors, and only reads the state the simulator keeps.
"""

from __future__ import annotations

from functools import reduce
from operator import add, mul

import numpy as np

from digital_twin.hindsight import HindsightView
from digital_twin.objective import COST_KEY, COUNT_KEYS, OBJECTIVE_KEY, PENALTIES, PENALTY_INDEX, ObjectiveBreakdown
from digital_twin.spec import TwinSpec
from digital_twin.state import RUNNING, STATUS_NAMES, TwinState

_QOS = PENALTY_INDEX["qos"]
_PENALTY_KEYS = (*(term.usd_key for term in PENALTIES), *COUNT_KEYS)  # as_dict() order after the cost


class TwinViews:
    """Read-only accessors of a twin (the base of :class:`~digital_twin.twin.DigitalTwin`)."""

    __slots__ = ()

    spec: TwinSpec
    _s: TwinState
    _n_nodes: int
    _n_jobs: int
    _cpu_m: list[int]
    _is_lc: list[bool]
    _tick_s: float
    _last_tick: int
    _background_cpu: list[list[float]]
    _interruptions: tuple[tuple[float, ...], ...]
    _penalty_weights: tuple[float, ...]
    _counts_seen: list[int]  # objective_dict()'s cache: the counts it was built for
    _penalties_usd: list[float]
    _penalty_items: dict[str, float]
    _current: int

    @property
    def time_s(self) -> float:
        """Current simulated time in seconds."""
        return self._s.time_s

    @property
    def tick_index(self) -> int:
        """Index of the telemetry tick that contains the current time."""
        k = int(self._s.time_s // self._tick_s)
        return k if k < self._last_tick else self._last_tick

    def objective(self) -> ObjectiveBreakdown:
        """The objective accrued so far (cost up to :attr:`time_s`), by term."""
        return ObjectiveBreakdown.of(self._s.cost_usd, self.spec.weights, self._s.counts)

    def objective_dict(self) -> dict[str, float]:
        """:meth:`objective` as ``ObjectiveBreakdown.as_dict()`` gives it, built directly (hot path).

        This runs at every env step, and the penalty counts rarely change between steps: their
        USD amounts and keys are rebuilt only when the counts changed. The sum runs in the order of
        ``ObjectiveBreakdown.total_usd``, so the two agree bit for bit.
        """
        s = self._s
        if s.counts != self._counts_seen:
            self._counts_seen = s.counts.copy()
            self._penalties_usd = list(map(mul, s.counts, self._penalty_weights))
            self._penalty_items = dict(zip(_PENALTY_KEYS, (*self._penalties_usd, *s.counts)))  # noqa: B905
        cost_usd = s.cost_usd
        return {COST_KEY: cost_usd, **self._penalty_items, OBJECTIVE_KEY: reduce(add, self._penalties_usd, cost_usd)}

    def objective_usd(self) -> float:
        """The objective accrued so far, in USD (cheap; the sum of :meth:`objective`'s terms)."""
        s = self._s
        return reduce(add, map(mul, s.counts, self._penalty_weights), s.cost_usd)

    def job_counts(self) -> dict[str, int]:
        """Number of jobs per status (``future`` = not yet arrived); they sum to ``len(jobs)``."""
        return dict(zip(STATUS_NAMES, self._s.status_counts, strict=True))

    def job_status(self, job: int) -> str:
        """Status name of job ``job`` (index into ``spec.jobs``)."""
        return STATUS_NAMES[self._s.status[job]]

    def job_node(self, job: int) -> int:
        """Node index a running job is on (-1 when not running)."""
        return self._s.node_of[job] if self._s.status[job] == RUNNING else -1

    def metrics(self) -> dict[str, float]:
        """Episode metrics so far: objective terms, job counts, mean wait, utilisation, QoS."""
        s = self._s
        out: dict[str, float] = dict(self.objective().as_dict())
        out.update({f"{name}_jobs": count for name, count in self.job_counts().items()})
        out["mean_wait_s"] = s.wait_sum_s / s.started_jobs if s.started_jobs else 0.0
        total_cpu_m_s = sum(self._cpu_m) * s.time_s
        out["utilization_cpu"] = s.alloc_cpu_m_s / total_cpu_m_s if total_cpu_m_s > 0 else 0.0
        lc_started = sum(1 for j in range(self._n_jobs) if self._is_lc[j] and s.first_start_s[j] >= 0)
        out["qos_compliance"] = 1.0 - s.counts[_QOS] / lc_started if lc_started else 1.0
        out["sim_time_s"] = s.time_s
        return out

    def node_free(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Free cpu cores, free mem GB and free GPUs per node, each ``(n_nodes,)`` float64."""
        s = self._s
        return (
            np.array(s.free_cpu_m, dtype=np.float64) / 1000.0,
            np.array(s.free_mem_mib, dtype=np.float64) / 1024.0,
            np.array(s.free_gpus, dtype=np.float64),
        )

    def node_up(self) -> np.ndarray:
        """``(n_nodes,)`` bool: which nodes are up."""
        return np.array(self._s.up, dtype=bool)

    def running_by_type(self) -> np.ndarray:
        """``(n_nodes, 3)`` int: running jobs per node and workload type (WORKLOAD_TYPES order)."""
        return np.array(self._s.running_counts, dtype=np.int64).reshape(3, self._n_nodes).T.copy()

    def node_vector(self) -> list[float]:
        """The dynamic node state as one flat list, for fast observation encoders.

        ``7 * n_nodes`` values, seven blocks of ``n_nodes`` in this order: free millicores,
        free MiB, free GPUs, up (0/1), running latency-critical, batch and stream jobs.
        A fresh list (safe to keep).
        """
        s = self._s
        return s.free_cpu_m + s.free_mem_mib + s.free_gpus + s.up + s.running_counts

    def utilization_pct(self) -> np.ndarray:
        """``(n_nodes,)``: background cpu % now + allocated cpu / node cpu x 100 (may exceed 100)."""
        k = self.tick_index
        s = self._s
        return np.array(
            [self._background_cpu[k][i] + 100.0 * (self._cpu_m[i] - s.free_cpu_m[i]) / self._cpu_m[i]
             for i in range(self._n_nodes)]
        )

    def pending_jobs(self) -> list[int]:
        """Job indices in the queue, starting with the current job, in the order they will be asked."""
        return self._s.queue.asking_order(self._current)

    @property
    def event_log(self) -> list[tuple[float, str, str, str]]:
        """``(time_s, event, job_id or "", node_id or "")`` entries; empty unless recording."""
        return list(self._s.events or [])

    def hindsight(self) -> HindsightView:
        """The privileged, read-only view of the episode's future (for the oracle only)."""
        return HindsightView.build(self.spec, self._interruptions)

