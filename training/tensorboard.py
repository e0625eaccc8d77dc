"""Writing evaluation results to TensorBoard (``eval/<agent>/<metric>``) beside learning curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aco_env.metrics import EVAL_PREFIX


def write_eval_scalars(document: dict[str, Any], logdir: Path, step: int = 0) -> None:
    """One scalar per agent and mean metric, at ``step`` (e.g. the training step count)."""
    from torch.utils.tensorboard import SummaryWriter  # torch only in the training layer

    writer = SummaryWriter(log_dir=str(logdir))
    try:
        for agent, summary in document["agents"].items():
            for metric, value in summary["mean"].items():
                if isinstance(value, int | float) and metric != "seed":
                    writer.add_scalar(f"{EVAL_PREFIX}{agent}/{metric}", float(value), step)
    finally:
        writer.close()
