"""What each event does to the twin's state, and what it costs.

The events: arrival, TTL expiry, start, completion, interruption, recovery, telemetry tick, and
the horizon (its charge for jobs never served, its judgement of jobs still running). Each
handler changes the state ``s`` in place, reading the constants ``c``; the event loop
(:mod:`digital_twin.sim.event_loop`) decides when each runs and accrues cost as the clock advances.
The rest of the accounting lives here, where each quantity changes: the cost rate at a start or
a stop, each penalty term where its rule (:data:`digital_twin.objective.PENALTIES`) is met. These
run at every event: locals are bound once per call, and nothing is allocated that need not be.
"""

from __future__ import annotations

from typing import Final

from digital_twin.objective import PENALTY_INDEX
from digital_twin.sim.constants import LATENCY_CRITICAL, TwinConstants
from digital_twin.sim.core import RECOVERY, TTL_EXPIRY
from digital_twin.sim.event_log import log_event
from digital_twin.sim.job_states import COMPLETED, FAILED, PENDING, REJECTED, RUNNING
from digital_twin.sim.measures import utility_loss
from digital_twin.sim.state import TwinState

# Where each penalty term is counted (indices into TwinState.counts; unfairness: TwinState.penalty_counts).
_SLA: Final = PENALTY_INDEX["sla"]
_QOS: Final = PENALTY_INDEX["qos"]
_EVICTION: Final = PENALTY_INDEX["eviction"]
_DEADLINE: Final = PENALTY_INDEX["deadline"]
_REJECTION: Final = PENALTY_INDEX["rejection"]
_WAIT: Final = PENALTY_INDEX["wait"]
_UTILITY: Final = PENALTY_INDEX["utility"]


def arrive(s: TwinState, c: TwinConstants, j: int) -> None:
    """Job ``j``'s arrival has come: it enters the queue, or is rejected at once when it fits no node of the fleet.

    Unless a feature holds it back (a task whose parents have not completed), it is submitted
    now, and joins its class's jobs for ``unfairness`` (with no service yet; the term is
    recomputed when next read).
    """
    for feature in s.features:
        if not feature.on_arrive(s, c, j):
            return
    log_event(s, c, "arrival", j, -1)
    s.jobs.submitted_s[j] = s.time_s
    s.class_jobs[c.type_index[j]] += 1
    s.unfairness_stale = True
    if not c.candidates[j]:
        s.jobs.set_status(j, PENDING)  # counted as submitted, then rejected at once (it waited 0 s)
        s.jobs.enqueued_s[j] = s.time_s
        reject(s, c, j, "unplaceable")
        return
    enqueue(s, c, j)


def enqueue(s: TwinState, c: TwinConstants, j: int) -> None:
    """Job ``j`` enters the back of the queue (on arrival, or requeued after an eviction): a queue spell starts."""
    jobs = s.jobs
    jobs.set_status(j, PENDING)
    jobs.enqueued_s[j] = s.time_s
    s.queue.enqueue(j)
    if c.queue_ttl_s is not None:
        s.schedule(s.time_s + c.queue_ttl_s, TTL_EXPIRY, j, jobs.generation[j])


def expire(s: TwinState, c: TwinConstants, j: int, generation: int) -> None:
    """Job ``j``'s TTL of its queue spell ``generation`` ends: rejected, unless the spell is over."""
    if s.jobs.status[j] != PENDING or s.jobs.generation[j] != generation:
        return  # stale: the job started (or re-entered the queue) since
    s.queue.remove(j, c.shape[j])
    reject(s, c, j, "ttl")


def reject(s: TwinState, c: TwinConstants, j: int, why: str) -> None:
    """Pending job ``j`` is rejected (it left the queue already).

    Counts a rejection, the wait of its last queue spell, and a latency-critical job's whole utility.
    """
    jobs = s.jobs
    jobs.generation[j] += 1
    jobs.set_status(j, REJECTED)
    s.counts[_REJECTION] += 1
    s.counts[_WAIT] += (s.time_s - jobs.enqueued_s[j]) / 3600.0
    if c.is_lc[j]:
        s.counts[_UTILITY] += 1.0
    log_event(s, c, f"rejected-{why}", j, -1)
    for feature in s.features:
        feature.on_fail(s, c, j)


def charge_horizon(s: TwinState, c: TwinConstants) -> None:
    """At the horizon: charge the jobs still queued, and judge the jobs still running.

    A queued job costs the rejection penalty (it stays ``pending``), the wait of its queue spell
    and, latency critical, its whole utility; without this, deferring the jobs that arrive near the horizon
    would be free. A running job ends its run here for the terms judged at a run's end
    (:func:`judge_end`: its latency is at least ``horizon - submission``).
    """
    for j in s.queue.fifo:
        s.counts[_REJECTION] += 1
        s.counts[_WAIT] += (s.time_s - s.jobs.enqueued_s[j]) / 3600.0
        if c.is_lc[j]:
            s.counts[_UTILITY] += 1.0
        log_event(s, c, "unserved-at-horizon", j, -1)
    for feature in s.features:
        feature.at_horizon(s, c)
    if not s.jobs.status_counts[RUNNING]:
        return
    for i in range(c.n_nodes):
        for j in s.nodes.node_jobs[i]:
            d = c.duration_s[j]
            judge_end(s, c, j, min(max(s.runs.settled_work_done_s(s, c, j), 0.0), d))


