"""Oracle solve time and estimated memory on default episodes (plan + bound, HiGHS through SciPy)."""

from __future__ import annotations

import time
from typing import Any

from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of
from agents.oracle import solve_oracle
from agents.oracle.milp.limits import SolveLimits


def bench_oracle(seeds: int = 3, limits: SolveLimits | None = None) -> dict[str, Any]:
    """Solve ``fleet5-synthetic`` episodes ``0 .. seeds - 1``: time, plan, bound, gap and memory per seed.

    ``estimated_peak_mb`` is the estimate the oracle checks against its memory budget before
    solving (:func:`agents.oracle.estimate_oracle_memory`, decimal MB); ``plan_nonzeros`` and
    ``bound_nonzeros`` are the sizes of the programs HiGHS was given. ``limits``: of each HiGHS
    solve (default: the oracle's node limit, no wall-time cap).
    """
    limits = limits or SolveLimits()
    env = ClusterSchedulingEnv("fleet5-synthetic")
    rows = []
    for seed in range(seeds):
        env.reset(seed=seed)
        started = time.perf_counter()
        result = solve_oracle(hindsight_of(env), limits.time_limit_s, node_limit=limits.node_limit)
        rows.append(
            {
                "seed": seed,
                "solve_s": time.perf_counter() - started,
                "plan_usd": result.plan_objective_usd,
                "bound_usd": result.lower_bound_usd,
                "gap": result.gap,
                "status": result.status,
                "estimated_peak_mb": result.memory_estimate.peak_bytes / 1e6,
                "plan_nonzeros": result.plan_program.n_nonzeros,
                "bound_nonzeros": None if result.bound_program is None else result.bound_program.n_nonzeros,
            }
        )
    return {"scenario": "fleet5-synthetic", "limits": limits.describe(), "episodes": rows}
