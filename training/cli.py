"""The ``aco-env`` command line: one entry point, one module per subcommand.

Each module in :mod:`training.commands` listed in :data:`COMMANDS` defines ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int`` (the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS = ("run", "train", "evaluate", "scenarios", "validate", "replay", "bench", "reproduce")
"""Subcommand names; ``training/commands/<name>.py`` implements each."""


def build_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand (modules are imported here, torch only where needed)."""
    parser = argparse.ArgumentParser(
        prog="aco-env",
        description="Job placement on a heterogeneous compute fleet: scenarios, agents, evaluation, benchmarks.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"training.commands.{name.replace('-', '_')}")
        sub = subparsers.add_parser(name, help=module.HELP, description=module.__doc__)
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the subcommand; returns its exit code."""
    args = build_parser().parse_args(argv)
    return int(args._run(args))


if __name__ == "__main__":
    sys.exit(main())
