"""check_train_config: the mistakes `aco-env train` reports before any work, in-process (the real CLI
path of each kind of error is in test_train_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
from tests.train_helpers import fake_run
from training.errors import UsageError
from training.learning.config import TrainConfig
from training.learning.train_checks import check_hyperparameters, check_train_config, given_options


def test_check_hyperparameters__keys_are_checked_against_the_chosen_algorithm() -> None:
    """clip_range is a PPO parameter, not a DQN one: the DQN error lists DQN's parameters."""
    check_hyperparameters("ppo", {"clip_range": 0.1})
    with pytest.raises(UsageError, match=r"--hp clip_range: DQN .*exploration_fraction"):
        check_hyperparameters("dqn", {"clip_range": 0.1})


def test_check_train_config__unknown_baseline_and_bc_with_dqn_are_usage_errors(tmp_path: Path) -> None:
    """An --eval-agents name nobody registered, and --bc-samples with dqn, fail before training."""
    with pytest.raises(UsageError, match=r"--eval-agents.*nosuch"):
        check_train_config(TrainConfig(logdir=tmp_path, eval_agents=("first-fit", "nosuch")))
    with pytest.raises(UsageError, match="--bc-samples"):
        check_train_config(TrainConfig(logdir=tmp_path, algo="dqn", bc_samples=10))


def test_check_train_config__resume_keeps_the_run_options(tmp_path: Path) -> None:
    """On resume the run's config.json supplies what was not given; a different run option is a usage error."""
    run_dir = fake_run(tmp_path / "run", TrainConfig(n_steps=128, seed=7, timesteps=3000, eval_episodes=2))
    asked = TrainConfig(resume=run_dir, eval_episodes=1)
    checked = check_train_config(asked, given_options(asked))
    config = checked.config
    assert checked.scenario.name == config.scenario == "fleet5-synthetic"
    assert (config.n_steps, config.seed, config.eval_episodes, config.resume) == (128, 7, 1, run_dir)
    assert config.timesteps == 3000  # not given: the run's planned total
    assert config.logdir == tmp_path
    conflicting = TrainConfig(resume=run_dir, seed=8)
    with pytest.raises(UsageError, match=r"--seed \(the run has 7\)"):
        check_train_config(conflicting, given_options(conflicting))


def test_check_train_config__suite_group_trains_on_the_suite_s_training_group_only(tmp_path: Path) -> None:
    """--suite-group train: the training group's scenarios, one fleet size; never a held-out task's scenario."""
    from training.suite.definition import load_suite

    suite = load_suite()
    group = [task.scenario for task in suite.group("train")]
    if any(scenarios.load(name).missing_data() for name in group):
        pytest.skip("trace data of a training task is absent")
    asked = TrainConfig(logdir=tmp_path, suite_group="train", eval_episodes=0)
    config = check_train_config(asked, given_options(asked)).config
    assert [config.scenario, *config.train_scenarios] == group
    assert not {task.scenario for task in suite.group("held-out")} & set(group)
    both = TrainConfig(logdir=tmp_path, suite_group="train", scenario="planted5")
    with pytest.raises(UsageError, match="--suite-group train sets --scenario; give one or the other"):
        check_train_config(both, given_options(both))


def test_check_train_config__fleets_of_several_sizes_need_the_set_policy_in_the_batched_env(tmp_path: Path) -> None:
    """--train-scenarios on another fleet size: the set policy in the batched env pads them; else a usage error."""
    mixed = {"logdir": tmp_path, "scenario": "fleet5-synthetic", "train_scenarios": ("toy3",), "eval_episodes": 0}
    checked = check_train_config(TrainConfig(**mixed))
    assert [len(task.fleet) for task in checked.train_scenarios] == [3]
    with pytest.raises(UsageError, match=r"--train-scenarios toy3: 3 nodes, but fleet5-synthetic has 5; a flat mlp"):
        check_train_config(TrainConfig(**mixed, algo="ppo"))
    with pytest.raises(UsageError, match="subprocess envs cannot pad their fleets into one batch"):
        check_train_config(TrainConfig(**mixed, vec_env="subprocess"))
