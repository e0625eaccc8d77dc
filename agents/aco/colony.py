"""The ant colony for one job, and the per-node pheromone carried across decisions.

A re-implementation of the reference's colony (``aco_core``; ``docs/reference.md``,
"Colony") for its production path, one job per decision:

* Each iteration, every ant picks a node by roulette selection with probability
  ``tau^alpha * eta^beta / sum(...)``; its solution cost is the pro-rated price of that node.
* Then ``tau <- clip(tau * (1 - rho), tau_min, tau_max)`` (evaporate) and the iteration-best ant
  deposits ``Q / cost`` on its node (if cost > 0), capped at ``tau_max``.
* The best ant over all iterations is the answer; the search stops early after
  ``stagnation_limit`` iterations in a row without a strictly better best.

Vectorised: with one job, tau is shared by all ants of an iteration, so the (ants x nodes)
probability matrix has identical rows; all ants are sampled at once from one ``cumsum`` and one
``searchsorted`` of ``n_ants`` uniform draws (the same distribution as sampling each row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class ColonyConfig:
    """The colony's constants (defaults are the reference's).

    Attributes:
        n_ants: Ants per iteration.
        n_iterations: Maximum iterations.
        alpha: Exponent of the pheromone tau.
        beta: Exponent of the heuristic eta.
        evaporation: rho, the fraction of tau lost per iteration.
        q: Deposit numerator: the iteration-best node gains ``q / cost``.
        tau_initial: Pheromone of every node when no prior is given.
        tau_min, tau_max: Pheromone bounds.
        stagnation_limit: Stop after this many iterations without a strictly better best.
    """

    n_ants: int = 20
    n_iterations: int = 5
    alpha: float = 1.0
    beta: float = 2.0
    evaporation: float = 0.1
    q: float = 1.0
    tau_initial: float = 1.0
    tau_min: float = 0.01
    tau_max: float = 10.0
    stagnation_limit: int = 3


class ColonyFailedError(RuntimeError):
    """No ant placed the job (every node had zero selection weight)."""


@dataclass(frozen=True, eq=False, slots=True)
class ColonyResult:
    """The outcome of :func:`run_colony` (indices are into its ``eta``/``cost`` arrays).

    Attributes:
        choice: Index of the best node found.
        cost: Its solution cost (pro-rated $/h).
        iterations: Iterations run (<= ``n_iterations``; fewer after stagnation).
        sampled: ``(K,)`` bool, nodes picked by at least one ant.
        tau: ``(K,)`` final pheromone.
    """

    choice: int
    cost: float
    iterations: int
    sampled: np.ndarray  # (K,) bool
    tau: np.ndarray  # (K,)


def run_colony(
    eta: np.ndarray,
    cost: np.ndarray,
    rng: np.random.Generator,
    prior: np.ndarray | None = None,
    config: ColonyConfig = ColonyConfig(),
) -> ColonyResult:
    """Run the colony for one job over K candidate nodes.

    Args:
        eta: ``(K,)`` heuristic desirability (>= 0; 0 = never chosen).
        cost: ``(K,)`` solution cost of each node in pro-rated $/h (lower is better).
        rng: The only source of randomness (``n_ants`` uniform draws per iteration).
        prior: ``(K,)`` initial pheromone (the carried per-node pheromone), clipped to
            ``[tau_min, tau_max]``; ``None`` = ``tau_initial`` everywhere.
        config: The constants.

    Raises:
        ColonyFailedError: No node has a positive weight (e.g. all ``eta`` are 0), or K = 0.
    """
    k = eta.shape[0]
    positive = np.flatnonzero(eta > 0)
    if k == 0 or positive.size == 0:
        raise ColonyFailedError("no node has a positive selection weight")
    # A uniform draw can round up to the total; clamping to the last positive-weight node keeps
    # zero-weight nodes unselectable.
    last_positive = int(positive[-1])
    if prior is None:
        tau = np.full(k, config.tau_initial)
    else:
        tau = np.clip(np.asarray(prior, dtype=float), config.tau_min, config.tau_max)
    eta_beta = eta * eta if config.beta == 2.0 else eta**config.beta
    keep = 1.0 - config.evaporation
    sampled = np.zeros(k, dtype=bool)
    best_choice, best_cost, stagnant, iterations = -1, np.inf, 0, 0
    for _ in range(config.n_iterations):
        iterations += 1
        weights = (tau if config.alpha == 1.0 else tau**config.alpha) * eta_beta
        cumulative = np.cumsum(weights)
        picks = np.searchsorted(
            cumulative, rng.random(config.n_ants) * cumulative[-1], side="right"
        )
        np.minimum(picks, last_positive, out=picks)
        sampled[picks] = True
        ant_costs = cost[picks]
        ant = int(np.argmin(ant_costs))  # the first ant of minimal cost
        it_choice, it_cost = int(picks[ant]), float(ant_costs[ant])
        # Evaporate first, then deposit on the iteration-best ant's node.
        tau *= keep
        np.clip(tau, config.tau_min, config.tau_max, out=tau)
        if it_cost > 0:
            tau[it_choice] = min(tau[it_choice] + config.q / it_cost, config.tau_max)
        if it_cost < best_cost:
            best_choice, best_cost, stagnant = it_choice, it_cost, 0
        else:
            stagnant += 1
            if stagnant >= config.stagnation_limit:
                break
    return ColonyResult(best_choice, best_cost, iterations, sampled, tau)


class NodePheromone:
    """The per-node pheromone carried across decisions (the reference's ``_node_pheromone``).

    After every placement, every node decays by ``decay`` and the chosen node gains
    ``deposit`` (a flat amount, not cost-based), within ``[tau_min, tau_max]``.

    Args:
        n_nodes: N.
        initial: ``(N,)`` starting values (e.g. a saved vector); ``None`` = all 1.0.
        decay: Fraction lost per placement (0.1).
        deposit: Added to the chosen node (1.0).
        tau_min, tau_max: Bounds (0.01, 10).
    """

    def __init__(
        self,
        n_nodes: int,
        initial: np.ndarray | None = None,
        decay: float = 0.1,
        deposit: float = 1.0,
        tau_min: float = 0.01,
        tau_max: float = 10.0,
    ) -> None:
        if initial is not None and np.shape(initial) != (n_nodes,):
            raise ValueError(
                f"initial pheromone must have shape ({n_nodes},), got {np.shape(initial)}"
            )
        self._initial = (
            None if initial is None else np.clip(np.array(initial, dtype=float), tau_min, tau_max)
        )
        self.n_nodes = n_nodes
        self.decay, self.deposit, self.tau_min, self.tau_max = decay, deposit, tau_min, tau_max
        self.values = np.ones(n_nodes)  # (N,), read by the scheduler
        self.reset()

    def reset(self) -> None:
        """Back to the initial values."""
        self.values = np.ones(self.n_nodes) if self._initial is None else self._initial.copy()

    def update(self, chosen: int) -> None:
        """Record a placement on node ``chosen``."""
        values = self.values
        values *= 1.0 - self.decay
        np.clip(values, self.tau_min, self.tau_max, out=values)
        values[chosen] = min(values[chosen] + self.deposit, self.tau_max)
