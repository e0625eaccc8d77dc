"""The base install needs no torch: without the training extra the env, the heuristics, ACO and the
oracle work, and what needs the extra says how to get it (one line, exit 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs the CLI as if torch, SB3, sb3-contrib and TensorBoard were not installed.
WITHOUT_TRAIN_EXTRA = """
import importlib.abc, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "stable_baselines3", "sb3_contrib", "tensorboard"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from training.cli import main
sys.exit(main(sys.argv[1:]))
"""


def cli_without_extra(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", WITHOUT_TRAIN_EXTRA, *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def test_base_install__evaluates_heuristics_aco_and_the_oracle_without_torch(tmp_path: Path) -> None:
    """`aco-env evaluate` with first-fit, ACO and the oracle runs with the training extra absent."""
    result = cli_without_extra("evaluate", "--agents", "first-fit,aco,oracle", "--episodes", "1",
                               "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "results.json").exists()


def test_base_install__training_says_which_extra_to_install(tmp_path: Path) -> None:
    """`aco-env train` without torch: one line naming `aco-env[train]`, exit 1, no traceback."""
    result = cli_without_extra("train", "--timesteps", "100", "--logdir", str(tmp_path))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "pip install 'aco-env[train]'" in result.stderr
