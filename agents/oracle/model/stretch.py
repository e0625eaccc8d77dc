"""The latest a run can end under cpu contention: what the plan reserves for each run.

Under processor sharing (:mod:`digital_twin.sim.tables.contention`) a job progresses at ``cores / demand``
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
(:mod:`agents.oracle.plans.replay`). Without interference the worst-case end is exactly ``s + d``
(bit for bit), and the program's accounting is exact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from agents.oracle.model.instance import OracleInstance

WORST_CASE_MARGIN = 1e-9
"""Relative margin on a stretched run's length, covering the rounding of the twin's piecewise progress."""


def interference_stretch(inst: OracleInstance, job: int) -> float:
    """How many times its nominal work a run of ``job`` can take from co-location interference alone (>= 1).

    A rate divided by ``1 + s`` does ``d`` of work in the time the undivided rate does
    ``d x (1 + s)``: the worst-case end of a run slowed by interference is that of a run of
    ``d x (1 + s)`` nominal seconds (:attr:`OracleInstance.interference_stretch`).
    """
    stretch = inst.interference_stretch
    return 1.0 if stretch is None else float(stretch[job])


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


@dataclass(frozen=True, eq=False)
class RunLengths:
    """How long a plan program reserves and charges each run, when not its nominal duration.

    ``factors is None``: until the run's worst-case end (:func:`worst_case_ends`, the plan the
    twin replays start for start). Otherwise ``factors[j, i]`` (``(J, N)``, >= 1) stretches
    job ``j``'s nominal duration on node ``i``: lengths measured in a replay
    (:func:`replayed_lengths`), a guess the replay of the new plan then checks.

    Attributes:
        label: What the plan's source says of its runs (``OracleResult.plan_source``).
        factors: ``(J, N)`` stretch factors, or ``None`` for the worst case.
    """

    label: str
    factors: np.ndarray | None = None

    def ends(self, inst: OracleInstance, job: int, node: int, starts: np.ndarray) -> np.ndarray:
        """``(n,)`` when runs of ``job`` on ``node`` from ``starts`` complete, uncapped."""
        duration = float(inst.duration_s[job])
        if self.factors is None:
            return worst_case_ends(inst, node, starts, duration * interference_stretch(inst, job))
        return starts + duration * float(self.factors[job, node])


WORST_CASE = RunLengths("worst-case runs")
"""Every run reserved until its worst-case end."""


def replayed_lengths(inst: OracleInstance, runs: Mapping[str, tuple[int, float]], label: str) -> RunLengths:
    """Stretch factors from the runs of a replayed plan (``job_id -> (node, seconds)``, completed runs).

    A job's factor on the node it completed on is its run's length over its nominal duration;
    elsewhere, on a node with completed runs, the mean of their factors; else 1 (nominal).
    """
    index = {job_id: j for j, job_id in enumerate(inst.job_ids)}
    factors = np.ones((inst.n_jobs, inst.n_nodes))
    observed = [(index[job_id], node, max(seconds / float(inst.duration_s[index[job_id]]), 1.0))
                for job_id, (node, seconds) in runs.items()]
    for node in range(inst.n_nodes):
        on_node = [f for _, i, f in observed if i == node]
        if on_node:
            factors[:, node] = float(np.mean(on_node))
    for j, node, f in observed:
        factors[j, node] = f
    return RunLengths(label, factors)
