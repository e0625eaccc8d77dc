"""Ctrl-C and SIGTERM during `aco-env train`: the run saves model.zip and a checkpoint, flushes its
TensorBoard events, says where in one line and exits 130 (also with SubprocVecEnv workers).

The default suite runs Ctrl-C to the whole process group end to end and checks in-process that
SIGINT and SIGTERM request a stop and that env workers ignore both; the --n-envs 2 and SIGTERM
runs end to end are marked slow."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.hang_guard import HANG_GUARD_S
from tests.paths import ROOT
from training.learning.interrupt import StopRequest

STARTUP_TIMEOUT_S = HANG_GUARD_S
"""A bound on waiting for the first logged rollout (not a speed requirement: a loaded CI machine is slow)."""


def start_training(logdir: Path, *options: str) -> subprocess.Popen:
    """A real `aco-env train` with a budget it cannot finish, in its own process group (like a terminal job)."""
    command = [
        sys.executable,
        "-m",
        "training.cli.main",
        "train",
        "--timesteps",
        "100000000",
        "--n-steps",
        "64",
        "--batch-size",
        "64",
        "--n-epochs",
        "1",
        "--eval-episodes",
        "0",
        "--curve-every",
        "-1",
        "--logdir",
        str(logdir),
        *options,
    ]
    return subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def wait_until_trained(process: subprocess.Popen, logdir: Path) -> Path:
    """The run directory, once progress.csv holds a logged rollout (polled, with a bounded wait)."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        for progress in logdir.glob("*/tb_1/progress.csv"):
            if len(progress.read_text().splitlines()) >= 2:
                return progress.parents[1]
        if process.poll() is not None:
            pytest.fail(f"training ended before it was interrupted: {process.communicate()[1]}")
        time.sleep(0.2)
    process.kill()
    pytest.fail("no rollout was logged in time")


def stop(process: subprocess.Popen, signum: int, group: bool) -> tuple[int, str]:
    """Send ``signum`` (to the process group when ``group``, as Ctrl-C in a terminal does); exit code and stderr."""
    if group:
        os.killpg(process.pid, signum)
    else:
        os.kill(process.pid, signum)
    try:
        _, stderr = process.communicate(timeout=STARTUP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail("the run did not stop after the signal")
    return process.returncode, stderr


def assert_saved_and_reported(run_dir: Path, code: int, stderr: str) -> None:
    """Exit 130, one line naming model.zip and the checkpoint, both loadable at the same step count > 0."""
    from sb3_contrib import MaskablePPO

    assert code == 130, stderr
    assert "Traceback" not in stderr
    [line] = stderr.strip().splitlines()
    assert line.startswith("aco-env train: interrupted: stopped at "), line
    steps = MaskablePPO.load(run_dir / "model.zip").num_timesteps
    assert steps > 0
    checkpoint = run_dir / "checkpoints" / f"model_{steps}_steps.zip"
    assert str(run_dir / "model.zip") in line and str(checkpoint) in line and f"--resume {run_dir}" in line
    assert MaskablePPO.load(checkpoint).num_timesteps == steps
    events = EventAccumulator(str(run_dir / "tb_1"))
    events.Reload()
    assert "time/fps" in events.Tags()["scalars"]  # the events were flushed


def test_stop_request__first_signal_requests_a_stop_the_second_interrupts() -> None:
    """Inside StopRequest, SIGINT or SIGTERM sets the request; a second signal raises; the handlers come back."""
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in (signal.SIGINT, signal.SIGTERM):
        with StopRequest() as stop:
            signal.raise_signal(signum)
            assert stop.requested
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signum)
    assert {signum: signal.getsignal(signum) for signum in before} == before


def test_make_env_fn__workers_ignore_ctrl_c_and_sigterm() -> None:
    """A SubprocVecEnv worker's env factory ignores SIGINT and SIGTERM (the main process stops the run)."""
    import scenarios
    from training.learning.config import TrainConfig
    from training.learning.training_envs import make_env_fn

    config = TrainConfig()
    scenario = scenarios.load(config.scenario)
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        make_env_fn(config, scenario, rank=0, seed=0, in_worker=False)().close()
        assert {signum: signal.getsignal(signum) for signum in before} == before
        make_env_fn(config, scenario, rank=0, seed=0, in_worker=True)().close()
        assert signal.getsignal(signal.SIGINT) == signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


@pytest.mark.training
@pytest.mark.subprocess
def test_train_interrupt__ctrl_c_saves_the_model_and_exits_130(tmp_path: Path) -> None:
    """SIGINT to the process group (Ctrl-C in a terminal) mid-training: model and checkpoint saved, exit 130."""
    process = start_training(tmp_path)
    run_dir = wait_until_trained(process, tmp_path)
    assert_saved_and_reported(run_dir, *stop(process, signal.SIGINT, group=True))


@pytest.mark.subprocess
@pytest.mark.training
@pytest.mark.slow
def test_train_interrupt__sigterm_saves_the_model_and_exits_130(tmp_path: Path) -> None:
    """SIGTERM to the training process (`kill PID`) is handled as Ctrl-C."""
    process = start_training(tmp_path)
    run_dir = wait_until_trained(process, tmp_path)
    assert_saved_and_reported(run_dir, *stop(process, signal.SIGTERM, group=False))


@pytest.mark.subprocess
@pytest.mark.training
@pytest.mark.slow
def test_train_interrupt__ctrl_c_with_subprocess_envs_still_saves(tmp_path: Path) -> None:
    """With --n-envs 2 the SubprocVecEnv workers get the Ctrl-C too; they ignore it and the run saves."""
    process = start_training(tmp_path, "--n-envs", "2", "--vec-env", "subprocess")
    run_dir = wait_until_trained(process, tmp_path)
    assert_saved_and_reported(run_dir, *stop(process, signal.SIGINT, group=True))
