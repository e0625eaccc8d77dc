"""The latest a run can end under cpu contention: what the plan reserves for each run.

Under processor sharing (:mod:`digital_twin.contention`) a job progresses at ``cores / demand``
of nominal speed, and a node's demand is highest when our jobs fill it: at every instant the
rate is at least the node's *slowest rate* under the background that holds
(:attr:`OracleInstance.slowest_rate`, a step function of the ticks). A run of ``d`` nominal
seconds started at ``s`` therefore completes no later than ``E(s)`` with
``W(E(s)) - W(s) = d``, where ``W(t)`` integrates the slowest rate: the run's *worst-case end*.

The plan program reserves each run's resources until its worst-case end and charges the run
as lasting that long. Then every later start the plan puts on the same node finds the node
free in the twin (each earlier run has completed by its worst-case end), so the twin replays
the plan start for start, and what it charges for a run's length (compute time, load at SLA
ticks, lateness and lost utility judged at the end) is at most what the program charged. (Not
every term: a non-preemptible run the program expects an interruption to fail may complete
in the twin instead.) The plan's reported objective is always the replay's
(:mod:`agents.oracle.replay`). Without interference the worst-case end is exactly ``s + d``
(bit for bit), and the program's accounting is exact.
"""

from __future__ import annotations

import numpy as np

from agents.oracle.instance import OracleInstance

WORST_CASE_MARGIN = 1e-9
"""Relative margin on a stretched run's length, covering the rounding of the twin's piecewise progress."""


def worst_case_ends(inst: OracleInstance, node: int, starts: np.ndarray, work_s: float) -> np.ndarray:
    """``(n,)`` the latest end of a run of ``work_s`` nominal seconds started at each of ``starts``.

    Not capped at the horizon (callers take ``min(., H)``). ``starts + work_s`` exactly on a
    node that never slows down (rate 1 at every tick); elsewhere at least that, with a relative
    margin of :data:`WORST_CASE_MARGIN` on the run's length.

    Args:
        inst: The episode (``tick_times_s`` start at 0; the last tick's rate holds beyond it).
        node: The node.
        starts: ``(n,)`` start times, seconds.
        work_s: The job's nominal duration, seconds.
    """
    rates = inst.slowest_rate[:, node]  # (K,)
    if rates.min() >= 1.0:
        return starts + work_s
    ticks = inst.tick_times_s
    work_at_tick = np.concatenate(([0.0], np.cumsum(rates[:-1] * np.diff(ticks))))  # W(ticks), increasing
    k = np.maximum(np.searchsorted(ticks, starts, side="right") - 1, 0)
    target = work_at_tick[k] + rates[k] * (starts - ticks[k]) + work_s
    k = np.maximum(np.searchsorted(work_at_tick, target, side="right") - 1, 0)
    end = ticks[k] + (target - work_at_tick[k]) / rates[k]
    return starts + np.maximum(end - starts, work_s) * (1.0 + WORST_CASE_MARGIN)
