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

import heapq

from digital_twin.objective import PENALTY_INDEX
from digital_twin.sim.constants import LATENCY_CRITICAL, TwinConstants
from digital_twin.sim.event_log import log_event
from digital_twin.sim.features.energy_accounting import refresh_all, refresh_node
from digital_twin.sim.features.rule_events import rules_at_end, rules_at_start
from digital_twin.sim.features.work_clocks import (
    clock_of,
    first_run,
    schedule_completion,
    settle,
    update_node_lanes,
    update_rate,
)
from digital_twin.sim.features.workflow_events import task_completed, upstream_failed
from digital_twin.sim.features.workflow_handlers import charge_held_tasks, fail_descendants, reject_upstream
from digital_twin.sim.measures import utility_loss
from digital_twin.sim.state import (
    COMPLETED,
    COMPLETION,
    FAILED,
    PENDING,
    RECOVERY,
    REJECTED,
    RUNNING,
    TTL_EXPIRY,
    TwinState,
)

# Where each penalty term is counted (indices into TwinState.counts; unfairness: TwinState.penalty_counts).
_SLA, _QOS, _EVICTION, _DEADLINE, _REJECTION, _WAIT, _UTILITY, _PREFERENCES = [
    PENALTY_INDEX[name]
    for name in ("sla", "qos", "eviction", "deadline", "rejection", "wait", "utility", "preferences")
]


def arrive(s: TwinState, c: TwinConstants, j: int) -> None:
    """Job ``j`` arrives: it enters the queue, or is rejected at once when it fits no node of the fleet.

    It joins its class's jobs for ``unfairness`` (with no service yet; the term is recomputed
    when next read).
    """
    log_event(s, c, "arrival", j, -1)
    if c.dag is not None:
        s.ready_s[j] = s.time_s
    s.class_jobs[c.type_index[j]] += 1
    s.unfairness_stale = True
    if not c.candidates[j]:
        s.set_status(j, PENDING)  # counted as submitted, then rejected at once (it waited 0 s)
        s.enqueued_s[j] = s.time_s
        reject(s, c, j, "unplaceable")
        return
    enqueue(s, c, j)


def enqueue(s: TwinState, c: TwinConstants, j: int) -> None:
    """Job ``j`` enters the back of the queue (on arrival, or requeued after an eviction): a queue spell starts."""
    s.set_status(j, PENDING)
    s.enqueued_s[j] = s.time_s
    s.queue.enqueue(j)
    if c.queue_ttl_s is not None:
        s.schedule(s.time_s + c.queue_ttl_s, TTL_EXPIRY, j, s.generation[j])


def expire(s: TwinState, c: TwinConstants, j: int, generation: int) -> None:
    """Job ``j``'s TTL of its queue spell ``generation`` ends: rejected, unless the spell is over."""
    if s.status[j] != PENDING or s.generation[j] != generation:
        return  # stale: the job started (or re-entered the queue) since
    s.queue.remove(j, c.shape[j])
    reject(s, c, j, "ttl")


def reject(s: TwinState, c: TwinConstants, j: int, why: str) -> None:
    """Pending job ``j`` is rejected (it left the queue already).

    Counts a rejection, the wait of its last queue spell, and a latency-critical job's whole utility.
    """
    s.generation[j] += 1
    s.set_status(j, REJECTED)
    s.counts[_REJECTION] += 1
    s.counts[_WAIT] += (s.time_s - s.enqueued_s[j]) / 3600.0
    if c.is_lc[j]:
        s.counts[_UTILITY] += 1.0
    log_event(s, c, f"rejected-{why}", j, -1)
    if c.dag is not None:
        fail_descendants(s, c, j)


def arrive_task(s: TwinState, c: TwinConstants, j: int) -> None:
    """Task ``j``'s arrival time: submitted if its parents completed, rejected if one failed, else held back."""
    assert c.dag is not None
    if not s.parents_left[j]:
        arrive(s, c, j)
    elif upstream_failed(c.dag, s.status, j):
        reject_upstream(s, c, j)


