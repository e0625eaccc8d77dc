"""Distributed training with RLlib's PPO: env runners in several processes, on a local Ray or a cluster.

:func:`train_rllib` builds a ``PPOConfig`` from an :class:`~training.scale.rllib.config.RLlibConfig`
(the env creator and seeding of :mod:`training.scale.rllib.env`, the masking module of
:mod:`training.scale.rllib.module`), trains it for ``iterations`` iterations with ``env_runners``
env runner processes sampling whole episodes, and leaves a run directory:

* ``config.json``: the :class:`~training.scale.rllib.config.RLlibConfig`;
* ``checkpoint/``: RLlib's checkpoint of the algorithm (``Algorithm.from_checkpoint``); its
  module alone loads with :func:`training.scale.rllib.agent.load_module`;
* ``tb/``: TensorBoard events, ``rollout/``, ``train/``, ``time/`` and ``scheduling/`` per
  iteration (x = env steps), ``test/<agent>/`` the final evaluation;
* ``metrics.jsonl``: one line per iteration, the same scalars;
* ``eval/``, ``eval.json``: the final evaluation, the policy's deterministic action (``rllib-ppo``) and its
  samples (``rllib-ppo-sampled``) beside the baselines (results.json and plots, as ``aco-env
  train`` writes them);
* ``summary.json``: iterations, env steps, wall time, each sub-env's first seed, the last
  iteration's scalars, the mean objective of each evaluated agent.

Each env runner and the learner (in this process: ``num_learners=0``) use one torch thread:
the network is small and a thread per core runs the envs. Ctrl-C saves a checkpoint of the
iterations done and raises ``KeyboardInterrupt``.

Ray and torch are imported when a run starts, not with this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import scenarios
from digital_twin.atomic_files import write_text
from training.scale.rllib.agent import AGENT_NAME
from training.scale.rllib.config import RLlibConfig

if TYPE_CHECKING:
    from digital_twin.scenario import Scenario
    from training.evaluation.results import Evaluation

CONFIG_JSON = "config.json"
CHECKPOINT_DIR = "checkpoint"
TENSORBOARD_DIR = "tb"
METRICS_JSONL = "metrics.jsonl"
SUMMARY_JSON = "summary.json"
VALUE_LOSS_CLIP = 1e6
"""RLlib clips PPO's squared value error at ``vf_clip_param`` (10 by default), which stops the
value net from learning returns of about -100 (the objective x ``reward_scale``); SB3 clips none."""

logger = logging.getLogger("training")


@dataclass(frozen=True)
class RLlibResult:
    """What :func:`train_rllib` returns.

    Attributes:
        run_dir: The run directory (layout: the module docstring).
        checkpoint: ``RUN/checkpoint``, the last checkpoint.
        iterations: Iterations trained.
        env_steps: Env steps sampled in all.
        time_s: Wall time of the training iterations (Ray's start and the evaluation excluded).
        metrics: The last iteration's scalars (``rollout/``, ``train/``, ``time/``, ``scheduling/``).
        env_seeds: The first-episode seed of each sub-env, by env runner index (1, 2, ...).
        evaluation: The final evaluation (``None`` with ``eval_episodes=0``).
    """

    run_dir: Path
    checkpoint: Path
    iterations: int
    env_steps: int
    time_s: float
    metrics: dict[str, float]
    env_seeds: dict[int, list[int | None]]
    evaluation: Evaluation | None = None

    def objectives(self) -> dict[str, float]:
        """The mean objective (USD) of each evaluated agent (empty without an evaluation)."""
        if self.evaluation is None:
            return {}
        means = {agent: self.evaluation.summary(agent).mean.get("objective_usd") for agent in self.evaluation.agents}
        return {agent: float(mean) for agent, mean in means.items() if mean is not None}


# The scalars of an iteration, by their TensorBoard name: where they are in RLlib's result dict.
_RESULT_KEYS: dict[str, tuple[str, ...]] = {
    "rollout/ep_rew_mean": ("env_runners", "episode_return_mean"),
    "rollout/ep_len_mean": ("env_runners", "episode_len_mean"),
    "rollout/episodes": ("env_runners", "num_episodes"),
    "train/policy_loss": ("learners", "default_policy", "policy_loss"),
    "train/value_loss": ("learners", "default_policy", "vf_loss"),
    "train/entropy": ("learners", "default_policy", "entropy"),
    "train/kl": ("learners", "default_policy", "mean_kl_loss"),
    "train/explained_variance": ("learners", "default_policy", "vf_explained_var"),
    "time/env_steps": ("num_env_steps_sampled_lifetime",),
    "time/iteration_s": ("time_this_iter_s",),
}


def iteration_scalars(result: Mapping[str, Any]) -> dict[str, float]:
    """The scalars of one ``Algorithm.train()`` result: :data:`_RESULT_KEYS` and ``scheduling/*`` (those present)."""
    scalars: dict[str, float] = {}
    for name, path in _RESULT_KEYS.items():
        value: Any = result
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is not None:
            scalars[name] = float(value)
    for key, value in result.get("env_runners", {}).items():
        if key.startswith("scheduling/"):
            scalars[key] = float(value)
    return scalars


def ppo_config(config: RLlibConfig, scenario: Scenario) -> Any:
    """RLlib's ``PPOConfig`` for ``config``: masked module, seeded env runners, whole episodes.

    Env runners sample whole episodes (``batch_mode="complete_episodes"``): with gamma and
    lambda 1 a return cut at a fragment's end would lean on the value net's guess of the rest
    (``aco-env train`` learned to defer every job with short rollouts: docs/results.md).
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from training.scale.rllib.env import ENV_NAME, ClusterSchedulingCallbacks
    from training.scale.rllib.module import MaskedActorCritic

    env_config = {"scenario": scenario, "seed": config.seed, "env": {"reward_scale": config.reward_scale}}
    return (
        PPOConfig()
        .environment(ENV_NAME, env_config=env_config)
        .framework("torch")
        .env_runners(
            num_env_runners=config.env_runners,
            num_envs_per_env_runner=config.envs_per_env_runner,
            batch_mode="complete_episodes",
            rollout_fragment_length="auto",
        )
        .learners(num_learners=0)  # the learner runs in this process
        .training(
            train_batch_size_per_learner=config.train_batch_size,
            minibatch_size=config.minibatch_size,
            num_epochs=config.num_epochs,
            lr=config.learning_rate,
            gamma=config.gamma,
            lambda_=config.gae_lambda,
            entropy_coeff=config.ent_coef,
            vf_clip_param=VALUE_LOSS_CLIP,
        )
        .rl_module(
            rl_module_spec=RLModuleSpec(module_class=MaskedActorCritic, model_config={"hidden": list(config.hidden)})
        )
        .callbacks(ClusterSchedulingCallbacks)
        .debugging(seed=config.seed)
    )


@contextlib.contextmanager
def ray_session(address: str | None, num_cpus: int) -> Iterator[None]:
    """Connected to Ray for the ``with`` block: a new local Ray (``address=None``) or the cluster at ``address``.

    A local Ray gets ``num_cpus`` CPUs and is shut down at the end; a cluster is only
    disconnected from. A process already connected to Ray stays connected, as it was.

    Raises:
        training.execution.backend.BackendError: ``address`` is malformed or nothing answers there.
    """
    import ray

    from training.execution.backend import available_cores
    from training.execution.ray_backend import connect

    if ray.is_initialized():
        yield
        return
    connect(address, max(num_cpus, available_cores()))
    try:
        yield
    finally:
        ray.shutdown()


def train_rllib(config: RLlibConfig, scenario: Scenario | None = None) -> RLlibResult:
    """Train PPO on RLlib for ``config.iterations`` iterations, save, evaluate; see the module docstring.

    Args:
        config: The run's options.
        scenario: ``config.scenario`` already loaded (loaded here when ``None``).

    Returns:
        The run directory, checkpoint, counts, last scalars and the evaluation.

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM; the checkpoint of the iterations done is saved first.
    """
    import torch

    from training.scale.rllib.env import register

    scenario = scenarios.load(scenario if scenario is not None else config.scenario)
    scenario.make_spec(np.random.default_rng(scenario.seed))  # its data, read once, travels inside env_config
    run_dir = _new_run_dir(config, scenario.name)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the learner's; each env runner sets its own (ClusterSchedulingCallbacks)
    try:
        with ray_session(config.address, config.env_runners + 1):
            register()
            algo = ppo_config(config, scenario).build_algo()
            try:
                trained = _train(algo, config, run_dir)
            finally:
                algo.stop()
    finally:
        torch.set_num_threads(threads)
    evaluation = _evaluate(config, scenario, run_dir, trained) if config.eval_episodes > 0 else None
    result = dataclasses.replace(trained, evaluation=evaluation)
    _write_summary(result)
    return result


def _new_run_dir(config: RLlibConfig, scenario_name: str) -> Path:
    """``config.out`` or a new ``LOGDIR/<scenario>__rllib-ppo__<seed>__<time>/``, with config.json."""
    from training.learning.run_dir import create_run_dir, run_stem

    if config.out is None:
        run_dir = create_run_dir(config.logdir, run_stem(scenario_name, AGENT_NAME, config.seed))
    else:
        run_dir = config.out
        if (run_dir / CONFIG_JSON).exists():
            raise FileExistsError(f"{run_dir} already holds a run ({CONFIG_JSON}); give a new --out")
        run_dir.mkdir(parents=True, exist_ok=True)
    write_text(run_dir / CONFIG_JSON, config.to_json() + "\n")
    return run_dir


def _train(algo: Any, config: RLlibConfig, run_dir: Path) -> RLlibResult:
    """The training loop: iterate, log each iteration, checkpoint; a Ctrl-C saves before it ends the run."""
    from torch.utils.tensorboard import SummaryWriter

    from training.scale.rllib.env import runner_seeds

    checkpoint = run_dir / CHECKPOINT_DIR
    writer = SummaryWriter(log_dir=str(run_dir / TENSORBOARD_DIR))
    scalars: dict[str, float] = {}
    done = 0
    started = time.perf_counter()
    try:
        for done in range(1, config.iterations + 1):
            scalars = iteration_scalars(algo.train())
            _log_iteration(writer, run_dir, done, scalars)
            if config.checkpoint_every and done % config.checkpoint_every == 0:
                algo.save_to_path(str(checkpoint))
    except KeyboardInterrupt:
        algo.save_to_path(str(checkpoint))
        raise KeyboardInterrupt(f"saved the checkpoint of {done - 1} iteration(s) in {checkpoint}") from None
    finally:
        writer.close()
    elapsed = time.perf_counter() - started
    algo.save_to_path(str(checkpoint))
    steps = int(scalars.get("time/env_steps", 0))
    logger.info("%d iterations, %d env steps in %.0f s; checkpoint: %s", done, steps, elapsed, checkpoint)
    seeds = dict(algo.env_runner_group.foreach_env_runner(runner_seeds, local_env_runner=False))
    return RLlibResult(run_dir, checkpoint, done, steps, elapsed, scalars, seeds)


def _log_iteration(writer: Any, run_dir: Path, iteration: int, scalars: dict[str, float]) -> None:
    """One iteration's scalars: TensorBoard (x = env steps), metrics.jsonl and one log line."""
    step = int(scalars.get("time/env_steps", iteration))
    for tag, value in scalars.items():
        writer.add_scalar(tag, value, step)
    writer.flush()
    with open(run_dir / METRICS_JSONL, "a", encoding="utf-8") as lines:
        lines.write(json.dumps({"iteration": iteration, **scalars}) + "\n")
    logger.info(
        "iteration %d: %d env steps, objective %.3f USD (mean of the iteration's episodes), %.1f s",
        iteration,
        step,
        scalars.get("scheduling/objective_usd", math.nan),
        scalars.get("time/iteration_s", math.nan),
    )


def _evaluate(config: RLlibConfig, scenario: Scenario, run_dir: Path, trained: RLlibResult) -> Evaluation:
    """The policy beside the baselines on the protocol's test seeds, as ``aco-env train``: RUN/eval/, eval.json, tb/.

    As in ``aco-env train``, the policy is played twice: ``rllib-ppo`` takes its deterministic
    action (:func:`agents.place_or_defer.place_or_defer`), ``rllib-ppo-sampled`` samples from them (seeded per episode).
    """
    from aco_env.metrics import TEST_PREFIX
    from training.evaluation.protocol import TEST, first_seed
    from training.evaluation.results import SAMPLED_SUFFIX
    from training.evaluation.results_writer import eval_scalars, write_json, write_results
    from training.learning.run_dir import EVAL_DIR, EVAL_JSON
    from training.scale.rllib.agent import evaluate_checkpoint

    seed = first_seed(TEST, config.eval_episodes, offset=config.seed)  # test seeds from 100000 + seed
    greedy = evaluate_checkpoint(trained.checkpoint, scenario, config.eval_agents, config.eval_episodes, seed)
    sampled = evaluate_checkpoint(trained.checkpoint, scenario, (), config.eval_episodes, seed, deterministic=False)
    evaluation = dataclasses.replace(
        greedy.with_agents({AGENT_NAME + SAMPLED_SUFFIX: sampled.agents[AGENT_NAME]}),
        deterministic=None,  # played both ways
        trained_steps=trained.env_steps,
    )
    write_results(evaluation, run_dir / EVAL_DIR)
    write_json(evaluation, run_dir / EVAL_JSON)
    _write_scalars(run_dir, dict(eval_scalars(evaluation, TEST_PREFIX)), trained.env_steps)
    return evaluation


def _write_scalars(run_dir: Path, scalars: Mapping[str, float], step: int) -> None:
    """``scalars`` as TensorBoard events in RUN/tb at ``step``."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(run_dir / TENSORBOARD_DIR))
    try:
        for tag, value in scalars.items():
            writer.add_scalar(tag, value, step)
    finally:
        writer.close()


def _write_summary(result: RLlibResult) -> None:
    """RUN/summary.json: the counts, the last scalars and the evaluated objectives."""
    summary = {
        "iterations": result.iterations,
        "env_steps": result.env_steps,
        "time_s": round(result.time_s, 1),
        "checkpoint": str(result.checkpoint),
        "env_seeds": {str(runner): seeds for runner, seeds in sorted(result.env_seeds.items())},
        "last_iteration": result.metrics,
        "eval_objective_usd": result.objectives(),
    }
    if result.evaluation is not None:
        summary["eval_seeds"] = list(result.evaluation.seeds)
    write_text(result.run_dir / SUMMARY_JSON, json.dumps(summary, indent=1) + "\n")


__all__ = ["RLlibConfig", "RLlibResult", "iteration_scalars", "ppo_config", "ray_session", "train_rllib"]
