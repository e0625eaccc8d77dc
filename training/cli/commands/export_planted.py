"""Export planted episodes as an imitation dataset: decision states, action masks, optimal actions (.npz).

On a planted scenario (planted5, planted50, planted500, or any with ``workload: source: planted``)
every episode's optimal schedule is known. By default the ``planted`` expert plays: every state
is on the planted trajectory and its label is provably optimal. With ``--agent NAME`` that agent
plays and the expert labels the states it visits (DAgger-style); ``on_planted`` marks the rows
still on the planted trajectory (off it the label is the expert's fallback, not a proven
optimum). The expert uses hindsight: fine for labels to train on, never for an evaluated policy.
Episodes are seeded ``--seed``, ``--seed + 1``, ...; the env is ``aco_env.ClusterSchedulingEnv``
with its default options. ``aco-env train --bc-dataset FILE`` fits a policy to the file.

"""

from __future__ import annotations

import argparse
from pathlib import Path

from training import checks
from training.errors import DataError, UsageError
from training.learning.planted_format import FILE_FORMAT

__doc__ += FILE_FORMAT  # the file's arrays in --help (one source: training.learning.planted_format)

HELP = "export planted episodes as an imitation dataset (.npz): states, masks, optimal actions"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--scenario, --episodes, --seed, --out, --agent."""
    parser.add_argument(
        "--scenario", default="planted5", help="a planted scenario: name or path (default: %(default)s)"
    )
    parser.add_argument("--episodes", type=checks.count(1), default=10, help="episodes to play (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="first episode seed (default: %(default)s)")
    parser.add_argument("--out", type=Path, required=True, help="the file to write, FILE.npz")
    parser.add_argument(
        "--agent",
        help="who plays (registry name or sb3:PATH); the planted expert labels its states (default: the expert plays)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar or summary line")


def run(args: argparse.Namespace) -> int:
    """Check the scenario, the agent and the file, play and label, write the file and say what it holds."""
    scenario = checks.scenario(args.scenario)
    if not scenario.planted:
        raise UsageError(
            f"--scenario {args.scenario}: not a planted scenario (its workload source is not planted); "
            f"planted: {', '.join(checks.planted_scenario_names())}"
        )
    if args.agent is not None:
        if "," in args.agent:
            raise UsageError(f"--agent {args.agent}: one agent, not a list")
        checks.agent_list(args.agent, "--agent")
    if args.out.suffix != ".npz":
        raise UsageError(f"--out {args.out}: a planted dataset is a .npz file; end the name in .npz")
    checks.writable_file(args.out, "--out")
    from training.learning.planted_dataset import collect_planted, save_planted_dataset  # the env and agents

    dataset = collect_planted(scenario, args.episodes, args.seed, agent=args.agent, progress=not args.no_progress)
    try:
        save_planted_dataset(dataset, args.out)
    except OSError as exc:
        raise DataError(f"--out {args.out}: cannot write it ({exc.strerror or exc})") from None
    on = int(dataset.on_planted.sum())
    print(
        f"wrote {args.out}: {len(dataset):,} states of {args.episodes} {scenario.name} episode(s) played by "
        f"{dataset.meta['agent']}, {on:,} on the planted trajectory (labels proven optimal); "
        f"optimum (mean) {dataset.episode_optimum_usd.mean():.4f} USD, the player's objective (mean) "
        f"{dataset.episode_objective_usd.mean():.4f} USD"
    )
    return 0
