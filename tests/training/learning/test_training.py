"""Training: tiny runs of each algorithm write a run directory with the TensorBoard scalars;
resume continues the same run; the same seed gives the same first update. (More on resume:
test_train_resume.py; the CLI's errors, interruption and output: test_train_cli.py,
test_train_interrupt.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.train_helpers import TINY
from training.learning.bc import collect_labels
from training.learning.config import TrainConfig
from training.learning.train import train


def scalar_tags(run_dir: Path) -> set[str]:
    accumulator = EventAccumulator(str(run_dir / "tb_1"))
    accumulator.Reload()
    return set(accumulator.Tags()["scalars"])


@pytest.mark.training
@pytest.mark.parametrize("algo", ["maskable-ppo", "ppo", "dqn", "a2c"])
def test_train__tiny_run_writes_the_run_directory_and_tensorboard(algo: str, tmp_path: Path) -> None:
    """Each algorithm writes config, model and TensorBoard events with rollout/ and scheduling/ scalars."""
    options = dict(TINY, timesteps=1024 if algo == "dqn" else 512)
    run_dir = train(TrainConfig(algo=algo, logdir=tmp_path, **options))
    assert run_dir.name.startswith(f"fleet5-synthetic__{algo}__0__")
    assert json.loads((run_dir / "config.json").read_text())["algo"] == algo
    assert (run_dir / "model.zip").exists()
    tags = scalar_tags(run_dir)
    assert {"rollout/ep_rew_mean", "scheduling/objective_usd", "scheduling/cost_usd"} <= tags, sorted(tags)


@pytest.mark.training
def test_train__fleets_of_two_sizes_train_one_set_policy_that_plays_both(tmp_path: Path) -> None:
    """DAgger and PPO over a 3-node and a 5-node scenario (padded into one batch); the model plays each fleet.

    The run's own evaluation plays the model in training (its space the 5-node batch's) on the
    3-node scenario, its observations padded; the saved model, loaded, plays either fleet.
    """
    from aco_env import ClusterSchedulingEnv
    from agents.sb3_agent import load_sb3_agent
    from training.evaluation.rollout import play_episode

    config = TrainConfig(scenario="toy3", train_scenarios=("fleet5-synthetic",), n_envs=2, logdir=tmp_path,
                         **dict(TINY, dagger_iterations=1, dagger_episodes=2, eval_episodes=1))  # fmt: skip
    run_dir = train(config)
    evaluated = json.loads((run_dir / "eval.json").read_text())["agents"]["maskable-ppo"]["mean"]
    assert evaluated["decisions"] > 0 and evaluated["invalid_actions"] == 0
    for name in ("fleet5-synthetic", "toy3"):
        env = ClusterSchedulingEnv(name)
        episode = play_episode(env, load_sb3_agent(f"maskable-ppo:{run_dir / 'model.zip'}", env), seed=1)
        assert episode.metrics["invalid_actions"] == 0 and episode.metrics["decisions"] > 0


@pytest.mark.training
def test_train__evaluation_writes_eval_json_and_eval_scalars(tmp_path: Path) -> None:
    """eval.json holds the trained agent (argmax and sampled) and the baselines on the same seeds."""
    run_dir = train(TrainConfig(logdir=tmp_path, **dict(TINY, eval_episodes=2), eval_agents=("first-fit",)))
    document = json.loads((run_dir / "eval.json").read_text())
    assert set(document["agents"]) == {"maskable-ppo", "maskable-ppo-sampled", "first-fit"}
    seeds = [[e["seed"] for e in a["per_episode"]] for a in document["agents"].values()]
    assert seeds[0] == seeds[1] == seeds[2] == [100_000, 100_001]  # the protocol's first test seeds
    assert document["split"] == "test" and document["paired"]["reference"] == "maskable-ppo"
    assert "test/first-fit/objective_usd" in scalar_tags(run_dir)


@pytest.mark.training
def test_train__resume_continues_the_same_run(tmp_path: Path) -> None:
    """Resuming from a checkpoint in a run trains on in that directory up to --timesteps in all."""
    from sb3_contrib import MaskablePPO

    first = train(TrainConfig(logdir=tmp_path, **dict(TINY, checkpoint_every=256)))
    checkpoints = sorted((first / "checkpoints").glob("*.zip"))
    assert [MaskablePPO.load(path).num_timesteps for path in checkpoints] == [256, 512]
    resumed = train(TrainConfig(logdir=tmp_path, resume=checkpoints[0], **dict(TINY, timesteps=1024)))
    assert resumed == first and list(tmp_path.iterdir()) == [first]
    assert MaskablePPO.load(first / "model.zip").num_timesteps == 1024  # from the newest save (512), not 256


@pytest.mark.training
def test_train__same_seed_gives_the_same_first_update(tmp_path: Path) -> None:
    """Two runs with one seed end their first update with identical weights; another seed differs."""
    from sb3_contrib import MaskablePPO

    def weights(seed: int, folder: str) -> dict[str, torch.Tensor]:
        run_dir = train(TrainConfig(seed=seed, logdir=tmp_path / folder, **dict(TINY, timesteps=256)))
        return MaskablePPO.load(run_dir / "model.zip").policy.state_dict()

    one, two, other = weights(3, "a"), weights(3, "b"), weights(4, "c")
    assert all(torch.equal(one[k], two[k]) for k in one)
    assert not all(torch.equal(one[k], other[k]) for k in one)


@pytest.mark.training
def test_train__a_learning_curve_changes_nothing_learned(tmp_path: Path) -> None:
    """The curve's validation episodes seed torch's generator (SB3Agent.reset): a run with a curve point
    before and between its updates still ends with the weights of the same run without one."""
    from sb3_contrib import MaskablePPO

    def weights(folder: str, **options: Any) -> dict[str, torch.Tensor]:
        run_dir = train(TrainConfig(seed=3, logdir=tmp_path / folder, **{**TINY, "n_envs": 2, **options}))
        return MaskablePPO.load(run_dir / "model.zip").policy.state_dict()

    plain, with_curve = weights("plain"), weights("curve", curve_every=256, curve_episodes=1, curve_baselines=())
    assert all(torch.equal(plain[k], with_curve[k]) for k in plain)


@pytest.mark.training
def test_behaviour_cloning__fits_the_placement_labels(tmp_path: Path) -> None:
    """The bc algorithm fits the one-step env's labels better than the best constant guess and logs bc/ scalars."""
    config = TrainConfig(algo="bc", bc_samples=300, bc_epochs=40, logdir=tmp_path, **TINY)
    run_dir = train(config)
    tags = scalar_tags(run_dir)
    assert {"bc/loss", "bc/accuracy"} <= tags
    accumulator = EventAccumulator(str(run_dir / "tb_1"))
    accumulator.Reload()
    accuracy = accumulator.Scalars("bc/accuracy")[-1].value
    labels = collect_labels(config.scenario, config.bc_samples, seed=config.seed, progress=False)
    majority = np.bincount(labels.actions).max() / len(labels.actions)  # always the most frequent label
    assert accuracy > majority + 0.05, (accuracy, majority)


@pytest.mark.subprocess
def test_train_cli__help_lists_every_config_field() -> None:
    """`aco-env train --help` is generated from TrainConfig, one option per field with its docstring."""
    import dataclasses
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "training.cli.main", "train", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for f in dataclasses.fields(TrainConfig):
        assert ("--hp" if f.name == "hyperparameters" else "--" + f.name.replace("_", "-")) in out
    assert "Rollout length per env" in out
