"""On planted episodes no agent scores below the planted optimum (below it: a bug in the agent or the certificate),
and the hindsight ``planted`` expert attains it, falling back to the cheapest valid node off its trajectory."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding

from aco_env.hindsight import planted_action_of, planted_of, scenario_of
from aco_env.registration import CLUSTER_SCHEDULING_ID, FLEET5_ID, PLANTED5_ID, PLANTED50_ID, PLANTED500_ID
from agents import agent_names, is_hindsight_agent, make_agent
from tests.helpers import online_agent_params, run_episode

HINDSIGHT = [name for name in agent_names() if is_hindsight_agent(name)]
ONLINE = [param for param in online_agent_params() if param.values[0] != "lookahead"]
"""Every registered online agent but the lookahead (about 10 s per planted episode: two seeds, below)."""
SEEDS = range(20)


def optimum_usd(env: gym.Env, seed: int) -> float:
    """The planted optimum of ``env``'s episode for ``seed`` (drawn as the env draws it)."""
    return scenario_of(env).planted_episode(seeding.np_random(seed)[0]).optimum_usd


@pytest.mark.parametrize("agent", ONLINE)
def test_online_agent__never_below_the_planted_optimum(agent: str) -> None:
    """Twenty planted5 episodes per agent: objective >= the planted optimum, and the agents are above it."""
    env = gym.make(PLANTED5_ID)
    player = make_agent(agent, env)
    gaps = []
    for seed in SEEDS:
        objective = run_episode(env, player, seed)["objective_usd"]
        optimum = optimum_usd(env, seed)
        assert objective >= optimum * (1.0 - 1e-9), f"{agent}, seed {seed}: {objective} < the planted {optimum}"
        gaps.append(objective / optimum - 1.0)
    assert np.mean(gaps) > 0.0  # the planted episodes are not solved by the heuristic for free


@pytest.mark.heavy
@pytest.mark.parametrize("agent", ["lookahead", "lookahead-clairvoyant"])
def test_lookahead__never_below_the_planted_optimum(agent: str) -> None:
    """The lookahead and its clairvoyant twin (hindsight, yet a policy: the optimum bounds it), two episodes."""
    env = gym.make(PLANTED5_ID)
    player = make_agent(agent, env)
    for seed in (0, 1):
        assert run_episode(env, player, seed)["objective_usd"] >= optimum_usd(env, seed) * (1.0 - 1e-9)


def test_registry__the_oracle_and_the_planted_expert_are_labelled_hindsight() -> None:
    """The agents that read the future say so; the heuristics and ACO do not."""
    assert {"oracle", "planted"} <= set(HINDSIGHT)
    assert not {"first-fit", "cheapest", "aco", "lookahead", "random"} & set(HINDSIGHT)


@pytest.mark.parametrize(("env_id", "seeds"), [(PLANTED5_ID, range(20)), (PLANTED50_ID, range(5))])
def test_planted_expert__attains_the_planted_optimum(env_id: str, seeds: range) -> None:
    """On every seed the expert's objective is the proven optimum (to float rounding), nothing rejected."""
    env = gym.make(env_id)
    expert = make_agent("planted", env)
    for seed in seeds:
        metrics = run_episode(env, expert, seed)
        assert metrics["objective_usd"] == pytest.approx(optimum_usd(env, seed), rel=1e-9), seed
        assert metrics["rejected_jobs"] == metrics["failed_jobs"] == 0


@pytest.mark.heavy
def test_planted_expert__attains_the_planted_optimum_on_500_nodes() -> None:
    """One planted500 episode (about 6,500 decisions)."""
    env = gym.make(PLANTED500_ID)
    metrics = run_episode(env, make_agent("planted", env), seed=0)
    assert metrics["objective_usd"] == pytest.approx(optimum_usd(env, 0), rel=1e-9)


def test_planted_expert__refuses_a_scenario_that_is_not_planted() -> None:
    """On the default scenario there is no schedule to follow: a ValueError naming the scenario."""
    with pytest.raises(ValueError, match=r"fleet5-synthetic.*not planted"):
        make_agent("planted", gym.make(FLEET5_ID))


def completion_usd(env: gym.Env, job_id: str, node: int) -> float:
    """The job's completion cost on ``node``, recomputed from the node's price: price x share x duration + QoS."""
    spec = planted_of(env).spec
    job = next(job for job in spec.jobs if job.job_id == job_id)
    fleet_node = spec.fleet[node]
    share = job.gpu_count / fleet_node.gpu_count if job.gpu_count else job.cpu_cores / fleet_node.cpu_cores
    qos = spec.settings.weights.qos_violation_usd if job.workload == "latency-critical" and fleet_node.is_spot else 0.0
    return fleet_node.price_per_hour_usd * share * job.duration_s / 3600.0 + qos


def sla_marks_now(env: gym.Env, node: int) -> float:
    """The latency-critical jobs that the current job on ``node`` puts over the SLA threshold (from the view)."""
    view = env.unwrapped.cluster_view()
    after = view.utilization_pct[node] + 100.0 * view.job.cpu_cores / view.fleet[node].cpu_cores
    if after <= view.settings.sla_threshold_pct:
        return 0.0
    return float(view.running_by_type[node, 0] + (view.job.workload == "latency-critical"))


def test_planted_expert__off_its_trajectory_takes_the_cheapest_valid_node_sla_included() -> None:
    """After first-fit play the expert takes the planted node only where it adds no SLA mark, else the valid
    node of least completion cost plus SLA penalty; the SLA term decides some of those choices."""
    env = gym.make(PLANTED5_ID)
    expert = make_agent("planted", env)
    sla_usd = scenario_of(env).settings.weights.sla_violation_usd
    fallbacks = decided_by_sla = 0
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        expert.reset(seed)
        terminated = truncated = False
        while not (terminated or truncated):
            mask = env.unwrapped.action_masks()
            action = int(expert.predict(obs)[0])
            planted = planted_action_of(env)
            waits = planted == len(mask) - 1  # the schedule has the job wait (a deferral)
            if mask[planted] and (waits or sla_marks_now(env, planted) == 0):
                assert action == planted
            elif mask[:-1].any():
                fallbacks += 1
                job_id = env.unwrapped.cluster_view().job.job_id
                valid = [int(node) for node in np.flatnonzero(mask[:-1])]
                completion = {node: completion_usd(env, job_id, node) for node in valid}
                cost = {node: completion[node] + sla_usd * sla_marks_now(env, node) for node in valid}
                assert cost[action] == pytest.approx(min(cost.values()), rel=1e-9)
                decided_by_sla += completion[action] > min(completion.values()) * (1.0 + 1e-9)
            else:
                assert action == len(mask) - 1  # defer
            obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(mask)[0]))  # first-fit moves on
    assert fallbacks > 0  # first-fit leaves the planted trajectory
    assert decided_by_sla > 0  # and puts nodes near the threshold, where the SLA term moves the choice


@pytest.mark.parametrize(("scenario", "seeds"), [("planted5-priced", range(10)), ("planted50-priced", range(2))])
def test_planted_expert__attains_the_priced_optimum_deferring_where_the_schedule_waits(
    scenario: str, seeds: range
) -> None:
    """On the priced family the expert defers a job until its planted start and attains the proven optimum."""
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario=scenario)
    expert = make_agent("planted", env)
    for seed in seeds:
        metrics = run_episode(env, expert, seed)
        assert metrics["objective_usd"] == pytest.approx(optimum_usd(env, seed), rel=1e-9), seed
        assert metrics["rejected_jobs"] == metrics["failed_jobs"] == 0
