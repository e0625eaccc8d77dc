"""The training algorithms' table: every name, spec and model class derives from it, without torch at import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aco_env.registration import CLUSTER_SCHEDULING_ID
from agents.algorithms import ALGORITHMS, TrainingOptions
from agents.base import AgentSpecError
from agents.sb3_agent import parse_sb3_spec
from tests.paths import ROOT
from tests.train_helpers import fake_model
from training.learning.config import TrainConfig


@pytest.mark.subprocess
def test_algorithms__importing_the_table_and_sb3_specs_loads_no_torch() -> None:
    """agents.algorithms and agents.sb3_agent name their classes by import path: no torch, no SB3 at import."""
    code = (
        "import sys, agents.algorithms, agents.sb3_agent; "
        "print(sorted({'torch', 'stable_baselines3'} & sys.modules.keys()))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_algorithm__class_masking_and_options_agree_with_sb3(name: str) -> None:
    """The class loads; masked ones are MaskablePPO; every option the trainer passes is a constructor parameter."""
    pytest.importorskip("sb3_contrib", reason="SB3 comes with the train extra")
    algorithm = ALGORITHMS[name]
    cls = algorithm.load_class()
    assert cls.__name__ == algorithm.class_name
    assert algorithm.masked == (cls.__name__ == "MaskablePPO")
    assert algorithm.value_based == hasattr(cls("MultiInputPolicy", _toy_env(), device="cpu"), "q_net")
    options: TrainingOptions = vars(TrainConfig())
    assert set(algorithm.constructor_options(options)) <= set(algorithm.parameters())


def test_sb3_specs__every_algorithm_name_is_accepted_and_an_unknown_one_lists_them(tmp_path: Path) -> None:
    """sb3:ALGO:PATH takes each name of the table; an unknown name is refused with the table's names."""
    model = fake_model(tmp_path / "model.zip", 1)
    for name in ALGORITHMS:
        assert parse_sb3_spec(f"{name}:{model}").algo == name
    with pytest.raises(AgentSpecError, match=", ".join(ALGORITHMS)):
        parse_sb3_spec(f"nosuch:{model}")


@pytest.mark.subprocess
def test_train_cli__algo_choices_are_the_table() -> None:
    """`aco-env train --algo` offers exactly the table's names, in its order."""
    from training.cli.main import build_parser

    parser = build_parser()
    for name in ALGORITHMS:
        assert parser.parse_args(["train", "--algo", name]).config.algo == name
    help_text = subprocess.run(
        [sys.executable, "-m", "training.cli.main", "train", "--help"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout
    assert "{" + ",".join(ALGORITHMS) + "}" in help_text


def _toy_env() -> object:
    import gymnasium as gym

    import aco_env  # noqa: F401  (registers the ids)

    return gym.make(CLUSTER_SCHEDULING_ID, scenario="toy3")
