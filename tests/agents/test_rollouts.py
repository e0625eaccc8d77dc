"""The lookahead's rollouts: a window reaching the horizon changes nothing; what a cut-off state commits, by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scenarios
from aco_env import ClusterSchedulingEnv
from agents.charges import Charges, nominal_run_usd
from agents.lookahead import LookaheadAgent
from agents.rollouts import _queued_usd, action_objectives, cheapest_charge, committed_usd, rule_charge, take
from digital_twin import DigitalTwin, TwinSpec
from tests.small_twins import ONE_CORE, SPOT_TWO_CORES, TWO_CORES, batch, lc, spec_of
from tests.strategies import twin_specs


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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=twin_specs(), seed=st.integers(0, 2**32 - 1), steps=st.integers(0, 40))
def test_committed__queued_jobs_as_the_rule_charges_them_one_by_one(spec: TwinSpec, seed: int, steps: int) -> None:
    """Random fleets (GPUs, arches, spot), random play: the queue's charge is each job's least charge on a node."""
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(seed))
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if twin.done:
            return
        valid = np.flatnonzero(twin.feasible_mask())
        take(twin, None if rng.random() < 0.5 else int(rng.choice(valid)))
    if twin.done:
        return
    left_s = spec.settings.horizon_s - twin.time_s
    qos = spec.settings.weights.qos_violation_usd
    expected = 0.0
    for j in twin.pending_jobs():
        job = spec.jobs[j]
        run_part, lc_job = min(1.0, left_s / job.duration_s), job.workload == "latency-critical"
        expected += min(
            nominal_run_usd(node, job) * run_part + (qos if lc_job and node.is_spot else 0.0)
            for node, candidate in zip(spec.fleet, twin.candidate_masks([j])[0], strict=True)
            if candidate
        )
    assert _queued_usd(twin, left_s) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=twin_specs(), seed=st.integers(0, 2**32 - 1))
def test_cheapest_charge__the_node_a_loop_over_rule_charge_picks(spec: TwinSpec, seed: int) -> None:
    """At every decision of a random episode the vectorised rule picks the node, and ties, that a loop would."""
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(seed))
    rng = np.random.default_rng(seed)
    qos = Charges(spec.settings.weights).qos(1.0)
    while not twin.done:
        job = twin.current_job
        assert job is not None
        charges = {i: rule_charge(node, job, qos) for i, (node, fits)
                   in enumerate(zip(spec.fleet, twin.feasible_mask(), strict=True)) if fits}
        expected = min(charges, key=lambda i: (charges[i], i)) if charges else None
        assert cheapest_charge(twin) == expected
        valid = np.flatnonzero(twin.feasible_mask())
        take(twin, None if not len(valid) or rng.random() < 0.3 else int(rng.choice(valid)))


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


def test_lookahead__candidates_tries_the_nodes_the_rule_charges_least_and_defer() -> None:
    """With ``candidates=k`` the rolled-out actions are the k cheapest fitting nodes by the rule, and defer."""
    env = ClusterSchedulingEnv("fleet20-synthetic")
    env.reset(seed=3)
    everything = LookaheadAgent(env, samples=1)
    everything.reset(3)
    view = env.cluster_view()
    valid = np.flatnonzero(view.action_mask[: len(view.fleet)])
    assert len(valid) > 2
    qos = Charges(env.known_twin().spec.settings.weights).qos(1.0)
    assert view.job is not None
    ranked = sorted(valid.tolist(), key=lambda node: (rule_charge(view.fleet[node], view.job, qos), node))
    few = LookaheadAgent(env, samples=1, candidates=2)
    few.reset(3)
    assert set(few.rollout_totals()) == {*ranked[:2], None}
    all_totals = everything.rollout_totals()
    assert set(all_totals) == {*valid.tolist(), None}
    few.reset(3)
    assert few.rollout_totals() == {action: all_totals[action] for action in (*ranked[:2], None)}  # same futures
    for bad in (0, -1, 1.5, True, "8"):
        with pytest.raises(ValueError, match="candidates"):
            LookaheadAgent(env, candidates=bad)  # type: ignore[arg-type]
