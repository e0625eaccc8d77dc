"""One trial of ``aco-env sweep``: an ``aco-env train`` run, its learning curve reported to Ray Tune.

:func:`run_trial` is the Tune function trainable. It trains with :func:`training.learning.train.train`
into ``SWEEP_DIR/runs/<trial id>__<swept values>/``, a run directory exactly as ``aco-env
train`` writes it, and reports each learning-curve point as it is logged: the trained policy's
mean objective (USD, lower is better) on the validation seeds ``5000 + seed ...``
(:mod:`training.learning.curves`), never on the test seeds ``100000 + seed ...``
(:mod:`training.evaluation.protocol`). Each point is
reported as the curve logs it (``train``'s ``on_curve_point``), so a scheduler such as ASHA can
stop the trial at a point. When the curve
has no point at the final step, the final model is scored on the same validation seeds and
reported as the last point. The reported metrics are ``objective_usd``, ``rejected_jobs``,
``timesteps`` (the step count of the point) and ``run_dir``.

A finished trial leaves ``SWEEP_DIR/trials/<trial id>.json`` (its points and run directory).
Run again (Tune restarts a trial it had not yet recorded as finished when the sweep was
killed), a trial with that record reports the recorded points and trains nothing; an
unfinished one continues its run from the run's latest save (``aco-env train --resume``), or
starts it again in the same directory when there is none. Either way each trial has exactly one
run directory.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from digital_twin.atomic_files import write_text
from digital_twin.scenario import Scenario
from training.errors import DataError, UsageError
from training.learning.config import TrainConfig
from training.scale.sweeps.space import TRIAL_DEFAULTS, trial_config

RUNS_DIR = "runs"
"""``SWEEP_DIR/runs/``: one run directory per trial."""
TRIALS_DIR = "trials"
"""``SWEEP_DIR/trials/<trial id>.json``: the record of each finished trial."""
METRIC = "objective_usd"
"""The metric trials report and the sweep minimises: mean episode objective (USD) on the validation seeds."""
NAME_LIMIT = 120
"""Longest run directory name (the swept values are cut, the trial id is kept)."""

Point = dict[str, float]
"""One reported point: ``objective_usd``, ``rejected_jobs`` (means over the validation episodes), ``timesteps``."""


def run_trial(params: Mapping[str, Any], base: Mapping[str, Any], scenarios: Mapping[str, Scenario],
              sweep_dir: str) -> None:
    """Tune's function trainable: train (or continue, or replay) one trial and report its curve.

    Args:
        params: The swept values of this trial (Tune's config): TrainConfig keys, ``hp.NAME``, ``seed``.
        base: The options every trial shares (the sweep spec's ``base``).
        scenarios: Every scenario the sweep uses, loaded by the command (``TrainConfig.scenario`` -> it),
            so trials on other nodes need no trace files.
        sweep_dir: The sweep's folder (absolute: Tune runs trials in folders of its own).
    """
    from ray import tune

    trial_id = tune.get_context().get_trial_id()
    root = Path(sweep_dir)
    run_dir = root / RUNS_DIR / run_name(trial_id, params)
    record = root / TRIALS_DIR / f"{trial_id}.json"

    def report(point: Point) -> None:
        tune.report({**point, "run_dir": str(run_dir)})

    if record.is_file():  # finished before the sweep was stopped: nothing to train
        for point in json.loads(record.read_text(encoding="utf-8"))["points"]:
            report(point)
        return
    config = dataclasses.replace(trial_config({**TRIAL_DEFAULTS, **base}, params), logdir=run_dir.parent)
    config = continue_or_restart(config, run_dir)
    points, reported = train_and_report(config, scenarios[config.scenario], run_dir, report)
    write_record(record, {"trial_id": trial_id, "params": dict(params), "run_dir": str(run_dir), "points": points})
    # The final point goes to Tune after the record: a scheduler that stops the trial at it (ASHA at
    # its last rung or max_t) stops a finished trial, whose model and record are saved.
    for point in points[reported:]:
        report(point)


def run_name(trial_id: str, params: Mapping[str, Any]) -> str:
    """``<trial id>__<key>=<value>,...``, the swept values in a name any file system takes.

    >>> run_name("a1b2c_00003", {"learning_rate": 0.0001, "net_arch": [64, 64], "seed": 1})
    'a1b2c_00003__learning_rate=0.0001,net_arch=64-64,seed=1'
    """
    values = ",".join(f"{key}={_short(value)}" for key, value in params.items())
    name = re.sub(r"[^A-Za-z0-9._=,+-]", "_", f"{trial_id}__{values}")
    return name[:NAME_LIMIT]


def continue_or_restart(config: TrainConfig, run_dir: Path) -> TrainConfig:
    """``config`` resuming ``run_dir`` when a save of it is there; otherwise ``config`` with ``run_dir`` empty.

    A trial interrupted with the sweep continues from its latest complete save; one stopped before
    its first save starts over (its partial events and config are removed).
    """
    if not run_dir.exists():
        return config
    from training.learning.run_dir import find_resume_point

    try:
        find_resume_point(run_dir)
    except (DataError, UsageError):
        shutil.rmtree(run_dir)
        return config
    return dataclasses.replace(config, resume=run_dir)


def train_and_report(config: TrainConfig, scenario: Scenario, run_dir: Path,
                     report: Callable[[Point], None]) -> tuple[list[Point], int]:
    """Train, reporting each learning-curve point before the final step as it is logged.

    The last point is the final model's: the curve's point at the final step, or, when the curve
    has none there, the model scored on the curve's validation seeds. It is not reported here.

    Returns:
        Every point, and how many of them (the first ones) were reported.

    Raises:
        Exception: What training raised.
    """
    from training.learning.run_dir import MODEL, saved_steps
    from training.learning.train import train

    points: list[Point] = []

    def on_curve_point(steps: int, metrics: dict[str, float]) -> None:
        points.append({**metrics, "timesteps": steps})
        if steps < config.timesteps:
            report(points[-1])

    train(config, run_dir=None if config.resume is not None else run_dir, scenario=scenario,
          on_curve_point=on_curve_point)
    reported = sum(point["timesteps"] < config.timesteps for point in points)
    if not points or points[-1]["timesteps"] != saved_steps(run_dir / MODEL):
        points.append(validation_point(config, scenario, run_dir))
    return points, reported


def validation_point(config: TrainConfig, scenario: Scenario, run_dir: Path) -> Point:
    """The run's ``model.zip`` on the learning curve's validation seeds: a point like the curve's."""
    from training.evaluation.evaluator import evaluate
    from training.evaluation.protocol import VALIDATION, first_seed
    from training.learning.curves import CURVE_METRICS
    from training.learning.run_dir import MODEL, saved_steps

    agent = f"sb3:{config.algo}:{run_dir / MODEL}"
    seed = first_seed(VALIDATION, config.curve_episodes, offset=config.seed)  # the learning curve's seeds
    played = evaluate(scenario, [agent], config.curve_episodes, seed, progress=False)
    mean = played.summary(agent).mean
    point = {metric: float(mean[metric]) for metric in CURVE_METRICS if mean.get(metric) is not None}
    return {**point, "timesteps": saved_steps(run_dir / MODEL)}


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write a trial's record atomically (a killed write leaves no record: the trial is not finished)."""
    write_text(path, json.dumps(record, indent=1) + "\n")


def _short(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "-".join(_short(item) for item in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


__all__ = ["METRIC", "RUNS_DIR", "TRIALS_DIR", "run_name", "run_trial"]
