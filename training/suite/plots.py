"""The suite's plots (PNG), drawn with rliable's plotting helpers.

``aggregates.png``: per group of tasks, every agent's IQM, median, mean and optimality gap with
their 95 % bootstrap intervals; ``profiles.png``: per group, the performance profiles (share of
episode scores above each normalised score tau, with intervals).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from digital_twin.atomic_files import AtomicBatch, atomic_open
from training.evaluation.plots import save_png
from training.suite.runner import AGGREGATE_GROUPS, SuiteRun
from training.suite.scores import AGGREGATES, PROFILE_TAUS

if TYPE_CHECKING:  # matplotlib loads when a plot is drawn
    from matplotlib.figure import Figure


def write_suite_plots(run: SuiteRun, out_dir: Path, batch: AtomicBatch | None = None) -> list[Path]:
    """Write ``aggregates.png`` and ``profiles.png`` into ``out_dir`` (staged in ``batch`` if given); returns them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn
    from rliable import plot_utils

    groups = [(group, run.aggregates(group)) for group in AGGREGATE_GROUPS]
    groups = [(group, results) for group, results in groups if results]
    agents = list(run.agents)
    palette = "colorblind" if len(agents) <= 10 else "tab20"  # colorblind has 10 colours, then repeats
    colors = dict(zip(agents, seaborn.color_palette(palette, len(agents)), strict=True))
    paths = []

    figures = []
    for group, results in groups:
        points = {agent: np.array([results[agent].intervals[m].point for m in AGGREGATES]) for agent in results}
        intervals = {
            agent: np.array([[results[agent].intervals[m].low, results[agent].intervals[m].high] for m in AGGREGATES]).T
            for agent in results
        }
        figure, _ = plot_utils.plot_interval_estimates(
            points,
            intervals,
            metric_names=list(AGGREGATES),
            algorithms=list(results),
            colors=colors,
            xlabel=f"normalised score, {group} tasks",
            xlabel_y_coordinate=-0.32,
        )
        figures.append(figure)
    paths.append(_stack(figures, out_dir / "aggregates.png", batch))

    figure, axes = plt.subplots(1, len(groups), figsize=(6 * len(groups), 4), squeeze=False)
    for ax, (group, results) in zip(axes[0], groups, strict=True):
        plot_utils.plot_performance_profiles(
            {agent: results[agent].profile for agent in results},
            PROFILE_TAUS,
            performance_profile_cis={
                agent: np.array([results[agent].profile_low, results[agent].profile_high]) for agent in results
            },
            ax=ax,
            colors=colors,
            xlabel=r"normalised score $\tau$",
            ylabel=r"share of episodes with score $> \tau$",
        )
        ax.set_title(f"{run.suite.label}: {group}")
    handles = [matplotlib.lines.Line2D([0], [0], color=colors[agent], lw=2) for agent in agents]
    axes[0][-1].legend(handles, agents, loc="upper right", fontsize="small")
    figure.tight_layout()
    paths.append(save_png(figure, out_dir / "profiles.png", batch, dpi=110))
    return paths


def _stack(figures: list[Figure], path: Path, batch: AtomicBatch | None) -> Path:
    """Save the figures one above the other in one PNG (each rendered, then stacked as images)."""
    import io

    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt

    images = []
    for figure in figures:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        plt.close(figure)
        buffer.seek(0)
        images.append(mpimg.imread(buffer))
    width = max(image.shape[1] for image in images)
    padded = [np.pad(image, ((0, 0), (0, width - image.shape[1]), (0, 0)), constant_values=1.0) for image in images]
    with batch.open(path, "wb") if batch is not None else atomic_open(path, "wb") as handle:
        mpimg.imsave(handle, np.concatenate(padded, axis=0), format="png")
    return path
