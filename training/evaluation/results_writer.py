"""Writing an :class:`~training.evaluation.results.Evaluation`: results.json, the plots, the TensorBoard scalars.

The one place evaluation results become files. ``aco-env evaluate`` writes
``OUT/results.json``, ``OUT/leaderboard.md`` (the printed leaderboard as a Markdown table, paired
comparisons included), three PNGs (:mod:`training.evaluation.plots`) and, with ``--tensorboard``, the
``eval/<agent>/<metric>`` scalars; a training run writes the same into ``RUN/eval/`` and
``RUN/eval.json``, and records the same scalars through its SB3 logger (:func:`eval_scalars`).
matplotlib and torch's TensorBoard writer are imported only when writing.

results.json, leaderboard.md and the plots are written together (:class:`digital_twin.atomic_files.AtomicBatch`):
each to a temporary name, all renamed into place once every one is written, so a full disk or an
interrupt leaves the folder's earlier files as they were and the error names the file that failed.
TensorBoard's events are TensorBoard's own files, appended to after the others are in place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aco_env.metrics import EVAL_PREFIX
from digital_twin.atomic_files import AtomicBatch, atomic_open
from training.evaluation.results import Evaluation

RESULTS_JSON = "results.json"
LEADERBOARD_MD = "leaderboard.md"
"""The leaderboard as Markdown (:func:`training.evaluation.leaderboard.leaderboard_markdown`)."""


PROVENANCE_JSON = "provenance.json"
"""Beside results.json: the command that made it, the commit, the date and the library versions."""


def write_results(
    evaluation: Evaluation,
    out_dir: Path,
    tensorboard: Path | None = None,
    step: int = 0,
    provenance: dict[str, Any] | None = None,
) -> list[Path]:
    """``OUT/results.json``, ``OUT/leaderboard.md``, the plots and (optionally) TensorBoard scalars at ``step``.

    With ``provenance`` (:func:`training.learning.provenance.provenance`: command, commit, date,
    versions), also ``OUT/provenance.json``, from which a results page names each table's source.

    Returns:
        The files written.

    Raises:
        digital_twin.atomic_files.OutputError: A file could not be written (every earlier file is unchanged).
    """
    from training.evaluation.leaderboard import leaderboard_markdown
    from training.evaluation.plots import write_plots  # matplotlib: only when writing

    with AtomicBatch() as batch:
        markdown = batch.write_text(out_dir / LEADERBOARD_MD, leaderboard_markdown(evaluation))
        results = write_json(evaluation, out_dir / RESULTS_JSON, batch)
        written = [results, markdown, *write_plots(evaluation, out_dir, batch)]
        if provenance is not None:
            written.append(batch.write_text(out_dir / PROVENANCE_JSON, json.dumps(provenance, indent=1) + "\n"))
    if tensorboard is not None:
        write_tensorboard(evaluation, tensorboard, step)
    return written


def write_json(evaluation: Evaluation, path: Path, batch: AtomicBatch | None = None) -> Path:
    """The results.json document (:meth:`Evaluation.to_json`) at ``path`` (staged in ``batch`` when given)."""
    text = json.dumps(evaluation.to_json(), indent=1, default=float) + "\n"
    with batch.open(path) if batch is not None else atomic_open(path) as handle:
        handle.write(text)
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
