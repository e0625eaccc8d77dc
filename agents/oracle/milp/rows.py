"""The rows of the program, one function per kind: structure, capacity, SLA, active nodes, slowdown.

Each adds its variables and rows to a :class:`~agents.oracle.milp.builder.Builder` for one node
(or, for the structure and the objective on the step variables, for all options);
:mod:`agents.oracle.milp.program` says what each variable and row means.
"""

from __future__ import annotations

import numpy as np

from agents.oracle.milp.builder import Builder, covering
from agents.oracle.milp.options import Options
from agents.oracle.model.instance import OracleInstance


def capacity_rows(bld: Builder, inst: OracleInstance, options: Options, node: int, groups: np.ndarray) -> None:
    """Capacity of ``node`` at each maximal set of simultaneously usable options.

    Resources (cpu, memory, GPUs) and the placement rules' per-node caps (a count of a group's
    jobs, :attr:`OracleInstance.node_caps`) alike.
    """
    sel = options.node == node
    nonempty = sel & (options.use_start_s < options.use_end_s)
    taus = np.unique(options.use_start_s[nonempty])
    if len(taus) == 0:
        return
    ends = np.sort(options.use_end_s[nonempty])
    after = np.searchsorted(ends, taus, side="right")
    ends_between = np.diff(np.append(after, len(ends)))
    taus = taus[(ends_between > 0) | (np.arange(len(taus)) == len(taus) - 1)]
    q, g, a, b = covering(options, groups, taus, "time")
    first = options.group_offsets[g]
    job = options.group_job[g]
    resources = [
        (inst.job_cpu_m, inst.node_cpu_m),
        (inst.job_mem_mib, inst.node_mem_mib),
        (inst.job_gpus, inst.node_gpus),
    ]
    resources += [(members.astype(np.int64), np.full(inst.n_nodes, cap)) for members, cap in inst.node_caps]
    for demand, capacity in resources:
        need = demand[job].astype(np.float64)
        load = np.bincount(q, weights=need, minlength=len(taus))
        binding = np.flatnonzero(load > capacity[node])
        if len(binding) == 0:
            continue
        row_of = np.full(len(taus), -1)
        row_of[binding] = bld.new_rows(np.full(len(binding), float(capacity[node])))
        keep = (row_of[q] >= 0) & (need > 0)
        bld.add_range(row_of[q[keep]], first[keep], a[keep], b[keep], need[keep])


def sla_rows(
    bld: Builder, inst: OracleInstance, options: Options, node: int, groups: np.ndarray, v_col: np.ndarray
) -> None:
    """SLA: z per over-threshold-capable tick, and the rows charging ``v`` of exposed LC jobs."""
    allowed = inst.sla_allowed_cpu_m[:, node].astype(np.float64)
    q, g, a, b = covering(options, groups, np.arange(len(allowed)), "tick")
    job = options.group_job[g]
    first = options.group_offsets[g]
    cpu = inst.job_cpu_m[job].astype(np.float64)
    lc = inst.job_lc[job]
    max_load = np.bincount(q, weights=cpu, minlength=len(allowed))
    over = max_load > allowed
    direct = lc & (cpu > allowed[q])
    if direct.any():
        rows = bld.new_rows(np.zeros(int(direct.sum())))
        bld.add_range(rows, first[direct], a[direct], b[direct], 1.0)
        bld.add(rows, v_col[job[direct]], -1.0)
    shared = lc & over[q] & ~direct
    ticks = np.unique(q[shared])
    if len(ticks) == 0:
        return
    z = bld.new_vars(np.zeros(len(ticks)), integral=True)
    z_of = np.full(len(allowed), -1)
    z_of[ticks] = z
    load_rows = bld.new_rows(allowed[ticks])
    row_of = np.full(len(allowed), -1)
    row_of[ticks] = load_rows
    in_row = row_of[q] >= 0
    bld.add_range(row_of[q[in_row]], first[in_row], a[in_row], b[in_row], cpu[in_row])
    bld.add(load_rows, z, -(max_load[ticks] - allowed[ticks]))
    rows = bld.new_rows(np.ones(int(shared.sum())))
    bld.add_range(rows, first[shared], a[shared], b[shared], 1.0)
    bld.add(rows, z_of[q[shared]], 1.0)
    bld.add(rows, v_col[job[shared]], -1.0)