def charge_horizon(s: TwinState, c: TwinConstants) -> None:
    """At the horizon: charge the jobs still queued, and judge the jobs still running.

    A queued job costs the rejection penalty (it stays ``pending``), the wait of its queue spell
    and, latency critical, its whole utility; without this, deferring the jobs that arrive near the horizon
    would be free. A running job ends its run here for the terms judged at a run's end
    (:func:`judge_end`: its latency is at least ``horizon - arrival``).
    """
    for j in s.queue.fifo:
        s.counts[_REJECTION] += 1
        s.counts[_WAIT] += (s.time_s - s.enqueued_s[j]) / 3600.0
        if c.is_lc[j]:
            s.counts[_UTILITY] += 1.0
        log_event(s, c, "unserved-at-horizon", j, -1)
    if c.dag is not None:
        charge_held_tasks(s, c)
    if not s.status_counts[RUNNING]:
        return
    t = s.time_s
    for i in range(c.n_nodes):
        for j in s.node_jobs[i]:
            d = c.duration_s[j]
            if c.clocked:
                q = clock_of(c, j, i)
                settle(s, q)  # the work clock is brought up to the horizon
                done_s = d - (s.finish_clock_s[j] - s.work_clock_s[q])
            else:
                done_s = t - s.start_s[j]
            judge_end(s, c, j, min(max(done_s, 0.0), d))


def judge_end(s: TwinState, c: TwinConstants, j: int, work_s: float) -> None:
    """Job ``j``'s run ends now (it completed, or the horizon stops it) after ``work_s`` of nominal work.

    Counts what is judged at the end of a job's last run: a latency-critical job's lost
    utility (latency = now - arrival), the deadline under the ``completion`` rule, and the
    job's normalised service ``work_s / (now - arrival)`` for its class (1 when no time has
    passed, at most 1; ``unfairness`` is recomputed from the class tallies when next read,
    :meth:`~digital_twin.sim.state.TwinState.penalty_counts`).
    """
    elapsed = s.time_s - (c.arrival_s[j] if c.dag is None else s.ready_s[j])
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
    """Start job ``j`` (out of the queue already) on node ``i`` now: allocate, charge, schedule its completion.

    Every start ends a queue spell and counts its wait (from arrival, or from the eviction
    that requeued the job); the first start judges, under the ``first-start`` rule, the
    deadline; a latency-critical job on a spot node counts a QoS violation (once per job); under
    placement rules, the start counts the weight of the preferences it breaks, and the job joins
    its tallies (:mod:`digital_twin.sim.features.rule_checks`). On work clocks (contention, interference:
    :mod:`digital_twin.sim.features.work_clocks`) the job's completion follows its clock's rate, else it
    completes after its nominal duration.
    """
    t = s.time_s
    clocked = c.clocked
    q = i if c.lanes is None else c.lane_of[j] * c.n_nodes + i  # its work clock (the node without interference)
    if clocked:
        settle(s, q)  # the clock's jobs progressed at the old rate until now
    cpu_m = c.req_cpu_m[j]
    s.free_cpu_m[i] -= cpu_m
    s.free_mem_mib[i] -= c.req_mem_mib[j]
    s.free_gpus[i] -= c.req_gpus[j]
    s.alloc_cpu_m += cpu_m
    s.gpu.allocated += c.req_gpus[j]
    refresh_gpus(s, c, i)
    jobs_on_node = s.node_jobs[i]
    was_idle = not jobs_on_node
    jobs_on_node.append(j)
    s.running_counts[c.type_index[j] * c.n_nodes + i] += 1
    s.generation[j] += 1
    s.set_status(j, RUNNING)
    s.node_of[j] = i
    s.start_s[j] = t
    wait_s = t - s.enqueued_s[j]  # the queue spell that ends here
    s.wait_sum_s += wait_s
    s.counts[_WAIT] += wait_s / 3600.0
    if s.first_start_s[j] < 0.0:  # the first start: the first-start deadline is judged here only
        s.first_start_s[j] = t
        s.started_jobs += 1
        deadline = c.deadline_s[j]
        if deadline is not None and t > deadline and not c.deadline_at_completion:
            s.counts[_DEADLINE] += 1
    if c.active_nodes:
        if was_idle:
            s.cost_rate_usd_per_s += c.price_per_s[i]
    else:
        s.cost_rate_usd_per_s += job_rate_usd_per_s(c, j, i)
    if c.is_lc[j] and c.is_spot[i] and not s.qos_hit[j]:
        s.qos_hit[j] = True
        s.counts[_QOS] += 1
    if c.rules is not None:
        s.counts[_PREFERENCES] += rules_at_start(s, c, j, i)
    if clocked:
        finish = s.work_clock_s[q] + c.duration_s[j]
        s.finish_clock_s[j] = finish
        heapq.heappush(s.runs_by_finish[q], (finish, j, s.generation[j]))
        k = current_tick(s, c)
        if c.lanes is not None:
            update_node_lanes(s, c, j, i, k, 1)
        if not update_rate(s, c, i, q, k) and first_run(s, q) == j:
            schedule_completion(s, q)  # the rate is the same, but j completes first
    else:
        s.schedule(t + c.duration_s[j], COMPLETION, j, s.generation[j])
    energy = c.energy
    if energy is not None:
        refresh_node(s, c, energy, i, current_tick(s, c))
    log_event(s, c, "start", j, i)


