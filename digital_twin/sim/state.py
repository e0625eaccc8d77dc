"""The twin's mutable state: one :class:`TwinState`, built by :meth:`TwinState.initial`, and its cheap copy.

Only the simulator (:mod:`digital_twin.sim.twin`, :mod:`digital_twin.sim.event_loop`,
:mod:`digital_twin.sim.event_handlers`) changes a :class:`TwinState`; the fixed inputs it is read
against are in :class:`~digital_twin.sim.constants.TwinConstants`. Everything is kept in plain
Python lists indexed by node or job (the event loop reads them at every event), and resources
are in whole units (millicores, MiB, GPUs) so that allocation and release are exact.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass, fields

from digital_twin.energy.carbon_intensity import J_PER_KWH
from digital_twin.objective import N_CLASSES, PENALTIES, PENALTY_INDEX
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.features.gpu_fragmentation import GpuTally
from digital_twin.sim.job_queue import JobQueue
from digital_twin.sim.measures import unfairness

# Job status codes (index into STATUS_NAMES).
FUTURE, PENDING, RUNNING, COMPLETED, FAILED, REJECTED = range(6)
STATUS_NAMES = ("future", "pending", "running", "completed", "failed", "rejected")
TERMINAL = (COMPLETED, FAILED, REJECTED)

# Event kinds. At equal times events are handled in this order, then decisions are asked.
COMPLETION, RECOVERY, INTERRUPTION, TICK, ARRIVAL, TTL_EXPIRY = range(6)
EVENT_NAMES = ("completion", "recovery", "interruption", "tick", "arrival", "ttl-expiry")

_UNFAIRNESS = PENALTY_INDEX["unfairness"]
_ENERGY, _CARBON = PENALTY_INDEX["energy"], PENALTY_INDEX["carbon"]

ScheduledEvent = tuple[float, int, int, int, int]
"""``(time_s, kind, seq, index, generation)``: an event kind, the job or node index it is about, and
the job's generation when it was scheduled (0 for node events; for a completion under
contention, the node index and its ``completion_token``); ``seq`` breaks ties in push order."""

LoggedEvent = tuple[float, str, str, str]
"""``(time_s, event, job_id or "", node_id or "")``: one entry of the event log."""


@dataclass(slots=True, eq=False)
class TwinState:
    """Everything that changes during an episode (``N`` nodes, ``M`` jobs; build with :meth:`initial`).

    Lists are indexed by node or by job (an index into ``spec.jobs``). Invariants the simulator
    keeps: ``status_counts[k]`` is the number of jobs with ``status == k``; a node's free
    resources are its capacity less the requests of the jobs in ``node_jobs``.
    """

    # ---- the decision
    time_s: float
    """Current simulated time, seconds."""
    current: int
    """The job a decision is asked for; -1 while none is (before the run, and once ``done``)."""
    done: bool
    """Whether the episode is over (every job terminal, or the horizon reached); also True before
    the simulation is first run (no decision is asked then either)."""
    interruptions_s: tuple[tuple[float, ...], ...]
    """Per node, the spot interruption times of this episode (drawn at reset, never changed)."""
    recoveries_s: tuple[tuple[float, ...], ...]
    """Per node, when each interruption ends (same shape; ``inf``: not in the episode)."""

    # ---- per node, (N,)
    free_cpu_m: list[int]
    """Free allocatable millicores."""
    free_mem_mib: list[int]
    """Free allocatable MiB."""
    free_gpus: list[int]
    """Free GPUs."""
    up: list[bool]
    """Whether the node is up (a spot node is down for the recovery time after an interruption)."""
    node_jobs: list[list[int]]
    """The jobs running on the node, in start order."""
    running_counts: list[int]
    """``(3 * N,)`` running jobs per workload type and node, flat: index ``type * N + node``
    (types in ``WORKLOAD_TYPES`` order)."""
    # ---- per work clock, (N * L,): clock ``q = lane * N + node`` (``q`` is the node when L = 1)
    rate: list[float]
    """Progress rate of the clock's jobs, nominal seconds per second (1.0 while nothing slows them)."""
    rate_since_s: list[float]
    """When ``work_clock_s`` was last brought up to date (settled)."""
    work_clock_s: list[float]
    """When jobs progress on clocks (``TwinConstants.clocked``: cpu contention or co-location
    interference), the *work clock* of the node's jobs of one lane: nominal seconds of work each
    of them has done per second, summed since the episode began (``rate`` integrated up to
    ``rate_since_s``). They share its rate, so a run completes when the clock reaches its
    ``finish_clock_s``."""
    runs_by_finish: list[list[tuple[float, int, int]]]
    """On clocks, a heap of ``(finish_clock_s, job, generation)`` of the clock's runs; entries of
    ended runs stay until they reach the top (their job's generation has moved on)."""
    completion_token: list[int]
    """On clocks, the token of the clock's one live completion event (for its earliest run); an
    event with another token is stale and is dropped without waking the loop."""
    clock_runs: list[int]
    """With interference, the number of runs on each clock (which of a node's lanes are busy)."""
    aggressors: list[int]
    """With interference, ``(E * N,)`` running aggressors per entry and node (index ``entry * N +
    node``; :mod:`digital_twin.sim.features.interference`); empty without."""

    # ---- per job, (M,)
    status: list[int]
    """Status code (:data:`FUTURE` ... :data:`REJECTED`, names in :data:`STATUS_NAMES`)."""
    node_of: list[int]
    """The node of the job's latest start (-1: never started); meaningful while it runs."""
    start_s: list[float]
    """Time of the latest start, seconds (-1.0: never started)."""
    first_start_s: list[float]
    """Time of the first start, seconds (-1.0: never started); the first-start deadline is judged there."""
    enqueued_s: list[float]
    """Time the job last entered the queue, seconds (-1.0: never)."""
    finish_clock_s: list[float]
    """Under contention, the node's ``work_clock_s`` at which the job's current run completes
    (the clock at its start plus its nominal duration)."""
    generation: list[int]
    """Increases whenever one pending or running spell of the job ends, so that events scheduled
    for an earlier spell (completion, TTL expiry) are recognised as stale."""
    sla_hit: list[bool]
    """Whether the job's SLA violation was counted (once per job)."""
    qos_hit: list[bool]
    """Whether the job's QoS violation was counted (once per job; deadlines need no flag: they are
    judged at the first start only)."""

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
    gpu: GpuTally
    """GPUs allocated, fragmented and free, now and integrated (:mod:`digital_twin.sim.features.gpu_fragmentation`)."""
    node_power_w: list[float]
    """``(N,)`` each node's power now, W (:mod:`digital_twin.sim.features.energy_accounting`)."""
    node_attributed_w: list[float]
    """``(N,)`` the part of it our jobs add (the marginal power over the background's), W."""
    region_power_w: list[float]
    """``(R,)`` per region of the energy model, its nodes' power now, W."""
    region_attributed_w: list[float]
    """``(R,)`` per region, its nodes' attributed power now, W."""
    node_energy_j: float
    """The nodes' energy up to ``time_s``, J."""
    node_carbon_g: float
    """The nodes' emissions up to ``time_s``, gCO2eq."""
    attributed_energy_j: float
    """Our jobs' (attributed) energy up to ``time_s``, J (the ``energy`` count is it in kWh)."""
    attributed_carbon_g: float
    """Our jobs' emissions up to ``time_s``, gCO2eq (the ``carbon`` count is it in kg)."""
    rule_counts: list[list[int]]
    """Per tally of the placement rules, its running jobs per domain (:mod:`digital_twin.sim.features.rule_checks`;
    empty without rules)."""
    tallies_moved: bool
    """Whether a start or an end changed ``rule_counts`` since the last pass began (every node is
    then in ``gained_nodes``: :func:`digital_twin.sim.features.rule_events.tallies_moved`)."""
    counts: list[float]
    """Counted units per penalty term, in ``PENALTIES`` order. Read them through
    :meth:`penalty_counts`: the ``unfairness`` entry is brought up to date there (lazily)."""
    status_counts: list[int]
    """``(6,)`` number of jobs in each status."""
    wait_sum_s: float
    """Sum over every start of its queue spell's wait (start - arrival or requeue), seconds (for the mean wait)."""
    started_jobs: int
    """Jobs started at least once."""
    class_jobs: list[int]
    """``(3,)`` jobs arrived so far per workload type (``WORKLOAD_TYPES`` order), for ``unfairness``."""
    class_service: list[float]
    """``(3,)`` per workload type, the sum of the normalised services of its jobs that ended
    (completed, or running at the horizon): nominal work done / (end - arrival)."""
    parents_left: list[int]
    """With workflows, ``(M,)`` each task's parents not yet completed (a task is held back while
    it has any, :mod:`digital_twin.sim.features.workflow_events`); empty without workflows."""
    ready_s: list[float]
    """With workflows, ``(M,)`` when each job was submitted to the scheduler (its arrival, or its
    release by its last parent; -1.0 before), the start of its latency; empty without workflows."""
    workflow_left: list[int]
    """With workflows, ``(W,)`` each workflow's tasks not yet completed."""
    workflow_end_s: list[float]
    """With workflows, ``(W,)`` when each workflow's time was counted up to: its last task's
    completion, or the horizon for one that failed or is unfinished (-1.0 while it is open)."""
    decisions: list[tuple[int, int]]
    """Every decision so far, in order: ``(job, node)``, node ``-1`` for a deferral (what an
    online planner replays, :meth:`digital_twin.DigitalTwin.decisions`)."""
    unfairness_stale: bool
    """Whether ``class_jobs`` or ``class_service`` changed since ``counts``' ``unfairness`` entry was
    computed from them (set at arrivals and run ends; cleared by :meth:`penalty_counts`)."""

    @classmethod
    def initial(
        cls,
        constants: TwinConstants,
        interruptions_s: tuple[tuple[float, ...], ...],
        recoveries_s: tuple[tuple[float, ...], ...],
        record_events: bool,
    ) -> TwinState:
        """The state at time 0: empty nodes, all up, every job in the future, nothing scheduled.

        No decision is asked yet (``current`` -1, ``done`` True) until the simulation is run.
        """
        n, m = constants.n_nodes, constants.n_jobs
        lanes = constants.lanes
        clocks = n * constants.n_lanes
        regions = constants.energy.n_regions if constants.energy is not None else 0
        dag = constants.dag
        return cls(
            time_s=0.0,
            current=-1,
            done=True,
            interruptions_s=interruptions_s,
            recoveries_s=recoveries_s,
            free_cpu_m=list(constants.cpu_m),
            free_mem_mib=list(constants.mem_mib),
            free_gpus=list(constants.gpus),
            up=[True] * n,
            node_jobs=[[] for _ in range(n)],
            running_counts=[0] * (3 * n),
            rate=[1.0] * clocks,
            rate_since_s=[0.0] * clocks,
            work_clock_s=[0.0] * clocks,
            runs_by_finish=[[] for _ in range(clocks)],
            completion_token=[0] * clocks,
            clock_runs=[0] * clocks,
            aggressors=[0] * (lanes.n_entries * n if lanes is not None else 0),
            status=[FUTURE] * m,
            node_of=[-1] * m,
            start_s=[-1.0] * m,
            first_start_s=[-1.0] * m,
            enqueued_s=[-1.0] * m,
            finish_clock_s=[0.0] * m,
            generation=[0] * m,
            sla_hit=[False] * m,
            qos_hit=[False] * m,
            queue=JobQueue(m),
            gained_nodes=[],
            heap=[],
            seq=0,
            next_arrival=0,
            next_tick=0,
            events=[] if record_events else None,
            cost_usd=0.0,
            cost_rate_usd_per_s=0.0,
            alloc_cpu_m=0,
            alloc_cpu_m_s=0.0,
            gpu=GpuTally.initial(constants.gpu_job_mix, m, constants.gpus, constants.cpu_m),
            node_power_w=[0.0] * n,
            node_attributed_w=[0.0] * n,
            region_power_w=[0.0] * regions,
            region_attributed_w=[0.0] * regions,
            node_energy_j=0.0,
            node_carbon_g=0.0,
            attributed_energy_j=0.0,
            attributed_carbon_g=0.0,
            rule_counts=constants.rules.empty_counts() if constants.rules is not None else [],
            tallies_moved=False,
            counts=[0.0] * len(PENALTIES),
            status_counts=[m, 0, 0, 0, 0, 0],
            wait_sum_s=0.0,
            started_jobs=0,
            class_jobs=[0] * N_CLASSES,
            class_service=[0.0] * N_CLASSES,
            parents_left=list(dag.n_parents) if dag is not None else [],
            ready_s=[-1.0] * m if dag is not None else [],
            workflow_left=list(dag.n_tasks) if dag is not None else [],
            workflow_end_s=[-1.0] * dag.n_workflows if dag is not None else [],
            decisions=[],
            unfairness_stale=False,
        )

    def outage_end_s(self, i: int) -> float:
        """When node ``i``'s latest interruption at or before now ends (the node must have one)."""
        return self.recoveries_s[i][bisect.bisect_right(self.interruptions_s[i], self.time_s) - 1]

    def copy(self) -> TwinState:
        """An independent copy, O(nodes + jobs).

        Every list is copied (the lists in ``node_jobs``, ``runs_by_finish`` and ``rule_counts``,
        and the queue too); the items of the other lists, ``interruptions_s`` and ``recoveries_s``
        are immutable and shared.
        """
        return TwinState(
            time_s=self.time_s,
            current=self.current,
            done=self.done,
            interruptions_s=self.interruptions_s,
            recoveries_s=self.recoveries_s,
            free_cpu_m=self.free_cpu_m.copy(),
            free_mem_mib=self.free_mem_mib.copy(),
            free_gpus=self.free_gpus.copy(),
            up=self.up.copy(),
            node_jobs=[jobs.copy() for jobs in self.node_jobs],
            running_counts=self.running_counts.copy(),
            rate=self.rate.copy(),
            rate_since_s=self.rate_since_s.copy(),
            work_clock_s=self.work_clock_s.copy(),
            runs_by_finish=[runs.copy() for runs in self.runs_by_finish],
            completion_token=self.completion_token.copy(),
            clock_runs=self.clock_runs.copy(),
            aggressors=self.aggressors.copy(),
            status=self.status.copy(),
            node_of=self.node_of.copy(),
            start_s=self.start_s.copy(),
            first_start_s=self.first_start_s.copy(),
            enqueued_s=self.enqueued_s.copy(),
            finish_clock_s=self.finish_clock_s.copy(),
            generation=self.generation.copy(),
            sla_hit=self.sla_hit.copy(),
            qos_hit=self.qos_hit.copy(),
            queue=self.queue.copy(),
            gained_nodes=self.gained_nodes.copy(),
            heap=self.heap.copy(),
            seq=self.seq,
            next_arrival=self.next_arrival,
            next_tick=self.next_tick,
            events=None if self.events is None else self.events.copy(),
            cost_usd=self.cost_usd,
            cost_rate_usd_per_s=self.cost_rate_usd_per_s,
            alloc_cpu_m=self.alloc_cpu_m,
            alloc_cpu_m_s=self.alloc_cpu_m_s,
            gpu=self.gpu.copy(),
            node_power_w=self.node_power_w.copy(),
            node_attributed_w=self.node_attributed_w.copy(),
            region_power_w=self.region_power_w.copy(),
            region_attributed_w=self.region_attributed_w.copy(),
            node_energy_j=self.node_energy_j,
            node_carbon_g=self.node_carbon_g,
            attributed_energy_j=self.attributed_energy_j,
            attributed_carbon_g=self.attributed_carbon_g,
            rule_counts=[per_domain.copy() for per_domain in self.rule_counts],
            tallies_moved=self.tallies_moved,
            counts=self.counts.copy(),
            status_counts=self.status_counts.copy(),
            wait_sum_s=self.wait_sum_s,
            started_jobs=self.started_jobs,
            class_jobs=self.class_jobs.copy(),
            class_service=self.class_service.copy(),
            parents_left=self.parents_left.copy(),
            ready_s=self.ready_s.copy(),
            workflow_left=self.workflow_left.copy(),
            workflow_end_s=self.workflow_end_s.copy(),
            decisions=self.decisions.copy(),
            unfairness_stale=self.unfairness_stale,
        )

    def __reduce__(self) -> tuple[type[TwinState], tuple[object, ...]]:
        """Pickle field by field: compiled (:mod:`digital_twin.native`), the class has no default pickling."""
        return TwinState, tuple(getattr(self, field.name) for field in fields(TwinState))

    def penalty_counts(self) -> list[float]:
        """``counts`` with its ``unfairness`` entry up to date (the list itself: do not change it).

        ``unfairness`` is a function of the per-class tallies, not a sum over events, and the
        tallies change at every arrival and completion: it is recomputed here, when read and
        only if they changed, rather than at each of those events (the twin's hot path). The
        ``energy`` and ``carbon`` entries are our jobs' kWh and kg so far, set from their sums
        here for the same reason.
        """
        counts = self.counts
        counts[_ENERGY] = self.attributed_energy_j / J_PER_KWH
        counts[_CARBON] = self.attributed_carbon_g / 1000.0
        if self.unfairness_stale:
            self.counts[_UNFAIRNESS] = unfairness(self.class_jobs, self.class_service)
            self.unfairness_stale = False
        return self.counts

    def set_status(self, j: int, status: int) -> None:
        """Give job ``j`` the status code ``status``, keeping ``status_counts`` in step."""
        counts = self.status_counts
        counts[self.status[j]] -= 1
        counts[status] += 1
        self.status[j] = status

    def schedule(self, time_s: float, kind: int, index: int, generation: int) -> None:
        """Push a :data:`ScheduledEvent` (``generation`` 0 for node events)."""
        self.seq += 1
        heapq.heappush(self.heap, (time_s, kind, self.seq, index, generation))
