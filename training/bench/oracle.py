"""Oracle solve time on default episodes (plan + bound, HiGHS through SciPy)."""

from __future__ import annotations

import time
from typing import Any

from aco_env import ClusterSchedulingEnv
from agents.oracle import solve_oracle


def bench_oracle(seeds: int = 3, time_limit_s: float = 60.0) -> dict[str, Any]:
    """Solve ``fleet5-synthetic`` episodes ``0 .. seeds - 1``: time, plan, bound and gap per seed."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    rows = []
    for seed in range(seeds):
        env.reset(seed=seed)
        started = time.perf_counter()
        result = solve_oracle(env.hindsight(), time_limit_s=time_limit_s)
        rows.append({
            "seed": seed,
            "solve_s": time.perf_counter() - started,
            "plan_usd": result.plan_objective_usd,
            "bound_usd": result.lower_bound_usd,
            "gap": result.gap,
            "status": result.status,
        })
    return {"scenario": "fleet5-synthetic", "time_limit_s": time_limit_s, "episodes": rows}
