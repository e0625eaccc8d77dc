"""The main job (``make run``): play the baselines on the default scenario and print the leaderboard.

Every agent plays the same seeds of ``fleet5-synthetic`` (the 5-node fleet on the bundled
synthetic trace); the leaderboard shows the objective and each of its terms, and the full
objective breakdown of the best agent's first episode is printed below it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import scenarios
from agents import agent_names
from training.commands.evaluate import write_outputs
from training.evaluation import evaluate
from training.leaderboard import format_leaderboard

HELP = "the main job: baselines (and the oracle) on the default scenario, with the leaderboard"
BASELINES = ("first-fit", "cheapest", "aco", "oracle")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--scenario, --episodes, --seed, --out."""
    parser.add_argument("--scenario", default=scenarios.DEFAULT, help="bundled name or YAML path")
    parser.add_argument("--episodes", type=int, default=3, help="episodes per agent (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="first episode seed (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path("results/run"), help="output folder")


def run(args: argparse.Namespace) -> int:
    """Evaluate the registered baselines and print the leaderboard and one objective breakdown."""
    agents = [name for name in BASELINES if name in agent_names()]
    document = evaluate(args.scenario, agents, args.episodes, args.seed)
    write_outputs(document, args.out)
    print(format_leaderboard(document))
    best = min(document["agents"], key=lambda name: document["agents"][name]["mean"]["objective_usd"])
    episode = document["agents"][best]["per_episode"][0]
    print(f"\nobjective breakdown of {best}, seed {episode['seed']:.0f}:")
    for term in ("cost_usd", "sla_usd", "qos_usd", "eviction_usd", "deadline_usd", "rejection_usd", "objective_usd"):
        print(f"  {term:<15} {episode[term]:>10.4f}")
    print(f"  jobs: {episode['completed_jobs']:.0f} completed, {episode['failed_jobs']:.0f} failed, "
          f"{episode['rejected_jobs']:.0f} rejected, {episode['running_jobs']:.0f} still running at the horizon; "
          f"mean wait {episode['mean_wait_s']:.0f} s, cpu utilisation {episode['utilization_cpu']:.0%}")
    print(f"\nresults, plots: {args.out}/  (aco-env evaluate --help for more agents and scenarios)")
    return 0
