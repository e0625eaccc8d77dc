"""Generate the bundled synthetic background trace ``data/synthetic_dc_mean_300s.csv``.

Run ``python -m scenarios.make_synthetic_telemetry`` to regenerate it (fixed seed, so the file
is reproduced byte for byte; a test checks that). The format is that of the Alibaba 2018
data-centre mean trace (header ``cpu_util_percent,mem_util_percent``, one row per 300 s, no
timestamp), so the same reader and per-node mapping serve both.

The model is a daily cycle + AR(1) noise + bursts. Its parameters are matched to statistics
of the Alibaba cluster-trace-v2018 data-centre mean per 300 s (days 1-8, 2,243 rows), which
we measured and list here (the trace itself is not redistributed):

* cpu %: mean 40.2, standard deviation 9.8, range 16.1-79.1, 95th percentile 57.4;
* the daily profile (mean per 5-minute slot of day) swings +-14.5 points, peaking about 6 h
  after the trace start and bottoming out about 19 h after it;
* residual around the daily profile: standard deviation 7.6, lag-1 autocorrelation of the
  whole series 0.81 (0.63 at lag 12 = 1 h);
* tick-to-tick jumps: 35 % of them larger than 5 points, the largest +31.9 (bursts);
* mem %: mean 88.0, standard deviation 2.5, range 78.3-95.0.

Bursts (which the trace shows as sudden rises of 15-30 points that decay over tens of
minutes) arrive as a Poisson process, 3 per day on average, each adding U(12, 25) points that
decay with a time constant of U(15, 45) minutes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from digital_twin.atomic_files import write_text

TICK_S = 300.0
DAYS = 8
SEED = 20_181_201
OUTPUT = Path(__file__).resolve().parent / "data" / "synthetic_dc_mean_300s.csv"

CPU_MEAN, CPU_DAILY_AMPLITUDE, CPU_PEAK_HOUR = 37.5, 11.0, 6.25
CPU_AR_PHI, CPU_RESIDUAL_STD = 0.45, 5.0
BURSTS_PER_DAY, BURST_RISE, BURST_DECAY_MIN = 3.0, (12.0, 25.0), (15.0, 45.0)
MEM_MEAN, MEM_AR_PHI, MEM_RESIDUAL_STD, MEM_DAILY_AMPLITUDE = 88.0, 0.95, 2.0, 1.5


def synthetic_dc_mean(rng: np.random.Generator, days: int = DAYS) -> np.ndarray:
    """``(days * 288, 2)`` cpu %, mem % on a 300 s grid, clipped to [0, 100]."""
    n = int(days * 86_400 / TICK_S)
    hours = np.arange(n) * TICK_S / 3600.0
    daily = np.cos(2.0 * np.pi * (hours - CPU_PEAK_HOUR) / 24.0)
    cpu = CPU_MEAN + CPU_DAILY_AMPLITUDE * daily + _ar1(rng, n, CPU_AR_PHI, CPU_RESIDUAL_STD)
    n_bursts = rng.poisson(BURSTS_PER_DAY * days)
    starts = rng.integers(0, n, n_bursts)
    rises = rng.uniform(*BURST_RISE, n_bursts)
    decays_ticks = rng.uniform(*BURST_DECAY_MIN, n_bursts) * 60.0 / TICK_S
    for start, rise, decay in zip(starts, rises, decays_ticks, strict=True):
        after = np.arange(n - start)
        cpu[start:] += rise * np.exp(-after / decay)
    mem = MEM_MEAN + MEM_DAILY_AMPLITUDE * daily + _ar1(rng, n, MEM_AR_PHI, MEM_RESIDUAL_STD)
    return np.clip(np.column_stack([cpu, mem]), 0.0, 100.0)


def _ar1(rng: np.random.Generator, n: int, phi: float, std: float) -> np.ndarray:
    """Stationary AR(1) noise with marginal standard deviation ``std``."""
    innovations = rng.normal(0.0, std * np.sqrt(1.0 - phi * phi), n)
    out = np.empty(n)
    out[0] = rng.normal(0.0, std)
    for k in range(1, n):
        out[k] = phi * out[k - 1] + innovations[k]
    return out


def write_csv(values: np.ndarray, path: Path) -> None:
    """Write ``values`` in the Alibaba mean-trace format (2 decimals)."""
    lines = ["cpu_util_percent,mem_util_percent"]
    lines += [f"{cpu:.2f},{mem:.2f}" for cpu, mem in values]
    write_text(path, "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    """Regenerate the bundled file (or write elsewhere with ``--out``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    values = synthetic_dc_mean(np.random.default_rng(SEED))
    write_csv(values, args.out)
    cpu = values[:, 0]
    print(f"wrote {args.out}: {len(values)} rows; cpu mean {cpu.mean():.1f} std {cpu.std():.1f} "
          f"range {cpu.min():.1f}-{cpu.max():.1f}")


if __name__ == "__main__":
    main()
