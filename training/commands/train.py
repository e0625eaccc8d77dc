"""Train an agent (SB3 MaskablePPO by default) on a scenario, then evaluate it beside the baselines.

Every option comes from ``training.config.TrainConfig`` (one field, one option, its docstring
as help). The run directory is printed at the end, with the ``tensorboard`` command to watch it.
"""

from __future__ import annotations

import argparse

from training.config import add_config_arguments, config_from_args

HELP = "train an SB3 agent (maskable-ppo, ppo, dqn, a2c, bc) and evaluate it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The TrainConfig options."""
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Train, evaluate, print where everything is."""
    from training.leaderboard import format_leaderboard
    from training.train import train

    config = config_from_args(args)
    run_dir = train(config)
    eval_file = run_dir / "eval.json"
    if eval_file.exists():
        import json

        print(format_leaderboard(json.loads(eval_file.read_text())))
    print(f"run directory: {run_dir}")
    print(f"watch it: tensorboard --logdir {config.logdir}")
    return 0
