"""The node state as arrays (DigitalTwin.node_arrays, fit_array): always the lists' values, changes marked exactly."""

from __future__ import annotations

import numpy as np
import pytest

import scenarios
from digital_twin import DigitalTwin
from digital_twin.sim.node_arrays import VECTOR_FIT_NODES


def _lists(twin: DigitalTwin) -> np.ndarray:
    """``(7, N)`` the twin's node state read from its lists (the truth the arrays mirror)."""
    nodes = twin.snapshot()._state.nodes
    n = len(nodes.up)
    return np.array(
        [nodes.free_cpu_m, nodes.free_mem_mib, nodes.free_gpus, nodes.up, *np.reshape(nodes.running_counts, (3, n))],
        dtype=np.float64,
    )


@pytest.mark.parametrize(
    ("name", "decisions"), [("fleet20-synthetic", 400), ("fleet30-rules", 300), ("fleet500-synthetic", 300)]
)
def test_node_arrays__equal_the_lists_and_mark_every_change(name: str, decisions: int) -> None:
    """After every decision, restore and reset: the arrays hold the lists' values; changed_at marks every changed node.

    Random valid actions with deferrals, a snapshot restored now and then, two episodes on one twin.
    """
    scenario = scenarios.load(name)
    rng = np.random.default_rng(7)
    twin = DigitalTwin(scenario.make_spec(np.random.default_rng(0)))
    for seed in (0, 1):
        twin.reset(np.random.default_rng(seed))
        before = twin.node_arrays().values.copy()
        seen = twin.node_arrays().updates
        saved = None
        for step in range(decisions):
            if twin.done:
                break
            mask = twin.feasible_mask()
            valid = [i for i, ok in enumerate(mask) if ok]
            if step % 5 == 4:
                twin.defer()
            else:
                twin.place(int(rng.choice(valid)))
            if step == 20:
                saved = twin.snapshot()
            if step % 50 == 49 and saved is not None:
                twin.restore(saved)
            arrays = twin.node_arrays()
            now = arrays.values.copy()
            assert np.array_equal(now, _lists(twin))
            changed = np.flatnonzero((now != before).any(axis=0))
            marked = np.flatnonzero(arrays.changed_at > seen)
            assert set(changed) <= set(marked)
            before, seen = now, arrays.updates


@pytest.mark.parametrize("name", ["fleet30-rules", "fleet500-synthetic"])
def test_fit_array__is_the_twins_fit_at_every_decision(name: str) -> None:
    """fit_array equals feasible_mask (computed from the arrays on a large fleet, converted on a small one)."""
    scenario = scenarios.load(name)
    twin = DigitalTwin(scenario.make_spec(np.random.default_rng(3)))
    twin.reset(np.random.default_rng(3))
    if name == "fleet500-synthetic":
        assert len(twin.spec.fleet) >= VECTOR_FIT_NODES  # the vector path is the one exercised
    rng = np.random.default_rng(3)
    for _ in range(300):
        if twin.done:
            break
        mask = twin.feasible_mask()
        fit = twin.fit_array()
        assert fit.dtype == bool and fit.tolist() == mask
        twin.place(int(rng.choice(np.flatnonzero(mask))))
    assert not twin.done or not twin.fit_array().any()


def test_node_arrays__are_read_only() -> None:
    """A caller cannot write the arrays (they are the twin's; the next read changes them)."""
    twin = DigitalTwin(scenarios.load("fleet5-synthetic").make_spec(np.random.default_rng(0)))
    twin.reset(np.random.default_rng(0))
    arrays = twin.node_arrays()
    with pytest.raises(ValueError, match="read-only"):
        arrays.values[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        arrays.changed_at[0] = 1