def job_rate_usd_per_s(c: TwinConstants, j: int, i: int) -> float:
    """Prorated USD/s of job ``j`` on node ``i``: its GPU share for GPU jobs, its CPU share otherwise."""
    if c.req_gpus[j] > 0:
        return c.price_per_s[i] * c.req_gpus[j] / c.gpus[i]
    return c.price_per_s[i] * c.req_cpu_m[j] / c.cpu_m[i]


def release(s: TwinState, c: TwinConstants, j: int) -> int:
    """Free running job ``j``'s resources on its node and stop its cost; returns the node index.

    The caller changes ``j``'s status afterwards (``j`` still counts as running here).
    """
    i = s.node_of[j]
    clocked = c.clocked
    q = i if c.lanes is None else c.lane_of[j] * c.n_nodes + i
    if clocked:
        settle(s, q)
        was_first = first_run(s, q) == j
    cpu_m = c.req_cpu_m[j]
    s.free_cpu_m[i] += cpu_m
    s.free_mem_mib[i] += c.req_mem_mib[j]
    s.free_gpus[i] += c.req_gpus[j]
    s.alloc_cpu_m -= cpu_m
    s.gpu.allocated -= c.req_gpus[j]
    refresh_gpus(s, c, i)
    jobs_on_node = s.node_jobs[i]
    jobs_on_node.remove(j)
    s.running_counts[c.type_index[j] * c.n_nodes + i] -= 1
    s.generation[j] += 1
    s.gained_nodes.append(i)
    if c.rules is not None:
        rules_at_end(s, c, j, i)
    if c.active_nodes:
        if not jobs_on_node:
            s.cost_rate_usd_per_s -= c.price_per_s[i]
    else:
        s.cost_rate_usd_per_s -= job_rate_usd_per_s(c, j, i)
    if s.status_counts[RUNNING] == 1:  # j was the last running job (its status changes next)
        s.cost_rate_usd_per_s = 0.0  # no float residue when nothing runs
    if clocked:
        k = current_tick(s, c)
        if c.lanes is not None:
            update_node_lanes(s, c, j, i, k, -1)
        if not update_rate(s, c, i, q, k) and was_first:  # the others may speed up
            schedule_completion(s, q)  # j's completion event was the clock's: the next run's now
    energy = c.energy
    if energy is not None:
        refresh_node(s, c, energy, i, current_tick(s, c))
    return i


def complete(s: TwinState, c: TwinConstants, j: int, generation: int) -> None:
    """Job ``j``'s run ``generation`` ends: it completes, unless that run was already cut short.

    The end of the run is judged (:func:`judge_end`, its whole nominal work done). On work
    clocks the event is about a clock (:func:`complete_on_clock`).
    """
    if c.clocked:
        complete_on_clock(s, c, j, generation)
        return
    if s.status[j] != RUNNING or s.generation[j] != generation:
        return  # stale: the job was evicted
    finish(s, c, j)


def complete_on_clock(s: TwinState, c: TwinConstants, q: int, token: int) -> None:
    """On work clocks: clock ``q``'s earliest run completes, unless the event is stale (``token``)."""
    if s.completion_token[q] != token:
        return
    finish(s, c, first_run(s, q))


def finish(s: TwinState, c: TwinConstants, j: int) -> None:
    """Running job ``j`` completes now."""
    i = release(s, c, j)
    s.set_status(j, COMPLETED)
    judge_end(s, c, j, c.duration_s[j])
    log_event(s, c, "completion", j, i)
    dag = c.dag
    if dag is not None:
        for child in task_completed(dag, s.parents_left, s.workflow_left, s.workflow_end_s, s.counts, j, s.time_s):
            if child < s.next_arrival:  # its arrival has come (a later one arrives in its turn)
                arrive(s, c, child)


