"""The ``oracle`` agent: solves the episode with hindsight at reset, then replays the plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from aco_env.hindsight import hindsight_of
from agents.base import AgentState
from agents.oracle.bounds.lagrangian import DEFAULT_LAGRANGIAN_ITERATIONS, check_iterations
from agents.oracle.milp.limits import DEFAULT_NODE_LIMIT, SolveLimits
from agents.oracle.plans.replay import planned_node
from agents.oracle.sizing.budget import budget_bytes

if TYPE_CHECKING:  # the solver (scipy.optimize) is imported on first reset
    from agents.oracle.solve import OracleResult


class OracleAgent:
    """Replays the oracle's plan: start a job when and where the plan says, else defer.

    At each decision, if the current job's planned start has come and its planned node is
    valid in the mask, that node is the action; if the planned node cannot take it, the
    cheapest valid node when the plan is repaired (``plan_repairs``, under contention);
    otherwise the job is deferred (action ``N``; :func:`agents.oracle.plans.replay.planned_node`).
    The episode's objective is then the plan's objective (:meth:`episode_result`
    ``.plan_objective_usd``, the objective of this same replay).
    Evaluations read the episode's plan objective, lower bound and solve time from
    :meth:`episode_result` (or :attr:`last_result`, ``None`` when no episode is solved).

    Memory: at ``reset`` the programs' peak memory is estimated before anything is built, and
    an episode above the budget raises :class:`~agents.oracle.OracleTooLargeError` (a
    ``ValueError``; ``aco-env evaluate`` leaves the oracle out with a note). The budget is
    ``memory_budget_gb`` if given, else the environment variable ``ACO_ENV_ORACLE_MEMORY_GB``
    (e.g. ``ACO_ENV_ORACLE_MEMORY_GB=16 aco-env evaluate ...``; ``inf`` = no limit), else 4 GB.

    Args:
        env: The env the agent acts in (possibly wrapped); ``env.unwrapped`` must offer
            ``hindsight()`` and ``cluster_view()``.
        time_limit_s: Wall-time cap of each HiGHS solve, seconds (``None``: none, the default,
            so that every machine gets the same plan and bound).
        node_limit: Branch-and-bound nodes of each HiGHS solve (the deterministic limit,
            :mod:`agents.oracle.milp.limits`).
        bound_grid_divisor: Grid refinement of the relaxation (see :func:`solve_oracle`).
        compute_bound: Also solve the relaxation (for the evaluator's bound and gaps).
        memory_budget_gb: Largest estimated peak memory of the programs, in GB (``1e9`` bytes);
            ``None`` = ``$ACO_ENV_ORACLE_MEMORY_GB`` or 4 GB (read at each ``reset``).
        too_large: An episode above the budget is ``"decompose"``-d (the default: a bound and a
            plan at scale, :func:`agents.oracle.bounds.capacity_free.scale_bound`) or ``"refuse"``-d.
        lagrangian_iterations: Subgradient steps of the bound at scale (its work limit,
            :mod:`agents.oracle.bounds.lagrangian`; 0 = the capacity-free bound alone).
        **solver_options: Passed to :func:`solve_oracle` (``mip_rel_gap``, ...).
    """

    name = "oracle"

    def __init__(
        self,
        env: gym.Env,
        time_limit_s: float | None = None,
        bound_grid_divisor: int = 5,
        compute_bound: bool = True,
        memory_budget_gb: float | None = None,
        node_limit: int | None = DEFAULT_NODE_LIMIT,
        too_large: str = "decompose",
        lagrangian_iterations: int = DEFAULT_LAGRANGIAN_ITERATIONS,
        **solver_options: Any,
    ) -> None:
        self.env = env
        self.limits = SolveLimits(node_limit, time_limit_s)  # bad limits fail here, not at the first reset
        self.bound_grid_divisor = bound_grid_divisor
        self.compute_bound = compute_bound
        if memory_budget_gb is not None:
            budget_bytes(memory_budget_gb)  # a bad budget fails here, not at the first reset
        self.memory_budget_gb = memory_budget_gb
        self.too_large = too_large
        self.lagrangian_iterations = check_iterations(lagrangian_iterations)  # fails here, not at a reset
        self.solver_options = solver_options
        self._result: OracleResult | None = None
        self._n_nodes = int(env.action_space.n) - 1  # type: ignore[attr-defined]  # Discrete(N + 1)

    def reset(self, seed: int | None = None) -> None:
        """Solve the episode the env has just been reset to (the seed is not needed).

        Raises:
            OracleTooLargeError: The episode's programs would not fit the memory budget.
        """
        del seed
        from agents.oracle.solve import solve_oracle

        self._result = None  # a refused episode leaves no stale plan behind
        self._result = solve_oracle(
            hindsight_of(self.env),
            time_limit_s=self.limits.time_limit_s,
            node_limit=self.limits.node_limit,
            bound_grid_divisor=self.bound_grid_divisor,
            compute_bound=self.compute_bound,
            memory_budget_bytes=budget_bytes(self.memory_budget_gb),
            too_large=self.too_large,
            lagrangian_iterations=self.lagrangian_iterations,
            **self.solver_options,
        )

    @property
    def last_result(self) -> OracleResult | None:
        """The current episode's :class:`OracleResult`; ``None`` before the first reset or after a refused one."""
        return self._result

    def episode_result(self) -> OracleResult:
        """The current episode's :class:`OracleResult`: plan, plan objective, lower bound, status, solve time.

        Raises:
            RuntimeError: No episode is solved (``reset`` was not called, or refused the episode).
        """
        if self._result is None:
            raise RuntimeError("call reset() after env.reset() before predict()")
        return self._result

    def predict(
        self,
        observation: dict[str, np.ndarray],
        state: AgentState = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, AgentState]:
        """The planned node once the current job's planned start has come (repaired if busy), else defer."""
        del state, episode_start, deterministic
        view = self.env.unwrapped.cluster_view()  # type: ignore[attr-defined]  # documented env API
        action = self._n_nodes
        if view.job is not None:
            fits = np.asarray(observation["action_mask"], dtype=bool).reshape(-1)[: self._n_nodes].tolist()
            result = self.episode_result()
            prices = [node.price_per_hour_usd for node in view.fleet] if result.plan_repairs else None
            node = planned_node(result.plan, view.job.job_id, view.time_s, fits, prices, result.plan_first_runs)
            if node is not None:
                action = node
        return np.array(action, dtype=np.int64), None


def make_oracle(env: gym.Env, **options: Any) -> OracleAgent:
    """Factory registered as ``"oracle"``."""
    return OracleAgent(env, **options)