def active_rows(
    bld: Builder, inst: OracleInstance, options: Options, node: int, groups: np.ndarray, c_base: np.ndarray
) -> None:
    """``active-nodes`` cost of ``node``: direct on ``P`` where one job covers, else via ``y``."""
    sel = (options.node == node) & (options.use_start_s < options.use_end_s)
    breaks = np.unique(np.concatenate((options.use_start_s[sel], options.use_end_s[sel])))
    if len(breaks) < 2:
        return
    m, g, a, b = covering(options, groups, breaks, "span")
    first = options.group_offsets[g]
    price = float(inst.node_price_per_s[node]) * np.diff(breaks)
    count = np.bincount(m, minlength=len(price))
    single = count[m] == 1
    np.add.at(c_base, first[single] + b[single], price[m[single]])
    has = single & (a > 0)
    np.add.at(c_base, first[has] + a[has] - 1, -price[m[has]])
    shared_intervals = np.flatnonzero(count > 1)
    if len(shared_intervals) == 0:
        return
    y = bld.new_vars(price[shared_intervals], integral=False)
    y_of = np.full(len(price), -1)
    y_of[shared_intervals] = y
    multi = ~single
    rows = bld.new_rows(np.zeros(int(multi.sum())))
    bld.add_range(rows, first[multi], a[multi], b[multi], 1.0)
    bld.add(rows, y_of[m[multi]], -1.0)


SLOWDOWN_CELL_S = 60.0
"""Width of the intervals on which the slowdown charge is taken (coarser only lowers the charge)."""


