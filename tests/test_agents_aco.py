"""The ACO scheduler: cost engine, intent router, fast path, colony, carried pheromone, agent."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import aco_env  # noqa: F401  (registers the env ids)
from agents import make_agent
from agents.aco import cost_engine as ce
from agents.aco import router
from agents.aco.colony import ColonyFailedError, NodePheromone, run_colony
from agents.aco.scheduler import (
    COLONY,
    COLONY_FAILED_FALLBACK,
    EMPTY_ETA_FALLBACK,
    FAST_PATH,
    NO_CANDIDATE,
    FleetArrays,
    schedule,
)
from digital_twin import JobSpec, default_fleet

FLEET5 = FleetArrays.from_fleet(
    default_fleet()
)  # cpu-01, arm-02 (spot), api-03, gpu-04, gpu-05 (spot)
IDLE = np.zeros((5, 3), dtype=np.int64)


def job(
    workload: str = "batch",
    gpus: int = 0,
    preemptible: bool = False,
    deadline_s: float | None = None,
    cpu: float = 2.0,
) -> JobSpec:
    return JobSpec(
        "j",
        0.0,
        600.0,
        workload,
        cpu,
        4.0,
        gpu_count=gpus,
        preemptible=preemptible,
        deadline_s=deadline_s,
    )


# ---------------------------------------------------------------------------------- cost engine
@pytest.mark.parametrize(("price", "expected"), [(0.12, 0.893), (0.50, 0.667), (3.20, 0.238)])
def test_cost_engine__cost_efficiency_matches_the_documented_examples(
    price: float, expected: float
) -> None:
    """c = 1 / (1 + price / 1.0): $0.12 -> 0.893, $0.50 -> 0.667, $3.20 -> 0.238."""
    assert ce.cost_efficiency(price) == pytest.approx(expected, abs=5e-4)


def test_cost_engine__reliability_gates_spot_nodes_for_latency_critical_jobs_only() -> None:
    """LC on spot: 1 - p, or 0 above the threshold; non-LC on spot: 1 - 0.3 p; on-demand: 1."""
    spot = [False, True, True]
    prob = [0.0, 0.15, 0.5]
    np.testing.assert_allclose(
        ce.reliability(spot, prob, True, spot_threshold=0.3), [1.0, 0.85, 0.0]
    )
    np.testing.assert_allclose(
        ce.reliability(spot, prob, False, spot_threshold=0.3), [1.0, 0.955, 0.85]
    )
    assert ce.reliability([True], [0.3], True, spot_threshold=0.3)[0] == pytest.approx(
        0.7
    )  # gate is ">"


def test_cost_engine__sla_headroom_gates_latency_critical_jobs_and_floors_others() -> None:
    """LC: headroom, or 0 below the threshold; others: max(headroom, 0.1); util may pass 100."""
    util = [50.0, 85.0, 95.0, 130.0]
    np.testing.assert_allclose(ce.sla_headroom(util, True, sla_threshold=0.2), [0.5, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(
        ce.sla_headroom(util, False, sla_threshold=0.2), [0.5, 0.15, 0.1, 0.1]
    )
    assert ce.sla_headroom([80.0], True, sla_threshold=0.2)[0] == pytest.approx(0.2)  # gate is "<"


def test_cost_engine__prediction_factor_is_floored_at_one_half() -> None:
    """p = max(0.5, 1 - spike * weight * confidence); 1 without a prediction or for NaN."""
    assert ce.prediction_factor(None, None, 0.5) == 1.0
    np.testing.assert_allclose(
        ce.prediction_factor([0.4, 1.0, 1.0, np.nan], [0.5, 1.0, 1.0, 1.0], 0.5),
        [0.9, 0.5, 0.5, 1.0],
    )
    assert ce.prediction_factor([1.0], [1.0], 1.0)[0] == 0.5


def test_cost_engine__eta_is_the_product_and_zero_under_a_hard_gate() -> None:
    """eta = r c s p, and 0 exactly where a gate fires."""
    parts = ce.score_breakdown(
        is_spot=[False, True, False],
        interruption_prob=[0.0, 0.5, 0.0],
        price_per_hour_usd=[0.5, 0.1, 0.5],
        utilization_pct=[40.0, 10.0, 90.0],
        latency_critical=True,
        spike_probability=[0.5, 0.5, 0.5],
        confidence=[1.0, 1.0, 1.0],
    )
    expected_first = 1.0 * (1 / 1.5) * 0.6 * (1 - 0.5 * 0.5 * 1.0)
    np.testing.assert_allclose(parts["eta"], [expected_first, 0.0, 0.0])


@pytest.mark.parametrize("workload", ["latency-critical", "batch", "stream"])
def test_schedule__eta_equals_the_cost_engine(workload: str) -> None:
    """The scheduler's precomputed eta path equals the cost engine's eta on the candidates."""
    rng = np.random.default_rng(3)
    util = rng.uniform(0, 120, 5)
    spike, conf = rng.uniform(0, 1, 5), rng.uniform(0.1, 1, 5)
    the_job = job(workload)
    decision = schedule(
        the_job, FLEET5, np.ones(5, bool), util, IDLE, rng, spike_probability=spike, confidence=conf
    )
    strategy, nodes = decision.strategy, decision.candidates
    expected = ce.eta(
        is_spot=FLEET5.is_spot[nodes],
        interruption_prob=FLEET5.interruption_prob[nodes],
        price_per_hour_usd=FLEET5.price_per_hour_usd[nodes],
        utilization_pct=util[nodes],
        latency_critical=the_job.is_latency_critical,
        spike_probability=spike[nodes],
        confidence=conf[nodes],
        sla_threshold=strategy.sla_threshold,
        spike_weight=strategy.spike_weight,
        spot_threshold=strategy.spot_threshold,
    )
    np.testing.assert_allclose(decision.eta, expected, rtol=1e-12)


# ---------------------------------------------------------------------------------- router
@pytest.mark.parametrize(
    ("the_job", "strategy"),
    [
        (job("latency-critical", gpus=1), router.GPU_INFERENCE),
        (
            job("latency-critical", gpus=1, preemptible=True),
            router.GPU_INFERENCE,
        ),  # rule 1 before rule 4
        (job("latency-critical"), router.CPU_SERVING),
        (job("latency-critical", preemptible=True), router.CPU_SERVING),
        (job("batch", gpus=1), router.GPU_TRAINING),
        (job("batch", gpus=1, preemptible=True), router.PREEMPTIBLE_ACTOR),
        (job("batch", preemptible=True), router.PREEMPTIBLE_ACTOR),
        (job("stream", preemptible=True), router.PREEMPTIBLE_ACTOR),
        (job("stream"), router.STATEFUL_STREAM),
        (job("stream", gpus=1), router.STATEFUL_STREAM),
        (job("batch"), router.GENERIC),
    ],
)
def test_router__rules_in_reference_order(the_job: JobSpec, strategy: router.Strategy) -> None:
    """Each of the six rules, tried in order, first match wins."""
    assert router.route(the_job, now_s=0.0) == strategy


def test_router__strategy_table_matches_the_reference() -> None:
    """Instance, fast-path, thresholds and avoid lists of the six strategies, as the reference."""
    table = {
        s.name: (
            s.required_instance,
            s.use_fast_path,
            s.sla_threshold,
            s.spike_weight,
            s.spot_threshold,
            s.avoid_workload_types,
        )
        for s in router.STRATEGIES
    }
    assert table == {
        "gpu-inference": (("on-demand",), True, 0.30, 1.00, 0.0, ("batch",)),
        "cpu-serving": (("on-demand",), True, 0.25, 0.80, 0.0, ()),
        "gpu-training": (None, False, 0.05, 0.20, 0.50, ()),
        "preemptible-actor": (None, False, 0.05, 0.10, 0.70, ()),
        "stateful-stream": (("on-demand",), False, 0.15, 0.40, 0.0, ()),
        "generic": (None, False, 0.20, 0.50, 0.30, ()),
    }


def test_router__deadline_override_fires_under_60_seconds_of_simulated_time() -> None:
    """deadline - now < 60 s: fast path, SLA threshold + 0.1, avoid batch and stream."""
    urgent = router.route(
        job("batch", preemptible=True, deadline_s=1000.0), now_s=941.0
    )  # 59 s left
    assert urgent.name == "preemptible-actor" and urgent.use_fast_path
    assert urgent.sla_threshold == pytest.approx(0.15)
    assert urgent.avoid_workload_types == ("batch", "stream")
    assert router.route(job("batch", deadline_s=100.0), now_s=500.0).use_fast_path  # already missed
    assert (
        router.route(job("batch", deadline_s=1000.0), now_s=940.0) == router.GENERIC
    )  # exactly 60 s
    assert router.route(job("batch"), now_s=1e9) == router.GENERIC  # no deadline
    gpu = router.route(job("latency-critical", gpus=1, deadline_s=10.0), now_s=0.0)
    assert gpu.avoid_workload_types == ("batch", "stream")  # batch not repeated


def test_router__deadline_override_caps_the_sla_threshold() -> None:
    """The boosted threshold is min(threshold + 0.10, 0.90)."""
    strict = dataclasses.replace(router.GENERIC, sla_threshold=0.85)
    assert router.with_deadline_override(strict).sla_threshold == 0.90


# ---------------------------------------------------------------------------------- scheduler paths
def test_schedule__fast_path_is_a_deterministic_argmax_with_ties_to_the_first_node() -> None:
    """LC jobs: argmax eta for any generator, none drawn from it; ties go to the first node."""
    util = np.array([30.0, 0.0, 10.0, 0.0, 0.0])
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    picks = {
        schedule(
            job("latency-critical"),
            FLEET5,
            np.ones(5, bool),
            util,
            IDLE,
            np.random.default_rng(seed),
        ).node
        for seed in range(20)
    }
    decision = schedule(job("latency-critical"), FLEET5, np.ones(5, bool), util, IDLE, rng)
    assert picks == {decision.node} and decision.path == FAST_PATH
    assert decision.node == decision.candidates[np.argmax(decision.eta)]
    assert rng.bit_generator.state == state
    twins = FleetArrays.from_fleet(
        [default_fleet()[0]] * 1 + [dataclasses.replace(default_fleet()[0], node_id="b")]
    )
    tie = schedule(
        job("latency-critical"), twins, np.ones(2, bool), np.zeros(2), np.zeros((2, 3), int), rng
    )
    assert tie.node == 0


def test_schedule__router_filters_arch_and_instance_and_may_leave_no_candidate() -> None:
    """LC CPU jobs see on-demand CPU nodes only; an LC GPU job fitting only on spot gets none."""
    lc = schedule(
        job("latency-critical"),
        FLEET5,
        np.ones(5, bool),
        np.zeros(5),
        IDLE,
        np.random.default_rng(0),
    )
    assert lc.candidates.tolist() == [0, 2]
    only_spot_gpu = np.array([False, False, False, False, True])
    none = schedule(
        job("latency-critical", gpus=1),
        FLEET5,
        only_spot_gpu,
        np.zeros(5),
        IDLE,
        np.random.default_rng(0),
    )
    assert none.node is None and none.path == NO_CANDIDATE


def test_schedule__colocation_rule_and_all_zero_eta_fall_back_to_first_fit() -> None:
    """GPU inference avoids nodes running batch; all eta 0 -> first-fit on the candidates."""
    running = IDLE.copy()
    running[3, 1] = 1  # gpu-04 runs a batch job
    gpu_lc = job("latency-critical", gpus=1)
    both_gpus = np.array([False, False, False, True, True])
    gpu04_only_od = schedule(
        gpu_lc, FLEET5, both_gpus, np.zeros(5), running, np.random.default_rng(0)
    )
    assert gpu04_only_od.eta.tolist() == [0.0] and gpu04_only_od.path == EMPTY_ETA_FALLBACK
    assert gpu04_only_od.node == 3
    hot = np.full(5, 95.0)  # every LC candidate fails the headroom gate
    fallback = schedule(
        job("latency-critical"), FLEET5, np.ones(5, bool), hot, IDLE, np.random.default_rng(0)
    )
    assert fallback.path == EMPTY_ETA_FALLBACK and fallback.node == 0


def test_schedule__colony_failure_falls_back_to_first_fit() -> None:
    """A colony with no positive weight (NaN utilisation) falls back to the first candidate."""
    decision = schedule(
        job("batch"),
        FLEET5,
        np.array([False, True, True, True, True]),
        np.full(5, np.nan),
        IDLE,
        np.random.default_rng(0),
    )
    assert decision.path == COLONY_FAILED_FALLBACK and decision.node == 1


# ---------------------------------------------------------------------------------- colony
@pytest.mark.parametrize("seed", range(5))
def test_colony__single_job_picks_the_cheapest_sampled_node(seed: int) -> None:
    """The answer is the cheapest node the ants drew (of 200 nodes, not all get drawn)."""
    rng = np.random.default_rng(seed)
    eta, cost = rng.uniform(0.05, 1.0, 200), rng.uniform(0.01, 1.0, 200)
    result = run_colony(eta, cost, rng)
    assert 0 < result.sampled.sum() < 200
    assert result.cost == cost[result.choice] == cost[result.sampled].min()


def test_schedule__colony_picks_the_lowest_prorated_cost_among_sampled_nodes() -> None:
    """On the colony path the node is the sampled one with the least price x cpu / node cpu."""
    decision = schedule(
        job("batch", preemptible=True),
        FLEET5,
        np.ones(5, bool),
        np.full(5, 40.0),
        IDLE,
        np.random.default_rng(1),
    )
    assert decision.path == COLONY and decision.colony is not None
    nodes = decision.candidates[decision.eta > 0]
    cost = FLEET5.price_per_hour_usd[nodes] * 2.0 / FLEET5.cpu_cores[nodes]
    assert decision.node == nodes[np.argmin(np.where(decision.colony.sampled, cost, np.inf))]
    assert (
        default_fleet()[decision.node].node_id == "node-arm-02"
    )  # $0.12 / 16 cores is the cheapest


def test_colony__evaporates_deposits_and_stops_after_three_stagnant_iterations() -> None:
    """One node, cost 0.5: tau <- 0.9 tau + 2 per iteration; stagnant from the 2nd, stop at 4."""
    result = run_colony(np.array([1.0]), np.array([0.5]), np.random.default_rng(0))
    tau = 1.0
    for _ in range(4):
        tau = tau * 0.9 + 2.0
    assert result.iterations == 4 and result.tau[0] == pytest.approx(tau)


def test_colony__raises_without_a_positive_weight() -> None:
    """All eta 0: no ant can place the job."""
    with pytest.raises(ColonyFailedError):
        run_colony(np.zeros(3), np.ones(3), np.random.default_rng(0))


def test_node_pheromone__decays_deposits_and_clips() -> None:
    """Each placement: all x 0.9 within [0.01, 10], then +1 on the chosen node (max 10)."""
    pheromone = NodePheromone(3)
    pheromone.update(1)
    np.testing.assert_allclose(pheromone.values, [0.9, 1.9, 0.9])
    for _ in range(200):
        pheromone.update(1)
    np.testing.assert_allclose(pheromone.values, [0.01, 10.0, 0.01])
    pheromone.reset()
    np.testing.assert_allclose(pheromone.values, [1.0, 1.0, 1.0])


# ---------------------------------------------------------------------------------- agents
def _actions(name: str, initial: np.ndarray, seed: int = 0) -> list[int]:
    env = gym.make("aco_env/Fleet5-v0")
    obs, _ = env.reset(seed=seed)
    agent = make_agent(name, env, initial_pheromone=initial)
    agent.reset(seed=seed)
    actions = []
    while True:
        action, _ = agent.predict(obs)
        actions.append(int(action))
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return actions


def test_aco_agent__carried_pheromone_changes_decisions_only_when_fed_to_the_colony() -> None:
    """A skewed starting pheromone changes aco's episode but not aco-reference's (prior ignored)."""
    flat = np.ones(5)
    skewed = np.array([10.0, 0.01, 0.01, 10.0, 0.01])  # favour the expensive cpu-01 and gpu-04
    seeds = range(4)
    assert any(_actions("aco", flat, seed) != _actions("aco", skewed, seed) for seed in seeds)
    assert all(
        _actions("aco-reference", flat, seed) == _actions("aco-reference", skewed, seed)
        for seed in seeds
    )


def test_aco_agent__defers_when_the_strategy_leaves_no_candidate() -> None:
    """An LC GPU job fitting only on the spot GPU node is deferred (the reference: pending)."""
    env = gym.make("aco_env/Fleet5-v0")
    env.reset(seed=0)
    agent = make_agent("aco", env)
    agent.reset(seed=0)
    mask = np.array([False, False, False, False, True, True])
    view = dataclasses.replace(
        env.unwrapped.cluster_view(), job=job("latency-critical", gpus=1), action_mask=mask
    )
    assert agent.act(view) is None and agent.last_decision.path == NO_CANDIDATE
    np.testing.assert_allclose(agent.pheromone, np.ones(5))  # no placement, no update


def test_aco_agent__prediction_factor_at_the_current_tick_scales_eta(tmp_path: object) -> None:
    """aco-ema's eta is aco's times the prediction factor of the EMA row at tick_index."""
    from agents.predictor import PredictionCache

    env = gym.make("aco_env/Fleet5-v0")
    env.reset(seed=2)
    for _ in range(20):  # move past the cold start (10 ticks of 300 s)
        env.step(int(np.flatnonzero(env.unwrapped.action_masks())[0]))
    view = env.unwrapped.cluster_view()
    assert view.tick_index >= 10
    plain, ema = make_agent("aco", env), make_agent("aco-ema", env, cache=PredictionCache(None))
    plain.reset(seed=0)
    ema.reset(seed=0)
    plain.act(view)
    ema.act(view)
    spike, confidence = ema.predictions().at(view.tick_index)
    nodes = ema.last_decision.candidates
    factor = ce.prediction_factor(
        spike[nodes], confidence[nodes], ema.last_decision.strategy.spike_weight
    )
    np.testing.assert_allclose(ema.last_decision.eta, plain.last_decision.eta * factor)
    assert ema.predictions().n_ticks == 48  # 14,400 s horizon / 300 s ticks
