"""A learned policy's deterministic action: first place or defer, then where.

The env's actions are the N nodes and defer (last). The flat argmax of a policy's action
probabilities weighs deferral against each node alone, so its choice depends on how many nodes
share the placing mass: a policy that places with probability 0.7 spread over 50 similar nodes
(0.014 each) and defers with 0.3 defers under the argmax at every decision. The env asks the
deferred job again, the argmax defers again, and the job waits until its TTL rejects it. Sampled,
the same policy places the job at once 7 times in 10.

:func:`place_or_defer` takes the mode of the decision in its two steps instead: defer when that is
more likely than placing anywhere, else the most likely node. It does not change with the number of
nodes that share the placing mass. It differs from the flat argmax only when deferral beats every
node alone but not all of them together.
"""

from __future__ import annotations

import numpy as np


def place_or_defer(weights: np.ndarray) -> int:
    """The action index: defer (the last) when its weight exceeds all nodes' together, else the heaviest node.

    Args:
        weights: ``(N + 1,)`` nonnegative action probabilities, or any positive multiple of them
            (unnormalised is fine), with 0 for the masked actions; defer last; ``N >= 1``.

    Returns:
        ``N`` (defer) when ``weights[N] > weights[:N].sum()`` or no node has weight; else the
        first node of greatest weight.

    >>> place_or_defer(np.array([0.014] * 50 + [0.3]))  # the flat argmax would defer
    0
    >>> place_or_defer(np.array([0.2, 0.1, 0.7]))
    2
    >>> place_or_defer(np.array([0.0, 0.0, 1.0]))
    2
    """
    return int(place_or_defer_rows(np.asarray(weights)[None])[0])


def place_or_defer_rows(weights: np.ndarray) -> np.ndarray:
    """:func:`place_or_defer` of each row of ``weights`` (``(B, N + 1)``): ``(B,)`` int64 action indices.

    >>> place_or_defer_rows(np.array([[0.2, 0.35, 0.45], [0.1, 0.2, 0.7]])).tolist()
    [1, 2]
    """
    weights = np.asarray(weights, dtype=np.float64)
    nodes = weights[:, :-1]
    placing = nodes.sum(axis=1)
    defers = (placing <= 0.0) | (weights[:, -1] > placing)
    return np.where(defers, weights.shape[1] - 1, nodes.argmax(axis=1)).astype(np.int64)
