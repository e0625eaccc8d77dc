"""Evaluation plots (matplotlib, PNG): objective with CIs, stacked objective terms, latency CDF."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from digital_twin.atomic_files import AtomicBatch, atomic_open
from digital_twin.objective import USD_KEYS
from training.evaluation.results import Evaluation

TERMS = USD_KEYS  # the objective's terms, stacked in summation order


def write_plots(evaluation: Evaluation, out_dir: Path, batch: AtomicBatch | None = None) -> list[Path]:
    """Write the three PNGs into ``out_dir`` (staged in ``batch`` when given); returns their paths.

    ``objective_by_agent.png`` (mean objective with its 95 % CI), ``objective_terms.png`` (the
    mean of each objective term, stacked: :func:`terms_figure`) and ``decision_latency_cdf.png`` (of every decision).
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
    paths.append(_save(figure, out_dir / "objective_by_agent.png", batch))

    figure = terms_figure(evaluation)
    paths.append(_save(figure, out_dir / "objective_terms.png", batch))

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
    paths.append(_save(figure, out_dir / "decision_latency_cdf.png", batch))
    return paths


TERM_COLOURS = "tab20"
"""The qualitative colour map of the terms: term ``k`` of :data:`TERMS` has its colour ``k``, the same in every plot."""


def terms_figure(evaluation: Evaluation) -> Any:
    """The stacked mean objective terms per agent: only the terms some agent pays, a colour each, the legend outside.

    A term that is zero for every agent (no carbon price, no workflows) is left out of the bars
    and the legend; the legend sits right of the axes, so it covers no bar.
    """
    import matplotlib.pyplot as plt

    names = list(evaluation.agents)
    summaries = {name: evaluation.summary(name) for name in names}
    colours = plt.get_cmap(TERM_COLOURS).colors
    x = np.arange(len(names))
    figure, axes = plt.subplots(figsize=(max(6, len(names) * 0.9) + 2.5, 4))
    bottom = np.zeros(len(names))
    for k, term in enumerate(TERMS):
        values = np.array([summaries[n].mean.get(term) or 0.0 for n in names])
        if not np.any(values):
            continue
        axes.bar(x, values, bottom=bottom, label=term.removesuffix("_usd"), color=colours[k % len(colours)])
        bottom += values
    axes.set_xticks(x, names, rotation=30, ha="right")
    axes.set_ylabel("USD (mean per episode)")
    axes.set_title("objective terms per agent (terms that are zero for all left out)")
    handles, labels = axes.get_legend_handles_labels()
    if handles:  # top to bottom, as the bars stack
        axes.legend(handles[::-1], labels[::-1], fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return figure


LEARNING_CURVE_PNG = "learning_curve.png"
"""The learning curve of a training run, in the run directory."""


EXPLAINED_VARIANCE_TAG = "train/explained_variance"
"""SB3's scalar of how much of the returns' variance the value head explains (drawn beside the curve)."""


def write_learning_curve(events_dir: Path, out_path: Path, metric: str = "objective_usd") -> Path | None:
    """Plot every ``eval/<agent>/<metric>`` series of a run's TensorBoard events; ``None`` if it has none.

    The trained policy's series is a line with markers (one per curve point); the baselines,
    logged at the same steps, are the flat reference lines beside it. Reads the events with
    TensorBoard's own reader, so the PNG shows exactly what TensorBoard shows.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from aco_env.metrics import EVAL_PREFIX

    events = EventAccumulator(str(events_dir), size_guidance={"scalars": 0})
    reader_log = logging.getLogger("tensorboard")  # its INFO lines ("No path found after ...") are not ours
    level = reader_log.level
    reader_log.setLevel(logging.WARNING)
    try:
        events.Reload()
    finally:
        reader_log.setLevel(level)
    scalars = events.Tags()["scalars"]
    tags = sorted(t for t in scalars if t.startswith(EVAL_PREFIX) and t.endswith("/" + metric))
    if not tags:
        return None
    critic = EXPLAINED_VARIANCE_TAG in scalars
    figure, panels = plt.subplots(1, 2 if critic else 1, figsize=(12 if critic else 7, 4), squeeze=False)
    axes = panels[0][0]
    for tag in tags:
        points = events.Scalars(tag)
        steps, values = [p.step for p in points], [p.value for p in points]
        flat = len(set(values)) == 1
        axes.plot(steps, values, "--" if flat else "-o", label=tag.removeprefix(EVAL_PREFIX).split("/")[0], ms=3)
    axes.set_xlabel("training steps")
    axes.set_ylabel(f"{metric} (mean over validation episodes)")
    axes.set_title("learning curve on the validation seeds")
    axes.legend(fontsize=8)
    if critic:
        points = events.Scalars(EXPLAINED_VARIANCE_TAG)
        right = panels[0][1]
        right.plot([p.step for p in points], [p.value for p in points], "-", color="tab:purple")
        right.axhline(0.0, color="grey", lw=0.5)
        right.set_ylim(min(-0.1, *(p.value for p in points)), 1.0)
        right.set_xlabel("training steps")
        right.set_ylabel("explained variance of the value head")
        right.set_title("the critic: 1 - Var(return - value) / Var(return), per PPO update")
    figure.tight_layout()
    return _save(figure, out_path)


def save_png(figure: Any, path: Path, batch: AtomicBatch | None = None, **options: Any) -> Path:
    """``figure`` as a PNG at ``path``, written atomically (staged in ``batch`` when given); closes the figure.

    ``options`` go to ``savefig`` (``dpi=...``).
    """
    import matplotlib.pyplot as plt

    try:
        with batch.open(path, "wb") if batch is not None else atomic_open(path, "wb") as handle:
            figure.savefig(handle, format="png", **options)
    finally:
        plt.close(figure)
    return path


def _save(figure: Any, path: Path, batch: AtomicBatch | None = None) -> Path:
    return save_png(figure, path, batch, dpi=100)
