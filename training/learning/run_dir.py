"""Run directories: created atomically, saved into atomically, found again to resume.

A run directory ``LOGDIR/<scenario>__<algo>__<seed>__<YYYYmmdd-HHMMSS>[-k]/`` holds
``config.json`` (the options it was started with), ``model.zip``, ``checkpoints/model_<steps>_steps.zip``,
``tb_1/`` (TensorBoard events and ``progress.csv``), ``learning_curve.png`` (the ``eval/`` scalars
of the validation seeds, :mod:`training.learning.curves`), ``eval.json`` and ``eval/`` (the final
evaluation: results.json and plots, :mod:`training.evaluation.results_writer`) and, once resumed,
``resumes.jsonl`` (one line per resume: when, from which save, at how many steps, the new options).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.sb3_agent import ModelFileError, check_model_file
from digital_twin.atomic_files import atomic_open
from training.errors import DataError, UsageError
from training.learning.config import TrainConfig
from training.outputs import new_folder, timestamped

CONFIG = "config.json"
MODEL = "model.zip"
CHECKPOINTS = "checkpoints"
EVAL_JSON = "eval.json"
EVAL_DIR = "eval"
RESUME_LOG = "resumes.jsonl"

logger = logging.getLogger("training")


def create_run_dir(logdir: Path, stem: str) -> Path:
    """Create ``LOGDIR/STEM``, or ``STEM-2``, ... (:func:`training.outputs.new_folder`): never a run's folder twice."""
    return new_folder(logdir, stem)


def run_stem(scenario_name: str, algo: str, seed: int) -> str:
    """``<scenario>__<algo>__<seed>__<YYYYmmdd-HHMMSS>`` (local time)."""
    return timestamped(f"{scenario_name}__{algo}__{seed}")


def checkpoint_path(run_dir: Path, num_timesteps: int) -> Path:
    """``RUN/checkpoints/model_<num_timesteps>_steps.zip`` (SB3's CheckpointCallback names)."""
    return run_dir / CHECKPOINTS / f"model_{num_timesteps}_steps.zip"


def save_model(model: Any, path: Path) -> Path:
    """``model.save`` into a temporary file, then renamed: ``path`` is never a half-written zip.

    An interruption or a full disk during the save leaves the previous file (if any) and no
    temporary file (:func:`digital_twin.atomic_files.atomic_open`).
    """
    with atomic_open(path, "wb") as file:
        model.save(file)
    return path


def saved_steps(path: Path) -> int:
    """``num_timesteps`` of a saved SB3 model, read from the zip's ``data`` member (no unpickling).

    Raises:
        ModelFileError: The zip has no readable ``num_timesteps``.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            return int(json.loads(archive.read("data"))["num_timesteps"])
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"{path}: cannot read its step count ({type(exc).__name__}: {exc})") from None


@dataclass(frozen=True)
class ResumePoint:
    """Where a resumed run continues.

    Attributes:
        run_dir: The run directory (new events, checkpoints and the model go here).
        model: The save to load: the most trained of ``model.zip`` and the checkpoints.
        num_timesteps: Environment steps ``model`` was trained for (the resumed count starts here).
    """

    run_dir: Path
    model: Path
    num_timesteps: int


def find_resume_point(path: Path, option: str = "--resume") -> ResumePoint:
    """The run that ``path`` (a run directory, or a .zip in it) names, and its most trained save.

    Saves that are truncated or corrupt (a run killed while saving) are skipped with a warning;
    a named .zip must itself be complete. Among equally trained saves ``model.zip`` wins.

    Raises:
        DataError: ``path`` is missing, a broken .zip, or a run directory with nothing to resume.
        UsageError: ``path`` is neither a run directory nor a .zip inside one.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{option} {path}: no such run directory or model file")
    if path.is_file():
        try:
            check_model_file(path)
        except ModelFileError as exc:
            raise DataError(f"{option} {exc}") from None
        run_dir = next((folder for folder in (path.parent, path.parent.parent) if (folder / CONFIG).is_file()), None)
    else:
        run_dir = path if (path / CONFIG).is_file() else None
    if run_dir is None:
        raise UsageError(
            f"{option} {path}: not a run directory of aco-env train (no {CONFIG}); give RUN_DIR or a .zip inside it"
        )
    candidates = []
    for save in [run_dir / MODEL, *sorted((run_dir / CHECKPOINTS).glob("*.zip"))]:
        if not save.is_file():
            continue
        try:
            check_model_file(save)
            candidates.append((saved_steps(save), save.name == MODEL, save))
        except ModelFileError as exc:
            logger.warning("%s: skipped (%s)", save, exc)
    if not candidates:
        raise DataError(f"{option} {run_dir}: no complete {MODEL} or checkpoint to resume from")
    steps, _, model = max(candidates)
    return ResumePoint(run_dir, model, steps)


def record_resume(point: ResumePoint, options: dict[str, Any]) -> None:
    """Append one line to ``RUN/resumes.jsonl``: the time, the save resumed from, its steps, ``options``."""
    line = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "model": str(point.model.relative_to(point.run_dir)),
        "num_timesteps": point.num_timesteps,
        "options": options,
    }
    with open(point.run_dir / RESUME_LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps(line, default=str) + "\n")


def stored_config(run_dir: Path) -> TrainConfig:
    """The ``config.json`` a run was started with.

    Raises:
        DataError: It cannot be read or is not a TrainConfig.
    """
    path = run_dir / CONFIG
    try:
        return TrainConfig.from_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, TypeError) as exc:
        raise DataError(f"{path}: not a readable training config ({type(exc).__name__}: {exc})") from None


def resumed_config(point: ResumePoint, session: TrainConfig) -> TrainConfig:
    """The run's stored config with the :data:`~training.learning.config.RESUME_OPTIONS` of ``session``."""
    return dataclasses.replace(stored_config(point.run_dir).continued(session), logdir=point.run_dir.parent)
