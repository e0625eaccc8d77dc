"""Spot outages per episode, Poisson or replayed: ``python examples/spot_outages.py SCENARIO...``.

For each scenario, over the protocol's first test seeds (``--episodes``), the interruptions per
episode and the share of spot node-time spent down before the horizon, from each episode's
hindsight view (what the oracle sees; online agents see only what has come).
"""

from __future__ import annotations

import argparse

import numpy as np

import scenarios
from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of
from training.evaluation.protocol import seeds


def outage_stats(name: str, episodes: int) -> tuple[float, float, float]:
    """Mean interruptions per episode, mean share of spot node-time down, and the share of episodes with any."""
    env = ClusterSchedulingEnv(scenarios.load(name))
    counts, shares = [], []
    for seed in seeds("test", episodes):
        env.reset(seed=seed)
        view = hindsight_of(env)
        horizon = float(view.spec.settings.horizon_s)
        spot = [i for i, node in enumerate(view.fleet) if node.is_spot]
        down = sum(min(end, horizon) - start for i in spot for start, end in view.down_windows_s[i])
        counts.append(sum(len(view.interruptions_s[i]) for i in spot))
        shares.append(down / (horizon * len(spot)) if spot else 0.0)
    return float(np.mean(counts)), float(np.mean(shares)), float(np.mean(np.array(counts) > 0))


def main() -> None:
    """Print one row per scenario."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+")
    parser.add_argument("--episodes", type=int, default=20)
    args = parser.parse_args()
    print("| scenario | interruptions per episode | spot node-time down | episodes with one |")
    print("|---|---:|---:|---:|")
    for name in args.scenarios:
        count, share, any_share = outage_stats(name, args.episodes)
        print(f"| {name} | {count:.2f} | {share:.1%} | {any_share:.0%} |")


if __name__ == "__main__":
    main()
