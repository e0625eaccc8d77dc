"""A Lagrangian certificate: capacity prices that bound every policy's objective from below.

Price node ``i``'s capacity (its cores, or its GPUs on a GPU node) at ``pi_i(t) >= 0`` USD per
unit-second, a step function of time. For any policy, map each job ``j`` to its *fate*: its
last run, on node ``i`` from ``s`` (it completed), or *dropped* (rejected, failed, or still
running or queued at the horizon). Then, with ``u_j`` the job's units of the priced resource,

    objective >= sum_j cost_j(fate) >= sum_j [cost_j(fate) + u_j x int_fate pi] - sum_i cap_i x int pi
              >= sum_j min_o [cost_j(o) + u_j x int_o pi] - sum_i cap_i x int pi  =: L(pi)

The second step holds because at every instant the units of the last runs covering it are at
most the node's capacity (the twin never allocates past it; a nominal window ``[s, s + d)`` lies
inside the run, which contention only lengthens), and ``pi >= 0``. ``cost_j`` charges only what
the fate surely costs (other terms are ``>= 0``):

* a completion on ``i`` from ``s``: ``rate(j, i) x d + qos(j, i) + omega_j x (s - a) + U x
  loss((s - a + d) / L)`` (``U`` the utility weight, latency-critical jobs only), over
  ``s in [a, s_max]``, ``s_max = min(a + TTL, H - d)`` for a job that is never requeued
  (non-preemptible, or without a spot candidate: it waited ``s - a`` in one queue spell, at
  ``omega = w``) and ``H - d`` for a preemptible job with a spot candidate (before its last
  start it was queued or ran earlier runs, so ``omega = min(w, least rate)``). A run on a spot
  node cannot cover one of its down windows (the episode's interruptions are fixed in the
  spec: ``fixed_interruptions_s``), so such options are excluded;
* still running at the horizon, on ``i`` from ``s`` (same range of ``s``, the window ``[s, H)``):
  ``rate(j, i) x (H - s) + qos(j, i) + omega_j x (s - a) + U x loss((H - a) / L)``;
* rejected, or queued at the horizon (counted as unserved): rejection ``+ U``; failed (a
  non-preemptible job with a spot candidate): eviction ``+ U``.

``L(pi)`` is a valid bound for *any* prices; it equals a schedule's cost when each job's fate in
that schedule minimises its priced cost and every priced instant is full (complementary
slackness). :func:`lagrangian_bound` computes it exactly: the priced cost is piecewise linear in
``s`` (kinks where ``s`` or ``s + d`` crosses a price step, and at the utility curve's two kinks),
so its minimum is at one of those points or an end of the range. Energy, carbon, workflow and
preference weights are refused (:mod:`digital_twin.planted.certificate` handles energy for the
cut-capacity family).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.measures import utility_loss
from digital_twin.spec import TwinSpec

CPU_UNITS, GPU_UNITS = "cpu", "gpu"


@dataclass(frozen=True, eq=False)
class NodePrice:
    """One node's capacity price: a step function over ``[0, H]``, per unit (core or GPU) and second.

    Attributes:
        resource: :data:`CPU_UNITS` (cores) or :data:`GPU_UNITS` (GPUs) are priced.
        breaks_s: ``(P + 1,)`` increasing, from 0 to the horizon, seconds.
        usd_per_unit_s: ``(P,)`` the price on each piece, >= 0, finite.
    """

    resource: str
    breaks_s: np.ndarray
    usd_per_unit_s: np.ndarray

    def __post_init__(self) -> None:
        breaks, values = np.asarray(self.breaks_s, float), np.asarray(self.usd_per_unit_s, float)
        if breaks.ndim != 1 or len(breaks) != len(values) + 1 or np.any(np.diff(breaks) <= 0):
            raise SpecError("a node price needs increasing breaks, one more than its values")
        if not np.all(np.isfinite(values)) or np.any(values < 0):
            raise SpecError("a node price must be finite and >= 0")
        if self.resource not in (CPU_UNITS, GPU_UNITS):
            raise SpecError(f"a node price's resource must be {CPU_UNITS!r} or {GPU_UNITS!r}, got {self.resource!r}")
        object.__setattr__(self, "breaks_s", breaks)
        object.__setattr__(self, "usd_per_unit_s", values)
        object.__setattr__(self, "_cumulative", np.concatenate(([0.0], np.cumsum(values * np.diff(breaks)))))

    def integral(self, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
        """``int_{t0}^{t1} pi``, elementwise (times clipped to the breaks' range)."""
        return self._at(t1) - self._at(t0)

    def _at(self, t: np.ndarray) -> np.ndarray:
        cumulative: np.ndarray = self._cumulative  # type: ignore[attr-defined]
        return np.interp(t, self.breaks_s, cumulative)

    @property
    def total(self) -> float:
        """``int_0^H pi``, USD per unit."""
        return float(self._cumulative[-1])  # type: ignore[attr-defined]


@dataclass(frozen=True)
class LagrangianCertificate:
    """Per job its least priced cost, the option attaining it, and the bound ``L(pi)``.

    Attributes:
        priced_usd: ``(M,)`` per job, ``min_o cost_j(o) + u_j x int_o pi``.
        best_node: ``(M,)`` the node of a least option, or -1 where dropping is least.
        best_start_s: ``(M,)`` that option's start (NaN for a drop).
        capacity_usd: ``sum_i cap_i x int pi``.
        bound_usd: ``L(pi) = sum(priced_usd) - capacity_usd``.
    """

    priced_usd: tuple[float, ...]
    best_node: tuple[int, ...]
    best_start_s: tuple[float, ...]
    capacity_usd: float
    bound_usd: float


def lagrangian_bound(spec: TwinSpec, prices: dict[int, NodePrice]) -> LagrangianCertificate:
    """``L(pi)`` of ``spec`` under ``prices`` (node index -> its price; absent nodes are free).

    Raises:
        SpecError: The cost model is not prorated; the spec has workflows, or an energy, carbon
            or preference weight (this certificate does not price them; named).
    """
    settings = spec.settings
    if settings.active_nodes:
        raise SpecError("a Lagrangian certificate needs cost_model: prorated (active-nodes is not a sum over jobs)")
    weights = settings.weights
    for name in ("energy_usd_per_kwh", "carbon_usd_per_kg", "preference_violation_usd"):
        if getattr(weights, name) > 0:
            raise SpecError(f"a Lagrangian planted certificate does not price {name} (set it to 0)")
    c = TwinConstants.of(spec)
    if c.dag is not None:
        raise SpecError("a Lagrangian planted certificate covers independent jobs: the spec has workflows")
    nodes = _NodeTable.of(spec, c, prices)
    priced, best_node, best_start = [], [], []
    for j in range(c.n_jobs):
        usd, node, start = _least_priced(c, j, nodes)
        priced.append(usd)
        best_node.append(node)
        best_start.append(start)
    capacity_usd = sum(nodes.capacity[i] * price.total for i, price in prices.items())
    return LagrangianCertificate(
        tuple(priced), tuple(best_node), tuple(best_start), float(capacity_usd), float(sum(priced) - capacity_usd)
    )


@dataclass(frozen=True)
class _NodeTable:
    """What the options read per node: prices, down windows, capacity in the priced units."""

    prices: dict[int, NodePrice]
    down: dict[int, np.ndarray]  # node -> (k, 2) down windows [start, end)
    capacity: np.ndarray  # (N,) priced units
    price_per_s: np.ndarray
    cpu_m: np.ndarray
    gpus: np.ndarray
    is_spot: np.ndarray
    kind: list[int]  # (N,) nodes with one price object and the same down windows share a kind

    @classmethod
    def of(cls, spec: TwinSpec, c: TwinConstants, prices: dict[int, NodePrice]) -> _NodeTable:
        gpus = np.asarray(c.gpus, dtype=np.float64)
        capacity = np.array(
            [
                gpus[i] if i in prices and prices[i].resource == GPU_UNITS else c.cpu_m[i] / 1000.0
                for i in range(c.n_nodes)
            ]
        )
        down = down_windows(spec)
        kinds: dict[tuple[int, bytes], int] = {}
        kind = [
            kinds.setdefault((id(prices.get(i)), down[i].tobytes() if i in down else b""), len(kinds))
            for i in range(c.n_nodes)
        ]
        return cls(
            prices,
            down,
            capacity,
            np.asarray(c.price_per_s, dtype=np.float64),
            np.asarray(c.cpu_m, dtype=np.float64),
            gpus,
            np.asarray(c.is_spot, dtype=bool),
            kind,
        )


def down_windows(spec: TwinSpec) -> dict[int, np.ndarray]:
    """Per spot node with fixed interruptions, its down windows ``(k, 2)``: ``[t, t + recovery)``.

    The twin's rule: an interruption while the node is down has no effect. Empty without fixed
    interruptions.
    """
    fixed = spec.fixed_interruptions_s
    if fixed is None or not spec.settings.spot_interruptions:
        return {}
    recovery = float(spec.settings.spot_recovery_s)
    out = {}
    for i, times in enumerate(fixed):
        windows, up_from = [], -np.inf
        for t in sorted(times):
            if t >= up_from:
                windows.append((t, t + recovery))
                up_from = t + recovery
        if windows:
            out[i] = np.array(windows, dtype=np.float64)
    return out


def _least_priced(c: TwinConstants, j: int, nodes: _NodeTable) -> tuple[float, int, float]:
    """Job ``j``'s least priced cost over its options and the drop, with the attaining node and start."""
    w = c.settings.weights
    arrival, duration, horizon = c.arrival_s[j], c.duration_s[j], c.horizon_s
    candidates = np.asarray(c.candidates[j], dtype=np.int64)
    if not len(candidates):
        return w.rejection_usd + (w.utility_loss_usd if c.is_lc[j] else 0.0), -1, float("nan")
    if c.req_gpus[j] > 0:
        rates = nodes.price_per_s[candidates] * c.req_gpus[j] / nodes.gpus[candidates]
    else:
        rates = nodes.price_per_s[candidates] * c.req_cpu_m[j] / nodes.cpu_m[candidates]
    wait_per_s = w.wait_usd_per_job_hour / 3600.0
    spot_candidate = bool(nodes.is_spot[candidates].any())
    requeued = c.preemptible[j] and spot_candidate
    omega = min(wait_per_s, float(rates.min())) if requeued else wait_per_s
    lc_weight = w.utility_loss_usd if c.is_lc[j] else 0.0
    job = _Job(arrival, duration, horizon, omega, lc_weight, c.slo_s[j])
    best, best_node, best_start = w.rejection_usd + lc_weight, -1, float("nan")  # rejected, or queued at the horizon
    if not c.preemptible[j] and spot_candidate:
        best = min(best, w.eviction_usd + lc_weight)
    ttl = c.queue_ttl_s
    last_start = horizon if (requeued or ttl is None) else min(arrival + ttl, horizon)
    qos = np.where(c.is_lc[j] & nodes.is_spot[candidates], w.qos_violation_usd, 0.0)
    # no option on a node costs less: a completion pays rate x d; a run still going at the horizon
    # from s pays rate x (H - s) + omega x (s - a) >= min(rate, omega) x (H - a)
    floor = np.minimum(rates * duration, np.minimum(rates, omega) * (horizon - arrival)) + qos
    seen: set[tuple[int, float, float]] = set()
    for k in np.argsort(floor, kind="stable"):
        if floor[k] >= best:
            break
        i = int(candidates[k])
        same = (nodes.kind[i], float(rates[k]), float(qos[k]))  # nodes alike in price, downs, rate, QoS: one option set
        if same in seen:
            continue
        seen.add(same)
        priced = i in nodes.prices and nodes.prices[i].resource == GPU_UNITS
        units = c.req_gpus[j] if priced else c.req_cpu_m[j] / 1000.0
        for end_at_horizon in (False, True):
            s_max = last_start if end_at_horizon else min(last_start, horizon - duration)
            usd, start = _least_on_node(nodes, i, units, job, s_max, float(rates[k]), float(qos[k]), end_at_horizon)
            if usd < best:
                best, best_node, best_start = usd, i, start
    return float(best), best_node, best_start


@dataclass(frozen=True, slots=True)
class _Job:
    """What an option's cost reads of a job: arrival, nominal duration, horizon, waiting rate, utility weight, SLO."""

    arrival: float
    duration: float
    horizon: float
    omega: float
    lc_weight: float
    slo: float


def _least_on_node(
    nodes: _NodeTable,
    i: int,
    units: float,
    job: _Job,
    s_max: float,
    rate: float,
    qos: float,
    end_at_horizon: bool,
) -> tuple[float, float]:
    """The least priced cost of a last run on node ``i`` starting in ``[arrival, s_max]``, and its start.

    ``end_at_horizon``: the run is still going at the horizon (window ``[s, H)``, compute ``rate x
    (H - s)``, latency ``H - a``); else it completes (window ``[s, s + d)``, compute ``rate x d``,
    latency ``s - a + d``). ``(inf, nan)`` when no start in the range avoids the node's down windows.
    """
    a, d, horizon = job.arrival, job.duration, job.horizon
    price, down = nodes.prices.get(i), nodes.down.get(i)
    points = [np.array([a, s_max])]
    for edges in ([] if price is None else [price.breaks_s]) + ([] if down is None else [down.ravel()]):
        points += [edges] if end_at_horizon else [edges, edges - d]
    if job.lc_weight and not end_at_horizon:
        points.append(np.array([a - d + job.slo, a - d + 2.0 * job.slo]))
    starts = np.unique(np.concatenate(points))
    starts = starts[(starts >= a) & (starts <= s_max)]
    if end_at_horizon:  # s = H is the infimum of starts just before it (an empty window)
        ends = np.full(len(starts), horizon)
        usd = rate * (horizon - starts) + job.lc_weight * _loss(horizon - a, job.slo)
    else:
        ends = starts + d
        usd = rate * d + job.lc_weight * np.array([_loss(s - a + d, job.slo) for s in starts])
    usd = usd + qos + job.omega * (starts - a)
    if price is not None and units:
        usd = usd + units * price.integral(starts, ends)
    if down is not None:  # a last run may not cover a down window
        overlap = (starts[:, None] < down[None, :, 1]) & (ends[:, None] > down[None, :, 0])
        usd = np.where(overlap.any(axis=1), np.inf, usd)
    if not len(usd):
        return float("inf"), float("nan")
    k = int(np.argmin(usd))
    return float(usd[k]), float(starts[k])


def _loss(latency_s: float, slo_s: float) -> float:
    return utility_loss(latency_s, slo_s) if slo_s > 0 and np.isfinite(slo_s) else 0.0
