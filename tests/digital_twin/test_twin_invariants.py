"""Property tests: random fleets, jobs and actions never break the twin's invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from digital_twin import DigitalTwin, TwinSpec
from tests.helpers import apply_action, first_fit, run_twin, seeded_random_policy
from tests.strategies import twin_specs

PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.heavy  # seconds of CPU: the rest layer (make test), not make test-fast
@PROPERTY_SETTINGS
@given(spec=twin_specs(), seed=st.integers(0, 2**32 - 1), defer_prob=st.sampled_from((0.0, 0.3, 0.9)))
def test_twin__random_episodes_keep_every_invariant(spec: TwinSpec, seed: int, defer_prob: float) -> None:
    """No node over capacity, counts add up, time monotone, terms >= 0 at every decision."""
    run_twin(DigitalTwin(spec), seeded_random_policy(seed, defer_prob), seed)


@settings(max_examples=60, deadline=None)
@given(spec=twin_specs(), seed=st.integers(0, 2**32 - 1))
def test_twin__same_seed_and_actions_give_identical_event_logs(spec: TwinSpec, seed: int) -> None:
    """Two runs with the same seed and the same action stream produce the same log and objective."""
    logs = []
    for _ in range(2):
        twin = DigitalTwin(spec, record_events=True)
        run_twin(twin, seeded_random_policy(seed), seed, check=False)
        logs.append((twin.event_log, twin.objective(), twin.job_counts()))
    assert logs[0] == logs[1]


@settings(max_examples=60, deadline=None)
@given(spec=twin_specs(), seed=st.integers(0, 2**32 - 1))
def test_twin__event_log_time_never_goes_back(spec: TwinSpec, seed: int) -> None:
    """Logged event times are non-decreasing, inside [0, horizon) but for the horizon's own charges."""
    twin = DigitalTwin(spec, record_events=True)
    run_twin(twin, first_fit, seed, check=False)
    times = [t for t, *_ in twin.event_log]
    assert times == sorted(times)
    assert all(0.0 <= t < spec.settings.horizon_s or event == "unserved-at-horizon" for t, event, *_ in twin.event_log)


@settings(max_examples=40, deadline=None)
@given(spec=twin_specs(), seed=st.integers(0, 2**32 - 1), split=st.integers(0, 20))
def test_twin__snapshot_restore_replays_identically(spec: TwinSpec, seed: int, split: int) -> None:
    """Restoring a snapshot and replaying the same actions gives the same end state."""
    twin = DigitalTwin(spec, record_events=True)
    run_twin(twin, first_fit, seed, check=False)
    expected = (twin.event_log, twin.objective(), twin.job_counts())
    twin.reset(np.random.default_rng(seed))
    for _ in range(split):
        if twin.done:
            break
        apply_action(twin, first_fit(twin))
    snapshot = twin.snapshot()
    for _ in range(2):  # a snapshot is reusable
        twin.restore(snapshot)
        while not twin.done:
            apply_action(twin, first_fit(twin))
        assert (twin.event_log, twin.objective(), twin.job_counts()) == expected
