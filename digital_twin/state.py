"""The twin's mutable state, kept in plain Python lists for speed, and its cheap copy.

Only :class:`digital_twin.twin.DigitalTwin` changes a :class:`TwinState`. Resources are in
integer units (millicores, MiB, whole GPUs) so that allocation and release are exact.
"""

from __future__ import annotations

# Job status codes (index into STATUS_NAMES).
FUTURE, PENDING, RUNNING, COMPLETED, FAILED, REJECTED = range(6)
STATUS_NAMES = ("future", "pending", "running", "completed", "failed", "rejected")
TERMINAL = (COMPLETED, FAILED, REJECTED)

# Event kinds. At equal times events are handled in this order, then decisions are asked.
COMPLETION, RECOVERY, INTERRUPTION, TICK, ARRIVAL, TTL_EXPIRY = range(6)
EVENT_NAMES = ("completion", "recovery", "interruption", "tick", "arrival", "ttl-expiry")


class TwinState:
    """Everything that changes during an episode. Lists are indexed by node or job index.

    Attributes:
        time_s: Current simulated time.
        free_cpu_m, free_mem_mib, free_gpus: Free allocatable resources per node.
        up: Whether each node is up (spot nodes go down for the recovery time).
        node_jobs: Job indices running on each node.
        running_counts: Running jobs per workload type and node, flat: index ``type * n_nodes + node``
            (types in ``WORKLOAD_TYPES`` order).
        status, node_of, start_s, first_start_s, enqueued_s, generation: Per job.
            ``generation`` increases whenever a job's pending or running episode ends, so
            scheduled events for an earlier episode are recognised as stale.
        sla_hit, qos_hit: Per-job flags so each penalty is counted once per job (the deadline
            penalty needs none: it is judged at the first start).
        queue: The pending jobs (:class:`~digital_twin.job_queue.JobQueue`): FIFO order, the
            ones the current pass examines and its cursor, and the parked ones.
        gained_nodes: Nodes that freed resources or recovered in the current batch of events
            (the only nodes on which a parked job can newly fit).
        heap: Scheduled events ``(time_s, kind, seq, index, generation)``.
        next_arrival: Index of the next job to arrive. ``next_tick``: Index of the next tick.
        cost_usd, cost_rate_usd_per_s: Accrued compute cost and its current rate.
        alloc_cpu_m, alloc_cpu_m_s: Allocated millicores now, and their time integral.
        counts: Penalty counts in :data:`digital_twin.objective.PENALTIES` order.
        status_counts: Number of jobs in each status.
        wait_sum_s, started_jobs: For the mean wait (first start - arrival).
        events: The event log, when recording.
    """

    __slots__ = (
        "alloc_cpu_m",
        "alloc_cpu_m_s",
        "cost_rate_usd_per_s",
        "cost_usd",
        "counts",
        "enqueued_s",
        "events",
        "first_start_s",
        "free_cpu_m",
        "free_gpus",
        "free_mem_mib",
        "gained_nodes",
        "generation",
        "heap",
        "next_arrival",
        "next_tick",
        "node_jobs",
        "node_of",
        "qos_hit",
        "queue",
        "running_counts",
        "seq",
        "sla_hit",
        "start_s",
        "started_jobs",
        "status",
        "status_counts",
        "time_s",
        "up",
        "wait_sum_s",
    )

    def copy(self) -> TwinState:
        """A deep-enough copy: every list is copied, the lists of ``node_jobs`` and the queue too.

        Other lists hold immutable items, so a shallow copy of them is enough.
        """
        other = TwinState.__new__(TwinState)
        for name in TwinState.__slots__:
            value = getattr(self, name)
            if isinstance(value, list):
                value = [jobs.copy() for jobs in value] if name == "node_jobs" else value.copy()
            elif name == "queue":
                value = value.copy()
            setattr(other, name, value)
        return other
