"""The first-fit and cheapest-fit rules, written once for everyone who places by them.

The heuristic agents (:mod:`agents.heuristics`) apply them to the valid nodes of a
:class:`~aco_env.views.ClusterView`; the placement env (:mod:`aco_env.placement`) applies them
to the twin in its warm-up and continuation policies. Both pass the valid node indices in
ascending order, so ties go to the lowest index.

Example:
    >>> cheapest_fit([0, 2, 3], price_per_hour_usd=[0.48, 0.12, 0.18, 0.18])
    2
    >>> first_fit([2, 3])
    2
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NodeIndices = Sequence[int] | np.ndarray
"""Node indices in ascending order: a list, or a ``(K,)`` int array (as ``ViewAgent`` passes them)."""


def first_fit(valid: NodeIndices) -> int:
    """The lowest of ``valid`` (node indices, ascending, at least one)."""
    return int(valid[0])


def cheapest_fit(valid: NodeIndices, price_per_hour_usd: Sequence[float]) -> int:
    """The node of ``valid`` (ascending, at least one) with the lowest price in $/h; ties to the lowest index.

    ``price_per_hour_usd[i]`` is node i's price (whole node, not pro-rated). ``min`` keeps the
    first of equal keys, hence the lowest index; plain Python is faster than numpy for the few
    nodes of a decision.
    """
    return int(min(valid, key=price_per_hour_usd.__getitem__))
