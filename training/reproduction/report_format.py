"""The formatting every part of the reproduction page shares: numbers, tables, commands, section heads.

Numbers are means with their 95 % half-widths (``mean ± half-width``), tables are Markdown, and
each table's command is the ``aco-env reproduce`` line that wrote it. The page itself is
:func:`training.reproduction.report.render_blocks`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

NA = "n/a"


def pm(summary: dict[str, Any] | None, scale: float = 1.0, digits: int = 2, unit: str = "") -> str:
    """``"mean ± half-width unit"`` of a :func:`~training.reproduction.stats.summarize` (n/a if absent)."""
    if not summary or summary.get("mean") is None:
        return NA
    text = f"{summary['mean'] * scale:,.{digits}f}"
    if summary.get("ci95") is not None:
        text += f" ± {summary['ci95'] * scale:,.{digits}f}"
    return f"{text} {unit}".rstrip()


def pct(summary: dict[str, Any] | None, digits: int = 1) -> str:
    """A fraction's summary as percent, e.g. ``"28.6 ± 0.0 %"``."""
    return pm(summary, 100.0, digits, "%")


def number(value: float | None, digits: int = 2, unit: str = "") -> str:
    """One number with ``digits`` decimals and an optional unit (n/a for ``None``)."""
    return NA if value is None else f"{value:,.{digits}f} {unit}".rstrip()


def mean(summary: dict[str, Any] | None) -> float | None:
    """The mean of a summary (``None`` if absent)."""
    return None if not summary else summary.get("mean")


def worst_mean(per_burst: dict[str, Any], key: str) -> float:
    """The largest mean over seeds of ``key`` across a tier's rows (e.g. T1.3's burst sizes)."""
    return max(mean(row[key]) or 0.0 for row in per_burst.values())


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def command_block(command: str) -> list[str]:
    """The command that produced a table, as a fenced block."""
    return ["```", command, "```", ""]


def oracle_limits_note(oracle: dict[str, Any]) -> str:
    """How a tier's oracle solves were limited (``oracle_over_seeds``' keys), for a table's note."""
    stops = (("work_limited", "node limit"), ("time_limited", "time cap"))
    stopped = [f"{oracle[key]} stopped at the {what}" for key, what in stops if oracle.get(key)]
    return oracle["limits"] + (f"; {', '.join(stopped)}" if stopped else "")


def tier_command(tier: str, seeds: int, oracle_limits: dict[str, Any] | None, out: str = "results/reproduction") -> str:
    """The ``aco-env reproduce`` command of one tier (as run for the page).

    ``oracle_limits``: the page's ``settings["oracle_limits"]`` (``node_limit``, ``time_limit_s``),
    ``None`` for ``--no-oracle``.
    """
    command = f"aco-env reproduce --tier {tier} --seeds {seeds} --out {out}"
    if oracle_limits is None:
        command += " --no-oracle"
    elif tier in ("T1.1", "T4.1"):
        command += f" --oracle-node-limit {oracle_limits['node_limit']}"
        if oracle_limits["time_limit_s"] is not None:
            command += f" --oracle-time-limit {oracle_limits['time_limit_s']:g}"
    return command


def compare(ours: float | None, theirs: float, unit: str = " pp", scale: float = 100.0) -> str:
    """``"3.2 pp below"`` / ``"1.0 pp above"`` / ``"equal to"``: ours against the reference."""
    if ours is None:
        return "not measured against"
    diff = (ours - theirs) * scale
    if abs(diff) < 0.05:
        return "equal to"
    return f"{abs(diff):.1f}{unit} {'above' if diff > 0 else 'below'}"


def data_lines(result: dict[str, Any]) -> list[str]:
    """A tier's "Data" paragraph: each file read with its size (its SHA-256 is in the JSON)."""
    items = result.get("data") or []
    if not items:
        return []
    parts = [
        f"`{item['file']}` ({item['bytes']:,} bytes)"
        if "sha256" in item
        else f"`{item['file']}` ({item.get('note', '')})"
        for item in items
    ]
    hashed = " (SHA-256s in reproduction.json)" if any("sha256" in item for item in items) else ""
    return [f"Data{hashed}: " + "; ".join(parts) + ".", ""]


def section_head(result: dict[str, Any], command: str) -> list[str]:
    """A tier section's title, then its command and data, or why it was not run."""
    lines = [f"## {result['tier']}: {result['title']}", ""]
    if "skipped" in result:
        return [*lines, f"**Not run**: {result['skipped']}", ""]
    return [*lines, *command_block(command), *data_lines(result)]


def cheaper(a: float | None, b: float | None) -> str:
    """``"cheaper than"``, ``"exactly as cheap as"`` or ``"more expensive than"``: cost ``a`` against ``b``."""
    if a is None or b is None:
        return "not compared with"
    if abs(a - b) <= 1e-9 * max(1.0, abs(b)):
        return "exactly as cheap as"
    return "cheaper than" if a < b else "more expensive than"
