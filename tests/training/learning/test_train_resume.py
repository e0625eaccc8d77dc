"""Resume and checkpoints: a resumed run continues in its own directory, its TensorBoard steps go
on without overlap, --timesteps is the total, the most trained save is picked, and checkpoints
come about every tenth of a run by default."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.train_helpers import TINY, fake_model, fake_run
from training.errors import DataError, UsageError
from training.learning.config import TrainConfig
from training.learning.run_dir import find_resume_point
from training.learning.train import train


@pytest.fixture(scope="module")
def resumed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run trained to 512 steps, then resumed with --timesteps 1024 (the total).

    A resume is a later command: it starts once the first run's events file's second is past, as
    one would. TensorBoard reads a folder's events files in name order, and two writers of one
    process in one second are named ``...9`` and ``...10``.
    """
    logdir = tmp_path_factory.mktemp("runs")
    run_dir = train(TrainConfig(logdir=logdir, **TINY))
    [events] = (run_dir / "tb_1").glob("events.out.tfevents.*")
    time.sleep(max(0.0, written_order(events)[0] + 1 - time.time()))
    assert train(TrainConfig(logdir=logdir, resume=run_dir, **dict(TINY, timesteps=1024))) == run_dir
    return run_dir


def event_steps(events_file: Path) -> dict[str, list[int]]:
    """The steps of every scalar tag in one TensorBoard events file."""
    accumulator = EventAccumulator(str(events_file))
    accumulator.Reload()
    return {tag: [event.step for event in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]}


def test_train_resume__trains_up_to_the_total_in_one_directory(resumed_run: Path) -> None:
    """--timesteps is the total: 512 more steps, the same directory, config.json kept, the resume logged."""
    from sb3_contrib import MaskablePPO

    assert [path.name for path in resumed_run.parent.iterdir()] == [resumed_run.name]
    assert MaskablePPO.load(resumed_run / "model.zip").num_timesteps == 1024
    assert json.loads((resumed_run / "config.json").read_text())["timesteps"] == 512
    [line] = (resumed_run / "resumes.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["num_timesteps"] == 512 and record["model"] == "model.zip"
    assert record["options"]["timesteps"] == 1024


def written_order(events_file: Path) -> tuple[int, int]:
    """``events.out.tfevents.<seconds>.<host>.<pid>.<writer uid>``: by the second, then the writer's number.

    As numbers, not text: two writers of one process in one second are ``...9`` and ``...10``.
    """
    fields = events_file.name.split(".")
    return int(fields[3]), int(fields[-1])


def test_train_resume__tensorboard_steps_continue_without_overlap(resumed_run: Path) -> None:
    """The resumed events go to the same tb_1 folder, every step after the 512 already trained."""
    first, second = sorted((resumed_run / "tb_1").glob("events.out.tfevents.*"), key=written_order)
    before, after = event_steps(first), event_steps(second)
    assert max(max(steps) for steps in before.values()) <= 512
    assert min(min(steps) for steps in after.values()) > 512
    merged = event_steps(resumed_run / "tb_1")["rollout/ep_rew_mean"]
    assert merged == sorted(set(merged)) and merged[-1] == 1024


def test_train_resume__progress_csv_keeps_the_first_rows(resumed_run: Path) -> None:
    """progress.csv is continued, not truncated: its step column runs 256, 512, 768, 1024."""
    with open(resumed_run / "tb_1" / "progress.csv", newline="") as file:
        steps = [int(row["time/total_timesteps"]) for row in csv.DictReader(file) if row["time/total_timesteps"]]
    assert steps == [256, 512, 768, 1024]


@pytest.mark.training
def test_train_resume__with_the_total_already_trained_trains_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Resuming a run that has --timesteps steps already says so and leaves the model as it was."""
    from sb3_contrib import MaskablePPO

    run_dir = train(TrainConfig(logdir=tmp_path, **dict(TINY, timesteps=256)))
    with caplog.at_level("INFO", logger="training"):
        train(TrainConfig(logdir=tmp_path, resume=run_dir, **dict(TINY, timesteps=200)))
    assert MaskablePPO.load(run_dir / "model.zip").num_timesteps == 256
    assert "nothing to train" in caplog.text


def test_find_resume_point__picks_the_most_trained_save(tmp_path: Path) -> None:
    """The newest of model.zip and the checkpoints by step count, whichever file the user named."""
    run_dir = fake_run(tmp_path / "run", model_steps=300)
    older = fake_model(run_dir / "checkpoints" / "model_200_steps.zip", 200)
    newest = fake_model(run_dir / "checkpoints" / "model_400_steps.zip", 400)
    for named in (run_dir, run_dir / "model.zip", older):
        point = find_resume_point(named)
        assert (point.run_dir, point.model, point.num_timesteps) == (run_dir, newest, 400)


def test_find_resume_point__skips_a_truncated_save(tmp_path: Path) -> None:
    """A checkpoint cut short (a run killed while saving) is passed over for the next most trained save."""
    run_dir = fake_run(tmp_path / "run", model_steps=300)
    broken = fake_model(run_dir / "checkpoints" / "model_400_steps.zip", 400)
    broken.write_bytes(broken.read_bytes()[:20])
    assert find_resume_point(run_dir).model == run_dir / "model.zip"


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda root: root / "missing", DataError, "no such run directory"),
        (lambda root: fake_model(root / "loose.zip", 10), UsageError, "not a run directory"),
        (lambda root: fake_run(root / "run", model_steps=None), DataError, "no complete model.zip or checkpoint"),
    ],
)
def test_find_resume_point__reports_what_cannot_be_resumed(
    tmp_path: Path, make: Callable[[Path], Path], error: type[Exception], message: str
) -> None:
    """A missing path, a zip outside a run, a run with nothing saved: each a one-line error."""
    with pytest.raises(error, match=message):
        find_resume_point(make(tmp_path))


@pytest.mark.training
def test_train_config__checkpoints_default_to_a_tenth_of_the_run(tmp_path: Path) -> None:
    """checkpoint_every 0 (the default) saves each time the step count passes ceil(timesteps / 10)."""
    assert TrainConfig(timesteps=20_000).checkpoint_interval == 2000
    assert TrainConfig(timesteps=20_000, checkpoint_every=3000).checkpoint_interval == 3000
    assert TrainConfig(checkpoint_every=-1).checkpoint_interval == 0
    run_dir = train(TrainConfig(logdir=tmp_path, **dict(TINY, checkpoint_every=0)))
    steps = sorted(int(path.name.split("_")[1]) for path in (run_dir / "checkpoints").glob("model_*_steps.zip"))
    assert steps == list(range(52, 513, 52))
