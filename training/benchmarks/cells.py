"""The cells and table heads of docs/benchmarks.md's generated blocks."""

from __future__ import annotations

from typing import Any


def fmt(value: Any, digits: int = 0) -> str:
    """A number with thousands separators and ``digits`` decimals; ``None``: the data was not present."""
    if value is None:
        return "n/a (data not present)"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def ms(value: Any) -> str:
    """Milliseconds to 3 decimals (a ``{"p50": ...}`` or ``{"mean": ...}`` record: its p50, else its mean)."""
    if isinstance(value, dict):
        value = value.get("p50", value.get("mean"))
    return "" if value is None else f"{value:,.3f}"


def table_head(title: str, intro: str, columns: list[str]) -> list[str]:
    """A section's title, its paragraph, and the head of its Markdown table."""
    return [title, "", intro, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def with_skipped(lines: list[str], skipped: list[str]) -> list[str]:
    """A section's ``lines``, then the scenarios left out for want of data (if any), then a blank line."""
    if skipped:
        lines = [*lines, "", "Data not present (ACO_ENV_TRACES): " + ", ".join(skipped) + "."]
    return [*lines, ""]
