"""Training an SB3 agent on a scenario: run directory, TensorBoard, checkpoints, final evaluation.

Each run gets ``LOGDIR/<scenario>__<algo>__<seed>__<time>/`` with ``config.json``, TensorBoard
events (``tb_1/``: SB3's ``rollout/`` and ``train/`` scalars, ``scheduling/`` episode metrics,
``eval/<agent>/`` the learning curve on validation seeds beside the baselines, ``test/<agent>/``
the final evaluation on the test seeds, ``dagger/`` the imitation rounds, the config as
text), ``checkpoints/``, ``model.zip``,
``eval.json`` and ``eval/`` (the evaluation harness on the trained model beside the baselines,
same seeds: :mod:`training.evaluation.results`); :mod:`training.learning.run_dir` describes the layout.
Every episode's seed comes from the evaluation protocol (:mod:`training.evaluation.protocol`):
training envs from the training range, the learning curve from the validation range, DAgger
from the imitation range and the final evaluation from the test range. The
scenario is loaded once (by the caller, or here) and shared by the training envs, the
behaviour-cloning labels and the evaluation. Behaviour cloning fits ``config.bc_samples``
placement labels, or the planted dataset ``config.bc_dataset`` (``aco-env export-planted``).
``config.resume`` continues a run in its own
directory up to ``config.timesteps`` in all. Ctrl-C or SIGTERM saves ``model.zip`` and a
checkpoint and raises :class:`~training.learning.interrupt.TrainingInterrupted`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import VecEnv

import scenarios
from aco_env.metrics import TEST_PREFIX
from agents.algorithms import ALGORITHMS, MLP_NET_ARCH, policy_class
from agents.sb3_agent import ModelFileError, check_model_file
from digital_twin.atomic_files import write_text as write_file
from digital_twin.scenario import Scenario
from training.errors import DataError
from training.evaluation.evaluator import evaluate
from training.evaluation.plots import LEARNING_CURVE_PNG, write_learning_curve
from training.evaluation.protocol import TEST, TRAINING, first_seed, wrapped_offset
from training.evaluation.results import SAMPLED_SUFFIX
from training.evaluation.results_writer import eval_scalars, write_json, write_results
from training.learning.bc import collect_labels, fit_policy
from training.learning.callbacks import (
    ConfigTextCallback,
    EpisodeMetricsRecorder,
    PeriodicCheckpoint,
    SchedulingMetricsCallback,
    StopOnRequest,
    TrainingProgress,
    write_text,
)
from training.learning.config import RESUME_OPTIONS, TrainConfig
from training.learning.curves import CurvePointHook, LearningCurve
from training.learning.imitation import DaggerSettings, dagger
from training.learning.interrupt import StopRequest, TrainingInterrupted
from training.learning.labels import Labels
from training.learning.planted_dataset import load_planted_dataset
from training.learning.provenance import write_provenance
from training.learning.reward_scales import TaskScale, task_reward_scales
from training.learning.run_dir import (
    CONFIG,
    EVAL_DIR,
    EVAL_JSON,
    MODEL,
    ResumePoint,
    checkpoint_path,
    create_run_dir,
    find_resume_point,
    record_resume,
    resumed_config,
    run_stem,
    save_model,
)
from training.learning.run_logger import open_run_logger
from training.learning.training_envs import make_vec_env, training_env_seed, training_scenarios

EVAL_SEED_OFFSET = TEST.start
"""The final evaluation plays the test seeds from ``TEST.start + seed`` (:mod:`training.evaluation.protocol`)."""
BC_DEFAULT_SAMPLES = 4000

logger = logging.getLogger("training")


def build_model(config: TrainConfig, venv: VecEnv, tensorboard_log: Path, resume: ResumePoint | None = None) -> Any:
    """A new SB3 model for ``config.algo``, or the save at ``resume`` with ``venv`` attached.

    A new model gets the shared options (learning rate, gamma, seed, network), the algorithm's
    own (:attr:`~agents.algorithms.Algorithm.constructor_options`), then ``config.hyperparameters``.
    """
    algorithm = ALGORITHMS[config.algo]
    cls = algorithm.load_class()
    if resume is not None:
        return cls.load(str(resume.model), env=venv, tensorboard_log=str(tensorboard_log), device=config.device)
    kind = config.policy_kind
    kwargs: dict[str, Any] = {
        "learning_rate": config.learning_rate,
        "gamma": config.gamma,
        "seed": config.seed,
        "device": config.device,
        "tensorboard_log": str(tensorboard_log),
        "verbose": 0,
    }
    net_arch = config.net_arch or (MLP_NET_ARCH if kind == "mlp" else ())
    policy_kwargs: dict[str, Any] = {"net_arch": list(net_arch)} if net_arch else {}
    if kind == "set":
        policy_kwargs["job_node_features"] = True
    if policy_kwargs:
        kwargs["policy_kwargs"] = policy_kwargs
    kwargs.update(algorithm.constructor_options(dataclasses.asdict(config)))
    kwargs.update(config.hyperparameters)
    model = cls(policy_class(kind), venv, **kwargs)
    if config.init_from is not None:
        load_policy_weights(model, config.init_from)
    return model


def load_policy_weights(model: Any, path: Path) -> None:
    """Copy the policy weights of the saved model at ``path`` into ``model.policy`` (nothing else: no optimiser state).

    Raises:
        DataError: ``path`` is not a model zip, or its policy's weights do not fit ``model``'s
            (another algorithm or policy, or a flat policy made for another fleet size).
    """
    from stable_baselines3.common.save_util import load_from_zip_file

    try:
        check_model_file(path)
        _, params, _ = load_from_zip_file(path, device=model.device, print_system_info=False)
    except (ModelFileError, OSError, ValueError) as exc:
        raise DataError(f"--init-from {path}: {exc}") from None
    weights = (params or {}).get("policy")
    if weights is None:
        raise DataError(f"--init-from {path}: the zip holds no policy weights")
    try:
        model.policy.load_state_dict(weights)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise DataError(
            f"--init-from {path}: its weights do not fit this run's policy ({first}); start from a model of the "
            "same algorithm and policy (a flat mlp policy only on its own fleet size)"
        ) from None


def train(
    config: TrainConfig,
    run_dir: Path | None = None,
    scenario: Scenario | None = None,
    on_curve_point: CurvePointHook | None = None,
    train_scenarios: tuple[Scenario, ...] | None = None,
    command: str | None = None,
) -> Path:
    """Train, save and evaluate; returns the run directory.

    Args:
        config: What to train. With ``config.resume`` the run named there continues (see
            :func:`resumed_config`): same directory, from its most trained save, up to
            ``config.timesteps`` steps in all; nothing is trained when it has that many already.
        run_dir: Use this directory instead of a new one under ``config.logdir`` (not with resume).
        scenario: The run's scenario (``config.scenario``, of the resumed run's config on resume),
            already loaded, as the commands do when they check it; loaded here when ``None``.
        on_curve_point: Called with each learning-curve point as it is logged
            (:class:`training.learning.curves.LearningCurve`; ``aco-env sweep`` reports them to Ray Tune).
        train_scenarios: ``config.train_scenarios``, already loaded (as ``scenario``); loaded
            here when ``None``.
        command: The command line that started the run, for a new run's ``provenance.json``
            (:mod:`training.learning.provenance`).

    Raises:
        TrainingInterrupted: Ctrl-C or SIGTERM stopped it; ``model.zip`` and a checkpoint are saved.
        DataError, UsageError: ``config.resume`` names nothing that can be resumed.
    """
    torch.set_num_threads(1)  # small networks: threads only add overhead on few cores
    point = find_resume_point(config.resume) if config.resume is not None else None
    if point is not None:
        config = resumed_config(point, config)
        record_resume(point, {name: getattr(config, name) for name in RESUME_OPTIONS})
        logger.info("resuming %s from %s at %s steps", point.run_dir, point.model.name, f"{point.num_timesteps:,}")
    scenario = scenarios.load(config.scenario) if scenario is None else scenario
    run_dir = point.run_dir if point is not None else _new_run_dir(config, scenario, run_dir, command)
    done = point.num_timesteps if point is not None else 0
    # The training entry point is the one place that seeds globally; a resumed run is seeded past
    # its start, so it does not replay the episodes (and action samples) it began with.
    set_random_seed(config.seed + done)
    tasks = training_scenarios(config, scenario) if train_scenarios is None else (scenario, *train_scenarios)
    scales = task_reward_scales(tasks, config.reward_reference, config.reward_scale, config.seed)
    venv = make_vec_env(config, tasks, seed=training_env_seed(config, done), reward_scales=[s.scale for s in scales])
    recorder = EpisodeMetricsRecorder(venv)
    run_logger = open_run_logger(run_dir / "tb_1", continued=point is not None)
    if point is None:
        _record_reward_scales(run_logger, scales)
    model = None
    try:
        with contextlib.closing(recorder):  # the env workers end before the evaluation starts
            model = build_model(config, recorder, run_dir, point)
            model.set_logger(run_logger)
            _learn(model, config, tasks, recorder, run_dir, point, on_curve_point)
            save_model(model, run_dir / MODEL)
        if config.eval_episodes > 0:
            _evaluate(model, config, scenario, run_dir, run_logger)
    except KeyboardInterrupt:
        if model is None:
            raise
        saved = _save_interrupted(model, config, run_dir)
        raise TrainingInterrupted(run_dir, int(model.num_timesteps), saved) from None
    finally:
        run_logger.close()  # flushes the TensorBoard events
    return run_dir


def _record_reward_scales(run_logger: Any, scales: tuple[TaskScale, ...]) -> None:
    """``train/reward_reference_usd/<scenario>``: what each task's rewards are divided by (in the first dump)."""
    for task in scales:
        if not math.isnan(task.reference_usd):  # NaN without a reference
            run_logger.record(f"train/reward_reference_usd/{task.scenario}", task.reference_usd)