def judge_end(s: TwinState, c: TwinConstants, j: int, work_s: float) -> None:
    """Job ``j``'s run ends now (it completed, or the horizon stops it) after ``work_s`` of nominal work.

    Counts what is judged at the end of a job's last run: a latency-critical job's lost
    utility (latency = now - submission), the deadline under the ``completion`` rule, and the
    job's normalised service ``work_s / (now - submission)`` for its class (1 when no time has
    passed, at most 1; ``unfairness`` is recomputed from the class tallies when next read,
    :meth:`~digital_twin.sim.state.TwinState.penalty_counts`).
    """
    elapsed = s.time_s - s.jobs.submitted_s[j]
    if c.is_lc[j]:
        s.counts[_UTILITY] += utility_loss(elapsed, c.slo_s[j])
    if c.deadline_at_completion:
        deadline = c.deadline_s[j]
        if deadline is not None and s.time_s > deadline:
            s.counts[_DEADLINE] += 1
    service = work_s / elapsed if elapsed > 0.0 else 1.0
    s.class_service[c.type_index[j]] += service if service < 1.0 else 1.0
    s.unfairness_stale = True


def start(s: TwinState, c: TwinConstants, j: int, i: int) -> None:
    """Start job ``j`` (out of the queue already) on node ``i`` now: allocate, charge, then each feature; then its run.

    Allocation takes the job's resources on the node (:func:`allocate`); the charges are its
    wait, deadline, cost rate and QoS (:func:`charge`); each feature then takes the start (the
    placement rules count the preferences it breaks, the GPU tallies and the node's power
    follow), and the run's completion is scheduled (:class:`~digital_twin.sim.core.Runs`: after
    its duration, or on its work clock).
    """
    was_idle = allocate(s, c, j, i)
    charge(s, c, j, i, was_idle)
    for feature in s.features:
        feature.on_start(s, c, j, i)
    s.runs.start(s, c, j, i)
    log_event(s, c, "start", j, i)


def allocate(s: TwinState, c: TwinConstants, j: int, i: int) -> bool:
    """Job ``j`` takes its resources on node ``i`` and runs there from now; returns whether the node was idle."""
    nodes, jobs = s.nodes, s.jobs
    cpu_m = c.req_cpu_m[j]
    nodes.free_cpu_m[i] -= cpu_m
    nodes.free_mem_mib[i] -= c.req_mem_mib[j]
    nodes.free_gpus[i] -= c.req_gpus[j]
    s.alloc_cpu_m += cpu_m
    jobs_on_node = nodes.node_jobs[i]
    was_idle = not jobs_on_node
    jobs_on_node.append(j)
    nodes.running_counts[c.type_index[j] * c.n_nodes + i] += 1
    jobs.generation[j] += 1
    jobs.set_status(j, RUNNING)
    jobs.node_of[j] = i
    jobs.start_s[j] = s.time_s
    nodes.touch(i)
    return was_idle


def charge(s: TwinState, c: TwinConstants, j: int, i: int, was_idle: bool) -> None:
    """What job ``j``'s start on node ``i`` counts: its wait, a deadline, the cost rate, a QoS violation.

    Every start ends a queue spell and counts its wait (from arrival, or from the eviction
    that requeued the job); the first start judges, under the ``first-start`` rule, the
    deadline; a latency-critical job on a spot node counts a QoS violation (once per job).
    """
    jobs, t = s.jobs, s.time_s
    wait_s = t - jobs.enqueued_s[j]  # the queue spell that ends here
    s.wait_sum_s += wait_s
    s.counts[_WAIT] += wait_s / 3600.0
    if jobs.first_start_s[j] < 0.0:  # the first start: the first-start deadline is judged here only
        jobs.first_start_s[j] = t
        s.started_jobs += 1
        deadline = c.deadline_s[j]
        if deadline is not None and t > deadline and not c.deadline_at_completion:
            s.counts[_DEADLINE] += 1
    if c.active_nodes:
        if was_idle:
            s.cost_rate_usd_per_s += c.price_per_s[i]
    else:
        s.cost_rate_usd_per_s += job_rate_usd_per_s(c, j, i)
    if c.is_lc[j] and c.is_spot[i] and not jobs.qos_hit[j]:
        jobs.qos_hit[j] = True
        s.counts[_QOS] += 1


def job_rate_usd_per_s(c: TwinConstants, j: int, i: int) -> float:
    """Prorated USD/s of job ``j`` on node ``i``: its GPU share for GPU jobs, its CPU share otherwise."""
    if c.req_gpus[j] > 0:
        return c.price_per_s[i] * c.req_gpus[j] / c.gpus[i]
    return c.price_per_s[i] * c.req_cpu_m[j] / c.cpu_m[i]


