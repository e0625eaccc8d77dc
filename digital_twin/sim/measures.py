"""The objective's two measures that are functions, not counts: lost SLO utility and unfairness.

:mod:`digital_twin.objective` holds the table of terms; these two live here, in a
module of their own, because the twin calls them at its events and this module is compiled with
the twin's hot modules (:mod:`digital_twin.native`).
"""

from __future__ import annotations

from collections.abc import Sequence


def utility_loss(latency_s: float, slo_s: float) -> float:
    """``1 - u(latency_s / slo_s)``: the SLO utility a latency-critical job lost (in ``[0, 1]``).

    The utility of ``x = latency / SLO`` is Faro's "sloppified" piecewise-linear curve: 1 for
    ``x <= 1`` (SLO met), then linear down to 0 at ``x = 2`` (twice the SLO) and 0 beyond. It is
    non-increasing in the latency, so the loss is non-decreasing in it.

    Args:
        latency_s: Completion (or the horizon) minus arrival, seconds (>= 0).
        slo_s: The job's latency SLO, seconds (> 0): ``latency_slo_factor x`` its nominal duration.

    >>> utility_loss(1200.0, 1200.0), utility_loss(1800.0, 1200.0), utility_loss(3000.0, 1200.0)
    (0.0, 0.5, 1.0)
    """
    x = latency_s / slo_s
    if x <= 1.0:
        return 0.0
    return x - 1.0 if x < 2.0 else 1.0


def unfairness(class_jobs: Sequence[float], class_service: Sequence[float]) -> float:
    """``1 - J``, Jain's index ``J = (sum x)^2 / (n sum x^2)`` of the classes' mean normalised service.

    Over the ``n`` classes with at least one job, ``x_c = class_service[c] / class_jobs[c]``.
    A job's normalised service is its nominal work done over its time in the system (``d /
    (completion - arrival)`` for a completed job, in ``(0, 1]``; 0 for a rejected, failed or
    unserved one), so ``x_c`` is in ``[0, 1]`` and the result in ``[0, 1 - 1/n]``: 0 when every
    class is served alike, and 0 by convention while no class has any service (or only one
    class has jobs). Rounding never makes it negative.

    Args:
        class_jobs: ``(N_CLASSES,)`` submitted jobs per class (a count, >= 0).
        class_service: ``(N_CLASSES,)`` the sum of their normalised services.

    >>> unfairness([2, 1, 0], [2.0, 1.0, 0.0]), unfairness([2, 2, 0], [2.0, 0.0, 0.0])
    (0.0, 0.5)
    """
    total = 0.0
    total_sq = 0.0
    n = 0
    for jobs, service in zip(class_jobs, class_service):  # noqa: B905  (the twin's hot path; equal lengths)
        if jobs:
            x = service / jobs
            total += x
            total_sq += x * x
            n += 1
    if total_sq <= 0.0:
        return 0.0
    gap = 1.0 - total * total / (n * total_sq)
    return gap if gap > 0.0 else 0.0
