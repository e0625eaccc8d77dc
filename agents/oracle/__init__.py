"""The oracle: the offline optimum of the episode objective with full hindsight, as MILPs.

Two numbers per episode, from two mixed-integer programs solved by HiGHS
(``scipy.optimize.milp``):

* an achievable **plan** (:mod:`agents.oracle.plan`): each job starts at its arrival or at a
  later event time that occurs in every episode (ticks, arrivals, TTL expiries, interruptions,
  recoveries), on one of its nodes, or is rejected; a preemptible job may first be run to be
  evicted by a known spot interruption, which re-queues it with a fresh TTL
  (:mod:`agents.oracle.rerun`). The :class:`OracleAgent` replays it through the env, and the
  replay's objective is the plan's;
* a **lower bound** valid for every policy (:mod:`agents.oracle.bound`, whose docstring proves
  it): a relaxation over every possible start time.

When the two meet (``OracleResult.proven_optimal``) the plan is the optimum of the episode.

Before building anything, :func:`solve_oracle` estimates the programs' peak memory and refuses
an episode above its memory budget (4 GB unless the ``memory_budget_gb`` option or the
``ACO_ENV_ORACLE_MEMORY_GB`` environment variable raises it) with :class:`OracleTooLargeError`.

Modules: ``instance`` (the episode as arrays), ``fit`` (which nodes each job fits), ``terms``
(how each objective term is charged: the only oracle module a new term touches), ``options``
(placement options), ``plan`` / ``bound`` (the two option sets), ``rerun`` (the plan's
evict-and-rerun options), ``program``
(the sparse MILP), ``counts`` / ``size`` (the programs' size and memory, estimated before they
are built), ``budget`` (the memory budget and :class:`OracleTooLargeError`), ``solve``
(:func:`solve_oracle`), ``agent`` (the registered ``"oracle"`` agent).

Example:
    >>> import numpy as np
    >>> from agents.oracle import solve_oracle
    >>> from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, Telemetry, TwinSpec, default_fleet
    >>> jobs = (JobSpec("j0", 0.0, 600.0, "batch", 4, 8),)
    >>> telemetry = Telemetry.constant(5, 30, 40, 3600, 300)
    >>> spec = TwinSpec(default_fleet(), jobs, telemetry, EpisodeSettings(3600, spot_interruptions=False))
    >>> twin = DigitalTwin(spec)
    >>> twin.reset(np.random.default_rng(0))
    >>> result = solve_oracle(twin.hindsight())
    >>> result.plan["j0"], round(result.plan_objective_usd, 6), result.proven_optimal  # arm spot: cheapest
    ((1, 0.0), 0.005, True)
"""

from typing import Any

from agents.base import register_agent
from agents.oracle.agent import OracleAgent, make_oracle
from agents.oracle.budget import OracleTooLargeError

register_agent("oracle", make_oracle)

__all__ = [
    "OracleAgent",
    "OracleResult",
    "OracleSizeEstimate",
    "OracleTooLargeError",
    "estimate_oracle_memory",
    "solve_oracle",
]


def __getattr__(name: str) -> Any:
    """``solve_oracle`` (scipy.optimize) and the size estimate load on first use (PEP 562)."""
    if name in ("OracleResult", "solve_oracle"):
        from agents.oracle import solve

        return getattr(solve, name)
    if name in ("OracleSizeEstimate", "estimate_oracle_memory"):
        from agents.oracle import size

        return getattr(size, name)
    raise AttributeError(f"module 'agents.oracle' has no attribute {name!r}")
