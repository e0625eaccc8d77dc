"""The digital twin: an event-driven simulation of a fleet, its queue and its bill.

The twin jumps from event to event (arrival, completion, telemetry tick, spot interruption,
spot recovery, queue TTL expiry) and stops at each *decision point*: a moment at which a
pending job fits on at least one up node. The caller then :meth:`DigitalTwin.place` s the job
on a node or :meth:`DigitalTwin.defer` s it; both run the simulation on to the next decision
point. Jobs that fit nowhere right now wait without a decision being asked.

Queue discipline: pending jobs are asked in FIFO order of the time they entered the queue
(an evicted preemptible job re-enters at the back). At one simulated instant each pending job
is asked at most once. A deferred job is asked again after the next event, or, when deferred
with ``until=NEW_FIT``, only once it fits on a node it did not fit on when deferred (see
:mod:`digital_twin.deferral`). Jobs that fit nowhere and jobs deferred until they fit somewhere
new are *parked* (:mod:`digital_twin.job_queue`): looked at again only when a node they did not
fit on gains room, so a long queue costs nothing at events that cannot change it.

Time: the episode covers ``[0, horizon_s)``; events at ``horizon_s`` or later never happen.
Jobs still queued at the horizon are charged the rejection penalty (they were not served);
jobs still running pay their cost up to the horizon.
At equal times, events are handled in the order completion, recovery, interruption, tick,
arrival, TTL expiry, and decisions come after all of them.

Example:
    >>> import numpy as np
    >>> from digital_twin import DigitalTwin, JobSpec, Telemetry, TwinSpec, default_fleet
    >>> fleet = default_fleet()
    >>> jobs = [JobSpec("j0", 0.0, 600.0, "batch", 4, 8)]
    >>> spec = TwinSpec(fleet, tuple(jobs), Telemetry.constant(5, 30, 40, 3600, 300), 3600)
    >>> twin = DigitalTwin(spec)
    >>> twin.reset(np.random.default_rng(0))
    >>> twin.current_job.job_id
    'j0'
    >>> twin.place(0)
    >>> twin.terminated, round(twin.objective().cost_usd, 6)  # 0.48 $/h * 4/32 * 600 s
    (True, 0.01)
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from digital_twin.deferral import DEFERRALS, NEW_FIT, NEXT_EVENT
from digital_twin.errors import InvalidPlacementError
from digital_twin.job_queue import JobQueue
from digital_twin.jobs import WORKLOAD_TYPES, JobSpec
from digital_twin.objective import ACTIVE_NODES, PENALTIES, PENALTY_INDEX
from digital_twin.spec import TwinSpec
from digital_twin.spot import draw_interruptions, effective_interruptions
from digital_twin.state import (
    COMPLETED,
    COMPLETION,
    FAILED,
    FUTURE,
    INTERRUPTION,
    PENDING,
    RECOVERY,
    REJECTED,
    RUNNING,
    TICK,
    TTL_EXPIRY,
    TwinState,
)
from digital_twin.telemetry import CPU
from digital_twin.twin_views import TwinViews
from digital_twin.workload import Workload

_LC = WORKLOAD_TYPES.index("latency-critical")  # column of running_by_type
# Where each penalty term is counted (indices into TwinState.counts, the order of PENALTIES).
_SLA, _QOS, _EVICTION, _DEADLINE, _REJECTION = (
    PENALTY_INDEX[name] for name in ("sla", "qos", "eviction", "deadline", "rejection")
)
_NODE_INDEX_TYPES = (int, np.integer)


class TwinSnapshot:
    """An opaque saved state of a twin, for :meth:`DigitalTwin.restore` (look-ahead)."""

    __slots__ = ("_current", "_done", "_state")

    def __init__(self, state: TwinState, current: int, done: bool) -> None:
        self._state = state
        self._current = current
        self._done = done


class DigitalTwin(TwinViews):
    """Simulates one :class:`TwinSpec`; see the module docstring for the protocol.

    Args:
        spec: The episode's fixed inputs.
        record_events: Keep an event log (:attr:`event_log`), for tests and debugging.
    """

    # A fixed set of attributes: CPython reads slots faster than the instance dict of a class
    # with this many attributes, and the hot path reads them at every event.
    __slots__ = (
        "_active_nodes", "_arrival_s", "_background_cpu", "_candidate_mask", "_candidates", "_counts_seen",
        "_cpu_m", "_current", "_deadline_s", "_done", "_duration_s", "_gpus", "_horizon", "_interruptions",
        "_is_lc", "_is_spot", "_last_tick", "_mask", "_mem_mib", "_n_jobs", "_n_nodes", "_nowhere",
        "_penalties_usd", "_penalty_items", "_penalty_weights", "_preemptible", "_price_per_s", "_req_cpu_m",
        "_req_gpus", "_req_mem_mib", "_s", "_shape", "_tick_s", "_ttl", "_type_index", "record_events", "spec",
    )

    def __init__(self, spec: TwinSpec, record_events: bool = False) -> None:
        self.spec = spec
        self.record_events = record_events
        fleet, jobs = spec.fleet, spec.jobs
        self._n_nodes = len(fleet)
        self._n_jobs = len(jobs)
        # Per-node constants (integer resource units).
        self._cpu_m = _whole_units([n.cpu_cores for n in fleet], 1000)
        self._mem_mib = _whole_units([n.mem_gb for n in fleet], 1024)
        self._gpus = [n.gpu_count for n in fleet]
        self._price_per_s = [n.price_per_hour_usd / 3600.0 for n in fleet]
        self._is_spot = [n.is_spot for n in fleet]
        # Per-job constants, from the workload's columns (its JobSpec objects are not needed).
        self._arrival_s = jobs.arrival_s.tolist()
        self._duration_s = jobs.duration_s.tolist()
        self._deadline_s = jobs.deadlines()
        self._preemptible = jobs.preemptible.tolist()
        self._req_cpu_m = _whole_units(jobs.cpu_cores, 1000)
        self._req_mem_mib = _whole_units(jobs.mem_gb, 1024)
        self._req_gpus = jobs.gpu_count.tolist()
        self._type_index = jobs.workload_index.tolist()
        self._is_lc = (jobs.workload_index == _LC).tolist()
        self._shape, self._candidates = self._shapes_and_candidates(jobs)
        self._candidate_mask = self._masks_of_candidates(self._candidates)
        self._background_cpu = spec.telemetry.background_pct[:, :, CPU].tolist()
        self._ttl = spec.queue_ttl_s
        self._horizon = float(spec.horizon_s)
        self._tick_s = float(spec.telemetry.tick_s)
        self._last_tick = spec.telemetry.n_ticks - 1
        self._active_nodes = spec.cost_model == ACTIVE_NODES
        self._penalty_weights = spec.weights.per_term()
        self._counts_seen: list[int] = []  # objective_dict() builds its cache on the first call
        self._penalties_usd: list[float] = []
        self._penalty_items: dict[str, float] = {}
        self._interruptions: tuple[tuple[float, ...], ...] = tuple(() for _ in fleet)
        self._s = self._initial_state()
        self._current = -1
        self._done = True
        # can_place() of every node for the current decision, computed once per decision point.
        self._mask = [False] * self._n_nodes
        self._nowhere = [False] * self._n_nodes  # the fit of a parked job that fits nowhere (never changed)

    # ------------------------------------------------------------------ protocol
    def reset(self, rng: np.random.Generator) -> None:
        """Start the episode: draw spot interruptions from ``rng``, run to the first decision."""
        spec = self.spec
        if spec.fixed_interruptions_s is not None:
            self._interruptions = tuple(
                effective_interruptions(times, self._horizon, spec.spot_recovery_s)
                for times in spec.fixed_interruptions_s
            )
        elif spec.spot_interruptions:
            self._interruptions = draw_interruptions(spec.fleet, self._horizon, spec.spot_recovery_s, rng)
        else:
            self._interruptions = tuple(() for _ in spec.fleet)
        self._s = s = self._initial_state()
        for node, times in enumerate(self._interruptions):
            for t in times:
                self._push(t, INTERRUPTION, node, 0)
        s.events = [] if self.record_events else None
        self._done = False
        self._advance()

    @property
    def current_job(self) -> JobSpec | None:
        """The job a decision is asked for, or ``None`` when the episode is over."""
        return None if self._done else self.spec.jobs[self._current]

    @property
    def current_job_index(self) -> int:
        """Index into ``spec.jobs`` of the current job (-1 when the episode is over)."""
        return -1 if self._done else self._current

    def can_place(self, node: int) -> bool:
        """Whether the current job fits on ``node`` now (up, resources, arch, GPU model/VRAM)."""
        if self._done or not 0 <= node < self._n_nodes:
            return False
        return self._mask[node]

    def feasible_mask(self) -> list[bool]:
        """``can_place`` for every node, in fleet order (all False when the episode is over)."""
        return self._mask.copy()

    def place(self, node: int) -> None:
        """Start the current job on ``node`` and run on to the next decision point.

        Raises:
            InvalidPlacementError: The episode is over or the job does not fit; nothing changes.
        """
        if self._done:
            raise InvalidPlacementError("the episode is over: no job to place")
        j = self._current
        if not (isinstance(node, _NODE_INDEX_TYPES) and 0 <= node < self._n_nodes and self._mask[node]):
            raise InvalidPlacementError(self._why_not(j, node))
        self._s.queue.take_current()
        self._start(j, int(node))
        self._advance()

    def defer(self, until: str = NEXT_EVENT) -> None:
        """Leave the current job queued and run on to the next decision.

        Args:
            until: When the job is asked again: :data:`~digital_twin.deferral.NEXT_EVENT`
                (after the next event) or :data:`~digital_twin.deferral.NEW_FIT` (once it fits
                on a node it does not fit on now).

        Raises:
            InvalidPlacementError: The episode is over.
            ValueError: ``until`` is not one of :data:`~digital_twin.deferral.DEFERRALS`.
        """
        if self._done:
            raise InvalidPlacementError("the episode is over: no job to defer")
        if until not in DEFERRALS:
            raise ValueError(f"until must be one of {DEFERRALS}, got {until!r}")
        self._log("defer", self._current, -1)
        queue = self._s.queue
        if until == NEW_FIT:
            queue.park_current(self._mask, self._shape[self._current])  # _mask is replaced, never changed
        else:
            queue.cursor += 1
        self._advance()

    @property
    def done(self) -> bool:
        """True once the episode is over (terminated or truncated)."""
        return self._done

    @property
    def terminated(self) -> bool:
        """True when every job reached a terminal state before the horizon."""
        counts = self._s.status_counts
        return self._done and counts[RUNNING] + counts[PENDING] + counts[FUTURE] == 0

    @property
    def truncated(self) -> bool:
        """True when the horizon ended the episode with jobs not yet terminal."""
        return self._done and not self.terminated

    # ------------------------------------------------------------------ look-ahead
    def snapshot(self) -> TwinSnapshot:
        """Save the current state (cost: a copy of a few lists; O(nodes + jobs))."""
        return TwinSnapshot(self._s.copy(), self._current, self._done)

    def restore(self, snapshot: TwinSnapshot) -> None:
        """Return to a state saved by :meth:`snapshot` of this twin (the snapshot stays reusable)."""
        self._s = snapshot._state.copy()
        self._current = snapshot._current
        self._done = snapshot._done
        self._mask = [False] * self._n_nodes if self._done else self._mask_of(self._current)

    # ------------------------------------------------------------------ simulation
    def _initial_state(self) -> TwinState:
        s = TwinState()
        n, m = self._n_nodes, self._n_jobs
        s.time_s = 0.0
        s.free_cpu_m = self._cpu_m.copy()
        s.free_mem_mib = self._mem_mib.copy()
        s.free_gpus = self._gpus.copy()
        s.up = [True] * n
        s.node_jobs = [[] for _ in range(n)]
        s.running_counts = [0] * (3 * n)
        s.status = [FUTURE] * m
        s.node_of = [-1] * m
        s.start_s = [-1.0] * m
        s.first_start_s = [-1.0] * m
        s.enqueued_s = [-1.0] * m
        s.generation = [0] * m
        s.sla_hit = [False] * m
        s.qos_hit = [False] * m
        s.queue = JobQueue(m)
        s.gained_nodes = []
        s.heap = []
        s.seq = 0
        s.next_arrival = 0
        s.next_tick = 0
        s.cost_usd = 0.0
        s.cost_rate_usd_per_s = 0.0
        s.alloc_cpu_m = 0
        s.alloc_cpu_m_s = 0.0
        s.counts = [0] * len(PENALTIES)
        s.status_counts = [m, 0, 0, 0, 0, 0]
        s.wait_sum_s = 0.0
        s.started_jobs = 0
        s.events = None
        return s

    def _shapes_and_candidates(self, jobs: Workload) -> tuple[list[int], list[tuple[int, ...]]]:
        """Per job, its shape id and static candidates (computed once per shape).

        Jobs of one shape ask for the same resources of the same nodes: they fit in the same places.
        """
        ids: dict[_Shape, int] = {}
        candidates_of: list[tuple[int, ...]] = []
        shape_of = []
        for shape in zip(
            self._req_cpu_m, self._req_mem_mib, self._req_gpus, jobs.gpu_vram_gb.tolist(),
            jobs.allowed_gpu_models, jobs.required_arch, strict=True,
        ):
            if shape not in ids:
                ids[shape] = len(ids)
                candidates_of.append(self._static_candidates(*shape))
            shape_of.append(ids[shape])
        return shape_of, [candidates_of[k] for k in shape_of]

    def _masks_of_candidates(self, candidates: list[tuple[int, ...]]) -> list[list[bool]]:
        """Per job, ``(N,)`` bool: its static candidates as a mask (one list per distinct tuple)."""
        by_nodes: dict[tuple[int, ...], list[bool]] = {}
        out = []
        for nodes in candidates:
            mask = by_nodes.get(nodes)
            if mask is None:
                mask = by_nodes[nodes] = [False] * self._n_nodes
                for i in nodes:
                    mask[i] = True
            out.append(mask)
        return out

    def _static_candidates(
        self, cpu_m: int, mem_mib: int, gpus: int, vram_gb: float, models: tuple[str, ...] | None, arch: str | None
    ) -> tuple[int, ...]:
        """Nodes a job of this shape could ever run on (an empty node that is up)."""
        out = []
        for i, node in enumerate(self.spec.fleet):
            if arch is not None and node.arch != arch:
                continue
            if gpus > 0 and (
                node.gpu_count < gpus
                or node.gpu_vram_gb < vram_gb
                or (models is not None and node.gpu_model not in models)
            ):
                continue
            if cpu_m <= self._cpu_m[i] and mem_mib <= self._mem_mib[i]:
                out.append(i)
        return tuple(out)

    def _gained_fits(self, j: int) -> list[int]:
        """The nodes that gained room in this batch of events on which job ``j`` fits now."""
        s = self._s
        cpu, mem, gpus, candidate = self._req_cpu_m[j], self._req_mem_mib[j], self._req_gpus[j], self._candidate_mask[j]
        up, free_cpu, free_mem, free_gpus = s.up, s.free_cpu_m, s.free_mem_mib, s.free_gpus
        return [
            i for i in s.gained_nodes
            if candidate[i] and up[i] and free_cpu[i] >= cpu and free_mem[i] >= mem and free_gpus[i] >= gpus
        ]

    def _next_to_examine(self) -> int:
        """The next job of this pass in FIFO order (-1: the pass is over), waking parked jobs on the way.

        A parked job comes back when it fits on a node that gained room and that was False in
        its parked mask; once its shape fits on no such node, the rest of the bucket stays
        parked for this pass (see :mod:`digital_twin.job_queue`).
        """
        queue = self._s.queue
        while queue.waking:
            shape, j = queue.next_parked()
            if j < 0:
                break
            fits = self._gained_fits(j)
            if not fits:
                queue.stop_waking(shape)
            elif all(queue.parked_fit[j][i] for i in fits):  # type: ignore[index]  # j is parked
                queue.skip_parked(shape)
            else:
                queue.unpark(shape)
                return j
        return queue.examine[queue.cursor] if queue.cursor < len(queue.examine) else -1

    def _start_pass(self) -> None:
        """After a batch of events: examine from the front; wake the shapes that may fit where room appeared."""
        queue = self._s.queue
        waking = [shape for shape, jobs in queue.parked.items() if self._s.gained_nodes and self._gained_fits(jobs[0])]
        queue.start_pass(waking)

    def _mask_of(self, j: int) -> list[bool]:
        """Per node, whether job ``j`` fits there now: up, a static candidate, enough free resources."""
        s = self._s
        cpu, mem, gpus = self._req_cpu_m[j], self._req_mem_mib[j], self._req_gpus[j]
        free_cpu, free_mem, free_gpus, up = s.free_cpu_m, s.free_mem_mib, s.free_gpus, s.up
        mask = [False] * self._n_nodes
        for i in self._candidates[j]:
            if up[i] and free_cpu[i] >= cpu and free_mem[i] >= mem and free_gpus[i] >= gpus:
                mask[i] = True
        return mask

    def _why_not(self, j: int, node: object) -> str:
        job = self.spec.jobs[j]
        if not isinstance(node, int | np.integer) or not 0 <= node < self._n_nodes:
            return f"node index {node!r} is not in 0..{self._n_nodes - 1}"
        i, s = int(node), self._s
        name = self.spec.fleet[i].node_id
        if not s.up[i]:
            return f"job {job.job_id!r} cannot go on {name}: the node is down (spot interruption)"
        if i not in self._candidates[j]:
            return f"job {job.job_id!r} cannot go on {name}: arch, GPU model/count/VRAM or size never fits"
        return (
            f"job {job.job_id!r} cannot go on {name}: needs {self._req_cpu_m[j]} mcpu/"
            f"{self._req_mem_mib[j]} MiB/{self._req_gpus[j]} GPU, free {s.free_cpu_m[i]} mcpu/"
            f"{s.free_mem_mib[i]} MiB/{s.free_gpus[i]} GPU"
        )

    def _push(self, time_s: float, kind: int, index: int, generation: int) -> None:
        s = self._s
        s.seq += 1
        heapq.heappush(s.heap, (time_s, kind, s.seq, index, generation))

    def _log(self, event: str, job: int, node: int) -> None:
        if self._s.events is not None:
            self._s.events.append((
                self._s.time_s,
                event,
                self.spec.jobs.job_ids[job] if job >= 0 else "",
                self.spec.fleet[node].node_id if node >= 0 else "",
            ))

    def _set_status(self, j: int, status: int) -> None:
        s = self._s
        s.status_counts[s.status[j]] -= 1
        s.status_counts[status] += 1
        s.status[j] = status

    def _advance(self) -> None:
        """Run events until a pending job fits somewhere, every job is terminal, or the horizon."""
        s = self._s
        queue, status_counts, heap = s.queue, s.status_counts, s.heap
        examine = queue.examine  # changed in place only, so this name stays valid
        while True:
            while True:
                if queue.waking:  # parked jobs may come back in this pass
                    j = self._next_to_examine()
                elif queue.cursor < len(examine):  # the common case, inlined (hot path)
                    j = examine[queue.cursor]
                else:
                    break
                if j < 0:
                    break
                mask = self._mask_of(j)
                if True in mask:
                    self._current = j
                    self._mask = mask
                    return
                queue.park_current(self._nowhere, self._shape[j])  # fits nowhere until a node gains room
            if status_counts[FUTURE] + status_counts[PENDING] + status_counts[RUNNING] == 0:
                break
            # The next event: a telemetry tick, a scheduled event or an arrival, whichever is first.
            t = s.next_tick * self._tick_s
            if heap and heap[0][0] < t:
                t = heap[0][0]
            if s.next_arrival < self._n_jobs and self._arrival_s[s.next_arrival] < t:
                t = self._arrival_s[s.next_arrival]
            if t >= self._horizon:
                self._accrue(self._horizon)
                self._charge_unserved()
                break
            self._accrue(t)
            self._handle_events_at(t)
        self._done = True
        self._current = -1
        self._mask = [False] * self._n_nodes

    def _accrue(self, t: float) -> None:
        s = self._s
        dt = t - s.time_s
        if dt > 0.0:
            s.cost_usd += s.cost_rate_usd_per_s * dt
            s.alloc_cpu_m_s += s.alloc_cpu_m * dt
            s.time_s = t

    def _handle_events_at(self, t: float) -> None:
        """Handle every event at time ``t`` (in the documented order), then start a new pass."""
        s = self._s
        heap = s.heap
        if s.gained_nodes:
            s.gained_nodes.clear()
        while heap and heap[0][0] == t and heap[0][1] < TICK:
            _, kind, _, index, generation = heapq.heappop(heap)
            if kind == COMPLETION:
                self._complete(index, generation)
            elif kind == RECOVERY:
                s.up[index] = True
                s.gained_nodes.append(index)
                self._log("recovery", -1, index)
            else:
                self._interrupt(index)
        if s.next_tick * self._tick_s == t:
            self._tick(s.next_tick)
            s.next_tick += 1
        arrival_s, n_jobs = self._arrival_s, self._n_jobs
        while s.next_arrival < n_jobs and arrival_s[s.next_arrival] == t:
            self._arrive(s.next_arrival)
            s.next_arrival += 1
        while heap and heap[0][0] == t:
            _, _, _, index, generation = heapq.heappop(heap)
            self._expire(index, generation)
        if s.queue.parked:
            self._start_pass()
        else:
            s.queue.cursor = 0  # a new pass with nothing parked to wake (the common case, inlined)

    def _charge_unserved(self) -> None:
        """At the horizon, every job still queued costs the rejection penalty (it stays ``pending``).

        Without this, deferring the jobs that arrive near the horizon would be free.
        """
        for j in self._s.queue.fifo:
            self._s.counts[_REJECTION] += 1
            self._log("unserved-at-horizon", j, -1)

    def _arrive(self, j: int) -> None:
        self._log("arrival", j, -1)
        if not self._candidates[j]:
            self._set_status(j, PENDING)  # counted as submitted, then rejected at once
            self._reject(j, "unplaceable")
            return
        self._enqueue(j)

    def _enqueue(self, j: int) -> None:
        s = self._s
        self._set_status(j, PENDING)
        s.enqueued_s[j] = s.time_s
        s.queue.enqueue(j)
        if self._ttl is not None:
            self._push(s.time_s + self._ttl, TTL_EXPIRY, j, s.generation[j])

    def _expire(self, j: int, generation: int) -> None:
        s = self._s
        if s.status[j] != PENDING or s.generation[j] != generation:
            return  # stale: the job started (or re-entered the queue) since
        s.queue.remove(j, self._shape[j])
        self._reject(j, "ttl")

    def _reject(self, j: int, why: str) -> None:
        s = self._s
        s.generation[j] += 1
        self._set_status(j, REJECTED)
        s.counts[_REJECTION] += 1
        self._log(f"rejected-{why}", j, -1)

    def _start(self, j: int, i: int) -> None:
        s = self._s
        t = s.time_s
        s.free_cpu_m[i] -= self._req_cpu_m[j]
        s.free_mem_mib[i] -= self._req_mem_mib[j]
        s.free_gpus[i] -= self._req_gpus[j]
        s.alloc_cpu_m += self._req_cpu_m[j]
        was_idle = not s.node_jobs[i]
        s.node_jobs[i].append(j)
        s.running_counts[self._type_index[j] * self._n_nodes + i] += 1
        s.generation[j] += 1
        self._set_status(j, RUNNING)
        s.node_of[j] = i
        s.start_s[j] = t
        if s.first_start_s[j] < 0.0:  # the first start: wait and deadline are judged here only
            s.first_start_s[j] = t
            s.wait_sum_s += t - self._arrival_s[j]
            s.started_jobs += 1
            deadline = self._deadline_s[j]
            if deadline is not None and t > deadline:
                s.counts[_DEADLINE] += 1
        if self._active_nodes:
            if was_idle:
                s.cost_rate_usd_per_s += self._price_per_s[i]
        else:
            s.cost_rate_usd_per_s += self._job_rate(j, i)
        if self._is_lc[j] and self._is_spot[i] and not s.qos_hit[j]:
            s.qos_hit[j] = True
            s.counts[_QOS] += 1
        self._push(t + self._duration_s[j], COMPLETION, j, s.generation[j])
        self._log("start", j, i)

    def _job_rate(self, j: int, i: int) -> float:
        """Pro-rated $/s of job j on node i: GPU share for GPU jobs, CPU share otherwise."""
        if self._req_gpus[j] > 0:
            return self._price_per_s[i] * self._req_gpus[j] / self._gpus[i]
        return self._price_per_s[i] * self._req_cpu_m[j] / self._cpu_m[i]

    def _release(self, j: int) -> int:
        """Free running job j's resources on its node and stop its cost; returns the node index.

        The caller changes j's status afterwards (j still counts as running here).
        """
        s = self._s
        i = s.node_of[j]
        s.free_cpu_m[i] += self._req_cpu_m[j]
        s.free_mem_mib[i] += self._req_mem_mib[j]
        s.free_gpus[i] += self._req_gpus[j]
        s.alloc_cpu_m -= self._req_cpu_m[j]
        s.node_jobs[i].remove(j)
        s.running_counts[self._type_index[j] * self._n_nodes + i] -= 1
        s.generation[j] += 1
        s.gained_nodes.append(i)
        if self._active_nodes:
            if not s.node_jobs[i]:
                s.cost_rate_usd_per_s -= self._price_per_s[i]
        else:
            s.cost_rate_usd_per_s -= self._job_rate(j, i)
        if s.status_counts[RUNNING] == 1:  # j was the last running job (its status changes next)
            s.cost_rate_usd_per_s = 0.0  # no float residue when nothing runs
        return i

    def _complete(self, j: int, generation: int) -> None:
        s = self._s
        if s.status[j] != RUNNING or s.generation[j] != generation:
            return  # stale: the job was evicted
        i = self._release(j)
        self._set_status(j, COMPLETED)
        self._log("completion", j, i)

    def _interrupt(self, i: int) -> None:
        s = self._s
        s.up[i] = False
        self._log("interruption", -1, i)
        for j in list(s.node_jobs[i]):
            self._release(j)
            if self._preemptible[j]:
                self._log("evicted-requeued", j, i)
                self._enqueue(j)
            else:
                self._set_status(j, FAILED)
                s.counts[_EVICTION] += 1
                self._log("evicted-failed", j, i)
        self._push(s.time_s + self.spec.spot_recovery_s, RECOVERY, i, 0)

    def _tick(self, k: int) -> None:
        """Sample the SLA: every LC job on a node over the threshold is marked (once per job)."""
        s = self._s
        threshold = self.spec.sla_threshold_pct
        background = self._background_cpu[k]
        for i in range(self._n_nodes):
            jobs = s.node_jobs[i]
            if not jobs or s.running_counts[_LC * self._n_nodes + i] == 0:
                continue
            used_pct = 100.0 * (self._cpu_m[i] - s.free_cpu_m[i]) / self._cpu_m[i]
            if background[i] + used_pct > threshold:
                for j in jobs:
                    if self._is_lc[j] and not s.sla_hit[j]:
                        s.sla_hit[j] = True
                        s.counts[_SLA] += 1
                        self._log("sla-violation", j, i)


_Shape = tuple[int, int, int, float, tuple[str, ...] | None, str | None]
"""What decides the nodes a job can ever run on (jobs of one shape share candidates): millicores,
MiB, GPUs, VRAM per GPU, allowed GPU models, required arch."""


def _whole_units(amounts: Sequence[float] | np.ndarray, units_per_amount: int) -> list[int]:
    """Amounts (cores, GB) in whole units (millicores, MiB), rounded half to even as ``round()``."""
    return np.rint(np.asarray(amounts, dtype=np.float64) * units_per_amount).astype(np.int64).tolist()

