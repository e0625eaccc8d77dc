"""When a run of the relaxation can start: start windows, the time grid, the decision-time superset.

Every decision of the twin happens at an event time. :func:`decision_time_superset` sweeps the
episode in time over a grid of cells (:func:`grid_bounds`) and collects a superset of every
possible decision time: exact points, plus *fuzzy* cells in which any time is possible; every
run of a job starts inside its :func:`start_windows`. :mod:`agents.oracle.bounds.exact` (item 2
of its docstring) argues why no decision time is missed. The functions ``*_of`` / ``*_for``
compute the same from plain arrays, for the size estimate (:mod:`agents.oracle.sizing.counts`).
"""

from __future__ import annotations

import numpy as np

from agents.oracle.model.instance import OracleInstance, first_expiries_s
from agents.oracle.model.intervals import Interval, merge
from digital_twin.tick_grid import count_ticks


def grid_bounds(inst: OracleInstance, divisor: int) -> np.ndarray:
    """``(G + 1,)`` cell boundaries ``0 .. H``; tick times are exact boundaries."""
    return grid_bounds_for(inst.horizon_s, inst.tick_s, divisor)


def grid_bounds_for(horizon_s: float, tick_s: float, divisor: int) -> np.ndarray:
    """:func:`grid_bounds` of an episode of ``horizon_s`` with ``tick_s`` ticks (float64, sorted)."""
    if divisor < 1:
        raise ValueError(f"bound_grid_divisor must be >= 1, got {divisor}")
    n_ticks = count_ticks(horizon_s, tick_s)
    step = tick_s / divisor
    points = (np.arange(n_ticks, dtype=np.float64)[:, None] * tick_s + np.arange(divisor)[None, :] * step).ravel()
    return np.unique(np.concatenate((points[points < horizon_s], [horizon_s])))


def start_windows(inst: OracleInstance, job: int) -> tuple[list[Interval], bool]:
    """Where the job's last run can start, and whether any run of it can be evicted.

    The first run starts in ``[a, min(a + TTL, H))``; a workflow task with parents is queued
    from its release, which can be as late as the horizon, so in ``[r, H)``, ``r`` its earliest
    release (:attr:`OracleInstance.earliest_start_s`). A preemptible job can be evicted at an
    interruption ``t`` of a candidate node only by a run started at some ``s`` in its windows
    with ``s < t < s + d``; it is then re-queued and may start again in ``[t, t + TTL)``.
    Interruptions are taken in time order, so the windows are a fixed point.

    Returns:
        ``(windows, may_be_evicted)``: sorted disjoint intervals, and True when some run of a
        preemptible job can be evicted (its deadline is then not charged per start).
    """
    if not inst.placeable(job):
        return [], False
    times = [t for i in inst.candidates[job] for t in inst.interruptions_s[i]] if inst.job_preemptible[job] else []
    ttl = None if inst.has_parents[job] else inst.ttl_s
    return windows_of(float(inst.earliest_start_s[job]), float(inst.longest_run_s[job]), inst.horizon_s, ttl,
                      preemptible=bool(inst.job_preemptible[job]), interruptions_s=times)


def windows_of(
    arrival_s: float, longest_run_s: float, horizon_s: float, ttl_s: float | None, *, preemptible: bool,
    interruptions_s: list[float],
) -> tuple[list[Interval], bool]:
    """:func:`start_windows` of a placeable job, given the interruptions of its candidate nodes.

    ``longest_run_s`` is the longest a run can last (the nominal duration without contention).
    """
    a, d, horizon, ttl = arrival_s, longest_run_s, horizon_s, ttl_s
    windows = [(a, horizon if ttl is None else min(a + ttl, horizon))]
    if not preemptible:
        return windows, False
    evictable = False
    times = sorted(t for t in interruptions_s if t > a)
    for t in times:
        if t - d >= windows[-1][1]:  # no window (sorted, disjoint) reaches t - d, now or later
            break
        if any(lo < t and hi > t - d for lo, hi in windows):
            evictable = True
            if ttl is not None:
                windows = merge([*windows, (t, min(t + ttl, horizon))])
    return windows, evictable


def decision_time_superset(
    inst: OracleInstance, windows: tuple[list[Interval], ...], bounds: np.ndarray, max_points: int
) -> tuple[np.ndarray, np.ndarray]:
    """Possible decision times: exact points, plus fuzzy grid cells (see the module docstring).

    Returns:
        ``(points, fuzzy)``: sorted ``(P,)`` times outside fuzzy cells, ``(G,)`` bool per cell.
    """
    interruptions = [t for times in inst.interruptions_s for t in times]
    placeable = np.array([inst.placeable(j) for j in range(inst.n_jobs)], dtype=bool)
    events = np.concatenate((inst.static_events_s, first_expiries_s(inst.arrival_s[placeable], inst.ttl_s)))
    return superset_of(inst.horizon_s, inst.ttl_s, (inst.duration_s, inst.longest_run_s), interruptions,
                       events, windows, bounds, max_points, children_expire_s=children_expiry_delays_s(inst))


def children_expiry_delays_s(inst: OracleInstance) -> np.ndarray | None:
    """``(J,)`` how long after a job's completion its children's queue TTL may expire (``nan``: never).

    A completion can release a child (its last parent), whose TTL expiry, an event that may
    reject it, then falls ``TTL`` later: the queue TTL for a job with children, ``nan`` for
    the others. ``None`` without workflows or without a TTL.
    """
    if inst.dag is None or inst.ttl_s is None:
        return None
    delays = np.full(inst.n_jobs, np.nan)
    delays[[p for p, _ in inst.dag.edges]] = inst.ttl_s
    return delays


