"""The twin's core state, and the two extension points its features plug into: :class:`Feature` and :class:`Runs`.

:class:`CoreState` is what every episode has: the clock, the decision, the nodes
(:class:`~digital_twin.sim.nodes.NodeState`), the jobs (:class:`~digital_twin.sim.job_states.JobStates`),
the queue, the event heap, the bill and the penalty counts. :class:`~digital_twin.sim.state.TwinState`
adds the features an episode switches on; the event handlers
(:mod:`digital_twin.sim.event_handlers`) change the core, then call each feature's hook.

A :class:`Feature` (energy, GPU tallies, placement rules, workflows: :mod:`digital_twin.sim.features`)
owns its part of the state and reacts at the events through its hooks; the base class's hooks do
nothing, so a feature overrides only those it needs. :class:`Runs` decides when a run completes:
after its duration (:class:`Runs` itself), or on work clocks when something slows runs down
(:class:`~digital_twin.sim.features.work_clocks.WorkClocks`).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Final

from mypy_extensions import mypyc_attr

from digital_twin.objective import PENALTY_INDEX
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.job_queue import JobQueue
from digital_twin.sim.job_states import RUNNING, JobStates
from digital_twin.sim.measures import unfairness
from digital_twin.sim.nodes import NodeState

# Event kinds. At equal times events are handled in this order, then decisions are asked.
COMPLETION: Final = 0
RECOVERY: Final = 1
INTERRUPTION: Final = 2
TICK: Final = 3
ARRIVAL: Final = 4
TTL_EXPIRY: Final = 5
EVENT_NAMES = ("completion", "recovery", "interruption", "tick", "arrival", "ttl-expiry")

ScheduledEvent = tuple[float, int, int, int, int]
"""``(time_s, kind, seq, index, generation)``: an event kind, the job or node index it is about, and
the job's generation when it was scheduled (0 for node events; for a completion on work clocks,
the clock index and its completion token); ``seq`` breaks ties in push order."""

LoggedEvent = tuple[float, str, str, str]
"""``(time_s, event, job_id or "", node_id or "")``: one entry of the event log."""

_UNFAIRNESS: Final = PENALTY_INDEX["unfairness"]


@dataclass(slots=True, eq=False)
class CoreState:
    """What changes during every episode (``N`` nodes, ``M`` jobs), whatever its features."""

    # ---- the decision
    time_s: float
    """Current simulated time, seconds."""
    current: int
    """The job a decision is asked for; -1 while none is (before the run, and once ``done``)."""
    done: bool
    """Whether the episode is over (every job terminal, or the horizon reached); also True before
    the simulation is first run (no decision is asked then either)."""
    nodes: NodeState
    """Free resources, up or down, running jobs, per node."""
    jobs: JobStates
    """Status, starts, queue spells and flags, per job."""
    # ---- queue and events
    queue: JobQueue
    """The pending jobs: FIFO order, the current pass and its cursor, the parked jobs."""
    gained_nodes: list[int]
    """Nodes that freed resources or recovered in the current batch of events (the only nodes on
    which a parked job can newly fit); may repeat a node."""
    heap: list[ScheduledEvent]
    """Scheduled events (completions, recoveries, interruptions, TTL expiries), a binary heap."""
    seq: int
    """Events pushed so far (the tie-break of :data:`ScheduledEvent`)."""
    next_arrival: int
    """Index of the next job to arrive (``M``: all arrived)."""
    next_tick: int
    """Index of the next telemetry tick."""
    events: list[LoggedEvent] | None
    """The event log when recording, else ``None``."""
    # ---- accounting
    cost_usd: float
    """Compute cost accrued up to ``time_s``, USD."""
    cost_rate_usd_per_s: float
    """The current compute cost rate, USD per second (exactly 0.0 when nothing runs)."""
    alloc_cpu_m: int
    """Millicores allocated to running jobs now."""
    alloc_cpu_m_s: float
    """Time integral of ``alloc_cpu_m`` up to ``time_s``, millicore-seconds."""
    counts: list[float]
    """Counted units per penalty term, in ``PENALTIES`` order. Read them through
    :meth:`~digital_twin.sim.state.TwinState.penalty_counts`: the terms computed lazily are
    brought up to date there."""
    wait_sum_s: float
    """Sum over every start of its queue spell's wait (start - arrival or requeue), seconds (for the mean wait)."""
    started_jobs: int
    """Jobs started at least once."""
    class_jobs: list[int]
    """``(3,)`` jobs arrived so far per workload type (``WORKLOAD_TYPES`` order), for ``unfairness``."""
    class_service: list[float]
    """``(3,)`` per workload type, the sum of the normalised services of its jobs that ended
    (completed, or running at the horizon): nominal work done / (end - submission)."""
    unfairness_stale: bool
    """Whether ``class_jobs`` or ``class_service`` changed since ``counts``' ``unfairness`` entry was
    computed from them (set at arrivals and run ends; cleared when the counts are read)."""
    decisions: list[tuple[int, int]]
    """Every decision so far, in order: ``(job, node)``, node ``-1`` for a deferral (what an
    online planner replays, :meth:`digital_twin.DigitalTwin.decisions`)."""

    def schedule(self, time_s: float, kind: int, index: int, generation: int) -> None:
        """Push a :data:`ScheduledEvent` (``generation`` 0 for node events)."""
        self.seq += 1
        _heappush(self.heap, (time_s, kind, self.seq, index, generation))

    def current_tick(self, c: TwinConstants) -> int:
        """The telemetry tick whose background holds now: the latest tick handled (ticks precede decisions)."""
        k = self.next_tick - 1
        return k if k < c.last_tick else c.last_tick

    def refresh_unfairness(self) -> None:
        """Bring ``counts``' ``unfairness`` entry up to date with the class tallies, if they changed."""
        if self.unfairness_stale:
            self.counts[_UNFAIRNESS] = unfairness(self.class_jobs, self.class_service)
            self.unfairness_stale = False


