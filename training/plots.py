"""Evaluation plots (matplotlib, PNG): objective with CIs, stacked objective terms, latency CDF."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from digital_twin.objective import USD_KEYS
from training.results import Evaluation

TERMS = USD_KEYS  # the objective's terms, stacked in summation order


def write_plots(evaluation: Evaluation, out_dir: Path) -> list[Path]:
    """Write the three PNGs into ``out_dir``; returns their paths.

    ``objective_by_agent.png`` (mean objective with its 95 % CI), ``objective_terms.png`` (the
    mean of each objective term, stacked) and ``decision_latency_cdf.png`` (of every decision).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(evaluation.agents)
    summaries = {name: evaluation.summary(name) for name in names}
    x = np.arange(len(names))
    paths = []

    figure, axes = plt.subplots(figsize=(max(6, len(names) * 0.9), 4))
    means = [summaries[n].mean.get("objective_usd") or 0.0 for n in names]
    errors = [summaries[n].ci95.get("objective_usd") or 0.0 for n in names]
    axes.bar(x, means, yerr=errors, capsize=4, color="#2f80ed")
    axes.set_xticks(x, names, rotation=30, ha="right")
    axes.set_ylabel("episode objective (USD), mean +- 95 % CI")
    axes.set_title(f"{evaluation.scenario}: objective by agent")
    figure.tight_layout()
    paths.append(_save(figure, out_dir / "objective_by_agent.png"))

    figure, axes = plt.subplots(figsize=(max(6, len(names) * 0.9), 4))
    bottom = np.zeros(len(names))
    for term in TERMS:
        values = np.array([summaries[n].mean.get(term) or 0.0 for n in names])
        axes.bar(x, values, bottom=bottom, label=term.removesuffix("_usd"))
        bottom += values
    axes.set_xticks(x, names, rotation=30, ha="right")
    axes.set_ylabel("USD (mean per episode)")
    axes.set_title("objective terms per agent")
    axes.legend(fontsize=8)
    figure.tight_layout()
    paths.append(_save(figure, out_dir / "objective_terms.png"))

    figure, axes = plt.subplots(figsize=(6, 4))
    for name in names:
        values = np.sort(np.asarray(evaluation.agents[name].latencies_ms, dtype=float))
        if values.size:
            axes.plot(values, np.arange(1, values.size + 1) / values.size, label=name)
    axes.set_xscale("log")
    axes.set_xlabel("decision latency (ms, log scale)")
    axes.set_ylabel("fraction of decisions")
    axes.set_title("decision latency CDF")
    axes.legend(fontsize=8)
    figure.tight_layout()
    paths.append(_save(figure, out_dir / "decision_latency_cdf.png"))
    return paths


def _save(figure: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
