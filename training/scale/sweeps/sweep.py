"""``aco-env sweep``: hyperparameter and seed sweeps of ``aco-env train`` on Ray Tune.

A sweep folder ``SWEEP_DIR`` holds:

* ``sweep.json``: the search space (:class:`~training.scale.sweeps.space.SweepSpec`);
* ``tune/``: Ray Tune's experiment (its state, ``tuner.pkl``, one folder of Tune's per trial);
* ``runs/<trial id>__<swept values>/``: one ``aco-env train`` run directory per trial (model,
  TensorBoard events, config, evaluation: :mod:`training.learning.run_dir`), so
  ``tensorboard --logdir SWEEP_DIR/runs`` shows every trial;
* ``trials/<trial id>.json``: the reported points of each finished trial (:mod:`training.scale.sweeps.trial`);
* at the end, ``summary.csv`` and ``summary.md`` (every trial, best first; with several seeds,
  also the mean over seeds of each combination) and ``best.json`` (the best trial's swept values,
  metric, run directory and full config).

The metric is ``objective_usd``: the trained policy's mean episode objective (USD, lower is
better) on the learning curve's validation seeds (``5000 + seed ...``), at each trial's last
point; the test seeds (``100000 + seed ...``: :mod:`training.evaluation.protocol`) never choose. Each trial takes one
CPU (the ``--n-envs`` of a ``subprocess`` vec env: that many). ``--scheduler asha`` stops the
worse trials early at ASHA's rungs (in training steps).

Ray runs locally (a Ray started and stopped here) or on a cluster (``address``), as the ``ray``
backend does (:class:`training.execution.ray_backend.RayBackend`); on a cluster ``SWEEP_DIR`` must be a
folder every node can write (Tune's storage). Ctrl-C (or SIGTERM) stops the sweep through
Tune's own graceful stop: the experiment is saved and :func:`run_sweep` returns ``interrupted``;
``resume=True`` continues it with ``tune.Tuner.restore``: finished trials are kept, unfinished
ones continue. Ray is imported only when a sweep runs.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from digital_twin.atomic_files import atomic_open, write_text
from digital_twin.scenario import Scenario
from training.scale.sweeps.space import SweepSpec
from training.scale.sweeps.trial import METRIC, RUNS_DIR, TRIALS_DIR, run_name

SPEC_JSON = "sweep.json"
TUNE_DIR = "tune"
SUMMARY_CSV = "summary.csv"
SUMMARY_MD = "summary.md"
BEST_JSON = "best.json"
ASHA_REDUCTION_FACTOR = 2
"""ASHA keeps the better half of the trials at each rung."""

logger = logging.getLogger("training")


@dataclass(frozen=True)
class TrialRow:
    """One trial in the summary.

    Attributes:
        trial_id: Tune's id of the trial.
        params: The swept values (``seed`` included).
        status: ``finished``, ``stopped`` (by the scheduler), ``error`` or ``unfinished``.
        objective_usd: The metric at the trial's last point (``None`` if it reported none).
        timesteps: Training steps at that point.
        run_dir: The trial's run directory.
    """

    trial_id: str
    params: dict[str, Any]
    status: str
    objective_usd: float | None
    timesteps: int | None
    run_dir: Path


@dataclass(frozen=True)
class SweepResult:
    """What a sweep ended with: every trial, best first, and whether Ctrl-C stopped it."""

    rows: list[TrialRow]
    interrupted: bool

    @property
    def best(self) -> TrialRow | None:
        """The trial with the lowest metric (``None`` when no trial reported one)."""
        return next((row for row in self.rows if row.objective_usd is not None), None)


def holds_sweep(sweep_dir: Path) -> bool:
    """Whether ``sweep_dir`` holds a sweep this command started (its ``sweep.json``)."""
    return (sweep_dir / SPEC_JSON).is_file()


def read_spec(sweep_dir: Path) -> SweepSpec:
    """The spec of the sweep in ``sweep_dir``.

    Raises:
        ValueError, OSError: No readable ``sweep.json``.
    """
    return SweepSpec.from_json((sweep_dir / SPEC_JSON).read_text(encoding="utf-8"))


def run_sweep(spec: SweepSpec, sweep_dir: Path, scenarios: Mapping[str, Scenario], address: str | None = None,
              resume: bool = False) -> SweepResult:
    """Run (or, with ``resume``, continue) the sweep of ``spec`` in ``sweep_dir``; write the summary at the end.

    Args:
        spec: The sweep, already checked (:func:`training.scale.sweeps.space.check_spec`).
        sweep_dir: The sweep's folder (``sweep.json`` is written here on a new sweep).
        scenarios: Every scenario of the sweep, loaded (``TrainConfig.scenario`` -> it).
        address: A Ray cluster's address; ``None`` = a local Ray, started and stopped here.
        resume: Restore the Tune experiment in ``sweep_dir/tune`` instead of starting one.

    Returns:
        Every trial, best first; ``interrupted`` if Ctrl-C or SIGTERM stopped the sweep (the
        summary and ``best.json`` are then not written).
    """
    from ray import tune

    from training.execution.ray_backend import RayBackend
    from training.scale.sweeps.trial import run_trial

    sweep_dir = sweep_dir.resolve()  # trials run in Tune's folders, and maybe on other nodes
    # Tune's console output: its newer engine prints a banner and a TensorBoard path of Ray's session
    # folder even at verbose=0; the older one prints nothing then. This command logs each trial itself.
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    if resume and not tune.Tuner.can_restore(str(sweep_dir / TUNE_DIR)):  # stopped before Tune saved anything
        logger.info("%s: no Tune experiment to restore yet; starting it", sweep_dir)
        resume = False
    if not resume:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        write_text(sweep_dir / SPEC_JSON, spec.to_json() + "\n")
    stop = _StopSignals()
    with RayBackend(address):
        trainable = tune.with_resources(
            tune.with_parameters(run_trial, base=spec.base, scenarios=dict(scenarios), sweep_dir=str(sweep_dir)),
            {"cpu": _trial_cpus(spec)},
        )
        if resume:
            logger.info("resuming the sweep in %s", sweep_dir)
            tuner = tune.Tuner.restore(str(sweep_dir / TUNE_DIR), trainable, resume_unfinished=True)
        else:
            tuner = tune.Tuner(trainable, param_space=spec.param_space(), tune_config=_tune_config(spec),
                               run_config=tune.RunConfig(name=TUNE_DIR, storage_path=str(sweep_dir), verbose=0,
                                                         callbacks=[_progress_callback()]))
        with stop:
            grid = tuner.fit()
        rows = _rows(grid, sweep_dir, stop.interrupted)
    result = SweepResult(rows, stop.interrupted)
    if not stop.interrupted:
        write_summary(result, spec, sweep_dir)
        write_best(result, sweep_dir)
    return result


def write_summary(result: SweepResult, spec: SweepSpec, sweep_dir: Path) -> None:
    """``summary.csv`` (one row per trial, best first) and ``summary.md`` (the same, and the means over seeds)."""
    keys = spec.swept
    with atomic_open(sweep_dir / SUMMARY_CSV, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["trial_id", *keys, "status", "steps", METRIC, "run_dir"])
        for row in result.rows:
            writer.writerow([row.trial_id, *(_cell(row.params.get(k)) for k in keys), row.status, row.timesteps,
                             "" if row.objective_usd is None else row.objective_usd, row.run_dir])
    lines = [f"# Sweep {sweep_dir.name}: {len(result.rows)} trials", "",
             f"{METRIC}: mean episode objective (USD, lower is better) on the validation seeds 5000 + seed ..., "
             "at each trial's last learning-curve point.", "",
             *_markdown([["trial", *keys, "status", "steps", METRIC, "run"]] + [
                 [row.trial_id, *(_cell(row.params.get(k)) for k in keys), row.status, str(row.timesteps or ""),
                  _usd(row.objective_usd), str(row.run_dir.relative_to(sweep_dir))] for row in result.rows])]
    means = seed_means(result.rows)
    if len(spec.seeds) > 1 and means:
        combination = [k for k in keys if k != "seed"]
        lines += ["", "## Mean over seeds", "",
                  *_markdown([[*combination, "trials", f"mean {METRIC}"]] + [
                      [*(_cell(params.get(k)) for k in combination), str(count), _usd(mean)]
                      for params, count, mean in means])]
    write_text(sweep_dir / SUMMARY_MD, "\n".join(lines) + "\n")


def seed_means(rows: list[TrialRow]) -> list[tuple[dict[str, Any], int, float]]:
    """``(swept values but seed, trials with a metric, mean metric)`` per combination, best first."""
    groups: dict[str, tuple[dict[str, Any], list[float]]] = {}
    for row in rows:
        if row.objective_usd is None:
            continue
        params = {k: v for k, v in row.params.items() if k != "seed"}
        groups.setdefault(json.dumps(params, sort_keys=True, default=str), (params, []))[1].append(row.objective_usd)
    means = [(params, len(values), sum(values) / len(values)) for params, values in groups.values()]
    return sorted(means, key=lambda item: item[2])


def write_best(result: SweepResult, sweep_dir: Path) -> None:
    """``best.json``: the best trial's id, swept values, metric, run directory and full config (its config.json)."""
    best = result.best
    document: dict[str, Any] = {"metric": METRIC, "mode": "min", "scope": "last point, validation seeds"}
    if best is not None:
        config_path = best.run_dir / "config.json"
        document |= {
            "trial_id": best.trial_id,
            "params": best.params,
            METRIC: best.objective_usd,
            "timesteps": best.timesteps,
            "run_dir": str(best.run_dir),
            "config": json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else None,
        }
    write_text(sweep_dir / BEST_JSON, json.dumps(document, indent=1, default=str) + "\n")