def refresh_gpus(s: TwinState, c: TwinConstants, i: int) -> None:
    """Node ``i``'s free and fragmented GPUs after a change on it (nothing for a node without GPUs)."""
    if c.gpus[i]:
        s.gpu.refresh(c.gpu_job_mix, i, s.free_gpus[i], s.free_cpu_m[i], s.up[i])


def interrupt(s: TwinState, c: TwinConstants, i: int) -> None:
    """Spot node ``i`` goes down: preemptible jobs on it are requeued, the others fail.

    A failed job counts an eviction and, latency critical, its whole utility (its service is 0:
    ``unfairness`` does not change).
    """
    s.up[i] = False
    log_event(s, c, "interruption", -1, i)
    for j in list(s.node_jobs[i]):
        release(s, c, j)
        if c.preemptible[j]:
            log_event(s, c, "evicted-requeued", j, i)
            enqueue(s, c, j)
        else:
            s.set_status(j, FAILED)
            s.counts[_EVICTION] += 1
            if c.is_lc[j]:
                s.counts[_UTILITY] += 1.0
            log_event(s, c, "evicted-failed", j, i)
            if c.dag is not None:
                fail_descendants(s, c, j)
    if c.energy is not None:
        refresh_node(s, c, c.energy, i, current_tick(s, c))  # down: it draws nothing
    refresh_gpus(s, c, i)  # down: nothing free, nothing fragmented
    s.schedule(s.outage_end_s(i), RECOVERY, i, 0)


def recover(s: TwinState, c: TwinConstants, i: int) -> None:
    """Spot node ``i`` is up again (empty): parked jobs may fit there."""
    s.up[i] = True
    s.gained_nodes.append(i)
    refresh_gpus(s, c, i)
    if c.energy is not None:
        refresh_node(s, c, c.energy, i, current_tick(s, c))
    log_event(s, c, "recovery", -1, i)


def tick(s: TwinState, c: TwinConstants, k: int) -> None:
    """Telemetry tick ``k``: every latency-critical job on a node over the SLA threshold is marked (once per job).

    A node's utilisation is its background cpu % at the tick plus our allocated cpu / node cpu x
    100. Under contention the rates of the nodes' work clocks are brought to the new background
    first (node by node, in fleet order: the SLA does not depend on them).
    """
    contention, threshold = c.contention, c.sla_threshold_pct
    background, background_m = c.background_cpu_pct[k], c.background_cpu_m[k]
    node_jobs, running_counts, free_cpu_m, cpu_m, rate = s.node_jobs, s.running_counts, s.free_cpu_m, c.cpu_m, s.rate
    is_lc, sla_hit = c.is_lc, s.sla_hit
    lanes, n = c.lanes, c.n_nodes
    n_clocks = n * c.n_lanes
    lc_offset = LATENCY_CRITICAL * n
    for i in range(c.n_nodes):
        jobs = node_jobs[i]
        if not jobs:
            continue
        used_m = cpu_m[i] - free_cpu_m[i]
        if lanes is not None:
            if contention:  # the background changes the base rate of every busy lane
                for q in range(i, n_clocks, n):
                    if s.clock_runs[q]:
                        update_rate(s, c, i, q, k)
        # A node whose demand stays within its cores keeps rate 1 (progress_rate): skip the call.
        elif contention and (rate[i] != 1.0 or background_m[i] + used_m > cpu_m[i]):
            update_rate(s, c, i, i, k)
        if running_counts[lc_offset + i] and background[i] + 100.0 * used_m / cpu_m[i] > threshold:
            for j in jobs:
                if is_lc[j] and not sla_hit[j]:
                    sla_hit[j] = True
                    s.counts[_SLA] += 1
                    log_event(s, c, "sla-violation", j, i)
    if c.energy is not None:
        refresh_all(s, c, c.energy, k)


def current_tick(s: TwinState, c: TwinConstants) -> int:
    """The telemetry tick whose background holds now: the latest tick handled (ticks precede decisions)."""
    k = s.next_tick - 1
    return k if k < c.last_tick else c.last_tick
