"""The oracle: the offline optimum of the episode objective with full hindsight, as MILPs.

Two numbers per episode:

* an achievable **plan** (:mod:`agents.oracle.plans`), the cheapest replay of: the arrival plan
  (:mod:`agents.oracle.plans.arrival`, CP-SAT: each job at its arrival on a node where it is
  never slowed); the plan program's (HiGHS, ``scipy.optimize.milp``: each job starts at its
  arrival or at a later event time that occurs in every episode, on one of its nodes, or is
  rejected; a preemptible job may first be run to be evicted by a known spot interruption,
  which re-queues it with a fresh TTL, :mod:`agents.oracle.plans.rerun`). The
  :class:`OracleAgent` replays it through the env, and the replay's objective is the plan's;
* a **lower bound** valid for every policy: the larger of the capacity-free bound
  (:mod:`agents.oracle.bounds.capacity_free`, no solve) and a relaxation over every possible
  start time (:mod:`agents.oracle.bounds.exact`, whose docstring proves it), solved only when
  the first is below the best plan.

When the two meet (``OracleResult.proven_optimal``) the plan is the optimum of the episode, and
the search stops there (:mod:`agents.oracle.plans.candidates` lists the plans in order).

Before building anything, :func:`solve_oracle` estimates the programs' peak memory; an episode
above its memory budget (4 GB unless the ``memory_budget_gb`` option or the
``ACO_ENV_ORACLE_MEMORY_GB`` environment variable raises it) is decomposed (a bound and a plan at
scale, in ``O(jobs x nodes)`` memory) or, if asked, refused with :class:`OracleTooLargeError`.

Modules and sub-packages, each importing only those listed after it (an import-linter contract
in ``pyproject.toml``; ``plans`` and ``bounds`` never import each other):
``agent`` > ``solve`` > ``sizing`` > ``plans`` | ``bounds`` > ``milp`` > ``model``; any of them may
import :mod:`agents.charges` (what each objective term charges).

* :mod:`agents.oracle.agent`: the registered ``"oracle"`` agent (:class:`OracleAgent`), which
  solves the episode at reset and replays the plan.
* :mod:`agents.oracle.solve`: :func:`solve_oracle` and :class:`OracleResult`: the size check, the
  plan candidates, the bound, the gap and status.
* ``model/``, the episode as the programs read it:

  * :mod:`~agents.oracle.model.instance`: :class:`~agents.oracle.model.instance.OracleInstance`,
    the episode as arrays (read once from the hindsight view);
  * :mod:`~agents.oracle.model.fit`: which nodes each job fits, by node shape;
  * :mod:`~agents.oracle.model.intervals`: sorted disjoint time intervals;
  * :mod:`~agents.oracle.model.stretch`: how long a run can last under cpu contention;
  * :mod:`~agents.oracle.model.energy`: the least energy and emissions a run adds to its node;
  * :mod:`~agents.oracle.model.dag`: the workflows (precedence, weights, deadlines, earliest releases);
  * :mod:`~agents.oracle.model.terms`: what each penalty term counts per option and per unserved
    job (the only oracle module a new term touches; USD through :mod:`agents.charges`).
* ``milp/``, the mixed-integer programs both the plan and the exact bound solve:

  * :mod:`~agents.oracle.milp.options`: placement options (a job on a node over a start set);
  * :mod:`~agents.oracle.milp.builder`: the sparse program under construction;
  * :mod:`~agents.oracle.milp.rows`: its rows (structure, capacity, SLA, active nodes, slowdown);
  * :mod:`~agents.oracle.milp.workflow_rows`: precedence and the workflow terms;
  * :mod:`~agents.oracle.milp.program`: building and solving it with HiGHS;
  * :mod:`~agents.oracle.milp.limits`: HiGHS's work limit and optional wall-time cap.
* ``plans/``, the achievable plans:

  * :mod:`~agents.oracle.plans.options`: the plan program's options (starts at guaranteed
    decision points);
  * :mod:`~agents.oracle.plans.rerun`: evict-and-rerun families;
  * :mod:`~agents.oracle.plans.evaluate`: a plan's exact objective, the greedy fallback, earlier
    equal starts;
  * :mod:`~agents.oracle.plans.replay`: the plan played through the twin (and the agent's rule);
  * :mod:`~agents.oracle.plans.hindsight_greedy`: the plan at scale.
* ``bounds/``, lower bounds valid for every policy:

  * :mod:`~agents.oracle.bounds.decision_times`: start windows, the time grid and the
    decision-time superset;
  * :mod:`~agents.oracle.bounds.exact`: the relaxation's options (its docstring proves the bound);
  * :mod:`~agents.oracle.bounds.fates`: each job's fates, shared by the two bounds at scale;
  * :mod:`~agents.oracle.bounds.capacity_free`: the capacity-free bound and the bound at scale;
  * :mod:`~agents.oracle.bounds.lagrangian_problem` and :mod:`~agents.oracle.bounds.lagrangian`:
    node capacity priced back in with Lagrange multipliers, and the ascent.
* ``sizing/``, the memory check before anything is built:

  * :mod:`~agents.oracle.sizing.columns`: what the estimate reads from the episode;
  * :mod:`~agents.oracle.sizing.counts`: upper bounds on each program's size;
  * :mod:`~agents.oracle.sizing.size`: :func:`estimate_oracle_memory` and its peak-memory model;
  * :mod:`~agents.oracle.sizing.budget`: the memory budget and :class:`OracleTooLargeError`.

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
from agents.oracle.sizing.budget import OracleTooLargeError

register_agent("oracle", make_oracle, hindsight=True)

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
        from agents.oracle.sizing import size

        return getattr(size, name)
    raise AttributeError(f"module 'agents.oracle' has no attribute {name!r}")
