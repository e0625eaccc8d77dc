"""Training an SB3 agent on a scenario: run directory, TensorBoard, checkpoints, final evaluation.

Each run gets ``LOGDIR/<scenario>__<algo>__<seed>__<time>/`` with ``config.json``, TensorBoard
events (``tb_1/``: SB3's ``rollout/`` and ``train/`` scalars, ``scheduling/`` episode metrics,
``eval/<agent>/`` evaluation values, the config as text), ``checkpoints/``, ``model.zip`` and
``eval.json`` (the evaluation harness on the trained model beside the baselines, same seeds);
:mod:`training.run_dir` describes the layout. ``config.resume`` continues a run in its own
directory up to ``config.timesteps`` in all. Ctrl-C or SIGTERM saves ``model.zip`` and a
checkpoint and raises :class:`~training.interrupt.TrainingInterrupted`.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

import scenarios
from agents.sb3_agent import ALGO_CLASSES
from training.bc import collect_labels, fit_policy
from training.callbacks import (
    ConfigTextCallback,
    EpisodeMetricsRecorder,
    PeriodicCheckpoint,
    SchedulingMetricsCallback,
    StopOnRequest,
    TrainingProgress,
    write_text,
)
from training.commands.evaluate import write_outputs
from training.config import RESUME_OPTIONS, TrainConfig
from training.evaluation import evaluate, with_optimality_gaps
from training.interrupt import StopRequest, TrainingInterrupted, ignore_stop_signals
from training.run_dir import (
    CONFIG,
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
from training.run_logger import open_run_logger

EVAL_SEED_OFFSET = 10_000
"""Evaluation seeds start at seed + 10,000, away from the seeds training episodes see first."""
BC_DEFAULT_SAMPLES = 4000

logger = logging.getLogger("training")


def algorithm_class(algo: str) -> type:
    """The SB3 / sb3-contrib class of ``algo`` (imports it)."""
    module_name, class_name = ALGO_CLASSES[algo]
    return getattr(importlib.import_module(module_name), class_name)


def algorithm_parameters(algo: str) -> list[str]:
    """The keyword arguments ``--hp`` may set: the algorithm constructor's, minus policy, env and private ones."""
    parameters = inspect.signature(algorithm_class(algo).__init__).parameters
    return [name for name in parameters if name not in ("self", "policy", "env") and not name.startswith("_")
            and parameters[name].kind is not inspect.Parameter.VAR_KEYWORD]


def make_env_fn(config: TrainConfig, rank: int, seed: int, in_worker: bool = False) -> Callable[[], gym.Env]:
    """A picklable factory of one monitored training env (the "module:id" form imports aco_env).

    Args:
        config: The run's config.
        rank: The env's index; its first episode has seed ``seed + rank``.
        seed: The run's seed (the resumed step count added on resume).
        in_worker: The factory runs in a SubprocVecEnv worker, which then ignores Ctrl-C and SIGTERM.
    """

    def make() -> gym.Env:
        if in_worker:
            ignore_stop_signals()
        env = gym.make("aco_env:aco_env/ClusterScheduling-v0", scenario=config.scenario,
                       reward_scale=config.reward_scale)
        env.reset(seed=seed + rank)
        return Monitor(env)

    return make


def make_vec_env(config: TrainConfig, seed: int | None = None) -> VecEnv:
    """DummyVecEnv for one env, SubprocVecEnv for several; seeded ``seed + rank`` (``config.seed`` by default)."""
    seed = config.seed if seed is None else seed
    several = config.n_envs > 1
    factories = [make_env_fn(config, rank, seed, in_worker=several) for rank in range(config.n_envs)]
    venv: VecEnv = SubprocVecEnv(factories, start_method="spawn") if several else DummyVecEnv(factories)
    venv.seed(seed)
    return venv


