"""Time and memory of one planted episode at scale: ``python examples/planted_scale.py --nodes 1000``.

Generates a fleet of the default five node types (``digital_twin.fleet.generate_fleet``), a
constant background, and one planted episode (generation and certificate), and prints the
jobs, the optimum, the seconds and the process's peak memory.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from digital_twin import EpisodeSettings, ObjectiveWeights, Telemetry
from digital_twin.fleet import default_fleet, generate_fleet
from digital_twin.planted import PlantedConfig, plant


def main() -> None:
    """Parse the options, plant one episode, print what it took."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-duration-s", type=float, default=1800.0, help="longest planted run (shorter: more jobs)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    types = {node.node_id: node for node in default_fleet()}
    counts = {name: args.nodes // len(types) + (k < args.nodes % len(types)) for k, name in enumerate(types)}
    fleet = generate_fleet(types, counts, rng)
    horizon_s = 14400.0
    settings = EpisodeSettings(
        horizon_s,
        interference="processor-sharing",
        spot_recovery_s=600,
        weights=ObjectiveWeights(qos_violation_usd=0.5, eviction_usd=5.0, rejection_usd=5.0, wait_usd_per_job_hour=2.0),
    )
    telemetry = Telemetry.constant(len(fleet), rng.uniform(0, 30, len(fleet)).tolist(), 40, horizon_s, 300)
    start = time.perf_counter()
    config = PlantedConfig(plant_until_s=10800, max_duration_s=args.max_duration_s)
    episode = plant(fleet, telemetry, settings, config, rng)
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"nodes {len(fleet)}, jobs {len(episode.spec.jobs):,}, optimum {episode.optimum_usd:.3f} USD, "
        f"generation and certificate {seconds:.2f} s, peak memory {peak_mib:.0f} MiB"
    )


if __name__ == "__main__":
    main()