def _rows(grid: Any, sweep_dir: Path, interrupted: bool) -> list[TrialRow]:
    """The summary rows of Tune's ResultGrid, best first (trials without a metric last)."""
    rows = []
    for result in grid:
        metrics = result.metrics or {}
        trial_id = metrics.get("trial_id") or Path(result.path).name
        params = dict(result.config or {})
        if (sweep_dir / TRIALS_DIR / f"{trial_id}.json").is_file():
            status = "finished"
        elif result.error is not None:
            status = "error"
        else:
            status = "unfinished" if interrupted else "stopped"
        objective = metrics.get(METRIC)
        steps = metrics.get("timesteps")
        rows.append(TrialRow(trial_id, params, status, None if objective is None else float(objective),
                             None if steps is None else int(steps), sweep_dir / RUNS_DIR / run_name(trial_id, params)))
    return sorted(rows, key=lambda row: (row.objective_usd is None, row.objective_usd or 0.0, row.trial_id))


def _tune_config(spec: SweepSpec) -> Any:
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    if spec.scheduler == "asha":
        max_t = max(_point_config(spec, point).timesteps for point in spec.points())
        scheduler: Any = ASHAScheduler(time_attr="timesteps", max_t=max(max_t, 1),
                                       grace_period=min(spec.asha_grace_steps, max(max_t, 1)),
                                       reduction_factor=ASHA_REDUCTION_FACTOR)
    else:
        scheduler = FIFOScheduler()
    # Reusing a trial's process saves its start-up; not with ASHA, whose stopped trials may still be
    # training in their process when it stops them.
    # num_samples 1: the samples are an axis of the space (SweepSpec.param_space), drawn by the spec.
    return tune.TuneConfig(metric=METRIC, mode="min", scheduler=scheduler, num_samples=1,
                           reuse_actors=spec.scheduler == "fifo")


