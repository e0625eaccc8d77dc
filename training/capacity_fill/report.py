"""Summaries of capacity fills: per policy and arrived load, the mean and spread over seeds.

The JSON result holds the run's settings, every fill's full curve and the summary; the Markdown
table shows the GPU allocation ratio and the fragmentation rate (both in %) at chosen loads.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from digital_twin.atomic_files import AtomicBatch
from training.capacity_fill.fill import FillCurve
from training.evaluation.results_page import table_header

PROVENANCE_KEYS = ("command", "commit", "started")
"""Settings shown as the table's header line (:func:`table_header`), not in the settings list."""

DEFAULT_TABLE_LOADS = (80, 90, 100, 110, 120, 130)
"""Arrived loads (% of GPU capacity) shown in the table."""


def _stats(values: np.ndarray) -> dict[str, float]:
    """Mean, sample standard deviation, min and max (percent); NaNs ignored, all NaN -> NaN."""
    finite = values[np.isfinite(values)] * 100.0
    if finite.size == 0:
        return {"mean": math.nan, "std": math.nan, "min": math.nan, "max": math.nan}
    std = float(finite.std(ddof=1)) if finite.size > 1 else 0.0
    return {"mean": float(finite.mean()), "std": std, "min": float(finite.min()), "max": float(finite.max())}


def summarize(curves: Sequence[FillCurve], loads: Sequence[int]) -> dict[str, dict[str, Any]]:
    """``{policy: {"allocation": {load: stats}, "frag_rate": {load: stats}, "failed": mean}}``.

    Stats are in percent over the policy's seeds (:func:`_stats`); a load beyond a curve's end
    is NaN.
    """
    summary: dict[str, dict[str, Any]] = {}
    for policy in dict.fromkeys(c.policy for c in curves):
        mine = [c for c in curves if c.policy == policy]
        entry: dict[str, Any] = {
            "seeds": [c.seed for c in mine],
            "failed_pods": float(np.mean([c.failed for c in mine])),
        }
        for key in ("allocation", "frag_rate"):
            entry[key] = {
                str(load): _stats(np.array([_at(getattr(c, key), c.load_pct, load) for c in mine])) for load in loads
            }
        summary[policy] = entry
    return summary


def _at(values: np.ndarray, load_pct: np.ndarray, load: int) -> float:
    hits = np.flatnonzero(load_pct == load)
    return float(values[hits[0]]) if hits.size else math.nan


def markdown_table(summary: Mapping[str, Mapping[str, Any]], loads: Sequence[int]) -> str:
    """Two Markdown tables (allocation ratio, fragmentation rate).

    A row per policy, a column per load; cells ``mean ± std [min, max]`` in % over seeds.
    """
    lines = []
    for key, title in (("allocation", "GPU allocation ratio"), ("frag_rate", "Fragmentation rate")):
        lines.append(f"**{title}** (% ; mean ± std over seeds [min, max]) at arrived GPU load (% of capacity):\n")
        lines.append("| policy | " + " | ".join(f"{load} %" for load in loads) + " |")
        lines.append("|---|" + "---|" * len(loads))
        for policy, entry in summary.items():
            cells = []
            for load in loads:
                s = entry[key][str(load)]
                cells.append(
                    "n/a"
                    if math.isnan(s["mean"])
                    else f"{s['mean']:.1f} ± {s['std']:.1f} [{s['min']:.1f}, {s['max']:.1f}]"
                )
            lines.append(f"| {policy} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def write_results(
    out_dir: Path, settings: Mapping[str, Any], curves: Sequence[FillCurve], loads: Sequence[int]
) -> tuple[Path, Path]:
    """Write ``capacity_fill.json`` (settings, curves, summary) and ``capacity_fill.md``.

    ``capacity_fill.md`` opens with the command, commit and date line when ``settings`` hold a
    ``command`` (and ``commit`` and ``started``, as :func:`training.learning.provenance.provenance`).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summarize(curves, loads)
    payload = {
        "settings": dict(settings),
        "summary": summary,
        "curves": [
            {
                "policy": c.policy,
                "seed": c.seed,
                "submitted": c.submitted,
                "failed": c.failed,
                "load_pct": c.load_pct.tolist(),
                "allocation": [None if math.isnan(v) else round(float(v), 6) for v in c.allocation],
                "frag_rate": [None if math.isnan(v) else round(float(v), 6) for v in c.frag_rate],
            }
            for c in curves
        ],
    }
    json_path, md_path = out_dir / "capacity_fill.json", out_dir / "capacity_fill.md"
    header = "\n".join(f"- {k}: {v}" for k, v in settings.items() if k not in PROVENANCE_KEYS)
    if "command" in settings:
        header = f"{table_header(dict(settings))}\n\n{header}"
    with AtomicBatch() as batch:  # both renamed into place once both are written
        batch.write_text(json_path, json.dumps(payload, indent=1, allow_nan=True) + "\n")
        batch.write_text(md_path, f"# Capacity fill\n\n{header}\n\n{markdown_table(summary, loads)}")
    return json_path, md_path