def slowdown_rows(bld: Builder, inst: OracleInstance, options: Options, node: int, groups: np.ndarray) -> None:
    """The least compute cost that cpu contention adds on ``node`` to the stretchable runs.

    Under processor sharing a run's rate is ``C / max(C, b + R)`` (``C`` the node's
    millicores, ``b`` the background's, ``R`` ours). A stretchable run
    (:attr:`Options.stretchable`) completes, so it pays its USD per second ``w`` for its
    nominal duration plus its stretch, the integral of ``1 - rate`` over its whole run, at least
    over the time the option surely holds the node. There the cpu of the stretchable runs,
    ``R_s``, is at most the node's actual load, and their USD per second is at least ``k x R_s``
    (``k`` the least ``w / cpu`` among them: ``price / C`` on a cpu node), so on an interval of
    length ``L`` their stretch costs at least ``k x L x h(R_s)`` with ``h(R) = R x max(0, 1 - C
    / (b + R))``, increasing and convex in ``R``. A variable ``u >= 0`` per interval (``h /
    C``, charged ``k x C x L``) stands above three tangents of ``h`` (at ``C - b``, where
    contention begins, at the largest load the interval can have, and half-way), so the charge
    is a lower bound of the stretch in every episode whose runs the options describe, and nearly
    ``h`` at every load. The intervals are :data:`SLOWDOWN_CELL_S` wide (split at ticks, where
    ``b`` changes), and a run counts on those it covers whole. Intervals where the load cannot
    exceed ``C - b`` get nothing.
    """
    among = options.stretchable & (options.node == node) & (options.use_start_s < options.use_end_s)
    if not among.any():
        return
    grid = np.arange(0.0, inst.horizon_s, SLOWDOWN_CELL_S)
    breaks = np.unique(np.concatenate((grid, inst.tick_times_s, [inst.horizon_s])))
    breaks = breaks[(breaks >= options.use_start_s[among].min()) & (breaks <= options.use_end_s[among].max())]
    m, g, a, b = covering(options, groups, breaks, "span", among)
    if len(m) == 0:
        return
    capacity = float(inst.node_cpu_m[node])
    cpu = inst.job_cpu_m[options.group_job[g]].astype(np.float64)
    runs = options.job[among & (inst.job_cpu_m[options.job] > 0)]
    usd_per_m = float((inst.rate_per_s[runs, node] / inst.job_cpu_m[runs]).min(initial=np.inf))
    if not np.isfinite(usd_per_m):
        return
    tick = np.maximum(np.searchsorted(inst.tick_times_s, breaks[:-1], side="right") - 1, 0)
    background = capacity / inst.slowest_rate[tick, node] - capacity  # (M,) millicores
    onset = capacity - background  # load at which contention begins
    top = np.minimum(np.bincount(m, weights=cpu, minlength=len(tick)), capacity)
    contended = np.flatnonzero((top > onset) & (background > 0))
    if len(contended) == 0:
        return
    u = bld.new_vars(usd_per_m * capacity * np.diff(breaks)[contended], integral=False)
    u_of = np.full(len(tick), -1)
    u_of[contended] = u
    keep = u_of[m] >= 0
    m, first, a, b, cpu = m[keep], options.group_offsets[g[keep]], a[keep], b[keep], cpu[keep]
    bg, r0, r1 = background[contended], onset[contended], top[contended]
    for at in (r0, (r0 + r1) / 2, r1):
        h = at * (1.0 - capacity / (bg + at))
        slope = 1.0 - capacity * bg / (bg + at) ** 2
        rows = bld.new_rows((slope * at - h) / capacity)  # slope x R / C - u <= (slope x at - h(at)) / C
        row_of = np.full(len(tick), -1)
        row_of[contended] = rows
        bld.add_range(row_of[m], first, a, b, (slope / capacity)[np.searchsorted(contended, m)] * cpu)
        bld.add(rows, u, -1.0)


def step_objective(options: Options) -> np.ndarray:
    """Objective on ``P`` of the option constants minus the cost of leaving their job unserved."""
    w = options.coef_usd - np.where(options.evicted, 0.0, options.unserved_usd[options.job])
    c = w.copy()
    last = options.group_offsets[1:] - 1
    not_last = np.ones(options.n, dtype=bool)
    not_last[last] = False
    c[not_last] -= w[np.flatnonzero(not_last) + 1]
    return c


def structure_rows(bld: Builder, options: Options) -> None:
    """Monotone steps within groups; at most one option per job."""
    offsets = options.group_offsets
    not_last = np.ones(options.n, dtype=bool)
    not_last[offsets[1:] - 1] = False
    o = np.flatnonzero(not_last)
    rows = bld.new_rows(np.zeros(len(o)))
    bld.add(rows, o, 1.0)
    bld.add(rows, o + 1, -1.0)
    serving = ~options.evicted[offsets[:-1]]  # (G,) groups whose option serves the job
    jobs, job_row = np.unique(options.group_job[serving], return_inverse=True)
    rows = bld.new_rows(np.ones(len(jobs)))
    bld.add(rows[job_row], offsets[1:][serving] - 1, 1.0)
    family = options.family[offsets[:-1]]  # (G,)
    in_family = np.flatnonzero(family >= 0)
    if len(in_family) == 0:
        return
    families, family_row = np.unique(family[in_family], return_inverse=True)
    sign = np.where(options.evicted[offsets[in_family]], 1.0, -1.0)  # first runs - reruns
    rows = bld.new_rows(np.zeros(2 * len(families)))  # == 0, as two rows <= 0
    bld.add(rows[family_row], offsets[in_family + 1] - 1, sign)
    bld.add(rows[len(families) + family_row], offsets[in_family + 1] - 1, -sign)