_heappush: Final = heapq.heappush  # (a Final: the compiled core keeps it, not looking it up at each call)
_NONE: list[int] = []  # what Feature.on_complete releases by default (never changed)


@mypyc_attr(allow_interpreted_subclasses=True)
class Feature:
    """One optional piece of physics: its own state, and what it does at the twin's events.

    Subclasses (:mod:`digital_twin.sim.features`) hold their state in attributes and override
    the hooks they need; the base hooks do nothing. Each hook runs after the core has changed for
    the event (the node's resources, the job's status), in the order of
    :data:`digital_twin.sim.state.FEATURES`. Hooks may change the core state where their rule says
    so (a penalty count, the run's start of work), and their own state.
    """

    def copy(self) -> Feature:
        """An independent copy of the feature's state (a snapshot of the twin holds it)."""
        raise NotImplementedError

    def on_arrive(self, s: CoreState, c: TwinConstants, j: int) -> bool:
        """Job ``j``'s arrival has come: whether it is submitted now (False: held back, or handled here)."""
        del s, c, j
        return True

    def on_start(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        """Job ``j`` starts on node ``i`` (allocated and charged; its completion not scheduled yet)."""
        del s, c, j, i

    def on_end(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        """Job ``j``'s run on node ``i`` ends (released; ``j`` still counts as running)."""
        del s, c, j, i

    def on_complete(self, s: CoreState, c: TwinConstants, j: int) -> list[int]:
        """Job ``j`` completed: the jobs this releases, to be submitted now (their arrival has come)."""
        del s, c, j
        return _NONE

    def on_fail(self, s: CoreState, c: TwinConstants, j: int) -> None:
        """Job ``j`` failed (an eviction) or was rejected."""
        del s, c, j

    def on_node(self, s: CoreState, c: TwinConstants, i: int) -> None:
        """Node ``i`` went down or came up again (its jobs already released)."""
        del s, c, i

    def on_tick(self, s: CoreState, c: TwinConstants, k: int) -> None:
        """Telemetry tick ``k`` (every node's background changes)."""
        del s, c, k

    def advance(self, s: CoreState, c: TwinConstants, t0: float, t1: float) -> None:
        """The clock moves from ``t0`` to ``t1`` (``s.time_s`` is still ``t0``); nothing else changes between."""
        del s, c, t0, t1

    def at_horizon(self, s: CoreState, c: TwinConstants) -> None:
        """The horizon ends the episode (the queued jobs are charged already)."""
        del s, c

    def count(self, counts: list[float]) -> None:
        """Write the penalty counts this feature keeps lazily (called when the counts are read)."""
        del counts


class Runs:
    """When runs complete: here, their nominal duration after their start of work; on work clocks in a subclass.

    The event handlers call :meth:`start` once a started job's features have run, and
    :meth:`before_end` / :meth:`end` around a release; the event loop asks :meth:`is_stale` of a
    completion event and :meth:`complete` for the job it completes.
    """

    def copy(self) -> Runs:
        """An independent copy (nominal runs keep no state)."""
        return self

    def __reduce__(self) -> tuple[type[Runs], tuple[object, ...]]:
        """Pickle as a new one (compiled, the class has no default pickling)."""
        return Runs, ()

    def start(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        """Schedule job ``j``'s completion: its duration after its run's start of work."""
        jobs = s.jobs
        s.schedule(jobs.start_s[j] + c.duration_s[j], COMPLETION, j, jobs.generation[j])

    def before_end(self, s: CoreState, c: TwinConstants, j: int, i: int) -> bool:
        """Before job ``j``'s run on ``i`` is released: whether it held its clock's completion event."""
        del s, c, j, i
        return False

    def end(self, s: CoreState, c: TwinConstants, j: int, i: int, was_first: bool) -> None:
        """After job ``j``'s run on ``i`` is released (``was_first``: :meth:`before_end`'s answer)."""
        del s, c, j, i, was_first

    def on_tick(self, s: CoreState, c: TwinConstants, k: int) -> None:
        """Telemetry tick ``k``: the runs' rates may change."""
        del s, c, k

    def is_stale(self, s: CoreState, index: int, generation: int) -> bool:
        """Whether a completion event about ``index`` (a job) scheduled at ``generation`` is stale."""
        jobs = s.jobs
        return jobs.status[index] != RUNNING or jobs.generation[index] != generation

    def completing(self, s: CoreState, index: int, generation: int) -> int:
        """The job a completion event completes, or -1 when it is stale."""
        return -1 if self.is_stale(s, index, generation) else index

    def work_done_s(self, s: CoreState, c: TwinConstants, j: int) -> float:
        """Nominal seconds of work running job ``j``'s current run has done by now.

        Negative while a delayed start of work (a feature's) is still ahead.
        """
        del c
        return s.time_s - s.jobs.start_s[j]

    def settled_work_done_s(self, s: CoreState, c: TwinConstants, j: int) -> float:
        """:meth:`work_done_s`, with the run's clock brought up to now (at the horizon)."""
        return self.work_done_s(s, c, j)

    def work_left_s(self, s: CoreState, c: TwinConstants, j: int, i: int) -> float:
        """Nominal seconds of work running job ``j``'s run on node ``i`` has left (may be negative)."""
        del i
        return s.jobs.start_s[j] + c.duration_s[j] - s.time_s