def _trial_cpus(spec: SweepSpec) -> int:
    """CPUs per trial: 1, or ``n_envs`` for runs with a worker process per env (the most any trial uses)."""
    cpus = 1
    for point in spec.points():
        config = _point_config(spec, point)
        if config.vec_env == "subprocess":
            cpus = max(cpus, config.n_envs)
    return cpus


def _point_config(spec: SweepSpec, point: Mapping[str, Any]) -> Any:
    from training.scale.sweeps.space import TRIAL_DEFAULTS, trial_config

    return trial_config({**TRIAL_DEFAULTS, **spec.base}, point)


def _progress_callback() -> Any:
    """A Tune callback that logs one line per trial that ends (its values, metric, status)."""
    from ray import tune

    class TrialLog(tune.Callback):  # type: ignore[misc]  # ray has no type information
        def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
            result = trial.last_result or {}
            done = sum(1 for t in trials if t.status in ("TERMINATED", "ERROR"))
            logger.info("trial %s (%s) ended: %s %.4f at %s steps [%d/%d done]", trial.trial_id,
                        _values(trial.config), METRIC, result.get(METRIC, float("nan")), result.get("timesteps"),
                        done + 1, len(trials))

        def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
            logger.warning("trial %s (%s) failed: see %s", trial.trial_id, _values(trial.config), trial.path)

    return TrialLog()


class _StopSignals:
    """Ctrl-C and SIGTERM during ``fit``: Tune's own graceful stop, and a record that it happened.

    Tune handles SIGINT during ``fit`` (it saves the experiment and returns) and, on the signal,
    puts back the handler it found. So this installs a handler of its own before ``fit`` (which a
    second Ctrl-C then reaches: it stops at once) and, after ``fit``, a sweep was interrupted when
    that handler is back. SIGTERM is sent on as SIGINT, to stop the same way.
    """

    def __init__(self) -> None:
        self.interrupted = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        self._previous = {signal.SIGINT: signal.signal(signal.SIGINT, self._second_interrupt),
                          signal.SIGTERM: signal.signal(signal.SIGTERM, self._forward)}
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.interrupted = signal.getsignal(signal.SIGINT) == self._second_interrupt  # Tune's handler ran
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _second_interrupt(self, signum: int, frame: FrameType | None) -> None:
        del signum, frame
        raise KeyboardInterrupt

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        del signum, frame
        signal.raise_signal(signal.SIGINT)


def _values(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={_cell(value)}" for key, value in params.items())


def _cell(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(_cell(item) for item in value)
    if isinstance(value, float):
        return f"{value:g}"
    return "" if value is None else str(value)


def _usd(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def _markdown(table: list[list[str]]) -> list[str]:
    header, *body = table
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in body)]


__all__ = [
    "BEST_JSON",
    "SPEC_JSON",
    "SUMMARY_CSV",
    "SUMMARY_MD",
    "TUNE_DIR",
    "SweepResult",
    "TrialRow",
    "holds_sweep",
    "read_spec",
    "run_sweep",
    "write_best",
    "write_summary",
]
