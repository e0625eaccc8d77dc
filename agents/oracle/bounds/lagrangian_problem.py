"""The problem the Lagrangian bound prices: the fates of an episode, their usages and the capacity rows.

:func:`relaxed_problem` collects, once per episode, everything :mod:`agents.oracle.bounds.lagrangian`
needs that does not depend on the multipliers: each served job's candidate starts (the kinks of
its bracket, item 4 of that module's docstring), their charges and usages of each resource over
time cells, the node groups and each group's capacity per cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agents.oracle.bounds.decision_times import grid_bounds_for
from agents.oracle.bounds.fates import job_fates
from agents.oracle.model import terms
from agents.oracle.model.instance import OracleInstance

CELLS_PER_TICK = 1
"""Cells per telemetry tick before any widening (one cell per tick)."""
MAX_POINTS = 2_000_000
"""Largest number of (job, start) points: cells widen until the starts to evaluate fit."""
_RESOURCES = 3  # millicores, MiB, GPUs


@dataclass(frozen=True, eq=False)
class RelaxedProblem:
    """The fates of one episode with their usages, independent of the multipliers.

    ``J'`` counts the jobs with run fates ("served" below), ``P`` their candidate starts,
    ``G`` the node groups, ``K`` the time cells.
    """

    constant_usd: float  # sum of the charges of jobs without a run fate
    fixed_usd: np.ndarray  # (J',) a served job's cheapest fate that uses nothing (unserved, failed)
    job_of_point: np.ndarray  # (P,) index into the served jobs; points sorted by job, then start
    ptr: np.ndarray  # (J' + 1,) points of served job q: ptr[q] .. ptr[q + 1]
    start_s: np.ndarray  # (P,) the start s
    end_s: np.ndarray  # (P,) the nominal end min(s + d, H)
    base_usd: np.ndarray  # (P,) wait w (s - a); 0 for a workflow task with parents
    k_start: np.ndarray  # (P,) cell of s (clipped to the last cell)
    off_start: np.ndarray  # (P,) s - the start of that cell
    k_end: np.ndarray  # (P,) cell of the end
    off_end: np.ndarray  # (P,) end - the start of that cell
    usage: np.ndarray  # (C, J') requests of each served job: millicores, MiB, GPUs
    usage_p: np.ndarray  # (C, P) the same per point
    dur_s: np.ndarray  # (P,) end - start
    rate: np.ndarray  # (J', G) USD per second of a run on the group (0 off-candidate)
    extra_usd: np.ndarray  # (J', G) QoS and deadline of a run on the group
    candidate: np.ndarray  # (J', G) bool, the job may run on the group
    bounds_s: np.ndarray  # (K + 1,) cell boundaries 0 .. H
    nominal: np.ndarray  # (G, C, K) group capacity x cell width (1 where the resource is absent)
    avail_ratio: np.ndarray  # (G, C, K) up capacity / nominal (0 where the resource is absent)
    row: np.ndarray  # (G, C, K) bool, a capacity row with capacity (the others stay at 0)


def relaxed_problem(inst: OracleInstance) -> RelaxedProblem:
    """The fates of ``inst``, their charges, usages and candidate starts (see the module docstring)."""
    constant, runs = job_fates(inst)
    served: list[int] = []
    fixed: list[float] = []
    latest: list[float] = []
    for fates in runs:
        failing = math.inf
        if fates.may_fail.any():
            failing = float(np.min(inst.charges.eviction(1.0) + fates.qos_usd[fates.may_fail])) + fates.late_usd
        served.append(fates.job)
        fixed.append(min(fates.unserved_usd, failing))
        latest.append(fates.latest_s)
    js = np.array(served, dtype=np.int64)
    s_max_arr = np.array(latest, dtype=np.float64)
    bounds = _cell_bounds(inst, js, s_max_arr)
    points = _starts(inst, js, s_max_arr, bounds)
    groups, rep = _groups(inst, js)
    return _assemble(inst, js, np.array(fixed), constant, points, bounds, groups, rep)



def _cell_bounds(inst: OracleInstance, js: np.ndarray, s_max: np.ndarray) -> np.ndarray:
    """``(K + 1,)`` cell boundaries: ``tick_s / CELLS_PER_TICK`` wide, doubled from a tick until the points fit.

    The points (:data:`MAX_POINTS`) are estimated as two per cell boundary in each job's window.
    """
    spans = s_max - inst.arrival_s[js]
    widths = [inst.tick_s / CELLS_PER_TICK] + [inst.tick_s * 2.0**m for m in range(1 if CELLS_PER_TICK == 1 else 0, 20)]
    for width in widths:
        if width >= inst.horizon_s or float(np.sum(2.0 * spans / width + 5.0)) <= MAX_POINTS:
            break
    if width < inst.tick_s:
        return grid_bounds_for(inst.horizon_s, inst.tick_s, round(inst.tick_s / width))
    edges = np.arange(0.0, inst.horizon_s, width, dtype=np.float64)
    return np.concatenate((edges, [inst.horizon_s]))


def _starts(inst: OracleInstance, js: np.ndarray, s_max: np.ndarray, bounds: np.ndarray) -> list[np.ndarray]:
    """Per served job, its sorted candidate starts: ``a``, ``S``, ``H - d`` and the kinks inside ``(a, S)``."""
    h = inst.horizon_s
    out = []
    for q, j in enumerate(js):
        a, d, s = float(inst.arrival_s[j]), float(inst.duration_s[j]), float(s_max[q])
        inner = bounds[(bounds > a) & (bounds < s)]
        shifted = bounds[(bounds > a + d) & (bounds < s + d)] - d
        shifted = shifted[(shifted > a) & (shifted < s)]
        out.append(np.unique(np.concatenate(([a, min(max(h - d, a), s), s], inner, shifted))))
    return out


def _groups(inst: OracleInstance, js: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(group of each node (N,), a representative node of each group (G,))``.

    Nodes share a group when a run charges the same on each: equal capacity, price and
    spot-ness, and the same served jobs among their candidates (groups in order of first node).
    """
    n = inst.n_nodes
    member = np.zeros((n, len(js)), dtype=bool)
    for q, j in enumerate(js):
        member[list(inst.candidates[j]), q] = True
    signature = np.packbits(member, axis=1)
    keys: dict[tuple[object, ...], int] = {}
    group = np.empty(n, dtype=np.int64)
    rep: list[int] = []
    for i in range(n):
        key = (int(inst.node_cpu_m[i]), int(inst.node_mem_mib[i]), int(inst.node_gpus[i]),
               float(inst.node_price_per_s[i]), bool(inst.node_spot[i]), signature[i].tobytes())
        if key not in keys:
            keys[key] = len(rep)
            rep.append(i)
        group[i] = keys[key]
    return group, np.array(rep, dtype=np.int64)


