"""The twin's event loop: run events until a pending job fits somewhere, then ask for a decision.

:func:`run_to_decision` repeats these stages until a decision is to be asked or the episode
ends:

1. **Pass**: examine the pending jobs in FIFO order from the pass's cursor, waking parked
   jobs that may fit where room appeared (:mod:`digital_twin.sim.job_queue`); the first one that
   fits on some node is the decision. A job that fits nowhere is parked.
2. **Next event time**: a telemetry tick of the episode's grid (ticks ``k < n_ticks``,
   :mod:`digital_twin.tick_grid`), a scheduled event or an arrival, whichever is first (the
   episode ends when that is at or after the horizon, or when every job is terminal).
   A stale entry of the event heap is dropped here: it is not an event, and never wakes the
   loop (a completion of a run already cut short by an eviction, or, under cpu contention,
   a node's completion replaced by a rate change, :mod:`digital_twin.sim.tables.contention`; a TTL
   expiry of a queue spell that ended when the job started).
3. **Clock**: advance to that time, accruing the compute cost and the allocated cpu-time.
4. **Events**: handle every event at that time in the documented order
   (:func:`handle_events_at`), and start a new pass.

Everything is a function of the state ``s`` and the constants ``c``; this is the twin's hot
path, so locals are bound once per call and the common cases are inlined (noted where).
"""

from __future__ import annotations

import heapq
from typing import Final

from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import COMPLETION, RECOVERY, TICK, TTL_EXPIRY, ScheduledEvent
from digital_twin.sim.event_handlers import arrive, charge_horizon, complete, expire, interrupt, recover, tick
from digital_twin.sim.job_states import FUTURE, PENDING, RUNNING
from digital_twin.sim.state import TwinState
from digital_twin.sim.tables.rule_checks import breaks_required

_heappop: Final = heapq.heappop  # (a Final: the compiled loop keeps it, not looking it up at each call)


def run_to_decision(s: TwinState, c: TwinConstants) -> list[bool]:  # noqa: C901  (stages inlined: the hot path)
    """Run until a pending job fits somewhere, every job is terminal, or the horizon.

    Sets ``s.current`` and ``s.done``. Returns the ``(N,)`` fit of the current job (what
    ``DigitalTwin.can_place`` answers), or all False once the episode is over.
    """
    queue, status_counts, heap = s.queue, s.jobs.status_counts, s.heap
    examine = queue.examine  # changed in place only, so this name stays valid
    arrival_s, n_jobs, tick_s, n_ticks, horizon_s = c.arrival_s, c.n_jobs, c.tick_s, c.n_ticks, c.horizon_s
    features = s.features
    while True:
        # Stage 1: the pass.
        while True:
            if queue.waking:  # parked jobs may come back in this pass
                j = next_to_examine(s, c)
            elif queue.cursor < len(examine):  # the common case, inlined (hot path)
                j = examine[queue.cursor]
            else:
                break
            if j < 0:
                break
            mask = fit_mask(s, c, j)
            if True in mask:
                s.current = j
                s.done = False
                return mask
            queue.park_current(c.no_fit, c.shape[j])  # fits nowhere until a node gains room
        if status_counts[FUTURE] + status_counts[PENDING] + status_counts[RUNNING] == 0:
            break
        # Stage 2: the next event time (a stale heap entry is not one: dropped here).
        while heap and is_stale(s, heap[0]):
            _heappop(heap)
        t = s.next_tick * tick_s if s.next_tick < n_ticks else horizon_s  # the grid's ticks only
        if heap and heap[0][0] < t:
            t = heap[0][0]
        if s.next_arrival < n_jobs and arrival_s[s.next_arrival] < t:
            t = arrival_s[s.next_arrival]
        at_horizon = t >= horizon_s
        if at_horizon:
            t = horizon_s
        # Stage 3: advance the clock to t, accruing cost and allocated cpu-time (inlined: hot path), then the features'.
        dt = t - s.time_s
        if dt > 0.0:
            s.cost_usd += s.cost_rate_usd_per_s * dt
            s.alloc_cpu_m_s += s.alloc_cpu_m * dt
            for feature in features:
                feature.advance(s, c, s.time_s, t)
            s.time_s = t
        if at_horizon:
            charge_horizon(s, c)
            break
        # Stage 4: the events at t.
        handle_events_at(s, c, t)
    s.done = True
    s.current = -1
    return [False] * c.n_nodes


def is_stale(s: TwinState, entry: ScheduledEvent) -> bool:
    """Whether a heap ``entry`` is stale: its handler would do nothing (module docstring, stage 2).

    A completion is stale when its run ended already (on work clocks: when its clock's
    completion token moved on; :meth:`~digital_twin.sim.core.Runs.is_stale`); a TTL expiry,
    when its queue spell ended. Node events and the rest are never stale.
    """
    kind, index, generation = entry[1], entry[3], entry[4]
    if kind == COMPLETION:
        return s.runs.is_stale(s, index, generation)
    if kind == TTL_EXPIRY:
        return s.jobs.status[index] != PENDING or s.jobs.generation[index] != generation
    return False


