"""Imitation of the planted expert: behaviour cloning on an exported dataset, and the checks before training.

(DAgger with ``planted`` as expert: tests/training/learning/test_imitation.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from aco_env import ClusterSchedulingEnv
from agents.set_policy import SetPolicy
from tests.train_helpers import TINY
from training.errors import DataError, UsageError
from training.learning.bc import fit_policy, label_accuracy
from training.learning.config import TrainConfig
from training.learning.planted_dataset import collect_planted, save_planted_dataset
from training.learning.train import train
from training.learning.train_checks import check_train_config


@pytest.fixture(scope="module")
def planted5_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two planted5 episodes played by the expert (about 240 states), as an exported file."""
    dataset = collect_planted("planted5", episodes=2, seed=0, progress=False)
    return save_planted_dataset(dataset, tmp_path_factory.mktemp("planted") / "planted5.npz")


@pytest.mark.training
def test_bc__a_short_fit_on_an_exported_planted5_dataset_raises_the_label_accuracy(planted5_file: Path) -> None:
    """A few epochs of masked cross-entropy: the accuracy on the optimal labels rises well above the untrained one."""
    from training.learning.planted_dataset import load_planted_dataset

    labels = load_planted_dataset(planted5_file).labels()
    model = MaskablePPO(SetPolicy, ClusterSchedulingEnv("planted5"), seed=0, device="cpu")
    before = label_accuracy(model.policy, labels, masked=True)
    after = fit_policy(model.policy, labels, epochs=30, batch_size=64, learning_rate=3e-3, seed=0, masked=True)
    assert after["loss"] < before["loss"]
    assert after["accuracy"] > before["accuracy"] + 0.2, (before, after)


@pytest.mark.training
def test_train__bc_dataset_pretrains_on_the_file_and_logs_bc_scalars(planted5_file: Path, tmp_path: Path) -> None:
    """`--algo bc --bc-dataset FILE`: the file's labels are fitted (bc/samples = its rows), no placement labels."""
    config = TrainConfig(algo="bc", scenario="planted5", bc_dataset=planted5_file, bc_epochs=5, logdir=tmp_path, **TINY)
    run_dir = train(check_train_config(config).config)
    accumulator = EventAccumulator(str(run_dir / "tb_1"))
    accumulator.Reload()
    rows = len(np.load(planted5_file)["action"])
    assert accumulator.Scalars("bc/samples")[-1].value == rows
    assert 0.0 < accumulator.Scalars("bc/accuracy")[-1].value <= 1.0


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"dagger_iterations": 1, "dagger_expert": "planted"}, UsageError, ["--dagger-expert", "fleet5-synthetic"]),
        ({"eval_agents": ("planted",)}, UsageError, ["--eval-agents", "not planted", "planted5"]),
        ({"bc_dataset": Path("/no/such.npz")}, DataError, ["--bc-dataset /no/such.npz"]),
    ],
    ids=["dagger-expert", "eval-agents", "missing-file"],
)
def test_train_checks__the_planted_expert_and_datasets_are_checked_before_training(
    options: dict, error: type, words: list[str], tmp_path: Path
) -> None:
    """The planted expert on a scenario that is not planted, a missing dataset: one error naming the option."""
    with pytest.raises(error) as raised:
        check_train_config(TrainConfig(logdir=tmp_path, **options))
    assert all(word in str(raised.value) for word in words), raised.value


def test_train_checks__a_dataset_of_another_fleet_or_with_bc_samples_is_refused(planted5_file: Path) -> None:
    """planted5's file for planted50 (5 nodes, not 50); --bc-dataset with --bc-samples."""
    with pytest.raises(UsageError, match=r"observations are \(6,\), the env of planted50 has \(51,\).*of planted5;"):
        check_train_config(TrainConfig(scenario="planted50", bc_dataset=planted5_file))
    with pytest.raises(UsageError, match="give one"):
        check_train_config(TrainConfig(scenario="planted5", bc_dataset=planted5_file, bc_samples=10))
    assert check_train_config(TrainConfig(scenario="planted5", bc_dataset=planted5_file)).scenario.planted
