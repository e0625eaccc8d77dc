"""Helpers of the training tests: a tiny training budget, fake run directories, counted scenario loads.

A fake model is a zip with only the ``data`` member SB3 writes: enough for ``check_model_file``
and for picking a resume point by step count, without training anything.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

import scenarios
from training.learning.config import TrainConfig

TINY = {
    "timesteps": 512,
    "n_steps": 256,
    "batch_size": 128,
    "n_epochs": 1,
    "eval_episodes": 0,
    "progress_bar": False,
    "checkpoint_every": -1,
    "curve_every": -1,
}
"""TrainConfig options of a run that trains in seconds: two rollouts, no evaluation, no checkpoints."""


def fake_model(path: Path, num_timesteps: int) -> Path:
    """Write a zip that passes ``check_model_file`` and says it was trained ``num_timesteps`` steps."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps({"num_timesteps": num_timesteps}))
    return path


def fake_run(folder: Path, config: TrainConfig | None = None, model_steps: int | None = 100) -> Path:
    """A run directory: ``config.json`` of ``config`` (default options) and a fake ``model.zip`` (unless None)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text((config or TrainConfig()).to_json())
    if model_steps is not None:
        fake_model(folder / "model.zip", model_steps)
    return folder


def count_scenario_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, every scenario file ``scenarios.load`` parses is appended to the returned list."""
    loads: list[str] = []
    parse = scenarios.load_scenario

    def counting(path: object, limits: object = None) -> object:
        loads.append(str(path))
        return parse(path, limits)  # type: ignore[arg-type]

    monkeypatch.setattr(scenarios, "load_scenario", counting)
    return loads