def _new_run_dir(config: TrainConfig, scenario: Scenario, run_dir: Path | None, command: str | None) -> Path:
    """``run_dir`` or a new ``LOGDIR/<scenario>__<algo>__<seed>__<time>/``, with config.json and provenance.json."""
    run_dir = run_dir or create_run_dir(config.logdir, run_stem(scenario.name, config.algo, config.seed))
    run_dir.mkdir(parents=True, exist_ok=True)
    write_file(run_dir / CONFIG, config.to_json() + "\n")
    write_provenance(run_dir, command)
    return run_dir


def _learn(
    model: Any,
    config: TrainConfig,
    tasks: tuple[Scenario, ...],
    recorder: EpisodeMetricsRecorder,
    run_dir: Path,
    point: ResumePoint | None,
    on_curve_point: CurvePointHook | None = None,
) -> None:
    """Behaviour cloning (new runs), then RL up to ``config.timesteps`` steps in all; curve points to the hook.

    ``tasks`` are the scenarios trained on (:func:`training_scenarios`); behaviour cloning and
    the learning curve use the first, ``config.scenario``, DAgger cycles through them all.

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM during RL, after it stopped at an environment step.
    """
    scenario = tasks[0]
    algorithm = ALGORITHMS[config.algo]
    bc_samples = config.bc_samples or (BC_DEFAULT_SAMPLES if config.algo == "bc" and not config.bc_dataset else 0)
    if point is None and config.bc_dataset is not None:
        _pretrain(model, config, load_planted_dataset(config.bc_dataset).labels())
    elif bc_samples and point is None:
        # the labels' episodes are training episodes: from the run's seed, folded into the training range
        first = first_seed(TRAINING, bc_samples, wrapped_offset(TRAINING, config.seed, bc_samples))
        _pretrain(model, config, collect_labels(scenario, bc_samples, seed=first, progress=config.progress_bar))
    if config.dagger_rounds and point is None:
        _imitate(model, config, tasks)
    remaining = max(config.timesteps - int(model.num_timesteps), 0) if algorithm.reinforcement_learning else 0
    if remaining == 0:
        if point is None:
            write_text(model.logger, "config", config.as_markdown_table())
        elif algorithm.reinforcement_learning:
            logger.info(
                "%s has %s steps, --timesteps %s: nothing to train",
                run_dir,
                f"{point.num_timesteps:,}",
                f"{config.timesteps:,}",
            )
        return
    stop = StopRequest()
    callbacks: list[BaseCallback] = [
        SchedulingMetricsCallback(recorder),
        StopOnRequest(stop),
        TrainingProgress(remaining, enabled=config.progress_bar),
    ]
    if point is None:
        callbacks.append(ConfigTextCallback(config.as_markdown_table()))
    if config.checkpoint_interval:
        callbacks.append(PeriodicCheckpoint(config.checkpoint_interval, run_dir))
    if config.curve_interval:
        callbacks.append(
            LearningCurve(
                scenario,
                config.algo,
                config.algo,
                config.curve_interval,
                config.curve_episodes,
                config.seed,
                config.curve_baselines,
                on_point=on_curve_point,
                deferral=config.deferral,
            )
        )
    with stop:
        model.learn(
            total_timesteps=remaining,
            callback=CallbackList(callbacks),
            log_interval=1,
            reset_num_timesteps=point is None,
        )
    model.logger.dump(int(model.num_timesteps))  # what the last partial rollout recorded
    if config.curve_interval:
        write_learning_curve(run_dir / "tb_1", run_dir / LEARNING_CURVE_PNG)
    if stop.requested:
        raise KeyboardInterrupt


