"""`aco-env train` / `aco-env run` through the real CLI: a user's mistake is one line and an exit
code before any work starts; --episodes 0 trains only; progress off a terminal is one line per stage."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.train_helpers import count_scenario_loads, fake_run
from training.learning.main_job import RUN_TRAIN_SCENARIOS

pytestmark = pytest.mark.subprocess  # every test here starts a child process


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "training.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=None if env is None else {**os.environ, **env},
    )


def assert_one_line_error(result: subprocess.CompletedProcess, command: str, code: int, *words: str) -> None:
    """Exit ``code``, no traceback, and one error line naming ``words`` (after argparse's usage, if any)."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[-1].startswith(f"aco-env {command}: error:"), result.stderr
    assert all(word in lines[-1] for word in words), lines[-1]
    assert [line for line in lines if not line.startswith(("usage:", " "))] == [lines[-1]], result.stderr


ARGPARSE_ERRORS = [
    (["train", "--timesteps", "-5"], "--timesteps", "must be >= 0"),
    (["train", "--n-envs", "0"], "--n-envs", "must be >= 1"),
    (["train", "--hp", "clip_range"], "--hp", "KEY=VALUE"),
    (["run", "--episodes", "-1"], "--episodes", "must be >= 0"),
]


@pytest.mark.parametrize(
    ("args", "words"),
    [(args, words) for args, *words in ARGPARSE_ERRORS],
    ids=[" ".join(args) for args, *_ in ARGPARSE_ERRORS],
)
def test_train_cli__bad_option_values_are_usage_errors(
    args: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A count out of range or --hp without '=': argparse's exit 2 and one error line (in-process: no startup cost)."""
    from training.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(args)
    result = subprocess.CompletedProcess(args, exit_info.value.code, "", capsys.readouterr().err)
    assert_one_line_error(result, args[0], 2, *words)


USAGE_ERRORS = [
    (["train", "--hp", "nosuch=1"], "--hp nosuch", "MaskablePPO", "clip_range"),
    (["train", "--scenario", "nosuch"], "--scenario:", "'nosuch'", "fleet5-synthetic"),
]


@pytest.mark.parametrize(
    ("args", "words"),
    [(args, words) for args, *words in USAGE_ERRORS],
    ids=[" ".join(args) for args, *_ in USAGE_ERRORS],
)
def test_train_cli__usage_errors_are_one_line_exit_2(args: list[str], words: list[str], tmp_path: Path) -> None:
    """An --hp key the algorithm does not take, an unknown scenario: exit 2, one line, no run directory."""
    result = cli(*args, "--logdir", str(tmp_path / "runs"))
    assert_one_line_error(result, args[0], 2, *words)
    assert not list(tmp_path.glob("runs/*"))


def corrupt_checkpoint(root: Path) -> Path:
    """A checkpoint zip cut short, inside a run directory."""
    path = fake_run(root / "run") / "checkpoints" / "model_200_steps.zip"
    path.parent.mkdir()
    path.write_bytes(b"PK\x03\x04 cut short")
    return path


def under_a_file(root: Path) -> Path:
    """A folder that cannot be created: its parent is a file."""
    (root / "a-file").write_text("")
    return root / "a-file" / "runs"


DATA_ERRORS = [
    ("--resume", lambda root: root / "missing", ["no such run directory"]),
    ("--resume", corrupt_checkpoint, ["model_200_steps.zip", "truncated or corrupt"]),
    ("--logdir", under_a_file, ["--logdir", "cannot write there"]),
]


@pytest.mark.parametrize(("option", "make", "words"), DATA_ERRORS, ids=["resume-missing", "resume-corrupt", "logdir"])
def test_train_cli__data_errors_are_one_line_exit_1(
    option: str, make: Callable[[Path], Path], words: list[str], tmp_path: Path
) -> None:
    """--resume of a missing path or a corrupt zip, a --logdir that cannot be written: exit 1, one line."""
    assert_one_line_error(cli("train", option, str(make(tmp_path))), "train", 1, *words)


def test_train_cli__missing_scenario_data_fails_at_once(tmp_path: Path) -> None:
    """A scenario whose trace is absent: exit 1 naming the variable to set, before training."""
    result = cli(
        "train",
        "--scenario",
        "hpc-swf",
        "--logdir",
        str(tmp_path / "runs"),
        env={"ACO_ENV_TRACES": str(tmp_path / "no-traces")},
    )
    assert_one_line_error(result, "train", 1, "--scenario hpc-swf", "not present")
    assert not list(tmp_path.glob("runs/*"))


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_train_cli__read_only_logdir_fails_at_once(tmp_path: Path) -> None:
    """A read-only --logdir is reported before training (not after it, when the model is saved)."""
    logdir = tmp_path / "runs"
    logdir.mkdir(mode=0o555)
    assert_one_line_error(cli("train", "--logdir", str(logdir)), "train", 1, "--logdir", "cannot write")


def test_run_cli__zero_episodes_trains_without_evaluating(tmp_path: Path) -> None:
    """`aco-env run --episodes 0` trains, saves the model, and skips the evaluation and leaderboard."""
    result = cli("run", "--episodes", "0", "--timesteps", "0", "--dagger-iterations", "0", "--logdir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    [run_dir] = tmp_path.iterdir()
    assert (run_dir / "model.zip").is_file() and not (run_dir / "eval.json").exists()
    assert "no evaluation (--episodes 0)" in result.stdout and f"run directory: {run_dir}" in result.stdout


def test_train_cli__progress_off_a_terminal_is_one_line_per_stage(tmp_path: Path) -> None:
    """With stderr not a terminal: no carriage returns, one summary line for BC labels, training and evaluation."""
    result = cli(
        "train",
        "--timesteps",
        "256",
        "--n-steps",
        "128",
        "--batch-size",
        "64",
        "--n-epochs",
        "1",
        "--bc-samples",
        "20",
        "--bc-epochs",
        "1",
        "--eval-episodes",
        "1",
        "--eval-agents",
        "first-fit",
        "--logdir",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr
    lines = result.stderr.splitlines()
    assert any(line.startswith("BC labels: 20 states in") for line in lines), result.stderr
    assert any(line.startswith("training: 256 steps in") for line in lines), result.stderr
    assert any(line.startswith("evaluate") for line in lines), result.stderr


@pytest.mark.training
def test_train_command__reads_the_scenario_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks, run directory name, training env, BC labels and both evaluations share one loaded scenario."""
    from training.cli.main import build_parser

    loads = count_scenario_loads(monkeypatch)
    args = build_parser().parse_args(
        [
            "train",
            "--timesteps",
            "128",
            "--n-steps",
            "64",
            "--batch-size",
            "64",
            "--n-epochs",
            "1",
            "--bc-samples",
            "5",
            "--bc-epochs",
            "1",
            "--eval-episodes",
            "1",
            "--eval-agents",
            "first-fit,cheapest",
            "--no-progress-bar",
            "--logdir",
            str(tmp_path),
        ]
    )
    assert args._run(args) == 0
    [run_dir] = tmp_path.iterdir()
    assert run_dir.name.startswith("fleet5-synthetic__maskable-ppo__0__") and (run_dir / "eval.json").is_file()
    assert len(loads) == 1, loads


def test_run_command__reads_the_scenario_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`aco-env run` checks and trains on each of its scenarios loaded once (the default and its training variant)."""
    from training.cli.main import build_parser

    loads = count_scenario_loads(monkeypatch)
    command = ["run", "--timesteps", "0", "--episodes", "0", "--dagger-iterations", "0", "--logdir", str(tmp_path)]
    args = build_parser().parse_args(command)
    assert args._run(args) == 0
    assert sorted(Path(p).stem for p in loads) == sorted(["fleet5-synthetic", *RUN_TRAIN_SCENARIOS]), loads


def test_run_command__a_planted_scenario_shows_the_planted_optimum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`aco-env run --scenario planted5` (no training, one test episode): the optimum and every agent's gap to it."""
    from training.cli.main import build_parser

    command = ["run", "--scenario", "planted5", "--timesteps", "0", "--episodes", "1", "--dagger-iterations", "0"]
    args = build_parser().parse_args([*command, "--logdir", str(tmp_path)])
    assert args._run(args) == 0
    out = capsys.readouterr().out
    assert "planted optimum (mean): 4.4667 USD, proven by construction" in out
    table = out[out.index("planted5: 1 episode(s)") :].splitlines()
    assert all(column in table[1] for column in ("gap/opt", "agree", "on-path"))
    agents = [line.split()[0] for line in table[2:8]]
    assert set(agents) == {"maskable-ppo", "maskable-ppo-sampled", "first-fit", "cheapest", "aco", "random"}
    assert "seeds 100000..100000 (test seeds)" in table[0]  # no oracle on make run's leaderboard: docs/results.md
