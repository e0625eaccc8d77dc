"""Where the real traces are, whether a tier's files are present, and what exactly was read.

Real traces are never part of the project: they are read from the folder named by
``ACO_ENV_TRACES`` (:data:`scenarios.TRACES_ENV`). A tier that needs them calls
:func:`locate_traces` first (:func:`missing_files`, :func:`skip_message`) and, when something is
missing, reports a skip (its :func:`tier_head` plus ``"skipped"``) instead of failing.
:func:`describe_files` records each file read (name, size and SHA-256) so the report says which
data produced its numbers.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import scenarios

ALIBABA_GPU_NODES = "alibaba-gpu-2023/openb_node_list_gpu_node.csv"
"""The Alibaba GPU 2023 node list (T4.1), relative to the traces folder."""
ALIBABA_GPU_PODS = "alibaba-gpu-2023/openb_pod_list_gpuspec33.csv"
"""The Alibaba GPU 2023 pod list the reference's T4.1 samples from."""
ALIBABA_2018_MEAN = "alibaba-2018-machine-usage-dcavg-300s/machine_usage_days_1_to_8_grouped_300_seconds.csv"
"""The Alibaba 2018 data-centre mean per 300 s (T4.1 background, T5.2 windows)."""
BUNDLED_SYNTHETIC_TRACE = scenarios.CATALOGUE_DIR / "data" / "synthetic_dc_mean_300s.csv"
"""The project's own synthetic background trace (no real data needed)."""


def traces_dir() -> Path | None:
    """The folder named by ``ACO_ENV_TRACES``, or ``None`` when the variable is unset or empty."""
    value = os.environ.get(scenarios.TRACES_ENV, "").strip()
    return Path(value) if value else None


def missing_files(relative: Sequence[str], root: Path | None) -> list[str]:
    """The files of ``relative`` not present under ``root`` (all of them when ``root`` is None)."""
    if root is None:
        return list(relative)
    return [name for name in relative if not (root / name).is_file()]


def skip_message(missing: Sequence[str], root: Path | None) -> str:
    """A one-line reason for skipping a tier, naming the variable or the missing files."""
    if root is None:
        return f"skipped: needs real traces; set {scenarios.TRACES_ENV} to the folder holding {', '.join(missing)}"
    return f"skipped: not found under {root}: {', '.join(missing)}"


def locate_traces(relative: Sequence[str]) -> tuple[Path | None, str]:
    """Where a tier's real files are: ``(traces folder, "")``, or ``(None, reason)`` to skip the tier.

    Args:
        relative: The files the tier reads, relative to the traces folder (at least one).

    Returns:
        The folder of :func:`traces_dir` when it holds every file of ``relative``; otherwise
        ``None`` and the :func:`skip_message` naming the variable or the missing files.
    """
    root = traces_dir()
    missing = missing_files(relative, root)
    if missing:
        return None, skip_message(missing, root)
    return root, ""


def tier_head(name: str, title: str, seeds: Sequence[int]) -> dict[str, Any]:
    """The first keys of every tier's result: ``{"tier": name, "title": title, "seeds": [...]}``."""
    return {"tier": name, "title": title, "seeds": list(seeds)}


def describe_files(paths: Sequence[Path]) -> list[dict[str, object]]:
    """For each file: ``{"file": name, "bytes": size, "sha256": hex digest}``."""
    out: list[dict[str, object]] = []
    for path in paths:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        out.append({"file": path.name, "bytes": path.stat().st_size, "sha256": digest})
    return out
