"""Train with RLlib's PPO on Ray (env runners in several processes), then evaluate it beside the baselines.

The distributed path (``pip install 'aco-env[train,ray]'``): ``--env-runners`` env runner
processes sample whole episodes side by side, on a new local Ray or on the cluster at
``--address HOST:PORT`` (a head started with ``ray start --head``; every node needs aco-env
installed). The policy is an MLP over the flattened observation whose invalid actions are
masked out (docs/scale.md). For the best results on one machine, use ``aco-env train``
(SB3 MaskablePPO with the set policy and a DAgger warm start).

The run directory (``--out``, or ``LOGDIR/<scenario>__rllib-ppo__<seed>__<time>/``) gets
``config.json``, ``checkpoint/`` (RLlib's), ``tb/`` (TensorBoard), ``metrics.jsonl``,
``eval/`` and ``eval.json`` (the trained policy's argmax beside ``--eval-agents`` on the
test seeds of the evaluation protocol, 100000 + seed ..., as ``aco-env train``) and
``summary.json``. Every option is checked before Ray starts. Ctrl-C or SIGTERM saves the checkpoint and exits 130.
"""

from __future__ import annotations

import argparse
import importlib.util

from training import checks
from training.cli.backend_options import check_backend
from training.errors import CommandError, UsageError
from training.execution.interrupts import SAVE_FIRST
from training.learning.config import CONFIG_DEST, config_parser
from training.scale.rllib.config import RLlibConfig
from training.scale.rllib.ppo import CONFIG_JSON

PARSER = config_parser
"""This command's parser class (simple-parsing's: the options come from RLlibConfig)."""

HELP = "train with RLlib's PPO on Ray (env runners in several processes) and evaluate it"
STOP_POLICY = SAVE_FIRST
"""Interrupts (the first Ctrl-C or SIGTERM saves the checkpoint of the iterations done; a third stops at once)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The RLlibConfig options."""
    parser.add_arguments(RLlibConfig, dest=CONFIG_DEST, default=RLlibConfig())  # type: ignore[attr-defined]


def run(args: argparse.Namespace) -> int:
    """Check, train, evaluate, print where everything is."""
    from training.execution.backend import BackendError

    config: RLlibConfig = getattr(args, CONFIG_DEST)
    check_backend("ray", config.address)  # the ray extra is installed; --address is HOST:PORT, ray://... or auto
    if importlib.util.find_spec("torch") is None:  # the train extra's: the network and TensorBoard
        raise ModuleNotFoundError("No module named 'torch'", name="torch")
    scenario = checks.scenario(config.scenario)
    if config.eval_episodes > 0 and config.eval_agents:
        checks.agent_list(",".join(config.eval_agents), "--eval-agents")
    if config.out is not None:
        checks.writable_dir(config.out, "--out")
        if (config.out / CONFIG_JSON).exists():
            raise UsageError(f"--out {config.out}: already holds a run ({CONFIG_JSON}); give a new folder")
    else:
        checks.writable_dir(config.logdir, "--logdir")
    from training.evaluation.leaderboard import print_leaderboard
    from training.scale.rllib.ppo import train_rllib  # Ray, RLlib and torch: after the checks

    try:
        result = train_rllib(config, scenario)
    except BackendError as exc:
        raise CommandError(f"--address {config.address}: {exc}") from None
    if result.evaluation is not None:
        print_leaderboard(result.evaluation)
    print(f"{result.iterations} iterations, {result.env_steps} env steps in {result.time_s:.0f} s")
    print(f"run directory: {result.run_dir}")
    print(f"watch it: tensorboard --logdir {result.run_dir}")
    return 0