def _assemble(
    inst: OracleInstance,
    js: np.ndarray,
    fixed: np.ndarray,
    constant: float,
    points: list[np.ndarray],
    bounds: np.ndarray,
    group: np.ndarray,
    rep: np.ndarray,
) -> RelaxedProblem:
    """Pack the served jobs' points, charges and the groups' capacity rows into a :class:`RelaxedProblem`."""
    counts = np.array([len(p) for p in points], dtype=np.int64)
    ptr = np.concatenate(([0], np.cumsum(counts)))
    job_of_point = np.repeat(np.arange(len(js), dtype=np.int64), counts)
    start = np.concatenate(points) if points else np.zeros(0)
    end = np.minimum(start + inst.duration_s[js][job_of_point], inst.horizon_s)
    n_cells = len(bounds) - 1

    def cell(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = np.clip(np.searchsorted(bounds, t, side="right") - 1, 0, n_cells - 1)
        return k, t - bounds[k]

    usage = np.stack([inst.job_cpu_m[js], inst.job_mem_mib[js], inst.job_gpus[js]]).astype(np.float64)
    k_start, off_start = cell(start)
    k_end, off_end = cell(end)
    rate = terms.run_usd_per_s(inst, js, rep)
    candidate = np.zeros((len(js), len(rep)), dtype=bool)
    for q, j in enumerate(js):
        candidate[q, np.unique(group[list(inst.candidates[j])])] = True
    rate = np.where(candidate, rate, 0.0)
    charges = inst.charges
    qos = charges.qos(inst.job_lc[js][:, None] & inst.node_spot[None, rep])
    late = (inst.arrival_s[js] > inst.deadline_s[js]) & (not inst.deadline_at_completion)
    extra = qos + charges.deadline(late)[:, None]
    nominal, avail = _capacity(inst, group, len(rep), bounds)
    row = nominal > 0.0
    return RelaxedProblem(
        constant_usd=constant,
        fixed_usd=fixed,
        job_of_point=job_of_point,
        ptr=ptr,
        start_s=start,
        end_s=end,
        base_usd=charges.wait(np.where(inst.has_parents[js][job_of_point], 0.0,
                                       start - inst.arrival_s[js][job_of_point])),
        k_start=k_start,
        off_start=off_start,
        k_end=k_end,
        off_end=off_end,
        usage=usage,
        usage_p=usage[:, job_of_point],
        dur_s=end - start,
        rate=rate,
        extra_usd=extra,
        candidate=candidate,
        bounds_s=bounds,
        nominal=np.where(row, nominal, 1.0),
        avail_ratio=np.where(row, avail / np.where(row, nominal, 1.0), 0.0),
        row=row,
    )


def _capacity(
    inst: OracleInstance, group: np.ndarray, n_groups: int, bounds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(nominal, avail)``, each ``(G, C, K)``: the group's capacity x cell width, and x the time each node is up."""
    widths = np.diff(bounds)
    up = np.tile(widths, (inst.n_nodes, 1))  # (N, K) seconds each node is up in each cell
    for i, windows in enumerate(inst.down_windows_s):
        for lo, hi in windows:
            up[i] -= np.clip(np.minimum(bounds[1:], hi) - np.maximum(bounds[:-1], lo), 0.0, None)
    caps = np.stack([inst.node_cpu_m, inst.node_mem_mib, inst.node_gpus], axis=1).astype(np.float64)  # (N, C)
    nominal = np.zeros((n_groups, _RESOURCES, len(widths)))
    avail = np.zeros_like(nominal)
    for c in range(_RESOURCES):
        np.add.at(nominal[:, c], group, caps[:, c, None] * widths[None, :])
        np.add.at(avail[:, c], group, caps[:, c, None] * np.maximum(up, 0.0))
    return nominal, avail
