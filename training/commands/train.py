"""Train an agent (SB3 MaskablePPO by default) on a scenario, then evaluate it beside the baselines.

Every option comes from ``training.config.TrainConfig`` (one field, one option, its docstring
as help). Every option is checked before training starts. The run directory is printed at the
end, with the ``tensorboard`` command to watch it. ``--resume RUN_DIR`` continues a run in its
own directory up to ``--timesteps`` steps in all. Ctrl-C or SIGTERM saves ``model.zip`` and a
checkpoint, says where, and exits 130.
"""

from __future__ import annotations

import argparse

from training.config import TrainConfig, add_config_arguments, config_from_args
from training.errors import UsageError

HELP = "train an SB3 agent (maskable-ppo, ppo, dqn, a2c, bc) and evaluate it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The TrainConfig options."""
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Check, train, evaluate, print where everything is."""
    from training.train_checks import check_train_config, given_options

    requested = command_config(args)
    config = check_train_config(requested, given_options(requested))
    from training.leaderboard import format_leaderboard
    from training.train import train  # torch and SB3: after the checks, so a mistake is reported at once

    run_dir = train(config)  # Ctrl-C: saves, then raises TrainingInterrupted (exit 130 in training.cli)
    eval_file = run_dir / "eval.json"
    if config.eval_episodes > 0 and eval_file.exists():
        import json

        print(format_leaderboard(json.loads(eval_file.read_text())))
    print(f"run directory: {run_dir}")
    print(f"watch it: tensorboard --logdir {run_dir.parent}")
    return 0


def command_config(args: argparse.Namespace) -> TrainConfig:
    """The TrainConfig of the parsed options (a value it rejects is a usage error)."""
    try:
        return config_from_args(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None

