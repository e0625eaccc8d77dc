"""The oracle's memory budget: an episode whose programs would not fit is refused before they are built.

:func:`~agents.oracle.solve_oracle` estimates the peak memory of its two programs
(:func:`agents.oracle.sizing.size.estimate_oracle_memory`) and raises :class:`OracleTooLargeError`
when the estimate is above the budget, before it allocates anything large. The budget, in
decimal GB (``1 GB = 10**9`` bytes), is the first of:

1. the ``memory_budget_gb`` option of the ``oracle`` agent (``memory_budget_bytes`` of
   :func:`~agents.oracle.solve_oracle`);
2. the environment variable :data:`MEMORY_BUDGET_ENV` (``ACO_ENV_ORACLE_MEMORY_GB=16``, so a
   command-line user can raise it without code; ``inf`` turns the check off);
3. :data:`DEFAULT_MEMORY_BUDGET_GB`.

This module imports nothing heavy, so ``from agents.oracle import OracleTooLargeError`` is cheap.

Example:
    >>> budget_bytes(2.5)
    2500000000.0
    >>> try:
    ...     budget_bytes(-1.0)
    ... except ValueError as exc:
    ...     print(exc)
    the oracle's memory budget must be a number of GB > 0 (inf = no limit), got -1.0
"""

from __future__ import annotations

import math
import os
from typing import Protocol

DEFAULT_MEMORY_BUDGET_GB = 4.0
"""Budget when neither the option nor the environment variable sets one."""
MEMORY_BUDGET_ENV = "ACO_ENV_ORACLE_MEMORY_GB"
"""Environment variable holding the budget in GB (read at each solve)."""
BYTES_PER_GB = 1e9


class SizeEstimate(Protocol):
    """What the budget reads of a size estimate (:class:`agents.oracle.sizing.size.OracleSizeEstimate`)."""

    @property
    def peak_bytes(self) -> int:
        """Estimated peak memory of the solve, in bytes."""
        ...

    def describe(self) -> str:
        """One line: what would be built and its estimated peak."""
        ...


class OracleTooLargeError(ValueError):
    """The episode's programs would need more memory than the oracle's budget.

    Raised by :func:`~agents.oracle.solve_oracle` (and so at the ``oracle`` agent's ``reset``) before any
    program is built. The message is one line: the estimate, the budget, and how to raise it.

    Attributes:
        estimate: What the programs would take (``None`` if not given).
        budget_bytes: The budget that refused them.
    """

    def __init__(self, message: str, estimate: SizeEstimate | None = None,
                 budget_bytes: float | None = None) -> None:
        super().__init__(message)
        self.estimate = estimate
        self.budget_bytes = budget_bytes


def budget_bytes(budget_gb: float | None = None) -> float:
    """The budget in bytes: ``budget_gb``, else ``$ACO_ENV_ORACLE_MEMORY_GB``, else the default.

    Raises:
        ValueError: A budget that is not a number > 0 (``inf`` is allowed: no limit).
    """
    where = "the oracle's memory budget"
    if budget_gb is None:
        text = os.environ.get(MEMORY_BUDGET_ENV, "").strip()
        if text:
            where = f"{MEMORY_BUDGET_ENV}={text!r}"
            try:
                budget_gb = float(text)
            except ValueError:
                raise ValueError(f"{where}: must be a number of GB > 0 (inf = no limit)") from None
        else:
            budget_gb = DEFAULT_MEMORY_BUDGET_GB
    if isinstance(budget_gb, bool) or not isinstance(budget_gb, (int, float)) or not budget_gb > 0:
        raise ValueError(f"{where} must be a number of GB > 0 (inf = no limit), got {budget_gb!r}")
    return float(budget_gb) * BYTES_PER_GB


def check_memory(estimate: SizeEstimate, budget: float) -> None:
    """Raise :class:`OracleTooLargeError` if ``estimate.peak_bytes`` is above ``budget`` bytes."""
    if estimate.peak_bytes <= budget:
        return
    message = (
        f"oracle refused: {estimate.describe()}, above its memory budget of {format_bytes(budget)}; raise the budget "
        f"with the oracle option memory_budget_gb (memory_budget_bytes of solve_oracle) or {MEMORY_BUDGET_ENV}"
    )
    raise OracleTooLargeError(message, estimate, budget)


def format_bytes(n_bytes: float) -> str:
    """Bytes as decimal GB (TB from 1,000 GB): ``format_bytes(4e9) == '4.00 GB'``."""
    if math.isfinite(n_bytes) and n_bytes >= 1e12:
        return f"{n_bytes / 1e12:,.1f} TB"
    return f"{n_bytes / BYTES_PER_GB:,.2f} GB"
