"""The base install needs no torch: without the training extra the env, the heuristics, ACO and the
oracle work, and what needs the extra says how to get it (one line, exit 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.subprocess  # every test here starts a child process

# Runs the CLI as if the top-level modules named in argv[1] (comma-separated) were not installed.
WITHOUT_MODULES = """
import importlib.abc, sys

HIDDEN = set(sys.argv[1].split(","))

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from training.cli.main import main
sys.exit(main(sys.argv[2:]))
"""
TRAIN_EXTRA = "torch,stable_baselines3,sb3_contrib,tensorboard"
RAY_EXTRA = "ray"


def cli_without(hidden: str, *args: str) -> subprocess.CompletedProcess:
    """The CLI with the modules of ``hidden`` (comma-separated) missing."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", WITHOUT_MODULES, hidden, *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=HANG_GUARD_S)


def cli_without_extra(*args: str) -> subprocess.CompletedProcess:
    """The CLI without the training extra."""
    return cli_without(TRAIN_EXTRA, *args)


def test_base_install__evaluates_heuristics_aco_and_the_oracle_without_torch(tmp_path: Path) -> None:
    """`aco-env evaluate` with first-fit, ACO and the oracle runs with the training extra absent.

    The oracle plans with 10 branch-and-bound nodes and no bound: HiGHS runs, in a third of the CPU.
    """
    oracle = "oracle[node_limit=10,compute_bound=false,replayed_rounds=0]"
    result = cli_without_extra("evaluate", "--agents", f"first-fit,aco,{oracle}", "--episodes", "1",
                               "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "results.json").exists()


def test_base_install__training_says_which_extra_to_install(tmp_path: Path) -> None:
    """`aco-env train` without torch: one line naming `aco-env[train]`, exit 1, no traceback."""
    result = cli_without_extra("train", "--timesteps", "100", "--logdir", str(tmp_path))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "pip install 'aco-env[train]'" in result.stderr


def test_ray_extra__nothing_imports_ray_until_a_ray_backend_starts() -> None:
    """aco_env, agents, training, the CLI, the evaluator and every backend module import without loading ray."""
    modules = "aco_env, agents, training, training.cli.main, training.evaluation.evaluator, " \
        "training.execution.backend, training.execution.registry, training.execution.process_backend, " \
        "training.execution.ray_backend, training.cli.commands.evaluate, training.scale.sweeps.sweep, " \
        "training.scale.sweeps.space, training.scale.sweeps.trial, training.cli.commands.sweep"
    code = f"import sys, {modules}; print(sorted(m for m in sys.modules if m.split('.')[0] == 'ray'))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "[]", result.stdout


def test_ray_extra__without_ray_serial_evaluates_and_ray_says_which_extra_to_install(tmp_path: Path) -> None:
    """Without ray: --backend serial writes results.json; --backend ray is one line naming `aco-env[ray]`, exit 1."""
    served = cli_without(RAY_EXTRA, "evaluate", "--agents", "first-fit", "--episodes", "1", "--backend", "serial",
                         "--out", str(tmp_path / "serial"))
    assert served.returncode == 0, served.stderr
    assert (tmp_path / "serial" / "results.json").exists()
    result = cli_without(RAY_EXTRA, "evaluate", "--agents", "first-fit", "--episodes", "1", "--backend", "ray",
                         "--out", str(tmp_path / "ray"))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "pip install 'aco-env[ray]'" in result.stderr
    assert not (tmp_path / "ray" / "results.json").exists()


def test_ray_extra__rllib_without_ray_says_which_extra_to_install(tmp_path: Path) -> None:
    """`aco-env rllib` without ray: one line naming `aco-env[ray]`, exit 1, no run started; its modules load no ray."""
    result = cli_without(RAY_EXTRA, "rllib", "--iterations", "1", "--out", str(tmp_path / "run"))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "pip install 'aco-env[ray]'" in result.stderr
    assert not (tmp_path / "run" / "config.json").exists()
    code = "import sys, training.cli.commands.rllib, training.scale.rllib.ppo, training.scale.rllib.agent; " \
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'ray'))"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert imported.stdout.strip() == "[]", imported.stdout


def test_ray_extra__without_ray_sweep_says_which_extra_to_install(tmp_path: Path) -> None:
    """`aco-env sweep` without ray: one line naming `aco-env[ray]`, exit 1, no sweep folder."""
    result = cli_without(RAY_EXTRA, "sweep", "--grid", "learning_rate=1e-4,3e-4", "--out", str(tmp_path / "sweep"))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "pip install 'aco-env[ray]'" in result.stderr
    assert not (tmp_path / "sweep").exists()


def test_base_install__serving_says_which_extra_to_install() -> None:
    """`aco-env serve` without FastAPI: one line naming `aco-env[serve]`, exit 1; `import aco_env` loads none of it."""
    result = cli_without("fastapi,uvicorn,starlette,httpx", "serve", "--agent", "first-fit", "--port", "0")
    assert result.returncode == 1, result.stderr
    assert "aco-env[serve]" in result.stderr and "Traceback" not in result.stderr
    imported = subprocess.run([sys.executable, "-c", "import aco_env, agents, sys; print(sorted(m for m in sys.modules "
                               "if m.split('.')[0] in ('fastapi', 'uvicorn', 'starlette', 'httpx', 'serving')))"],
                              capture_output=True, text=True, cwd=ROOT, timeout=HANG_GUARD_S)  # fmt: skip
    assert imported.stdout.strip() == "[]", imported.stderr
