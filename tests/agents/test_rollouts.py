"""The lookahead's rollouts: a window that reaches the horizon changes nothing; what a cut-off state commits, by hand."""

from __future__ import annotations

import numpy as np
import pytest

import scenarios
from aco_env import ClusterSchedulingEnv
from agents.lookahead import LookaheadAgent
from agents.rollouts import action_objectives, committed_usd
from digital_twin import DigitalTwin
from tests.small_twins import ONE_CORE, SPOT_TWO_CORES, TWO_CORES, batch, lc, spec_of


def _at_second_decision(spec_jobs: tuple, **settings: object) -> DigitalTwin:
    """A twin that placed the first job on node 0 and stands at the second job's decision."""
    twin = DigitalTwin(spec_of(spec_jobs, **settings))
    twin.reset(np.random.default_rng(0))
    twin.place(0)
    return twin


def test_committed__the_rest_of_each_run_and_the_cheapest_run_of_each_queued_job() -> None:
    """At t=100: A (1 core, 1000 s, 0.0001 $/s) has 900 s left; B (queued) costs 600 s; C (lc) avoids the spot node."""
    fleet = (TWO_CORES, SPOT_TWO_CORES)
    jobs = (batch("A", 0, 1000), batch("B", 100, 600), lc("C", 100, 300))
    twin = _at_second_decision(jobs, fleet=fleet, fixed_interruptions_s=((), ()))
    assert twin.time_s == 100.0 and twin.runs_left() == [(0, 0, 900.0)]
    # A: 900 s x 0.0001; B: 600 s on either node; C: on-demand 300 s (on spot: 0.03 + the 0.25 QoS penalty).
    assert committed_usd(twin) == pytest.approx(0.09 + 0.06 + 0.03)


def test_committed__runs_are_cut_at_the_horizon_and_active_nodes_pay_the_longest_run() -> None:
    """A 500 s horizon leaves A 400 s and B 400 s of its run; under active-nodes node 0 pays its price while A runs."""
    jobs = (batch("A", 0, 1000), batch("B", 100, 600))
    assert committed_usd(_at_second_decision(jobs, horizon_s=500.0)) == pytest.approx(0.04 + 0.04)
    active = _at_second_decision(jobs, cost_model="active-nodes")
    assert committed_usd(active) == pytest.approx(0.0002 * 900 + 0.06)  # the whole node (0.72 $/h) for 900 s


def test_runs_left__under_contention_counts_nominal_work() -> None:
    """At 100 % background a 1-core job on the 1-core node runs at half speed: after 100 s, 950 s of work are left."""
    twin = _at_second_decision(
        (batch("A", 0, 1000), batch("B", 100, 60, cores=0.5)),
        fleet=(ONE_CORE, TWO_CORES),
        cpu_pct=100.0,
        interference="processor-sharing",
    )
    assert twin.runs_left() == [(0, 0, pytest.approx(950.0))]


def test_window__reaching_the_horizon_is_no_window() -> None:
    """A window as long as the episode gives the objectives of rollouts to the end, bit for bit."""
    spec = scenarios.load("fleet5-synthetic").make_spec(np.random.default_rng(4))
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(4))
    for _ in range(10):
        twin.place(twin.feasible_mask().index(True))
    actions = [*np.flatnonzero(twin.feasible_mask()).tolist(), None]
    present = twin.snapshot()
    to_the_end = action_objectives(twin, actions)
    twin.restore(present)
    assert action_objectives(twin, actions, window_s=spec.settings.horizon_s).tolist() == to_the_end.tolist()
    twin.restore(present)
    windowed = action_objectives(twin, actions, window_s=600.0)
    assert windowed.shape == to_the_end.shape and np.isfinite(windowed).all()


def test_lookahead__a_windowed_lookahead_plays_valid_episodes_and_checks_the_window() -> None:
    """With a 10-minute window it plays a whole episode with valid actions; a bad window is refused by name."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    agent = LookaheadAgent(env, samples=1, rollout_window_s=600.0)
    obs, _ = env.reset(seed=0)
    agent.reset(0)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(int(agent.predict(obs)[0]))
        assert not info["invalid_action"]
        done = terminated or truncated
    for bad in (0.0, -1.0, float("inf"), True, "600"):
        with pytest.raises(ValueError, match="rollout_window_s"):
            LookaheadAgent(env, rollout_window_s=bad)  # type: ignore[arg-type]
