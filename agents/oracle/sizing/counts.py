"""Upper bounds on the size of the oracle's two programs, from the episode's columns alone.

Nothing here builds options: the counts come from per-job arrays (``J`` entries), per node
shape arrays (``S`` entries, see :mod:`agents.oracle.model.fit`) and small ``(chunk, edges)`` blocks.
For a job arriving at ``a`` with duration ``d`` and first window end ``W = min(a + TTL, H)``,
per (job, node) group:

* **plan options**: the arrival and the static events in ``(a, W)``
  (:func:`agents.oracle.plans.options.plan_starts`), and for a job with evict-and-rerun families
  (:mod:`agents.oracle.plans.rerun`) their first runs and reruns, whose groups enter rows up to the
  last rerun window's end;
* **relaxation options**: the relaxation's own decision-time superset is computed (the sweep
  costs cells x windows, not options), then each group has its points and fuzzy cells inside
  its start windows, plus one piece per cut (deadline, first TTL end, window edges, the node's
  interruptions and down windows);
* **rows it enters**: its usage lies in ``[a, end)`` (``end = min(W_last + d, H)``). Capacity
  rows: the distinct usage starts of the node in that range (static events for the plan; points,
  fuzzy cells and cut values for the relaxation), per resource that can bind (the demand of all
  jobs of the node's shape whose ranges meet ``[a, end)`` exceeds the node's capacity: a row
  binds only then). SLA rows: the ticks in that range. Activity rows (``active-nodes``): the
  usage starts and ends in that range; ends are ``start + d`` of jobs fitting the node, its
  interruptions and ``H``, counted over grid bins of the start counts shifted by each duration.
  Slowdown rows (cpu contention, ``prorated``, nominal runs): three per interval of
  :data:`~agents.oracle.milp.rows.SLOWDOWN_CELL_S` or tick of a contended node, and per interval a
  group covers one range of its stretchable options per run of them (at most one more per
  interruption of the node in the group's range).

Non-zeros follow :mod:`agents.oracle.milp.program`: two per range of step variables, one per ``z``,
``v`` or ``y`` entry. The builders drop more (options on down nodes, crossing starts, twin
nodes; rows whose demand cannot bind at that time), so the counts are upper bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agents.oracle.bounds.decision_times import superset_of, windows_of
from agents.oracle.milp.rows import SLOWDOWN_CELL_S
from agents.oracle.model.intervals import Interval
from agents.oracle.plans.rerun import MAX_FIRST_RUN_STARTS
from agents.oracle.sizing.columns import EpisodeColumns

_CHUNK_JOBS = 512
"""Jobs per block of the ``(jobs, edges)`` and ``(jobs, interruptions)`` tables."""
_MAX_SWEEP_CELLS = 200_000
"""Above this many grid cells the relaxation's sweep is skipped and every cell counted as full."""