def _save_interrupted(model: Any, config: TrainConfig, run_dir: Path) -> list[Path]:
    """Save ``model.zip`` and (unless checkpoints are off) a checkpoint at the current step count."""
    saved = [save_model(model, run_dir / MODEL)]
    if config.checkpoint_interval:
        saved.append(save_model(model, checkpoint_path(run_dir, int(model.num_timesteps))))
    return saved


def _pretrain(model: Any, config: TrainConfig, labels: Labels) -> None:
    """Behaviour cloning of ``labels`` (placement labels or a planted dataset's) into ``model.policy``; logs ``bc/``."""
    algorithm = ALGORITHMS[config.algo]
    if algorithm.value_based:
        raise ValueError(f"behaviour cloning needs a policy with an action distribution (not {algorithm.name})")
    stats = fit_policy(
        model.policy,
        labels,
        config.bc_epochs,
        config.batch_size,
        config.learning_rate,
        config.seed,
        masked=algorithm.masked,
    )
    model.logger.record("bc/loss", stats["loss"])
    model.logger.record("bc/accuracy", stats["accuracy"])
    model.logger.record("bc/samples", len(labels.actions))
    model.logger.dump(0)


def _imitate(model: Any, config: TrainConfig, tasks: tuple[Scenario, ...]) -> None:
    """DAgger of ``config.dagger_expert`` into ``model.policy``; logs ``dagger/`` scalars per iteration.

    The fit's minibatch size and learning rate are DAgger's own (:class:`DaggerSettings`), not RL's.
    """
    settings = DaggerSettings(
        expert=config.dagger_expert,
        iterations=config.dagger_rounds,
        episodes=config.dagger_episodes,
        random_start_hour=config.random_start_hour,
        deferral=config.deferral,
    )
    _, rounds = dagger(model, tasks, settings, config.seed, progress=config.progress_bar)
    for done in rounds:
        model.logger.record("dagger/accuracy", done.accuracy)
        model.logger.record("dagger/loss", done.loss)
        model.logger.record("dagger/labels", done.labels)
        model.logger.record("dagger/seconds", done.seconds)
        model.logger.dump(done.iteration)


