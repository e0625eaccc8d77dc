"""A policy's deterministic action: defer only when that is more likely than placing anywhere."""

from __future__ import annotations

import numpy as np

from agents.place_or_defer import place_or_defer


def _random_weights(rng: np.random.Generator, n_nodes: int) -> np.ndarray:
    """``(n_nodes + 1,)`` probabilities with about a third of the nodes masked (weight 0)."""
    weights = rng.dirichlet(np.full(n_nodes + 1, 0.5))
    weights[:-1][rng.random(n_nodes) < 1 / 3] = 0.0
    return weights / weights.sum()


def test_place_or_defer__places_when_the_placing_mass_is_spread_over_many_nodes() -> None:
    """0.7 spread over 50 nodes against 0.3 on defer: the flat argmax defers, the decision places."""
    weights = np.array([0.7 / 50] * 50 + [0.3])
    weights[17] += 1e-6
    assert int(np.argmax(weights)) == 50
    assert place_or_defer(weights) == 17


def test_place_or_defer__does_not_change_when_a_node_is_split_into_copies() -> None:
    """Splitting a node's weight over k identical copies leaves the choice to defer as it was (1,000 draws)."""
    rng = np.random.default_rng(0)
    for _ in range(1_000):
        weights = _random_weights(rng, int(rng.integers(1, 12)))
        node = int(rng.integers(len(weights) - 1))
        copies = int(rng.integers(2, 60))
        split = np.concatenate([weights[:node], np.full(copies, weights[node] / copies), weights[node + 1 :]])
        assert (place_or_defer(split) == len(split) - 1) == (place_or_defer(weights) == len(weights) - 1)


def test_place_or_defer__is_the_flat_argmax_unless_defer_beats_each_node_but_not_all() -> None:
    """The argmax whenever that is a node or defer holds over half (1,000 draws); never a masked action."""
    rng = np.random.default_rng(1)
    differs = 0
    for _ in range(1_000):
        weights = _random_weights(rng, int(rng.integers(1, 30)))
        action = place_or_defer(weights)
        assert weights[action] > 0 or not weights[:-1].any()
        flat = int(np.argmax(weights))
        if flat < len(weights) - 1 or weights[-1] > 0.5:
            assert action == flat
        else:
            differs += 1
            assert action == int(np.argmax(weights[:-1]))
    assert differs > 0


def test_place_or_defer__defers_when_no_node_may_be_chosen() -> None:
    """Every node masked: defer, whatever its own weight."""
    assert place_or_defer(np.array([0.0, 0.0, 0.0, 1.0])) == 3
    assert place_or_defer(np.array([0.0, 0.0, 0.0])) == 2
