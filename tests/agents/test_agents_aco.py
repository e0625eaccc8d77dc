"""The ACO scheduler's paths, the colony, the carried pheromone and the aco agents."""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import aco_env  # noqa: F401  (registers the env ids)
from aco_env import ClusterView
from aco_env.hindsight import hindsight_of
from aco_env.registration import FLEET5_ID
from agents import make_agent
from agents.aco import AcoAgent
from agents.aco import cost_engine as ce
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
from agents.predictor import EmaPredictor, LstmPredictor, PredictionCache
from digital_twin import default_fleet
from tests.helpers import make_job as job

FLEET5 = FleetArrays.from_fleet(default_fleet())
"""cpu-01 ($0.48), arm-02 (spot, $0.12), api-03 ($0.18), gpu-04 ($3.20), gpu-05 (spot, $1.10)."""
IDLE = np.zeros((5, 3), dtype=np.int64)


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
    api = default_fleet()[2]
    twins = FleetArrays.from_fleet([default_fleet()[0], api, dataclasses.replace(api, node_id="api-copy")])
    util = np.array([0.0, 50.0, 50.0])  # cpu-01 would win; it is not feasible
    feasible = np.array([False, True, True])
    tie = schedule(job("latency-critical"), twins, feasible, util, np.zeros((3, 3), int), rng)
    assert tie.path == FAST_PATH and tie.eta[0] == tie.eta[1] > 0 and tie.node == 1


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
    gpu04_only_od = schedule(gpu_lc, FLEET5, both_gpus, np.zeros(5), running, np.random.default_rng(0))
    assert gpu04_only_od.eta.tolist() == [0.0] and gpu04_only_od.path == EMPTY_ETA_FALLBACK
    assert gpu04_only_od.node == 3
    hot = np.full(5, 95.0)  # every LC candidate fails the headroom gate
    fallback = schedule(job("latency-critical"), FLEET5, np.ones(5, bool), hot, IDLE, np.random.default_rng(0))
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
    assert default_fleet()[decision.node].node_id == "node-arm-02"  # $0.12 / 16 cores is the cheapest


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
    env = gym.make(FLEET5_ID)
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
    assert all(_actions("aco-reference", flat, seed) == _actions("aco-reference", skewed, seed) for seed in seeds)


def test_aco_agent__defers_when_the_strategy_leaves_no_candidate() -> None:
    """An LC GPU job fitting only on the spot GPU node is deferred (the reference: pending)."""
    env = gym.make(FLEET5_ID)
    env.reset(seed=0)
    agent = make_agent("aco", env)
    agent.reset(seed=0)
    mask = np.array([False, False, False, False, True, True])
    view = dataclasses.replace(env.unwrapped.cluster_view(), job=job("latency-critical", gpus=1), action_mask=mask)
    assert agent.act(view) is None and agent.last_decision.path == NO_CANDIDATE
    np.testing.assert_allclose(agent.pheromone, np.ones(5))  # no placement, no update


def test_aco_agent__prediction_factor_at_the_current_tick_scales_eta(tmp_path: object) -> None:
    """aco-ema's eta is aco's times the prediction factor of the EMA row at tick_index.

    The agent computes it online, from the ticks seen so far; the row is that of the EMA's
    table over the whole episode's trace (read here through hindsight, as no agent may).
    """
    from agents.predictor import EmaPredictor, PredictionCache

    env = gym.make(FLEET5_ID)
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
    assert view.grid.n_ticks == 48  # 14,400 s horizon / 300 s ticks
    whole_trace = hindsight_of(env).background_cpu_pct[:48]
    spike, confidence = EmaPredictor().predict_trace(whole_trace).at(view.tick_index)
    nodes = ema.last_decision.candidates
    factor = ce.prediction_factor(spike[nodes], confidence[nodes], ema.last_decision.strategy.spike_weight)
    np.testing.assert_allclose(ema.last_decision.eta, plain.last_decision.eta * factor)


TABLES = PredictionCache(None)
"""Whole-trace tables, computed once per trace and predictor."""


class WholeTraceAcoAgent(AcoAgent):
    """The ACO agent as it was before it decided online: predictions from the whole trace's table.

    Reads the future through hindsight, which only this test may do: the reference the online
    agent must match decision for decision.
    """

    def prediction(self, view: ClusterView) -> tuple[np.ndarray, np.ndarray]:
        series = hindsight_of(self.env).background_cpu_pct[: view.grid.n_ticks]
        table = TABLES.get(self.predictor, series, self.predictor_seed)
        return table.at(min(view.tick_index, table.n_ticks - 1))


def _episode(env: gym.Env, agent: AcoAgent, seed: int) -> tuple[list[int], float]:
    """The agent's actions over ``reset(seed)`` and the episode's objective."""
    obs, _ = env.reset(seed=seed)
    agent.reset(seed=seed)
    actions = []
    while True:
        action, _ = agent.predict(obs)
        actions.append(int(action))
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return actions, info["episode_metrics"]["objective_usd"]


@pytest.mark.parametrize(
    "make_predictor",
    [
        pytest.param(EmaPredictor, id="ema"),
        pytest.param(lambda: LstmPredictor(epochs=2), id="lstm", marks=pytest.mark.training),
    ],
)
def test_aco_agent__online_predictions_play_the_whole_trace_tables_episodes(make_predictor: Any) -> None:
    """Predicting from the ticks seen so far changes no decision and no objective."""
    env = gym.make(FLEET5_ID)
    online = AcoAgent(env, predictor=make_predictor(), cache=PredictionCache(None))
    whole_trace = WholeTraceAcoAgent(env, predictor=make_predictor())
    for seed in range(3):
        assert _episode(env, online, seed) == _episode(env, whole_trace, seed)