def release(s: TwinState, c: TwinConstants, j: int) -> int:
    """Free running job ``j``'s resources on its node and stop its cost; returns the node index.

    The caller changes ``j``'s status afterwards (``j`` still counts as running here, and for
    the features' hooks).
    """
    nodes, jobs = s.nodes, s.jobs
    i = jobs.node_of[j]
    runs = s.runs
    was_first = runs.before_end(s, c, j, i)
    cpu_m = c.req_cpu_m[j]
    nodes.free_cpu_m[i] += cpu_m
    nodes.free_mem_mib[i] += c.req_mem_mib[j]
    nodes.free_gpus[i] += c.req_gpus[j]
    s.alloc_cpu_m -= cpu_m
    jobs_on_node = nodes.node_jobs[i]
    jobs_on_node.remove(j)
    nodes.running_counts[c.type_index[j] * c.n_nodes + i] -= 1
    jobs.generation[j] += 1
    s.gained_nodes.append(i)
    nodes.touch(i)
    if c.active_nodes:
        if not jobs_on_node:
            s.cost_rate_usd_per_s -= c.price_per_s[i]
    else:
        s.cost_rate_usd_per_s -= job_rate_usd_per_s(c, j, i)
    if jobs.status_counts[RUNNING] == 1:  # j was the last running job (its status changes next)
        s.cost_rate_usd_per_s = 0.0  # no float residue when nothing runs
    runs.end(s, c, j, i, was_first)
    for feature in s.features:
        feature.on_end(s, c, j, i)
    return i


def complete(s: TwinState, c: TwinConstants, index: int, generation: int) -> None:
    """A completion event (about a job, or on work clocks a clock): its run completes, unless the event is stale."""
    j = s.runs.completing(s, index, generation)
    if j >= 0:
        finish(s, c, j)


def finish(s: TwinState, c: TwinConstants, j: int) -> None:
    """Running job ``j`` completes now: its whole nominal work done (:func:`judge_end`); the jobs it releases arrive."""
    i = release(s, c, j)
    s.jobs.set_status(j, COMPLETED)
    judge_end(s, c, j, c.duration_s[j])
    log_event(s, c, "completion", j, i)
    for feature in s.features:
        for child in feature.on_complete(s, c, j):
            arrive(s, c, child)


def interrupt(s: TwinState, c: TwinConstants, i: int) -> None:
    """Spot node ``i`` goes down: preemptible jobs on it are requeued, the others fail.

    A failed job counts an eviction and, latency critical, its whole utility (its service is 0:
    ``unfairness`` does not change).
    """
    s.nodes.up[i] = False
    s.nodes.touch(i)
    log_event(s, c, "interruption", -1, i)
    for j in list(s.nodes.node_jobs[i]):
        release(s, c, j)
        if c.preemptible[j]:
            log_event(s, c, "evicted-requeued", j, i)
            enqueue(s, c, j)
        else:
            s.jobs.set_status(j, FAILED)
            s.counts[_EVICTION] += 1
            if c.is_lc[j]:
                s.counts[_UTILITY] += 1.0
            log_event(s, c, "evicted-failed", j, i)
            for feature in s.features:
                feature.on_fail(s, c, j)
    for feature in s.features:
        feature.on_node(s, c, i)  # down: it draws nothing, nothing of it is free
    s.schedule(s.outages.end_s(i, s.time_s), RECOVERY, i, 0)


def recover(s: TwinState, c: TwinConstants, i: int) -> None:
    """Spot node ``i`` is up again (empty): parked jobs may fit there."""
    s.nodes.up[i] = True
    s.nodes.touch(i)
    s.gained_nodes.append(i)
    for feature in s.features:
        feature.on_node(s, c, i)
    log_event(s, c, "recovery", -1, i)


def tick(s: TwinState, c: TwinConstants, k: int) -> None:
    """Telemetry tick ``k``: every latency-critical job on a node over the SLA threshold is marked (once per job).

    A node's utilisation is its background cpu % at the tick plus our allocated cpu / node cpu x
    100. The runs' rates follow the new background first (on work clocks under contention), then
    the features (every node's power).
    """
    s.runs.on_tick(s, c, k)
    threshold, background = c.sla_threshold_pct, c.background_cpu_pct.row(k)
    nodes = s.nodes
    node_jobs, running_counts, free_cpu_m, cpu_m = nodes.node_jobs, nodes.running_counts, nodes.free_cpu_m, c.cpu_m
    is_lc, sla_hit = c.is_lc, s.jobs.sla_hit
    lc_offset = LATENCY_CRITICAL * c.n_nodes
    for i in range(c.n_nodes):
        if running_counts[lc_offset + i] and background[i] + 100.0 * (cpu_m[i] - free_cpu_m[i]) / cpu_m[i] > threshold:
            for j in node_jobs[i]:
                if is_lc[j] and not sla_hit[j]:
                    sla_hit[j] = True
                    s.counts[_SLA] += 1
                    log_event(s, c, "sla-violation", j, i)
    for feature in s.features:
        feature.on_tick(s, c, k)
