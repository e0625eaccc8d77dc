"""How long a HiGHS solve may run: a work limit (branch-and-bound nodes), and an optional wall-time cap.

The oracle's numbers are reported (leaderboards, reproduction, benchmarks), so the limit that
normally ends a solve is *work*, not time: HiGHS's branch and bound is deterministic for a
given program and settings (it runs the MIP search on one thread), so a solve stopped after
``node_limit`` nodes returns the same plan, bound and status on any machine and under any load.
A wall-time cap (``time_limit_s``) may be added as a safety net; a solve it stops is marked
``"time-limit"``, and only such a result can differ between runs.

At the default scale (the 5-node bundled scenarios) the oracle's programs end at the root node
or within a few nodes (1-3 measured on ``fleet5-synthetic`` seeds 0-3), far inside
:data:`DEFAULT_NODE_LIMIT`.

Example:
    >>> SolveLimits().describe()
    '1,000 branch-and-bound nodes per HiGHS solve'
    >>> SolveLimits(node_limit=50, time_limit_s=30).highs_options()
    {'node_limit': 50, 'time_limit': 30.0}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DEFAULT_NODE_LIMIT = 1000
"""Branch-and-bound nodes per HiGHS solve unless the caller says otherwise."""

OPTIMAL, NODE_LIMIT, TIME_LIMIT = "optimal", "node-limit", "time-limit"
"""Outcomes of a solve that returned (``ProgramResult.status``), besides HiGHS's failures."""

_HIGHS_NODE_LIMIT = "HiGHS Status 16"  # scipy reports HiGHS's "solution limit" (its node limit) as status 4


@dataclass(frozen=True)
class SolveLimits:
    """Limits of each HiGHS solve.

    Attributes:
        node_limit: Branch-and-bound nodes (an integer >= 1); ``None`` = no node limit.
        time_limit_s: Wall-time cap in seconds (> 0); ``None`` = none (the default: results
            are then the same on every machine).

    Raises:
        ValueError: A limit of the wrong type or out of range.
    """

    node_limit: int | None = DEFAULT_NODE_LIMIT
    time_limit_s: float | None = None

    def __post_init__(self) -> None:
        if self.node_limit is not None and (
            isinstance(self.node_limit, bool) or not isinstance(self.node_limit, int) or self.node_limit < 1
        ):
            raise ValueError(f"node_limit must be an integer >= 1 (or None), got {self.node_limit!r}")
        if self.time_limit_s is not None and (
            isinstance(self.time_limit_s, bool)
            or not isinstance(self.time_limit_s, int | float)
            or not self.time_limit_s > 0
        ):
            raise ValueError(f"time_limit_s must be a number of seconds > 0 (or None), got {self.time_limit_s!r}")

    def highs_options(self) -> dict[str, Any]:
        """The limits as ``scipy.optimize.milp`` options (a fresh dict: milp consumes it)."""
        options: dict[str, Any] = {}
        if self.node_limit is not None:
            options["node_limit"] = int(self.node_limit)
        if self.time_limit_s is not None and math.isfinite(self.time_limit_s):
            options["time_limit"] = float(self.time_limit_s)
        return options

    def status_of(self, scipy_status: int, message: str) -> str:
        """``ProgramResult.status`` of a ``milp`` outcome (its ``status`` and ``message``).

        ``optimal``, ``node-limit``, ``time-limit``, or HiGHS's failure (``infeasible``,
        ``unbounded``, ``failed``).
        """
        if scipy_status == 0:
            return OPTIMAL
        if scipy_status == 1:  # scipy: "time limit reached" (only a time limit gives it here)
            return TIME_LIMIT
        if scipy_status == 4 and _HIGHS_NODE_LIMIT in message:
            return NODE_LIMIT
        return {2: "infeasible", 3: "unbounded"}.get(scipy_status, "failed")

    def describe(self) -> str:
        """One phrase for reports: ``"1,000 branch-and-bound nodes per HiGHS solve"`` (and the cap)."""
        work = "no node limit" if self.node_limit is None else f"{self.node_limit:,} branch-and-bound nodes"
        cap = "" if self.time_limit_s is None else f", capped at {self.time_limit_s:g} s wall time"
        return f"{work} per HiGHS solve{cap}"


DEFAULT_LIMITS = SolveLimits()
"""The oracle's default: :data:`DEFAULT_NODE_LIMIT` nodes per solve, no wall-time cap."""