def build_model(config: TrainConfig, venv: VecEnv, tensorboard_log: Path, resume: ResumePoint | None = None) -> Any:
    """A new SB3 model for ``config.algo``, or the save at ``resume`` with ``venv`` attached."""
    cls = algorithm_class(config.algo)
    if resume is not None:
        return cls.load(str(resume.model), env=venv, tensorboard_log=str(tensorboard_log), device=config.device)
    kwargs: dict[str, Any] = {
        "learning_rate": config.learning_rate,
        "gamma": config.gamma,
        "seed": config.seed,
        "device": config.device,
        "tensorboard_log": str(tensorboard_log),
        "policy_kwargs": {"net_arch": list(config.net_arch)},
        "verbose": 0,
    }
    if config.algo in ("maskable-ppo", "bc", "ppo"):
        kwargs.update(n_steps=config.n_steps, batch_size=config.batch_size, n_epochs=config.n_epochs,
                      ent_coef=config.ent_coef, gae_lambda=config.gae_lambda)
    elif config.algo == "a2c":
        kwargs.update(n_steps=min(config.n_steps, 32), ent_coef=config.ent_coef, gae_lambda=config.gae_lambda)
    elif config.algo == "dqn":
        kwargs.update(batch_size=config.batch_size, learning_starts=min(1000, max(config.timesteps // 10, 1)))
    kwargs.update(config.hyperparameters)
    return cls("MultiInputPolicy", venv, **kwargs)


def train(config: TrainConfig, run_dir: Path | None = None) -> Path:
    """Train, save and evaluate; returns the run directory.

    Args:
        config: What to train. With ``config.resume`` the run named there continues (see
            :func:`resumed_config`): same directory, from its most trained save, up to
            ``config.timesteps`` steps in all; nothing is trained when it has that many already.
        run_dir: Use this directory instead of a new one under ``config.logdir`` (not with resume).

    Raises:
        TrainingInterrupted: Ctrl-C or SIGTERM stopped it; ``model.zip`` and a checkpoint are saved.
        DataError, UsageError: ``config.resume`` names nothing that can be resumed.
    """
    torch.set_num_threads(1)  # small networks: threads only add overhead on few cores
    point = find_resume_point(config.resume) if config.resume is not None else None
    if point is not None:
        config = resumed_config(point, config)
        run_dir = point.run_dir
        record_resume(point, {name: getattr(config, name) for name in RESUME_OPTIONS})
        logger.info("resuming %s from %s at %s steps", run_dir, point.model.name, f"{point.num_timesteps:,}")
    else:
        run_dir = run_dir or create_run_dir(config.logdir, run_stem(scenarios.load(config.scenario).name,
                                                                    config.algo, config.seed))
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / CONFIG).write_text(config.to_json() + "\n")
    done = point.num_timesteps if point is not None else 0
    # The training entry point is the one place that seeds globally; a resumed run is seeded past
    # its start, so it does not replay the episodes (and action samples) it began with.
    set_random_seed(config.seed + done)
    recorder = EpisodeMetricsRecorder(make_vec_env(config, seed=config.seed + done))
    run_logger = open_run_logger(run_dir / "tb_1", continued=point is not None)
    model = None
    try:
        with contextlib.closing(recorder):  # the env workers end before the evaluation starts
            model = build_model(config, recorder, run_dir, point)
            model.set_logger(run_logger)
            _learn(model, config, recorder, run_dir, point)
            save_model(model, run_dir / MODEL)
        if config.eval_episodes > 0:
            _evaluate(model, config, run_dir, run_logger)
    except KeyboardInterrupt:
        if model is None:
            raise
        saved = _save_interrupted(model, config, run_dir)
        raise TrainingInterrupted(run_dir, int(model.num_timesteps), saved) from None
    finally:
        run_logger.close()  # flushes the TensorBoard events
    return run_dir


def _learn(model: Any, config: TrainConfig, recorder: EpisodeMetricsRecorder, run_dir: Path,
           point: ResumePoint | None) -> None:
    """Behaviour cloning (new runs), then RL up to ``config.timesteps`` steps in all.

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM during RL, after it stopped at an environment step.
    """
    bc_samples = config.bc_samples or (BC_DEFAULT_SAMPLES if config.algo == "bc" else 0)
    if bc_samples and point is None:
        _pretrain(model, config, bc_samples)
    remaining = 0 if config.algo == "bc" else max(config.timesteps - int(model.num_timesteps), 0)
    if remaining == 0:
        if point is None:
            write_text(model.logger, "config", config.as_markdown_table())
        elif config.algo != "bc":
            logger.info("%s has %s steps, --timesteps %s: nothing to train", run_dir,
                        f"{point.num_timesteps:,}", f"{config.timesteps:,}")
        return
    stop = StopRequest()
    callbacks: list[BaseCallback] = [SchedulingMetricsCallback(recorder), StopOnRequest(stop),
                                     TrainingProgress(remaining, enabled=config.progress_bar)]
    if point is None:
        callbacks.append(ConfigTextCallback(config.as_markdown_table()))
    if config.checkpoint_interval:
        callbacks.append(PeriodicCheckpoint(config.checkpoint_interval, run_dir))
    with stop:
        model.learn(total_timesteps=remaining, callback=CallbackList(callbacks), log_interval=1,
                    reset_num_timesteps=point is None)
    model.logger.dump(int(model.num_timesteps))  # what the last partial rollout recorded
    if stop.requested:
        raise KeyboardInterrupt


def _save_interrupted(model: Any, config: TrainConfig, run_dir: Path) -> list[Path]:
    """Save ``model.zip`` and (unless checkpoints are off) a checkpoint at the current step count."""
    saved = [save_model(model, run_dir / MODEL)]
    if config.checkpoint_interval:
        saved.append(save_model(model, checkpoint_path(run_dir, int(model.num_timesteps))))
    return saved


def _pretrain(model: Any, config: TrainConfig, samples: int) -> None:
    if config.algo == "dqn":
        raise ValueError("behaviour cloning needs a policy with an action distribution (not dqn)")
    labels = collect_labels(config.scenario, samples, seed=config.seed, progress=config.progress_bar)
    stats = fit_policy(model.policy, labels, config.bc_epochs, config.batch_size, config.learning_rate,
                       config.seed, masked=config.algo in ("maskable-ppo", "bc"))
    model.logger.record("bc/loss", stats["loss"])
    model.logger.record("bc/accuracy", stats["accuracy"])
    model.logger.record("bc/samples", samples)
    model.logger.dump(0)


def _evaluate(model: Any, config: TrainConfig, run_dir: Path, logger: Any) -> None:
    """The evaluation harness: the trained model beside the baselines, on the same seeds.

    The trained policy is scored twice: ``<algo>`` takes its most likely action (the usual
    deterministic evaluation), ``<algo>-sampled`` samples from the policy (seeded per episode).
    """
    trained = f"sb3:{config.algo}:{run_dir / 'model.zip'}"
    seed = EVAL_SEED_OFFSET + config.seed
    document = evaluate(config.scenario, [trained, *config.eval_agents], config.eval_episodes, seed=seed,
                        progress=config.progress_bar)
    sampled = evaluate(config.scenario, [trained], config.eval_episodes, seed=seed, progress=config.progress_bar,
                       deterministic=False)
    rename = {trained: config.algo}
    agents = {rename.get(k, k): v for k, v in document["agents"].items()}
    agents[f"{config.algo}-sampled"] = (
        with_optimality_gaps(sampled["agents"][trained], agents["oracle"]) if "oracle" in agents
        else sampled["agents"][trained]
    )
    latencies = {rename.get(k, k): v for k, v in document.pop("_latencies_ms", {}).items()}
    latencies[f"{config.algo}-sampled"] = sampled["_latencies_ms"][trained]
    document.update(agents=agents, trained_steps=int(model.num_timesteps), _latencies_ms=latencies)
    document.pop("deterministic", None)
    write_outputs(document, run_dir / "eval")
    (run_dir / "eval.json").write_text(json.dumps(document, indent=1, default=float) + "\n")
    for agent, summary in document["agents"].items():
        for metric, value in summary["mean"].items():
            if isinstance(value, int | float) and metric != "seed":
                logger.record(f"eval/{agent}/{metric}", float(value))
    logger.dump(int(model.num_timesteps))
