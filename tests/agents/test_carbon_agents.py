"""The carbon-aware heuristics on the bundled carbon scenarios: what each decision must satisfy."""

from __future__ import annotations

import numpy as np
import pytest

import scenarios
from aco_env import ClusterSchedulingEnv
from agents import make_agent
from agents.carbon import EMISSIONS_TOLERANCE, SHIFT_MARGIN, emission_rates, intensity_now, marginal_watts


def _env(name: str) -> ClusterSchedulingEnv:
    scenario = scenarios.load(name)
    if scenario.missing_data():
        pytest.skip(f"data not present: {scenario.missing_data()[0]}")
    return ClusterSchedulingEnv(scenario)


def _decisions(env: ClusterSchedulingEnv, agent_name: str, seed: int, limit: int = 150):
    """(view, action) of the first ``limit`` decisions of an episode."""
    agent = make_agent(agent_name, env)
    observation, _ = env.reset(seed=seed)
    agent.reset(seed)
    for _ in range(limit):
        view = env.cluster_view()
        action = int(agent.predict(observation)[0])
        yield view, action
        observation, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return


def test_least_carbon__places_within_the_tolerance_of_the_least_emissions_and_grids_decide() -> None:
    env = _env("fleet5-carbon-regions")
    regions = []
    for view, action in _decisions(env, "least-carbon", 5000):
        valid = [i for i in range(env.n_nodes) if view.action_mask[i]]
        assert action in valid  # it places whenever something fits
        if view.job.workload == "latency-critical" and any(not env.fleet[i].is_spot for i in valid):
            valid = [i for i in valid if not env.fleet[i].is_spot]
            assert not env.fleet[action].is_spot
        rates = [marginal_watts(view, i, view.job) * intensity_now(view, i) for i in valid]
        assert marginal_watts(view, action, view.job) * intensity_now(view, action) <= min(rates) * (
            1 + EMISSIONS_TOLERANCE
        ) + 1e-12
        regions.append(view.energy.nodes[action].region)
    assert regions.count("bpat") > regions.count("pjm")  # the hydro grid takes most of the work


def test_carbon_shift__defers_only_work_that_may_wait_for_a_forecast_cleaner_hour() -> None:
    env = _env("fleet5-carbon")
    deferred = 0
    for view, action in _decisions(env, "carbon-shift", 5001, limit=300):
        if action != env.n_nodes:
            continue
        deferred += 1
        assert view.job.workload != "latency-critical"
        series = view.energy.carbon["ciso"]
        yesterday = series.at(np.arange(view.time_s + 3600.0, view.time_s + 12 * 3600.0 + 1.0, 3600.0) - 86_400.0)
        assert yesterday.min() < (1 - SHIFT_MARGIN) * series.at(view.time_s)
    assert deferred > 0


def test_the_view_holds_each_grid_up_to_now_then_its_value_now() -> None:
    env = _env("fleet5-carbon")
    truth = scenarios.load("fleet5-carbon").energy.carbon["ciso"]
    for view, _ in _decisions(env, "first-fit", 5002, limit=40):
        known = view.energy.carbon["ciso"]
        past = np.arange(-86_400.0, view.time_s, 900.0)
        future = np.arange(view.time_s, view.settings.horizon_s, 900.0)
        np.testing.assert_array_equal(known.at(past), truth.at(past))
        np.testing.assert_array_equal(known.at(future), truth.at(view.time_s))


def test_aco_carbon__multiplies_acos_eta_by_each_nodes_carbon_efficiency() -> None:
    from agents.aco.cost_engine import CARBON_REFERENCE_G_PER_H, carbon_efficiency

    env = _env("fleet5-carbon-regions")
    plain, carbon = make_agent("aco", env), make_agent("aco-carbon", env)
    observation, _ = env.reset(seed=5003)
    for agent in (plain, carbon):
        agent.reset(7)
    compared = 0
    for _ in range(60):
        view = env.cluster_view()
        plain.predict(observation)
        action = int(carbon.predict(observation)[0])
        a, b = plain.last_decision, carbon.last_decision
        if a is not None and b is not None and a.candidates.size:
            rates = [marginal_watts(view, int(i), view.job) * intensity_now(view, int(i)) / 1e3 for i in a.candidates]
            np.testing.assert_allclose(b.eta, a.eta * carbon_efficiency(rates, CARBON_REFERENCE_G_PER_H), rtol=1e-12)
            compared += 1
        observation, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    assert compared > 10


def _scalar_least_carbon(env: ClusterSchedulingEnv, view) -> int:
    """least-carbon's choice computed node by node with the scalar functions (the definition)."""
    nodes = [i for i in range(env.n_nodes) if view.action_mask[i]]
    if view.job.workload == "latency-critical":
        nodes = [i for i in nodes if not env.fleet[i].is_spot] or nodes
    rates = {i: marginal_watts(view, i, view.job) * intensity_now(view, i) for i in nodes}
    near = [i for i in nodes if rates[i] <= min(rates.values()) * (1.0 + EMISSIONS_TOLERANCE)]
    return min(near, key=lambda i: (env.fleet[i].price_per_hour_usd, rates[i], i))


@pytest.mark.parametrize(("scenario", "seed"), [("fleet5-carbon-regions", 11), ("fleet5-carbon", 12)])
def test_emission_rates__equal_the_scalar_rates_bit_for_bit_and_least_carbon_decides_as_node_by_node(
    scenario: str, seed: int
) -> None:
    """The vectorised rates are the scalar ones exactly, so least-carbon's decisions are the node-by-node ones."""
    env = _env(scenario)
    checked = 0
    for view, action in _decisions(env, "least-carbon", seed, limit=300):
        valid = np.flatnonzero(view.action_mask[: env.n_nodes])
        if not valid.size:
            continue
        scalar = [marginal_watts(view, int(i), view.job) * intensity_now(view, int(i)) for i in valid]
        assert emission_rates(view, valid, view.job).tolist() == scalar
        assert action == _scalar_least_carbon(env, view)
        checked += 1
    assert checked > 50