def handle_events_at(s: TwinState, c: TwinConstants, t: float) -> None:
    """Handle every event at time ``t``, then start a new pass.

    The order: completions, recoveries, interruptions, the telemetry tick, arrivals, TTL expiries.
    """
    heap = s.heap
    if s.gained_nodes:
        s.gained_nodes.clear()
    rules = s.rules
    if rules is not None and rules.moved:  # starts of the last pass moved the placement rules' tallies
        s.gained_nodes.extend(range(c.n_nodes))
    while heap and heap[0][0] == t and heap[0][1] < TICK:
        _, kind, _, index, generation = _heappop(heap)
        if kind == COMPLETION:
            complete(s, c, index, generation)
        elif kind == RECOVERY:
            recover(s, c, index)
        else:
            interrupt(s, c, index)
    if s.next_tick < c.n_ticks and s.next_tick * c.tick_s == t:
        tick(s, c, s.next_tick)
        s.next_tick += 1
    arrival_s, n_jobs = c.arrival_s, c.n_jobs
    while s.next_arrival < n_jobs and arrival_s[s.next_arrival] == t:
        arrive(s, c, s.next_arrival)
        s.next_arrival += 1
    while heap and heap[0][0] == t:  # only TTL expiries are left at t
        _, _, _, index, generation = _heappop(heap)
        expire(s, c, index, generation)
    if s.queue.parked:
        start_pass(s, c)
    else:
        s.queue.cursor = 0  # a new pass with nothing parked to wake (the common case, inlined)
    if rules is not None:
        rules.moved = False


def fit_mask(s: TwinState, c: TwinConstants, j: int) -> list[bool]:
    """``(N,)`` whether job ``j`` fits on each node now.

    Up, a static candidate, enough free resources, and (under placement rules) no required rule
    broken.
    """
    cpu, mem, gpus = c.req_cpu_m[j], c.req_mem_mib[j], c.req_gpus[j]
    nodes = s.nodes
    free_cpu, free_mem, free_gpus, up = nodes.free_cpu_m, nodes.free_mem_mib, nodes.free_gpus, nodes.up
    mask = [False] * c.n_nodes
    for i in c.candidates[j]:
        if up[i] and free_cpu[i] >= cpu and free_mem[i] >= mem and free_gpus[i] >= gpus:
            mask[i] = True
    rules, tables = s.rules, c.rules
    if rules is not None and tables is not None and tables.required[j]:
        for i in c.candidates[j]:
            if mask[i] and breaks_required(rules.counts, tables, j, i):
                mask[i] = False
    return mask


def start_pass(s: TwinState, c: TwinConstants) -> None:
    """After a batch of events: examine from the front; wake the shapes that may fit where room appeared."""
    queue = s.queue
    waking = [shape for shape, jobs in queue.parked.items() if s.gained_nodes and gained_fits(s, c, jobs[0])]
    queue.start_pass(waking)


def next_to_examine(s: TwinState, c: TwinConstants) -> int:
    """The next job of this pass in FIFO order (-1: the pass is over), waking parked jobs on the way.

    A parked job comes back when it fits on a node that gained room and that was False in
    its parked fit; once its shape fits on no such node, the rest of the bucket stays parked
    for this pass (see :mod:`digital_twin.sim.job_queue`).
    """
    queue = s.queue
    while queue.waking:
        shape, j = queue.next_parked()
        if j < 0:
            break
        fits = gained_fits(s, c, j)
        if not fits:
            queue.stop_waking(shape)
            continue
        fit_when_parked = queue.fit_when_parked(j)
        if all(fit_when_parked[i] for i in fits):
            queue.skip_parked(shape)
        else:
            queue.unpark(shape)
            return j
    return queue.examine[queue.cursor] if queue.cursor < len(queue.examine) else -1


def gained_fits(s: TwinState, c: TwinConstants, j: int) -> list[int]:
    """The nodes that gained room in this batch of events on which job ``j`` fits now (may repeat)."""
    cpu, mem, gpus, candidate = c.req_cpu_m[j], c.req_mem_mib[j], c.req_gpus[j], c.candidate_mask[j]
    nodes = s.nodes
    up, free_cpu, free_mem, free_gpus = nodes.up, nodes.free_cpu_m, nodes.free_mem_mib, nodes.free_gpus
    fits = [
        i
        for i in s.gained_nodes
        if candidate[i] and up[i] and free_cpu[i] >= cpu and free_mem[i] >= mem and free_gpus[i] >= gpus
    ]
    rules, tables = s.rules, c.rules
    if rules is not None and tables is not None and tables.required[j]:
        return [i for i in fits if not breaks_required(rules.counts, tables, j, i)]
    return fits
