"""One ACO placement decision as a pure function (the reference's ``aco_schedule``).

:func:`schedule` needs no env: the benchmarks call it directly, and the ``aco`` agents call it
with the env's :class:`aco_env.ClusterView`. Steps, as in the reference's production path:

1. Route the job to a :class:`~agents.aco.router.Strategy` (unless one is given).
2. Candidates: nodes the job fits on now (``feasible``) whose arch and instance type the
   strategy allows. None -> no placement (the agent defers).
3. eta per candidate from the cost engine; 0 on nodes running a workload type the strategy
   avoids (co-location rule).
4. All eta 0 -> first-fit on the candidates.
5. Latency-critical job or ``strategy.use_fast_path`` -> the fast path: ``argmax eta`` (ties to
   the first candidate), deterministic, no pheromone.
6. Otherwise the colony on the candidates with eta > 0 (zero-eta nodes can never be drawn,
   so dropping them changes no decision), its prior the carried pheromone when given;
   colony failure -> first-fit on the candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from agents.aco.colony import ColonyConfig, ColonyFailedError, ColonyResult, run_colony
from agents.aco.cost_engine import (
    NON_LC_HEADROOM_FLOOR,
    NON_LC_SPOT_DISCOUNT,
    cost_efficiency,
    prediction_factor,
    reliability,
    sla_headroom,
)
from agents.aco.router import Strategy, route
from digital_twin import WORKLOAD_TYPES, JobSpec, NodeSpec
from digital_twin.fleet import ARCHES

FAST_PATH = "fast-path"
COLONY = "colony"
EMPTY_ETA_FALLBACK = "first-fit-fallback"
COLONY_FAILED_FALLBACK = "colony-failed-fallback"
NO_CANDIDATE = "no-candidate"
DECISION_PATHS = (FAST_PATH, COLONY, EMPTY_ETA_FALLBACK, COLONY_FAILED_FALLBACK, NO_CANDIDATE)
"""How a :class:`Decision` was reached."""


@dataclass(frozen=True, eq=False)
class FleetArrays:
    """Per-node constants of a fleet as arrays, computed once (decisions only index them).

    Attributes:
        cpu_cores: ``(N,)`` cores.
        price_per_hour_usd: ``(N,)`` $/h of the whole node.
        interruption_prob: ``(N,)`` spot interruption probability per hour.
        is_spot: ``(N,)`` bool.
        arch: ``(N,)`` int, index into ``digital_twin.fleet.ARCHES``.
        cost_efficiency: ``(N,)`` the cost engine's c factor (depends on the price only).
        reliability_lc_free: ``(N,)`` reliability for non-LC jobs (no gate, so precomputable).
    """

    cpu_cores: np.ndarray
    price_per_hour_usd: np.ndarray
    interruption_prob: np.ndarray
    is_spot: np.ndarray
    arch: np.ndarray
    cost_efficiency: np.ndarray
    reliability_lc_free: np.ndarray
    _allowed: dict[tuple[object, object], np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def from_fleet(cls, fleet: Sequence[NodeSpec]) -> FleetArrays:
        """Arrays of ``fleet`` in fleet (action) order."""
        price = np.array([n.price_per_hour_usd for n in fleet], dtype=float)
        prob = np.array([n.interruption_prob_per_hour for n in fleet], dtype=float)
        spot = np.array([n.is_spot for n in fleet], dtype=bool)
        return cls(
            cpu_cores=np.array([n.cpu_cores for n in fleet], dtype=float),
            price_per_hour_usd=price,
            interruption_prob=prob,
            is_spot=spot,
            arch=np.array([ARCHES.index(n.arch) for n in fleet], dtype=np.int64),
            cost_efficiency=cost_efficiency(price),
            reliability_lc_free=np.where(
                spot, np.maximum(0.0, 1.0 - NON_LC_SPOT_DISCOUNT * prob), 1.0
            ),
        )

    @property
    def n_nodes(self) -> int:
        """N."""
        return int(self.cpu_cores.shape[0])

    def allowed(self, strategy: Strategy) -> np.ndarray:
        """``(N,)`` bool: nodes whose arch and instance type the strategy allows (memoised)."""
        key = (strategy.required_arch, strategy.required_instance)
        mask = self._allowed.get(key)
        if mask is None:
            mask = np.ones(self.n_nodes, dtype=bool)
            if strategy.required_arch is not None:
                mask &= np.isin(self.arch, [ARCHES.index(a) for a in strategy.required_arch])
            if strategy.required_instance is not None:
                allowed_spot = "spot" in strategy.required_instance
                allowed_od = "on-demand" in strategy.required_instance
                mask &= np.where(self.is_spot, allowed_spot, allowed_od)
            mask.setflags(write=False)
            self._allowed[key] = mask
        return mask


@dataclass(frozen=True, eq=False)
class Decision:
    """The outcome of :func:`schedule`.

    Attributes:
        node: Fleet index of the chosen node, or ``None`` (no candidate: defer).
        path: One of :data:`DECISION_PATHS`.
        strategy: The strategy used (after the deadline override).
        candidates: ``(K,)`` fleet indices of the candidate nodes, ascending.
        eta: ``(K,)`` eta of each candidate (after the co-location rule).
        colony: The colony's result (indices into the eta > 0 candidates), on the colony path.
    """

    node: int | None
    path: str
    strategy: Strategy
    candidates: np.ndarray
    eta: np.ndarray
    colony: ColonyResult | None = None


_TYPE_COLUMN = {name: i for i, name in enumerate(WORKLOAD_TYPES)}


def schedule(
    job: JobSpec,
    fleet: FleetArrays,
    feasible: np.ndarray,
    utilization_pct: np.ndarray,
    running_by_type: np.ndarray,
    rng: np.random.Generator,
    *,
    now_s: float = 0.0,
    pheromone: np.ndarray | None = None,
    spike_probability: np.ndarray | None = None,
    confidence: np.ndarray | None = None,
    strategy: Strategy | None = None,
    config: ColonyConfig = ColonyConfig(),  # noqa: B008  (frozen, so a shared default is safe)
    extra_factor: np.ndarray | None = None,
) -> Decision:
    """Choose a node for ``job`` (see the module docstring for the steps).

    Args:
        job: The job to place.
        fleet: The fleet's arrays (:meth:`FleetArrays.from_fleet`).
        feasible: ``(N,)`` bool, the job fits on the node now (the env's action mask without
            its defer entry).
        utilization_pct: ``(N,)`` cpu utilisation in % (background + allocated).
        running_by_type: ``(N, 3)`` running jobs per workload type (``WORKLOAD_TYPES`` order).
        rng: The colony's randomness (untouched on the other paths).
        now_s: Simulated time in seconds, for the deadline override.
        pheromone: ``(N,)`` carried per-node pheromone fed to the colony as its prior;
            ``None`` = no prior (the reference code).
        spike_probability: ``(N,)`` predicted spike probability in [0, 1] (``None`` = no
            prediction: prediction factor 1).
        confidence: ``(N,)`` prediction confidence in [0, 1] (with ``spike_probability``).
        strategy: Override the router's strategy.
        config: The colony's constants.
        extra_factor: ``(N,)`` a further factor of eta per node, in (0, 1] (e.g. the carbon
            efficiency, :func:`agents.aco.cost_engine.carbon_efficiency`); ``None`` = 1.
    """
    if strategy is None:
        strategy = route(job, now_s)
    candidates = np.flatnonzero(feasible & fleet.allowed(strategy))
    if candidates.size == 0:
        return Decision(None, NO_CANDIDATE, strategy, candidates, np.zeros(0))
    lc = job.is_latency_critical
    eta = _eta(job, fleet, candidates, utilization_pct, spike_probability, confidence, strategy, lc)
    if extra_factor is not None:
        eta = eta * extra_factor[candidates]
    if strategy.avoid_workload_types:
        columns = [_TYPE_COLUMN[t] for t in strategy.avoid_workload_types]
        eta[running_by_type[candidates][:, columns].any(axis=1)] = 0.0
    if not eta.any():
        return Decision(int(candidates[0]), EMPTY_ETA_FALLBACK, strategy, candidates, eta)
    if lc or strategy.use_fast_path:
        return Decision(int(candidates[np.argmax(eta)]), FAST_PATH, strategy, candidates, eta)
    positive = eta > 0
    nodes = candidates[positive]
    # Placement quality, the ant's solution cost: pro-rated $/h = price x cpu share of the node.
    cost = fleet.price_per_hour_usd[nodes] * (job.cpu_cores / fleet.cpu_cores[nodes])
    prior = None if pheromone is None else pheromone[nodes]
    try:
        result = run_colony(eta[positive], cost, rng, prior, config)
    except ColonyFailedError:
        return Decision(int(candidates[0]), COLONY_FAILED_FALLBACK, strategy, candidates, eta)
    return Decision(int(nodes[result.choice]), COLONY, strategy, candidates, eta, result)


def _eta(
    job: JobSpec,
    fleet: FleetArrays,
    nodes: np.ndarray,
    utilization_pct: np.ndarray,
    spike_probability: np.ndarray | None,
    confidence: np.ndarray | None,
    strategy: Strategy,
    lc: bool,
) -> np.ndarray:
    """``(K,)`` eta of the cost engine on ``nodes`` (a fresh array; the caller may modify it)."""
    if lc:
        r = reliability(
            fleet.is_spot[nodes], fleet.interruption_prob[nodes], True, strategy.spot_threshold
        )
        s = sla_headroom(utilization_pct[nodes], True, strategy.sla_threshold)
    else:  # same as the cost engine's functions, with the gate-free reliability precomputed
        r = fleet.reliability_lc_free[nodes]
        s = np.maximum((100.0 - utilization_pct[nodes]) / 100.0, NON_LC_HEADROOM_FLOOR)
    eta = r * fleet.cost_efficiency[nodes] * s
    if spike_probability is not None and confidence is not None:
        eta *= prediction_factor(spike_probability[nodes], confidence[nodes], strategy.spike_weight)
    return eta
