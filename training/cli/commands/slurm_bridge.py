"""Place a real Slurm's held jobs with an agent: ``aco-env slurm-bridge --agent SPEC``.

An external scheduler for slurmctld (the ``serve`` extra): jobs are submitted held (``sbatch
--hold``); every ``--interval-s`` the bridge reads them (``squeue --json``, ``sinfo --json``),
asks the agent, pins each placed job to its node (``scontrol update ReqNodeList``) and releases
it, only if the pin succeeded. Deferred jobs stay held. It survives a slurmctld restart (a poll
that gets no answer changes nothing). The fleet scenario's node names must be Slurm's node names.
Slurm's commands read ``SLURM_CONF`` as usual. Ctrl-C or SIGTERM stops it (the ``--state``
journal is written then). Its live episode lasts the scenario's horizon (episode time starts at
the first poll); then it stops with a message. docs/serving.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from training.cli.commands.serve import build_checked
from training.errors import EXIT_OK, DataError, UsageError

HELP = "place a real Slurm's held jobs with an agent (pin to the agent's node, then release)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--agent, --fleet, --interval-s, --polls, --state, --seed, --default-duration-s."""
    parser.add_argument("--agent", required=True, help="registered agent (options allowed: NAME[k=v]) or sb3:PATH")
    parser.add_argument("--fleet", default="fleet5-synthetic", help="scenario whose fleet names Slurm's nodes")
    parser.add_argument("--interval-s", type=float, default=1.0, help="seconds between polls (default 1)")
    parser.add_argument("--polls", type=int, help="stop after this many polls (default: run until stopped)")
    parser.add_argument("--state", type=Path, help="journal file: replayed at start when it exists, written at stop")
    parser.add_argument("--seed", type=int, default=0, help="seeds the agent (default 0)")
    parser.add_argument("--default-duration-s", type=float, default=3600.0,
                        help="run time declared for jobs without a time limit (default 3600 s)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Check the options, then poll until stopped."""
    if not args.interval_s > 0:
        raise UsageError(f"--interval-s {args.interval_s}: must be > 0")
    if args.polls is not None and args.polls < 1:
        raise UsageError(f"--polls {args.polls}: must be >= 1")
    service = build_checked(args.agent, args.fleet, args.seed, args.default_duration_s, args.state)
    from serving.slurm import SlurmBridge, SlurmClient  # the serve extra, imported only here

    bridge = SlurmBridge(service, SlurmClient())
    polls = {"done": 0}

    def stop() -> bool:
        polls["done"] += 1
        return args.polls is not None and polls["done"] > args.polls

    print(
        f"aco-env slurm-bridge: {args.agent} placing held jobs on {service.cluster.scenario.name}'s nodes", flush=True
    )
    from serving.events import EventError

    try:
        bridge.run(args.interval_s, stop)
    except EventError as exc:  # the live episode reached the scenario's horizon
        raise DataError(f"the live episode cannot go on ({exc}); start the bridge again for a new one") from None
    finally:
        service.save()
    print(f"aco-env slurm-bridge: placed {len(bridge.placed)} jobs; {len(bridge.failed_pins)} pins failed", flush=True)
    return EXIT_OK
