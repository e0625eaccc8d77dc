"""Training an SB3 agent on a scenario: run directory, TensorBoard, checkpoints, final evaluation.

Each run gets ``LOGDIR/<scenario>__<algo>__<seed>__<time>/`` with ``config.json``, TensorBoard
events (``tb_1/``: SB3's ``rollout/`` and ``train/`` scalars, ``scheduling/`` episode metrics,
``eval/<agent>/`` evaluation values, the config as text), ``checkpoints/``, ``model.zip`` and
``eval.json`` (the evaluation harness on the trained model beside the baselines, same seeds).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

import scenarios
from agents.sb3_agent import ALGO_CLASSES
from training.bc import collect_labels, fit_policy
from training.callbacks import ConfigTextCallback, EpisodeMetricsRecorder, SchedulingMetricsCallback, write_text
from training.commands.evaluate import write_outputs
from training.config import TrainConfig
from training.evaluation import evaluate, with_optimality_gaps

EVAL_SEED_OFFSET = 10_000
"""Evaluation seeds start at seed + 10,000, away from the seeds training episodes see first."""
BC_DEFAULT_SAMPLES = 4000


def run_dir_for(config: TrainConfig) -> Path:
    """``LOGDIR/<scenario>__<algo>__<seed>__<YYYYmmdd-HHMMSS>`` (a suffix avoids collisions)."""
    name = scenarios.load(config.scenario).name
    stem = f"{name}__{config.algo}__{config.seed}__{time.strftime('%Y%m%d-%H%M%S')}"
    path = config.logdir / stem
    suffix = 1
    while path.exists():
        suffix += 1
        path = config.logdir / f"{stem}-{suffix}"
    return path


def make_env_fn(config: TrainConfig, rank: int) -> Callable[[], gym.Env]:
    """A picklable factory of one monitored training env (the "module:id" form imports aco_env)."""

    def make() -> gym.Env:
        env = gym.make("aco_env:aco_env/ClusterScheduling-v0", scenario=config.scenario,
                       reward_scale=config.reward_scale)
        env.reset(seed=config.seed + rank)
        return Monitor(env)

    return make


def make_vec_env(config: TrainConfig) -> VecEnv:
    """DummyVecEnv for one env, SubprocVecEnv for several; seeded ``seed + rank``."""
    factories = [make_env_fn(config, rank) for rank in range(config.n_envs)]
    venv: VecEnv = DummyVecEnv(factories) if config.n_envs == 1 else SubprocVecEnv(factories, start_method="spawn")
    venv.seed(config.seed)
    return venv


def build_model(config: TrainConfig, venv: VecEnv, tensorboard_log: Path) -> Any:
    """A new SB3 model for ``config.algo`` (or the checkpoint in ``config.resume``)."""
    module_name, class_name = ALGO_CLASSES[config.algo]
    import importlib

    cls = getattr(importlib.import_module(module_name), class_name)
    if config.resume is not None:
        return cls.load(str(config.resume), env=venv, tensorboard_log=str(tensorboard_log), device=config.device)
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
    """Train, save and evaluate; returns the run directory."""
    torch.set_num_threads(1)  # small networks: threads only add overhead on few cores
    set_random_seed(config.seed)  # the training entry point is the one place that seeds globally
    run_dir = run_dir or run_dir_for(config)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(config.to_json() + "\n")
    recorder = EpisodeMetricsRecorder(make_vec_env(config))
    model = build_model(config, recorder, run_dir)
    logger = configure(str(run_dir / "tb_1"), ["tensorboard", "csv"])
    model.set_logger(logger)
    bc_samples = config.bc_samples or (BC_DEFAULT_SAMPLES if config.algo == "bc" else 0)
    if bc_samples and config.resume is None:
        _pretrain(model, config, bc_samples)
    if config.algo != "bc" and config.timesteps > 0:
        callbacks = [SchedulingMetricsCallback(recorder), ConfigTextCallback(config.as_markdown_table())]
        if config.checkpoint_every:
            callbacks.append(CheckpointCallback(max(config.checkpoint_every // config.n_envs, 1),
                                                str(run_dir / "checkpoints"), name_prefix="model"))
        model.learn(total_timesteps=config.timesteps, callback=CallbackList(callbacks), log_interval=1,
                    progress_bar=config.progress_bar, reset_num_timesteps=config.resume is None)
        logger.dump(int(model.num_timesteps))  # what the last partial rollout recorded
    else:
        write_text(logger, "config", config.as_markdown_table())
    model.save(str(run_dir / "model.zip"))
    recorder.close()
    if config.eval_episodes > 0:
        _evaluate(model, config, run_dir, logger)
    logger.close()
    return run_dir


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