def _evaluate(model: Any, config: TrainConfig, scenario: Scenario, run_dir: Path, run_logger: Any) -> None:
    """The evaluation harness: the trained model beside the baselines, on the same test seeds.

    The seeds are the protocol's test seeds from ``TEST.start + config.seed``
    (:mod:`training.evaluation.protocol`); the trained model (``<algo>``) is the reference of the
    paired comparisons.

    The trained policy is scored twice: ``<algo>`` takes its deterministic action
    (:func:`agents.place_or_defer.place_or_defer`), ``<algo>-sampled`` samples from the policy (seeded per episode).
    Writes ``RUN/eval/`` (results.json, plots) and ``RUN/eval.json``, and records the
    ``test/<agent>/<metric>`` scalars at the trained step count (``eval/`` holds the learning curve,
    on the validation seeds: :mod:`training.learning.curves`).
    """
    trained = f"sb3:{config.algo}:{run_dir / MODEL}"
    seed = first_seed(TEST, config.eval_episodes, offset=config.seed)
    greedy = evaluate(
        scenario, [trained, *config.eval_agents], config.eval_episodes, seed=seed, progress=config.progress_bar
    )
    sampled = evaluate(
        scenario, [trained], config.eval_episodes, seed=seed, progress=config.progress_bar, deterministic=False
    )
    steps = int(model.num_timesteps)
    evaluation = dataclasses.replace(
        greedy.renamed({trained: config.algo}).with_agents({config.algo + SAMPLED_SUFFIX: sampled.agents[trained]}),
        deterministic=None,  # played both ways
        trained_steps=steps,
    )
    write_results(evaluation, run_dir / EVAL_DIR)
    write_json(evaluation, run_dir / EVAL_JSON)
    for tag, value in eval_scalars(evaluation, TEST_PREFIX):
        run_logger.record(tag, value)
    run_logger.dump(steps)
