"""The objective's term table is the one source: weights, breakdown, metrics and the twin follow it."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import aco_env  # noqa: F401  (registers the ids)
from aco_env.metrics import EPISODE_METRICS
from aco_env.registration import FLEET5_ID
from digital_twin import ObjectiveBreakdown, ObjectiveWeights
from digital_twin.objective import BREAKDOWN_KEYS, COUNT_KEYS, PENALTIES, USD_KEYS


def test_every_penalty_term_has_exactly_one_weight_field() -> None:
    """ObjectiveWeights' fields are the table's weight keys, in table order."""
    assert [f.name for f in dataclasses.fields(ObjectiveWeights)] == [term.weight_key for term in PENALTIES]


def test_keys_derive_from_the_table_and_are_unique() -> None:
    assert ("cost_usd", *(f"{term.name}_usd" for term in PENALTIES)) == USD_KEYS
    assert tuple(term.count_key for term in PENALTIES) == COUNT_KEYS
    assert len(set(BREAKDOWN_KEYS)) == len(BREAKDOWN_KEYS)
    assert set(BREAKDOWN_KEYS) <= set(EPISODE_METRICS)


def test_breakdown__total_is_cost_plus_count_times_weight_in_table_order() -> None:
    weights = ObjectiveWeights(*(0.1 * (k + 1) for k in range(len(PENALTIES))))
    counts = list(range(2, 2 + len(PENALTIES)))
    breakdown = ObjectiveBreakdown.of(1.5, weights, counts)
    expected = 1.5
    for count, weight in zip(counts, weights.per_term(), strict=True):
        expected += count * weight
    assert breakdown.total_usd == expected
    as_dict = breakdown.as_dict()
    assert list(as_dict) == list(BREAKDOWN_KEYS)
    for term, count in zip(PENALTIES, counts, strict=True):
        assert breakdown[term.count_key] == count
        assert breakdown[term.usd_key] == count * getattr(weights, term.weight_key)
    with pytest.raises(KeyError, match="not an objective key"):
        breakdown["nosuch_usd"]
    with pytest.raises(ValueError, match="penalty counts"):
        ObjectiveBreakdown.of(0.0, weights, counts[:-1])


@pytest.mark.parametrize("seed", [0, 1])
def test_twin__objective_dict_equals_the_breakdown_bit_for_bit(seed: int) -> None:
    """The twin's hot-path dict, the breakdown and objective_usd() agree exactly at every step."""
    env = gym.make(FLEET5_ID)
    observation, _ = env.reset(seed=seed)
    twin = env.unwrapped._twin
    rng = np.random.default_rng(seed)
    done = False
    while not done:
        assert twin.objective_dict() == twin.objective().as_dict()
        assert twin.objective_usd() == twin.objective().total_usd
        valid = np.flatnonzero(observation["action_mask"])
        observation, _, terminated, truncated, _ = env.step(int(rng.choice(valid)))
        done = terminated or truncated
    assert twin.objective_dict() == twin.objective().as_dict()
