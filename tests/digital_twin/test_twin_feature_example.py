"""A new feature added as docs/architecture.md ("Layout") says: a Feature subclass, its factory in FEATURES.

The example is a per-node start-up delay (a container image pulled, a VM booted): a job started
on node ``i`` begins its work ``delay_s[i]`` later, so it completes that much later and holds its
resources meanwhile. It touches no file of the twin: its class is below, and the test registers
its factory in :data:`digital_twin.sim.state.FEATURES`. Its effect is recomputed from the event log.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

import scenarios
from digital_twin import DigitalTwin, TwinSpec
from digital_twin.episode_settings import NO_INTERFERENCE
from digital_twin.sim import state
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import CoreState, Feature


class StartupDelay(Feature):
    """Node ``i`` delays the work of every job started on it by ``delay_s[i]`` seconds (no work clocks).

    Attributes:
        delay_s: ``(N,)`` the delay per node, seconds (a table: shared, never changed).
        delayed: Starts delayed so far (its state).
    """

    def __init__(self, delay_s: list[float], delayed: int) -> None:
        self.delay_s = delay_s
        self.delayed = delayed

    def copy(self) -> StartupDelay:
        return StartupDelay(self.delay_s, self.delayed)

    def on_start(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        if self.delay_s[i] > 0.0:
            s.jobs.start_s[j] += self.delay_s[i]  # the run's work starts later: so does its completion
            self.delayed += 1


DELAYS_S = [30.0, 0.0, 45.5, 600.0, 7.25]
"""A delay per node of the 5-node fleet."""


@pytest.fixture
def with_startup_delay(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Switch the feature on for every twin built while the test runs (episodes without work clocks)."""

    def make(c: TwinConstants) -> Feature | None:
        return None if c.clocked else StartupDelay(DELAYS_S, 0)

    monkeypatch.setattr(state, "FEATURES", [*state.FEATURES, make])
    yield


def _spec(seed: int) -> TwinSpec:
    spec = scenarios.load("fleet5-synthetic").make_spec(np.random.default_rng(seed))
    return dataclasses.replace(spec, settings=dataclasses.replace(spec.settings, interference=NO_INTERFERENCE))


def _first_fit(spec: TwinSpec, seed: int) -> DigitalTwin:
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(seed))
    while not twin.done:
        mask = twin.feasible_mask()
        twin.place(mask.index(True))
    return twin


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_feature__startup_delay_moves_each_completion_by_its_nodes_delay(with_startup_delay: None, seed: int) -> None:
    """Every run completes its node's delay plus its duration after its start (recomputed from the event log)."""
    spec = _spec(seed)
    twin = _first_fit(spec, seed)
    index = {job_id: j for j, job_id in enumerate(spec.jobs.job_ids)}
    nodes = {node.node_id: i for i, node in enumerate(spec.fleet)}
    started: dict[str, tuple[float, int]] = {}
    checked = 0
    for time_s, event, job_id, node_id in twin.event_log:
        if event == "start":
            started[job_id] = (time_s, nodes[node_id])
        elif event == "completion":
            start_s, i = started.pop(job_id)
            assert time_s == start_s + DELAYS_S[i] + float(spec.jobs.duration_s[index[job_id]])
            checked += 1
    assert checked > 20
    delay = next(f for f in twin.snapshot()._state.features if isinstance(f, StartupDelay))
    delayed_nodes = {i for i, d in enumerate(DELAYS_S) if d > 0.0}
    starts = [nodes[node_id] for _, event, _, node_id in twin.event_log if event == "start"]
    assert delay.delayed == sum(1 for i in starts if i in delayed_nodes)


def test_feature__no_delay_leaves_the_episode_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """With every delay 0 the feature changes nothing: the same event log and objective as without it."""
    spec = _spec(4)
    without = _first_fit(spec, 4)
    monkeypatch.setattr(state, "FEATURES", [*state.FEATURES, lambda c: StartupDelay([0.0] * c.n_nodes, 0)])
    with_it = _first_fit(spec, 4)
    assert with_it.event_log == without.event_log
    assert with_it.objective_dict() == without.objective_dict()


def test_feature__a_snapshot_holds_the_features_state(with_startup_delay: None) -> None:
    """snapshot/restore copies the feature: the rest of the episode repeats, its tally included."""
    twin = DigitalTwin(_spec(5), record_events=True)
    twin.reset(np.random.default_rng(5))
    for _ in range(10):
        twin.place(twin.feasible_mask().index(True))
    saved = twin.snapshot()
    runs = []
    for _ in range(2):
        twin.restore(saved)
        while not twin.done:
            twin.place(twin.feasible_mask().index(True))
        tally = next(f for f in twin.snapshot()._state.features if isinstance(f, StartupDelay)).delayed
        runs.append((twin.event_log, twin.objective_dict(), tally))
    assert runs[0] == runs[1]
