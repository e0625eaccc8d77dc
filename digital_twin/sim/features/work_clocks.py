"""Work clocks: how runs progress when something slows them (compiled with the twin).

When jobs can run slower than nominal (cpu contention, :mod:`digital_twin.sim.features.contention`, or
co-location interference, :mod:`digital_twin.sim.features.interference`; ``TwinConstants.clocked``), the jobs
of one *lane* on one node share a progress rate, so they share a *work clock* ``q = lane * N +
node`` (the node itself without interference): its rate integrated over time, brought up to now
(:func:`settle`) before the rate changes. A run completes when its clock reaches the clock at its
start plus its nominal duration; a clock has one completion event, for its earliest-finishing
run, replaced (a new token) whenever its rate changes (:func:`update_rate`).

A clock's rate is the node's processor-sharing rate under the tick's background (1 without
contention) times its lane's interference factor. It changes at ticks and when a job starts or
ends on the node: a start or an end changes the node's cpu demand and which aggressors run
there, so every busy lane of the node is looked at (:func:`update_node_lanes`).
"""

from __future__ import annotations

import heapq

from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.features.contention import progress_rate
from digital_twin.sim.features.interference import count_aggressor, lane_factor
from digital_twin.sim.state import COMPLETION, TwinState


def clock_of(c: TwinConstants, j: int, i: int) -> int:
    """The work clock of job ``j`` on node ``i``: ``lane * N + i``."""
    return c.lane_of[j] * c.n_nodes + i


def settle(s: TwinState, q: int) -> None:
    """Bring clock ``q`` up to now, at the rate its jobs ran since the last settle."""
    t = s.time_s
    elapsed = t - s.rate_since_s[q]
    if elapsed > 0.0:
        s.work_clock_s[q] += s.rate[q] * elapsed
    s.rate_since_s[q] = t


def update_rate(s: TwinState, c: TwinConstants, i: int, q: int, k: int) -> bool:
    """Recompute clock ``q``'s rate (node ``i``) under tick ``k``; if it changed, settle it and reschedule.

    Returns:
        Whether the rate changed (the clock's completion event was then replaced).
    """
    rate = progress_rate(c.background_cpu_m[k][i], c.cpu_m[i] - s.free_cpu_m[i], c.cpu_m[i]) if c.contention else 1.0
    lanes = c.lanes
    if lanes is not None:
        rate *= lane_factor(s.aggressors, lanes, q // c.n_nodes, i, c.n_nodes)
    if rate == s.rate[q]:
        return False
    settle(s, q)  # the old rate held until now (the clock needs settling only when the rate changes)
    s.rate[q] = rate
    schedule_completion(s, q)
    return True


def update_node_lanes(s: TwinState, c: TwinConstants, j: int, i: int, k: int, delta: int) -> None:
    """With interference: job ``j`` starts (``delta`` +1) or ends (-1) on node ``i``; the other lanes follow.

    Counts ``j`` among the node's aggressors and its clock's runs, then updates the rate of every
    other lane with runs on the node (``j``'s own clock is the caller's).
    """
    lanes = c.lanes
    assert lanes is not None
    n = c.n_nodes
    count_aggressor(s.aggressors, lanes, j, i, n, delta)
    own = clock_of(c, j, i)
    s.clock_runs[own] += delta
    for lane in range(lanes.n_lanes):
        q = lane * n + i
        if q != own and s.clock_runs[q]:
            update_rate(s, c, i, q, k)


def first_run(s: TwinState, q: int) -> int:
    """The job whose run on clock ``q`` completes first (-1: none runs), dropping ended runs from the heap top."""
    runs, generation = s.runs_by_finish[q], s.generation
    while runs and generation[runs[0][1]] != runs[0][2]:
        heapq.heappop(runs)
    return runs[0][1] if runs else -1


def schedule_completion(s: TwinState, q: int) -> None:
    """Replace clock ``q``'s completion event: its first run completes when the clock reaches its finish.

    The clock must be settled to now. The previous event becomes stale (a new token); no event
    is scheduled while nothing runs on the clock.
    """
    s.completion_token[q] += 1
    j = first_run(s, q)
    if j >= 0:
        left = s.finish_clock_s[j] - s.work_clock_s[q]
        s.schedule(s.time_s + (left if left > 0.0 else 0.0) / s.rate[q], COMPLETION, q, s.completion_token[q])