def superset_of(
    horizon_s: float,
    ttl_s: float | None,
    runs_s: tuple[np.ndarray, np.ndarray],
    interruptions_s: list[float],
    static_events_s: np.ndarray,
    windows: tuple[list[Interval], ...],
    bounds: np.ndarray,
    max_points: int,
    children_expire_s: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decision_time_superset` from arrays.

    ``runs_s`` holds the ``(J,)`` shortest (nominal) and longest run times; ``interruptions_s``
    every node's interruption times; ``static_events_s`` the possible events known in advance
    (any order: the static events and the first TTL expiries); ``children_expire_s`` the
    ``(J,)`` delay after each job's completion of its released children's TTL expiry
    (:func:`children_expiry_delays_s`; ``None``: no job has one).
    """
    sweep = _Sweep(horizon_s, runs_s, windows, bounds, max_points, children_expire_s)
    requeue = [t + ttl_s for t in interruptions_s] if ttl_s else []
    sweep.add(np.sort(np.array([*static_events_s.tolist(), *requeue], dtype=np.float64)))
    for g in range(len(bounds) - 1):
        sweep.process(g)
    points = sorted(t for c in sweep.cells for t in c)
    return np.array(points, dtype=np.float64), sweep.fuzzy


class _Sweep:
    """State of the sweep over grid cells that builds the decision-time superset."""

    def __init__(self, horizon_s: float, runs_s: tuple[np.ndarray, np.ndarray], windows: tuple[list[Interval], ...],
                 bounds: np.ndarray, max_points: int, children_expire_s: np.ndarray | None = None) -> None:
        self.horizon = horizon_s
        self.bounds = bounds
        self.max_points = max_points
        self.n_cells = len(bounds) - 1
        self.fuzzy = np.zeros(self.n_cells, dtype=bool)
        self.cells: list[set[float]] = [set() for _ in range(self.n_cells)]
        flat = [(j, lo, hi) for j, w in enumerate(windows) for lo, hi in w]
        self.wj = np.array([f[0] for f in flat], dtype=np.int64)
        self.wl = np.array([f[1] for f in flat], dtype=np.float64)
        self.wh = np.array([f[2] for f in flat], dtype=np.float64)
        self.d, self.longest = runs_s
        self.then = children_expire_s

    def cells_of(self, times: np.ndarray) -> np.ndarray:
        """``(n,)`` grid cell of each time (times at or past the horizon: the last cell)."""
        return np.minimum(np.searchsorted(self.bounds, times, side="right") - 1, self.n_cells - 1)

    def add(self, times: np.ndarray) -> None:
        """Possible events at ``times``, in order (ignored past the horizon or inside a fuzzy cell)."""
        for t, c in zip(times.tolist(), self.cells_of(times).tolist(), strict=True):
            if t < self.horizon and not self.fuzzy[c]:
                self.cells[c].add(t)
                if len(self.cells[c]) > self.max_points:
                    self.mark([c], [c])

    def mark(self, first: list[int], last: list[int]) -> None:
        """Cells ``first[r]..last[r]`` of each range ``r`` may hold an event at any time."""
        for lo, hi in zip(first, last, strict=True):
            for c in range(lo, hi + 1):
                if not self.fuzzy[c]:  # fuzzy cells hold no points already
                    self.fuzzy[c] = True
                    self.cells[c].clear()

    def process(self, g: int) -> None:
        """Add the completions of every start possible in cell ``g`` and what they bring (earlier cells are done)."""
        done: set[float] = set()
        while not self.fuzzy[g] and self.cells[g] - done:
            t = min(self.cells[g] - done)  # completions come later, so ascending order is safe
            done.add(t)
            jobs = self.wj[(self.wl <= t) & (t < self.wh)]
            for _, d, longest in self._delays(jobs):
                exact = longest == d
                self.add(t + d[exact])
                self._mark_completions(t + d[~exact], t + longest[~exact])
        if self.fuzzy[g]:
            lo_g, hi_g = self.bounds[g], self.bounds[g + 1]
            sel = (self.wl < hi_g) & (self.wh > lo_g)
            lo, hi = np.maximum(self.wl[sel], lo_g), np.minimum(self.wh[sel], hi_g)
            for which, d, longest in self._delays(self.wj[sel]):
                self._mark_completions(lo[which] + d, hi[which] + longest)

    def _delays(self, jobs: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``[(which, shortest, longest)]``: after a start of ``jobs[which]``, an event may follow that much later.

        Their completions (``d`` to ``D``; ``which`` all True) and, for jobs with children,
        their children's TTL expiries (``TTL`` after a completion: :func:`children_expiry_delays_s`).
        """
        out = [(np.ones(len(jobs), dtype=bool), self.d[jobs], self.longest[jobs])]
        if self.then is not None:
            delay = self.then[jobs]
            has = ~np.isnan(delay)
            if has.any():
                out.append((has, self.d[jobs][has] + delay[has], self.longest[jobs][has] + delay[has]))
        return out

    def _mark_completions(self, first: np.ndarray, last: np.ndarray) -> None:
        """Completions may fall anywhere in each ``[first, last]`` (closed for rounding): those cells are fuzzy."""
        ends = first < self.horizon
        self.mark(self.cells_of(first[ends]).tolist(), self.cells_of(np.minimum(last[ends], self.horizon)).tolist())
