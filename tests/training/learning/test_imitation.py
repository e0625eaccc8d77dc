"""DAgger: the expert labels every state of the episodes played; the student is fitted to the labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import scenarios
from aco_env import ClusterSchedulingEnv
from agents import make_agent
from agents.set_policy import SetPolicy
from tests.train_helpers import TINY
from training.errors import UsageError
from training.evaluation.rollout import play_episode
from training.learning.config import TrainConfig
from training.learning.imitation import IMITATION_SEED_OFFSET, DaggerSettings, dagger
from training.learning.random_start_hour import episode_start_hour
from training.learning.train import train
from training.learning.train_checks import check_train_config


@pytest.mark.training
@pytest.mark.parametrize(("scenario_name", "expert"), [("fleet5-synthetic", "aco"), ("planted5", "planted")])
def test_dagger__labels_every_state_and_only_valid_actions(scenario_name: str, expert: str) -> None:
    """Iteration 0 replays the expert's own episode (as many labels as it has decisions); every label is valid.

    The planted expert (hindsight, on a planted scenario) labels the student's states too.
    """
    scenario = scenarios.load(scenario_name)
    model = MaskablePPO(SetPolicy, ClusterSchedulingEnv(scenario), seed=0, device="cpu")
    settings = DaggerSettings(expert=expert, iterations=2, episodes=1, epochs=2)
    labels, rounds = dagger(model, scenario, settings, seed=0, progress=False)
    env = ClusterSchedulingEnv(scenario)
    expert_episode = play_episode(env, make_agent(expert, env), IMITATION_SEED_OFFSET)
    assert rounds[0].new_labels == expert_episode.metrics["decisions"]
    assert [r.labels for r in rounds] == [rounds[0].new_labels, rounds[0].new_labels + rounds[1].new_labels]
    assert len(labels.actions) == rounds[-1].labels
    assert labels.masks[np.arange(len(labels.actions)), labels.actions].all()
    assert all(0.0 <= r.accuracy <= 1.0 and np.isfinite(r.loss) for r in rounds)


@pytest.mark.training
def test_dagger__fitting_raises_the_accuracy_on_the_expert_labels() -> None:
    """More passes over the same expert episodes fit them better than the untrained policy does."""
    scenario = scenarios.load("fleet5-synthetic")
    accuracies = []
    for epochs in (1, 30):
        model = MaskablePPO(SetPolicy, ClusterSchedulingEnv(scenario), seed=0, device="cpu")
        settings = DaggerSettings(expert="first-fit", iterations=1, episodes=3, epochs=epochs, learning_rate=3e-3)
        _, rounds = dagger(model, scenario, settings, seed=0, progress=False)
        accuracies.append(rounds[-1].accuracy)
    assert accuracies[1] > accuracies[0] and accuracies[1] > 0.9, accuracies


@pytest.mark.training
def test_train__dagger_algorithm_imitates_without_rl_and_logs_dagger_scalars(tmp_path: Path) -> None:
    """`--algo dagger`: the lookahead expert's labels fitted, no RL step, dagger/ scalars per iteration."""
    run_dir = train(TrainConfig(algo="dagger", logdir=tmp_path, **dict(TINY, dagger_iterations=2, dagger_episodes=1)))
    assert MaskablePPO.load(run_dir / "model.zip").num_timesteps == 0
    accumulator = EventAccumulator(str(run_dir / "tb_1"))
    accumulator.Reload()
    assert [event.step for event in accumulator.Scalars("dagger/accuracy")] == [0, 1]


def test_train_checks__refuse_dagger_for_an_algorithm_it_cannot_warm_start(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--dagger-iterations: DAgger warm-starts a MaskablePPO policy"):
        check_train_config(TrainConfig(logdir=tmp_path, algo="ppo", dagger_iterations=2))


@pytest.mark.parametrize(
    ("expert", "words"),
    [("oracle", "cannot label the states the student"), ("nosuch", "--dagger-expert")],
)
def test_train_checks__refuse_an_expert_that_cannot_label(tmp_path: Path, expert: str, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        check_train_config(TrainConfig(logdir=tmp_path, dagger_iterations=1, dagger_expert=expert))


@pytest.mark.training
def test_dagger__a_batched_round_labels_what_each_episode_alone_gives() -> None:
    """Iteration 0 (three episodes side by side, two scenarios): the labels of each episode played alone, in order."""
    tasks = [scenarios.load("fleet5-synthetic"), scenarios.load("fleet5-utility")]
    model = MaskablePPO(SetPolicy, ClusterSchedulingEnv(tasks[0]), seed=0, device="cpu")
    settings = DaggerSettings(expert="first-fit", iterations=1, episodes=3, epochs=1, random_start_hour=True)
    labels, _ = dagger(model, tasks, settings, seed=5, progress=False)
    expected_actions, expected_nodes = [], []
    for k in range(3):
        env = ClusterSchedulingEnv(tasks[k % 2])
        expert = make_agent("first-fit", env)
        seed = IMITATION_SEED_OFFSET + 5 + k
        observation, _ = env.reset(seed=seed, options={"start_hour": episode_start_hour(seed)})
        expert.reset(seed)
        while True:
            action = int(expert.predict(observation)[0])
            expected_actions.append(action)
            expected_nodes.append(observation["nodes"])
            observation, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
    assert labels.actions.tolist() == expected_actions
    assert np.array_equal(labels.observations["nodes"], np.stack(expected_nodes))


@pytest.mark.training
def test_dagger__fleets_of_two_sizes_label_in_the_padded_batch_s_actions() -> None:
    """Episodes on 3 and 5 nodes in one round: each expert labels its own episode, in the batch's actions.

    Every label is valid in its padded mask (a 3-node expert's defer is the batch's 5, never the
    padded node 3), and each episode gives its expert's decisions.
    """
    tasks = [scenarios.load("fleet5-synthetic"), scenarios.load("toy3")]
    model = MaskablePPO(SetPolicy, ClusterSchedulingEnv(tasks[0]), seed=0, device="cpu")
    settings = DaggerSettings(expert="first-fit", iterations=1, episodes=2, epochs=1)
    labels, rounds = dagger(model, tasks, settings, seed=0, progress=False)
    decisions = [
        play_episode(env, make_agent("first-fit", env), IMITATION_SEED_OFFSET + k).metrics["decisions"]
        for k, env in enumerate(ClusterSchedulingEnv(task) for task in tasks)
    ]
    assert rounds[0].new_labels == len(labels.actions) == sum(decisions)
    assert labels.masks.shape[1] == 6 and labels.masks[np.arange(len(labels.actions)), labels.actions].all()
    toy = slice(int(decisions[0]), None)  # the second episode's labels, on the 3-node fleet
    assert not np.isin(labels.actions[toy], [3, 4]).any()
