"""The ACO reference scheduler: intent router, cost engine, colony, and the ``aco*`` agents.

Pure functions (no env needed, for benchmarks): :func:`route`, the cost engine's factor
functions, :func:`run_colony` and :func:`schedule` (one full decision). Importing this package
registers the agents ``aco``, ``aco-reference``, ``aco-lstm``, ``aco-ema``,
``aco-persistence`` and ``aco-cost``.
"""

from agents.aco.agent import AcoAgent
from agents.aco.colony import (
    ColonyConfig,
    ColonyFailedError,
    ColonyResult,
    NodePheromone,
    run_colony,
)
from agents.aco.router import COST_ONLY, STRATEGIES, Strategy, route
from agents.aco.scheduler import DECISION_PATHS, Decision, FleetArrays, schedule

__all__ = [
    "COST_ONLY",
    "DECISION_PATHS",
    "STRATEGIES",
    "AcoAgent",
    "ColonyConfig",
    "ColonyFailedError",
    "ColonyResult",
    "Decision",
    "FleetArrays",
    "NodePheromone",
    "Strategy",
    "route",
    "run_colony",
    "schedule",
]
