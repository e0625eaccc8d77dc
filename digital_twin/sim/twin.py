"""The digital twin: an event-driven simulation of a fleet, its queue and its bill.

The twin jumps from event to event (arrival, completion, telemetry tick, spot interruption,
spot recovery, queue TTL expiry) and stops at each *decision point*: a moment at which a
pending job fits on at least one up node. The caller then :meth:`DigitalTwin.place` s the job
on a node or :meth:`DigitalTwin.defer` s it; both run the simulation on to the next decision
point. Jobs that fit nowhere right now wait without a decision being asked.

Queue discipline: pending jobs are asked in FIFO order of entering the queue (an evicted
preemptible job re-enters at the back), each at most once per instant; a deferred job again
after the next event, or (``until=NEW_FIT``, :mod:`digital_twin.sim.deferral`) once it fits on a
node it did not fit on. Jobs that fit nowhere, or wait for a new fit, are *parked*
(:mod:`digital_twin.sim.job_queue`): looked at again only when such a node gains room.

Workflows: a task arrives once its parents have completed; a failure rejects its descendants
(:mod:`digital_twin.sim.tables.workflow_events`).

Time: the episode covers ``[0, horizon_s)``; events at ``horizon_s`` or later never happen.
Jobs still queued at the horizon are charged the rejection penalty (they were not served);
jobs still running pay their cost up to the horizon, and the terms judged at the end of a run
(lost utility, the deadline under the ``completion`` rule, their service for ``unfairness``)
judge them with the horizon as their end. At equal times, events are handled in the order
completion, recovery, interruption, tick, arrival, TTL expiry; decisions come after them all.

Where things live: :mod:`digital_twin.sim` (its package docstring lists the modules).

Example:
    >>> import numpy as np
    >>> from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, Telemetry, TwinSpec, default_fleet
    >>> fleet = default_fleet()
    >>> jobs = [JobSpec("j0", 0.0, 600.0, "batch", 4, 8)]
    >>> spec = TwinSpec(fleet, tuple(jobs), Telemetry.constant(5, 30, 40, 3600, 300), EpisodeSettings(3600))
    >>> twin = DigitalTwin(spec)
    >>> twin.reset(np.random.default_rng(0))
    >>> twin.current_job.job_id
    'j0'
    >>> twin.place(0)
    >>> twin.terminated, round(twin.objective().cost_usd, 6)  # 0.48 $/h * 4/32 * 600 s
    (True, 0.01)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from digital_twin.energy.model import known_energy_model
from digital_twin.errors import InvalidPlacementError, PastMismatchError
from digital_twin.hindsight import HindsightView
from digital_twin.jobs import JobSpec
from digital_twin.objective import ObjectiveBreakdown
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.continuation import continued_state, past_difference, shapes_difference
from digital_twin.sim.core import INTERRUPTION, LoggedEvent
from digital_twin.sim.deferral import DEFERRALS, NEW_FIT, NEXT_EVENT
from digital_twin.sim.event_handlers import start
from digital_twin.sim.event_log import log_event
from digital_twin.sim.event_loop import fit_mask, run_to_decision
from digital_twin.sim.features.outages import Outages
from digital_twin.sim.job_states import FUTURE, PENDING, RUNNING
from digital_twin.sim.known_durations import known_jobs
from digital_twin.sim.node_arrays import NodeArrays
from digital_twin.sim.state import TwinState
from digital_twin.sim.twin_views import NODE_INDEX_TYPES, TwinViews
from digital_twin.spec import TwinSpec
from digital_twin.spot.outages import episode_outages, given_outages, known_outages
from digital_twin.telemetry import Telemetry


class TwinSnapshot:
    """An opaque saved state of a twin, for :meth:`DigitalTwin.restore` (look-ahead)."""

    __slots__ = ("_state",)

    def __init__(self, state: TwinState) -> None:
        self._state = state

    def __reduce__(self) -> tuple[type[TwinSnapshot], tuple[TwinState]]:
        return TwinSnapshot, (self._state,)  # compiled (digital_twin/native.py): no default pickling


class DigitalTwin:
    """Simulates one :class:`TwinSpec`; see the module docstring for the protocol.

    Args:
        spec: The episode's fixed inputs.
        record_events: Keep an event log (:attr:`event_log`), for tests and debugging.
    """

    # Slots: the hot path reads these at every step, and slots are read faster than a dict.
    __slots__ = ("_arrays", "_c", "_mask", "_s", "_unplayed", "_views", "record_events", "spec")

    def __init__(self, spec: TwinSpec, record_events: bool = False) -> None:
        self.spec = spec
        self.record_events = record_events
        self._c = TwinConstants.of(spec)
        self._views = TwinViews(spec, self._c)
        self._s = TwinState.initial(self._c, Outages.none(len(spec.fleet)), record_events)
        self._unplayed: TwinState | None = self._s  # until reset runs it
        # can_place() of every node now: replaced at each decision, never changed (a NEW_FIT deferral keeps it)
        self._mask = [False] * self._c.n_nodes
        self._arrays: NodeArrays | None = None  # made when first read (node_arrays)

    # ------------------------------------------------------------------ protocol
    def reset(self, rng: np.random.Generator) -> None:
        """Start the episode: its spot outages (given, or drawn from ``rng``), then run to the first decision."""
        c, s = self._c, self._s
        outages = Outages(*episode_outages(self.spec, rng))
        if s is self._unplayed:  # the time-0 state __init__ made, never run: only its outages are new
            s.outages, self._unplayed = outages, None
        else:
            self._s = s = TwinState.initial(c, outages, self.record_events)
        for node, times in enumerate(outages.interruptions_s):
            for t in times:
                s.schedule(t, INTERRUPTION, node, 0)
        self._mask = run_to_decision(s, c)

    @property
    def current_job(self) -> JobSpec | None:
        """The job a decision is asked for, or ``None`` when the episode is over."""
        return None if self._s.done else self.spec.jobs[self._s.current]

    @property
    def current_job_index(self) -> int:
        """Index into ``spec.jobs`` of the current job (-1 when the episode is over)."""
        return self._s.current

    def can_place(self, node: int) -> bool:
        """Whether the current job fits on ``node`` now (up, resources, arch, GPU model/VRAM)."""
        if self._s.done or not 0 <= node < self._c.n_nodes:
            return False
        return self._mask[node]

    def feasible_mask(self) -> list[bool]:
        """``can_place`` for every node, in fleet order (all False when the episode is over)."""
        return self._mask.copy()

    def fit_array(self) -> np.ndarray:
        """:meth:`feasible_mask` as a fresh ``(n_nodes,)`` bool array (from :meth:`node_arrays` on a large fleet)."""
        s = self._s
        if s.done:
            return np.zeros(self._c.n_nodes, dtype=bool)
        return self.node_arrays().fit(s.current, self._mask)

    def node_arrays(self) -> NodeArrays:
        """The node state as arrays, brought up to date for the nodes changed since the last read.

        One object per twin (its arrays are read-only and change at the next read): see
        :class:`~digital_twin.sim.node_arrays.NodeArrays`.
        """
        arrays = self._arrays
        if arrays is None:
            arrays = self._arrays = NodeArrays(self._c)
        arrays.update(self._s.nodes)
        return arrays

    def place(self, node: int) -> None:
        """Start the current job on ``node`` and run on to the next decision point.

        Raises:
            InvalidPlacementError: The episode is over or the job does not fit; nothing changes.
        """
        s = self._s
        if s.done:
            raise InvalidPlacementError("the episode is over: no job to place")
        if not (isinstance(node, NODE_INDEX_TYPES) and 0 <= node < self._c.n_nodes and self._mask[node]):
            raise InvalidPlacementError(self._views.why_not(s, s.current, node))
        queue, c, j = s.queue, self._c, s.current
        queue.take_current()
        s.decisions.append((j, int(node)))
        start(s, c, j, int(node))
        if queue.parked and c.rules is not None and c.rules.dynamic:
            queue.wake_after(queue.position[j])  # the start may let later parked jobs fit
        self._mask = run_to_decision(s, c)

    def defer(self, until: str = NEXT_EVENT) -> None:
        """Leave the current job queued and run on to the next decision.

        Args:
            until: When the job is asked again: :data:`~digital_twin.sim.deferral.NEXT_EVENT`
                (after the next event) or :data:`~digital_twin.sim.deferral.NEW_FIT` (once it fits
                on a node it does not fit on now).

        Raises:
            InvalidPlacementError: The episode is over.
            ValueError: ``until`` is not one of :data:`~digital_twin.sim.deferral.DEFERRALS`.
        """
        s, c = self._s, self._c
        if s.done:
            raise InvalidPlacementError("the episode is over: no job to defer")
        if until not in DEFERRALS:
            raise ValueError(f"until must be one of {DEFERRALS}, got {until!r}")
        log_event(s, c, "defer", s.current, -1)
        s.decisions.append((s.current, -1))
        if until == NEW_FIT:
            s.queue.park_current(self._mask, c.shape[s.current])  # _mask is replaced, never changed
        else:
            s.queue.cursor += 1
        self._mask = run_to_decision(s, c)

    @property
    def done(self) -> bool:
        """True once the episode is over (terminated or truncated)."""
        return self._s.done

    @property
    def terminated(self) -> bool:
        """True when every job reached a terminal state before the horizon."""
        s = self._s
        counts = s.jobs.status_counts
        return s.done and counts[RUNNING] + counts[PENDING] + counts[FUTURE] == 0

    @property
    def truncated(self) -> bool:
        """True when the horizon ended the episode with jobs not yet terminal."""
        return self._s.done and not self.terminated

    # ------------------------------------------------------------------ look-ahead
    def snapshot(self) -> TwinSnapshot:
        """Save the current state (cost: a copy of a few lists; O(nodes + jobs))."""
        return TwinSnapshot(self._s.copy())

    def restore(self, snapshot: TwinSnapshot) -> None:
        """Return to a state saved by :meth:`snapshot` of this twin (the snapshot stays reusable)."""
        self._s = s = snapshot._state.copy()
        self._mask = [False] * self._c.n_nodes if s.done else fit_mask(s, self._c, s.current)

    def continued_in(self, spec: TwinSpec) -> DigitalTwin:
        """A twin on ``spec`` standing at this twin's current decision, in the same state.

        ``spec`` continues this episode: the same fleet and settings (``spot_interruptions``
        aside), the jobs arrived so far as its first jobs (every later one arrives after now),
        the telemetry to the current tick, the spot interruptions up to now, given
        (``fixed_interruptions_s``); after now it may differ (e.g. :meth:`known_spec` with a
        forecast added). The result is exact: played on with any actions, it gives bit for bit
        what a twin reset on ``spec`` and given :meth:`decisions` would (what carries over and
        why: :mod:`digital_twin.sim.continuation`). It records events if this twin does, its log
        continuing this one's. Cost: O(nodes + jobs), and this twin is unchanged.

        Raises:
            PastMismatchError: This twin stands at no decision, or ``spec`` differs before now
                (the message says what differs).
        """
        if self._s.done:
            raise PastMismatchError("the twin stands at no decision (not reset, or its episode is over)")
        difference = past_difference(self.spec, self._c, self._s, self.tick_index, spec)
        outages = given_outages(spec)
        if difference is not None or outages is None:
            raise PastMismatchError(f"the spec does not continue the episode at t={self.time_s:g} s: {difference}")
        twin = DigitalTwin(spec, self.record_events)
        regrouped = shapes_difference(self._c, twin._c, self._s.next_arrival)
        if regrouped is not None:
            raise PastMismatchError(regrouped)
        twin._s = s = continued_state(self._s, self._c, twin._c, outages)
        twin._mask = fit_mask(s, twin._c, s.current)
        return twin

    def __reduce__(self) -> tuple[Callable[..., DigitalTwin], tuple[object, ...]]:
        """Pickle as its spec and state; the derived constants and views are rebuilt from the spec.

        (Compiled by :mod:`digital_twin.native`, the class has no default pickling.)
        """
        return _unpickled_twin, (self.spec, self.record_events, TwinSnapshot(self._s))

    # ------------------------------------------------------------------ views (see TwinViews)
    @property
    def time_s(self) -> float:
        """Current simulated time in seconds."""
        return self._s.time_s

    @property
    def tick_index(self) -> int:
        """Index of the telemetry tick that contains the current time."""
        return self._views.tick_index(self._s)

    def objective(self) -> ObjectiveBreakdown:
        """The objective accrued so far (cost up to :attr:`time_s`), by term."""
        return self._views.objective(self._s)

    def objective_dict(self) -> dict[str, float]:
        """:meth:`objective` as ``ObjectiveBreakdown.as_dict()`` gives it (fast: it runs at every env step)."""
        return self._views.objective_dict(self._s)

    def objective_usd(self) -> float:
        """The objective accrued so far, in USD (cheap; the sum of :meth:`objective`'s terms)."""
        return self._views.objective_usd(self._s)

    def job_counts(self) -> dict[str, int]:
        """Number of jobs per status (``future`` = not yet arrived); they sum to ``len(jobs)``."""
        return self._views.job_counts(self._s)

    def job_status(self, job: int) -> str:
        """Status name of job ``job`` (index into ``spec.jobs``)."""
        return self._views.job_status(self._s, job)

    def job_node(self, job: int) -> int:
        """Node index a running job is on (-1 when not running)."""
        return self._views.job_node(self._s, job)

    def metrics(self) -> dict[str, float]:
        """Episode metrics so far: objective terms, job counts, mean wait, utilisation, QoS."""
        return self._views.metrics(self._s)

    def runs_left(self) -> list[tuple[int, int, float]]:
        """``(job, node, seconds)`` of every running job: the nominal work its run has left (see ``TwinViews``)."""
        return self._views.runs_left(self._s)

    def candidate_masks(self, jobs: list[int]) -> np.ndarray:
        """``(len(jobs), n_nodes)`` bool: the nodes each of ``jobs`` (indices into ``spec.jobs``) could ever run on."""
        masks = self._c.candidate_mask
        return np.array([masks[j] for j in jobs], dtype=bool).reshape(len(jobs), self._c.n_nodes)

    def node_free(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Free cpu cores, free mem GB and free GPUs per node, each ``(n_nodes,)`` float64."""
        return self._views.node_free(self._s)

    def node_up(self) -> np.ndarray:
        """``(n_nodes,)`` bool: which nodes are up."""
        return self._views.node_up(self._s)

    def running_by_type(self) -> np.ndarray:
        """``(n_nodes, 3)`` int: running jobs per node and workload type (WORKLOAD_TYPES order)."""
        return self._views.running_by_type(self._s)

    def node_vector(self) -> list[float]:
        """The dynamic node state as one flat list of ``7 * n_nodes`` (see :meth:`TwinViews.node_vector`)."""
        return self._views.node_vector(self._s)

    def preference_weights(self) -> np.ndarray:
        """``(n_nodes,)``: what placing the current job on each node now counts in ``preferences`` (0 without rules)."""
        return self._views.preference_weights(self._s)

    def utilization_pct(self) -> np.ndarray:
        """``(n_nodes,)``: background cpu % now + allocated cpu / node cpu x 100 (may exceed 100)."""
        return self._views.utilization_pct(self._s)

    def pending_jobs(self) -> list[int]:
        """Job indices in the queue, starting with the current job, in the order they will be asked."""
        return self._views.pending_jobs(self._s)

    def queue_length(self) -> int:
        """Jobs in the queue, the current job included: ``len(pending_jobs())``, without building the list."""
        return len(self._s.queue.fifo)

    @property
    def event_log(self) -> list[LoggedEvent]:
        """``(time_s, event, job_id or "", node_id or "")`` entries; empty unless recording."""
        return self._views.event_log(self._s)

    def hindsight(self) -> HindsightView:
        """The privileged, read-only view of the episode's future (for the oracle only)."""
        return self._views.hindsight(self._s)

    def decisions(self) -> list[tuple[str, int | None]]:
        """Every decision of the episode so far, in order: ``(job_id, node)``, ``None`` for a deferral."""
        ids = self._c.job_ids
        return [(ids[j], None if node < 0 else node) for j, node in self._s.decisions]

    def known_spec(self) -> TwinSpec:
        """The episode as known at the current decision: its past, with nothing of its future.

        The same fleet and settings; the jobs arrived so far and the later tasks of the
        workflows submitted so far (a workflow's DAG, arrivals and declarations are known at its
        submission), copies, each with the duration known now
        (:func:`digital_twin.sim.known_durations.expected_duration_s`: a completed job's true one, a
        running job's declaration or, once it has outlived it, twice the work it has done, a
        queued job's declaration); the telemetry to the current tick, then held (a persistence
        forecast); the spot outages so far (:func:`~digital_twin.spot.outages.known_outages`); the
        grids' carbon intensity to now, then held (:func:`~digital_twin.energy.model.known_energy_model`). A twin reset
        on it and given :meth:`decisions` (same deferral rule) reaches the current decision in
        the same state but for planned ends (running jobs', outages'), as nothing before now depended
        on a duration that had not run out; :meth:`continued_in` stands there without
        the replay. An online planner adds its own forecast of the future to it (e.g.
        :class:`agents.lookahead.LookaheadAgent`).
        """
        s, spec = self._s, self.spec
        k = self.tick_index
        background = np.array(spec.telemetry.background_pct)
        background[k + 1 :] = background[k]
        telemetry = Telemetry(background, spec.telemetry.tick_s, source=f"{spec.telemetry.source}, known to tick {k}")
        spot = s.outages
        past_interruptions, past_recoveries = known_outages(spec, spot.interruptions_s, spot.recoveries_s, s.time_s)
        return dataclasses.replace(
            spec,
            jobs=known_jobs(s, self._c, spec.jobs),
            telemetry=telemetry,
            settings=dataclasses.replace(spec.settings, spot_interruptions=False),
            fixed_interruptions_s=past_interruptions,
            fixed_recoveries_s=past_recoveries,
            energy=None if spec.energy is None else known_energy_model(spec.energy, s.time_s, spec.settings.horizon_s),
        )


def _unpickled_twin(spec: TwinSpec, record_events: bool, snapshot: TwinSnapshot) -> DigitalTwin:
    """The twin :meth:`DigitalTwin.__reduce__` pickled: a new one, restored to the pickled state."""
    twin = DigitalTwin(spec, record_events)
    twin.restore(snapshot)
    return twin
