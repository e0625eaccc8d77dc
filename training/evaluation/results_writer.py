"""Writing an :class:`~training.evaluation.results.Evaluation`: results.json, the plots, the TensorBoard scalars.

The one place evaluation results become files. ``aco-env evaluate`` writes
``OUT/results.json``, ``OUT/leaderboard.md`` (the printed leaderboard as a Markdown table, paired
comparisons included), three PNGs (:mod:`training.evaluation.plots`) and, with ``--tensorboard``, the
``eval/<agent>/<metric>`` scalars; a training run writes the same into ``RUN/eval/`` and
``RUN/eval.json``, and records the same scalars through its SB3 logger (:func:`eval_scalars`).
matplotlib and torch's TensorBoard writer are imported only when writing.
"""

from __future__ import annotations

import json
from pathlib import Path

from aco_env.metrics import EVAL_PREFIX
from training.evaluation.results import Evaluation

RESULTS_JSON = "results.json"
LEADERBOARD_MD = "leaderboard.md"
"""The leaderboard as Markdown (:func:`training.evaluation.leaderboard.leaderboard_markdown`)."""


def write_results(evaluation: Evaluation, out_dir: Path, tensorboard: Path | None = None, step: int = 0) -> list[Path]:
    """``OUT/results.json``, ``OUT/leaderboard.md``, the plots and (optionally) TensorBoard scalars at ``step``.

    Returns:
        The files written.
    """
    from training.evaluation.leaderboard import leaderboard_markdown
    from training.evaluation.plots import write_plots  # matplotlib: only when writing

    out_dir.mkdir(parents=True, exist_ok=True)
    markdown = out_dir / LEADERBOARD_MD
    markdown.write_text(leaderboard_markdown(evaluation), encoding="utf-8")
    written = [write_json(evaluation, out_dir / RESULTS_JSON), markdown, *write_plots(evaluation, out_dir)]
    if tensorboard is not None:
        write_tensorboard(evaluation, tensorboard, step)
    return written


def write_json(evaluation: Evaluation, path: Path) -> Path:
    """The results.json document (:meth:`Evaluation.to_json`) at ``path``."""
    path.write_text(json.dumps(evaluation.to_json(), indent=1, default=float) + "\n")
    return path


def eval_scalars(evaluation: Evaluation, prefix: str = EVAL_PREFIX) -> list[tuple[str, float]]:
    """``(<prefix><agent>/<metric>, mean)`` for each agent and each metric with a mean (not the seed)."""
    scalars = []
    for agent in evaluation.agents:
        for metric, value in evaluation.summary(agent).mean.items():
            if value is not None and metric != "seed":
                scalars.append((f"{prefix}{agent}/{metric}", float(value)))
    return scalars


def write_tensorboard(evaluation: Evaluation, logdir: Path, step: int = 0) -> None:
    """The :func:`eval_scalars` as TensorBoard events in ``logdir``, at ``step`` (e.g. the training step count)."""
    from torch.utils.tensorboard import SummaryWriter  # torch only when asked for TensorBoard output

    writer = SummaryWriter(log_dir=str(logdir))
    try:
        for tag, value in eval_scalars(evaluation):
            writer.add_scalar(tag, value, step)
    finally:
        writer.close()