StartCounter = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``(y, j) -> (len(j), edges)``: options of one group of each job ``j`` starting before ``y``."""


@dataclass(frozen=True)
class ProgramSize:
    """Upper bounds on one program's size.

    Attributes:
        n_options: Placement options (binary step variables).
        n_groups: (job, node) groups of options.
        n_variables, n_constraints, n_nonzeros: The MILP handed to HiGHS.
    """

    n_options: int
    n_groups: int
    n_variables: int
    n_constraints: int
    n_nonzeros: int


def plan_size(ep: EpisodeColumns, runs: np.ndarray | None = None) -> ProgramSize:
    """Upper bounds for a plan program: options at static events, rows over each usage range.

    Args:
        ep: The episode's columns.
        runs: ``(J',)`` how long the program reserves each run, seconds: ``ep.d`` (the default,
            the nominal plan, with slowdown rows) or ``ep.longest`` (covering the worst-case
            plan's reservations, which have none).
    """
    nominal = runs is None
    runs = ep.d if runs is None else runs
    starts = 1 + _count(ep.events, np.nextafter(ep.a, np.inf), ep.w)  # arrival + events in (a, W)
    rerun_options, families, rerun_end = _rerun_families(ep)
    end = np.minimum(np.maximum(ep.w, rerun_end) + runs, ep.horizon)
    groups_per_node = 1 + 2 * families  # the ordinary group, and per family a first-run and a rerun group
    taus = _count(ep.events, ep.a, end)
    span = None
    if ep.active:
        first = np.searchsorted(ep.events, ep.a, side="right")

        def n_starts(y: np.ndarray, j: np.ndarray) -> np.ndarray:
            inside = np.searchsorted(ep.events, y, side="left") - first[j, None]
            return (y > ep.a[j, None]) + np.clip(inside, 0, starts[j, None] - 1)

        # each first run or rerun ends once, splitting at most one interval of its node
        span = groups_per_node * (_span_pairs(ep, n_starts, taus, end, runs) + ep.c * int(rerun_options.sum()))
    ticks = _count(ep.ticks, np.nextafter(ep.a, np.inf), end)
    pairs, capacity_rows = _capacity_pairs(ep, ep.events, end)
    slowdown = _slowdown(ep, ep.a, end, groups_per_node) if nominal else None
    return _program(ep, ep.c * starts + rerun_options, (groups_per_node * pairs, capacity_rows),
                    groups_per_node * ticks, span, families, slowdown)


def _rerun_families(ep: EpisodeColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Upper bounds on each job's evict-and-rerun families (:mod:`agents.oracle.plans.rerun`).

    A family per interruption ``t`` of a node the job fits, ``a < t < H``: reruns at ``t`` and
    at the static events in ``(t, min(t + TTL, H))`` on each candidate, and up to
    :data:`~agents.oracle.plans.rerun.MAX_FIRST_RUN_STARTS` first runs on each.

    Returns:
        ``(options, families, window_end)``, each ``(J',)``: options over all families,
        families, and the last rerun window's end (``-inf`` without families).
    """
    options = np.zeros(len(ep.a), dtype=np.int64)
    families = np.zeros(len(ep.a), dtype=np.int64)
    window_end = np.full(len(ep.a), -math.inf)
    if ep.ttl is None:
        return options, families, window_end
    for j in np.flatnonzero(ep.preemptible & ~ep.lc):
        times = np.unique(np.concatenate([ep.shape_ints[s] for s in np.flatnonzero(ep.fits[:, j])] or [np.zeros(0)]))
        times = times[(times > ep.a[j]) & (times < ep.horizon)]
        if len(times) == 0:
            continue
        ends = np.minimum(times + ep.ttl, ep.horizon)
        reruns = 1 + _count(ep.events, np.nextafter(times, np.inf), ends)
        options[j] = int(ep.c[j]) * (int(reruns.sum()) + MAX_FIRST_RUN_STARTS * len(times))
        families[j] = len(times)
        window_end[j] = float(ends.max())
    return options, families, window_end


def bound_size(ep: EpisodeColumns, max_points: int) -> ProgramSize:
    """Upper bounds for the relaxation, from its decision-time superset."""
    windows = _windows(ep)
    wj = np.array([j for j, w in enumerate(windows) for _ in w], dtype=np.int64)
    wl = np.array([lo for w in windows for lo, _ in w], dtype=np.float64)
    wh = np.array([hi for w in windows for _, hi in w], dtype=np.float64)
    if len(ep.edges) - 1 <= _MAX_SWEEP_CELLS:
        interruptions = [float(t) for times in ep.shape_ints for t in times]
        points, fuzzy = superset_of(ep.horizon, ep.ttl, (ep.d, ep.longest), interruptions,
                                    np.concatenate((ep.events, ep.expiries)), tuple(windows), ep.edges, max_points)
        per_cell = 1
    else:  # too fine a grid to sweep cheaply: any cell may hold max_points points and a piece
        points, fuzzy = np.zeros(0), np.ones(len(ep.edges) - 1, dtype=bool)
        per_cell = max_points + 1
    fuzzy_before = np.concatenate(([0], np.cumsum(fuzzy)))

    def found(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:  # points and fuzzy cells in [lo, hi)
        return _count(points, lo, hi) + per_cell * _fuzzy_cells(ep.edges, fuzzy_before, lo, hi)

    in_windows = np.bincount(wj, weights=found(wl, wh), minlength=len(ep.a)).astype(np.int64)
    own_cuts = 2 + 2 * np.bincount(wj, minlength=len(ep.a))  # deadline, first TTL end, window edges
    w_end = np.full(len(ep.a), -math.inf)
    np.maximum.at(w_end, wj, wh)
    end = np.minimum(w_end + ep.d, ep.horizon)
    requeue = [t + ep.ttl for t in ep.shape_ints] if ep.ttl is not None else []
    cut_values = np.sort(np.concatenate((ep.deadlines[np.isfinite(ep.deadlines)], ep.w, ep.downs, *requeue)))
    taus = found(ep.a, end) + _count(cut_values, ep.a, end)
    node_taus = _interruption_cut_values(ep, ep.a, end)  # (S, J'): per-node values, not filtered
    fuzzy_ends = ep.edges[1:][fuzzy]
    pairs, rows = _capacity_pairs(ep, np.unique(np.concatenate((points, fuzzy_ends, cut_values))), end)
    node_pairs = (node_taus * ep.fits).sum(axis=0) * (ep.need > 0).sum(axis=0)
    capacity = (pairs + node_pairs, rows + int(node_pairs.sum()))
    span = None
    if ep.active:
        group_cuts = own_cuts + ep.shape_cuts_max @ ep.fits

        def n_starts(y: np.ndarray, j: np.ndarray) -> np.ndarray:
            before = found(np.broadcast_to(ep.a[j, None], y.shape), np.minimum(y, w_end[j, None]))
            return np.where(y > ep.a[j, None], before + group_cuts[j, None], 0)

        span = _span_pairs(ep, n_starts, taus, end, ep.d) + (node_taus * ep.fits).sum(axis=0)
    options = ep.c * (in_windows + own_cuts) + ep.shape_cuts_sum @ ep.fits
    return _program(ep, options, capacity, _count(ep.ticks, ep.a, end), span,
                    slowdown=_slowdown(ep, ep.a, end, np.ones(len(ep.a), dtype=np.int64)))


def _windows(ep: EpisodeColumns) -> list[list[Interval]]:
    """Start windows of every placeable job (as :func:`agents.oracle.bounds.decision_times.start_windows`)."""
    out = []
    for j in range(len(ep.a)):
        times: list[float] = []
        if ep.preemptible[j]:
            times = np.concatenate([ep.shape_ints[s] for s in np.flatnonzero(ep.fits[:, j])]).tolist()
        ttl = None if ep.has_parents[j] else ep.ttl  # a task's release may come as late as the horizon
        windows, _ = windows_of(float(ep.a[j]), float(ep.longest[j]), ep.horizon, ttl,
                                preemptible=bool(ep.preemptible[j]), interruptions_s=times)
        out.append(windows)
    return out


def _program(
    ep: EpisodeColumns,
    options: np.ndarray,
    capacity: tuple[np.ndarray, int],
    ticks: np.ndarray,
    span: np.ndarray | None,
    families: np.ndarray | None = None,
    slowdown: tuple[int, int] | None = None,
) -> ProgramSize:
    """Variables, rows and non-zeros of the builders in :mod:`agents.oracle.milp.program`.

    Args:
        ep: The episode.
        options: ``(J',)`` options of each job over all its groups.
        capacity: ``(J',)`` (capacity row, group) pairs of each job over its groups, and the
            number of capacity rows.
        ticks: ``(J',)`` SLA ticks the groups of the job cover.
        span: ``(J',)`` activity intervals all groups of the job cover (``None``: prorated).
        families: ``(J',)`` evict-and-rerun families of each job (``None``: none): two more
            groups per family and candidate node, and two rows per family.
        slowdown: Slowdown intervals (one ``u`` and three rows each) and (interval, range)
            pairs over all groups (:func:`_slowdown`; ``None``: no slowdown rows).
    """
    n_families = 0 if families is None else int(families.sum())
    family_groups = 0 if families is None else 2 * int((ep.c * families).sum())
    n, groups = int(options.sum()), int(ep.c.sum()) + family_groups
    pairs, capacity_rows = int(capacity[0].sum()), capacity[1]
    tick_pairs = int((ep.c * ticks).sum())
    lc_pairs = int((ep.c * ticks)[ep.lc].sum())
    z = min(ep.n_nodes * len(ep.ticks), tick_pairs)
    span_pairs = 0 if span is None else int(span.sum())
    variables = n + int(ep.lc.sum()) + z + span_pairs // 2  # y only on intervals that two groups cover
    # a capacity row binds only when two groups or more cover it (each job fits an empty node)
    rows = (n - groups) + len(ep.a) + min(pairs // 2, capacity_rows) + z + lc_pairs + span_pairs + 2 * n_families
    nonzeros = (2 * (n - groups) + groups + 2 * pairs + 2 * tick_pairs + z + 4 * lc_pairs + 3 * span_pairs
                + 2 * family_groups)
    if slowdown is not None:
        intervals, slow_pairs = slowdown
        variables, rows = variables + intervals, rows + 3 * intervals  # u, and its three tangent rows
        nonzeros += 3 * (intervals + 2 * slow_pairs)
    return ProgramSize(n, groups, variables, rows, nonzeros)


def _slowdown(
    ep: EpisodeColumns, lo: np.ndarray, end: np.ndarray, groups_per_node: np.ndarray
) -> tuple[int, int] | None:
    """Slowdown intervals of the contended nodes, and (interval, range) pairs over each job's groups.

    A group of a job whose usage lies in ``[lo, end)`` covers at most the intervals that meet that
    range, each with one range per run of stretchable options (one more per interruption of
    the node in the range); ``groups_per_node`` (``(J',)``) counts its groups per node.
    ``None`` when no node can slow down.
    """
    if not ep.slowed.any():
        return None
    breaks = np.unique(np.concatenate((np.arange(0.0, ep.horizon, SLOWDOWN_CELL_S), ep.ticks, [ep.horizon])))
    per_node = len(breaks) - 1
    intervals = int(ep.sizes[ep.slowed].sum()) * per_node
    meeting = np.minimum(_count(breaks, lo, end) + 1, per_node)  # (J',) intervals meeting [lo, end)
    pairs = np.zeros(len(lo), dtype=np.int64)
    for s in np.flatnonzero(ep.slowed):
        runs = 1 + _count(ep.shape_ints[s], lo, end)
        pairs += ep.fits[s] * ep.sizes[s] * meeting * runs
    return intervals, int((groups_per_node * pairs).sum())


def _capacity_pairs(ep: EpisodeColumns, taus: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, int]:
    """``(J',)`` capacity rows each job's groups enter (over its nodes and resources), and the rows.

    ``taus`` are the sorted times at which a capacity row may be written (usage starts). A row
    of a node at ``t`` exists for a resource only if the demand of the jobs fitting the node
    whose ranges ``[a, end)`` hold ``t`` exceeds the node's capacity: the rows a job's group
    enters are those binding times inside its own range.
    """
    out = np.zeros(len(ep.a), dtype=np.int64)
    rows = 0
    for s in range(len(ep.sizes)):
        mine = np.flatnonzero(ep.fits[s])
        starts, ends = np.sort(ep.a[mine]), np.sort(end[mine])
        for r in range(3):
            need = ep.need[r, mine]
            if not (need > 0).any():
                continue
            started = np.concatenate(([0.0], np.cumsum(need[np.argsort(ep.a[mine], kind="stable")])))
            ended = np.concatenate(([0.0], np.cumsum(need[np.argsort(end[mine], kind="stable")])))
            load = (started[np.searchsorted(starts, taus, side="right")]
                    - ended[np.searchsorted(ends, taus, side="right")])
            binding = taus[load > ep.capacity[s, r]]
            out[mine] += ep.sizes[s] * (need > 0) * _count(binding, ep.a[mine], end[mine])
            rows += int(ep.sizes[s]) * len(binding)
    return out, rows


def _span_pairs(
    ep: EpisodeColumns, n_starts: StartCounter, taus: np.ndarray, end: np.ndarray, runs: np.ndarray
) -> np.ndarray:
    """``(J',)`` activity intervals over all groups of each job: usage starts and ends in range.

    Ends of options on a node are ``start + runs`` of the jobs fitting its shape, its
    interruptions and ``H``, counted from grid bins of the shifted start counts.
    """
    edges = ep.bin_edges
    ends = np.zeros((len(ep.sizes), len(edges)))  # (S, edges): usage ends before each edge
    for first in range(0, len(ep.a), _CHUNK_JOBS):
        j = np.arange(first, min(first + _CHUNK_JOBS, len(ep.a)))
        ends += ep.fits[:, j] @ n_starts(edges[None, :] - runs[j, None], j).astype(np.float64)
    lo = np.searchsorted(edges, ep.a, side="right") - 1
    hi = np.minimum(np.searchsorted(edges, end, side="right"), len(edges) - 1)
    interruptions = np.stack([_count(t, ep.a, end) for t in ep.shape_ints])  # (S, J')
    per_shape = ep.sizes[:, None] * (ends[:, hi] - ends[:, lo] + 1) + interruptions
    return np.ceil((per_shape * ep.fits).sum(axis=0)).astype(np.int64) + ep.c * taus


def _interruption_cut_values(ep: EpisodeColumns, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``(S, J')`` cut values ``t - d`` in ``[lo, hi)``: ``t`` on a node of the shape, ``d`` of a job fitting it."""
    out = np.zeros(ep.fits.shape, dtype=np.int64)
    for s, times in enumerate(ep.shape_ints):
        if not len(times):
            continue
        durations = np.sort(ep.d[ep.fits[s]])
        for first in range(0, len(lo), _CHUNK_JOBS):
            j = np.arange(first, min(first + _CHUNK_JOBS, len(lo)))
            # t - d in [lo, hi)  <=>  d in (t - hi, t - lo]
            n = (np.searchsorted(durations, times[None, :] - lo[j, None], side="right")
                 - np.searchsorted(durations, times[None, :] - hi[j, None], side="right"))
            out[s, j] = n.sum(axis=1)
    return out


def _count(sorted_values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Values in ``[lo, hi)`` (0 where ``hi <= lo``), elementwise over ``lo`` and ``hi``."""
    n = np.searchsorted(sorted_values, hi, side="left") - np.searchsorted(sorted_values, lo, side="left")
    return np.maximum(n, 0)


def _fuzzy_cells(edges: np.ndarray, fuzzy_before: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Fuzzy grid cells meeting ``[lo, hi)`` (``fuzzy_before[g]``: fuzzy cells among the first ``g``)."""
    first = np.searchsorted(edges[1:], lo, side="right")  # cells ending at or before lo
    stop = np.searchsorted(edges[:-1], hi, side="left")  # cells starting before hi
    n = fuzzy_before[np.maximum(stop, first)] - fuzzy_before[first]
    return np.where(hi > lo, n, 0)
