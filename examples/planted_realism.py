"""How close a planted family's episodes are to the default scenario's: KS tests, the optimum's spread.

For a planted scenario and a reference scenario (default ``fleet5-synthetic``), over the same
number of seeds each, prints: two-sample Kolmogorov-Smirnov tests (``scipy.stats.ks_2samp``) of
the jobs' cpu request, duration and arrival gap (each episode's consecutive arrivals; also
rescaled by the episode's mean gap, which compares the shape of the arrival process apart from
its rate); the class mix; the planted optimum's mean and coefficient of variation; the share of
episodes whose optimum runs a job on a node dearer than its group's cheapest or has a job wait.

    python examples/planted_realism.py --scenario planted5-priced --seeds 50
    python examples/planted_realism.py --scenario planted5 --seeds 50
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np
from scipy.stats import ks_2samp

from digital_twin.workload import Workload
from scenarios import load as load_scenario


def columns(jobs: Workload) -> dict[str, np.ndarray]:
    """One episode's cpu cores, durations (s), arrival gaps (s) and gaps over their mean."""
    arrivals = np.sort(np.array([j.arrival_s for j in jobs]))
    gaps = np.diff(arrivals)
    return {
        "cpu cores": np.array([j.cpu_cores for j in jobs]),
        "duration s": np.array([j.duration_s for j in jobs]),
        "arrival gap s": gaps,
        "gap / mean gap": gaps / gaps.mean() if len(gaps) and gaps.mean() > 0 else gaps,
    }


def main() -> None:
    """Print the table for ``--scenario`` against ``--reference``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="planted5-priced")
    parser.add_argument("--reference", default="fleet5-synthetic")
    parser.add_argument("--seeds", type=int, default=50)
    args = parser.parse_args()
    planted, reference = load_scenario(args.scenario), load_scenario(args.reference)
    episodes = [planted.planted_episode(np.random.default_rng(seed)) for seed in range(args.seeds)]
    ours = [columns(e.spec.jobs) for e in episodes]
    theirs = [columns(reference.jobs(np.random.default_rng(seed))) for seed in range(args.seeds)]
    print(f"{args.scenario} against {args.reference}, {args.seeds} seeds each")
    print(f"{'quantity':<16} {'planted mean':>13} {'reference mean':>15} {'KS D':>7} {'p':>10}")
    for key in ours[0]:
        a = np.concatenate([o[key] for o in ours])
        b = np.concatenate([t[key] for t in theirs])
        result = ks_2samp(a, b)
        print(f"{key:<16} {a.mean():>13.4g} {b.mean():>15.4g} {result.statistic:>7.3f} {result.pvalue:>10.3g}")
    mix = Counter(j.workload + ("+gpu" if j.gpu_count else "") for e in episodes for j in e.spec.jobs)
    ref_jobs = [j for s in range(args.seeds) for j in reference.jobs(np.random.default_rng(s))]
    ref_mix = Counter(j.workload + ("+gpu" if j.gpu_count else "") for j in ref_jobs)
    for name, counts in (("planted", mix), ("reference", ref_mix)):
        total = sum(counts.values())
        shares = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(counts.items()))
        print(f"class mix, {name}: {shares} ({total / args.seeds:.1f} jobs per episode)")
    optima = np.array([e.optimum_usd for e in episodes])
    print(f"optimum: mean {optima.mean():.4f} USD, coefficient of variation {optima.std() / optima.mean():.1%}")
    waits = sum(any(e.start_of(j) > job.arrival_s for j, job in enumerate(e.spec.jobs)) for e in episodes)
    print(f"episodes whose optimum has a job wait: {waits} of {len(episodes)}")


if __name__ == "__main__":
    main()
