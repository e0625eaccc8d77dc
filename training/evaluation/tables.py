"""Text tables (rich) for the terminal and as Markdown: the leaderboard, ``aco-env scenarios``.

On a terminal a table gets a ruled, bold header; anywhere else (a pipe, a log file, CI) it is
plain columns separated by two spaces, without colour or control codes. A table is never
squeezed to the terminal's width: a wide leaderboard wraps as plain text would, its cells
intact. :func:`render_markdown` writes the same table as a GitHub Markdown table (an
evaluation's ``leaderboard.md``, ready for docs/results.md); the reproduction report writes its
own Markdown (:mod:`training.reproduction.report`).
"""

from __future__ import annotations

import copy
import io
import sys
from collections.abc import Sequence
from typing import TextIO

from rich import box
from rich.console import Console
from rich.table import Table

UNLIMITED_WIDTH = 100_000
"""The console width tables are laid out in: wide enough that no column is ever cut."""


def new_table(headers: Sequence[str], right_aligned_from: int = 1) -> Table:
    """An empty table with ``headers``; columns from ``right_aligned_from`` on are right-aligned (numbers)."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for index, header in enumerate(headers):
        table.add_column(header, justify="right" if index >= right_aligned_from else "left", no_wrap=True)
    return table


def print_table(table: Table, notes: Sequence[str] = (), file: TextIO | None = None) -> None:
    """Print ``table``, then each of ``notes`` on its own line, to ``file`` (stdout by default)."""
    out = file if file is not None else sys.stdout
    if out.isatty():
        console = Console(file=out, width=UNLIMITED_WIDTH, markup=False, highlight=False, emoji=False)
        console.print(table)
        for note in notes:
            console.print(note, soft_wrap=True)
        return
    out.write(render_plain(table) + "".join(f"{note}\n" for note in notes))
    out.flush()


def render_plain(table: Table) -> str:
    """``table`` as plain text: no box, no colour, no trailing spaces; one line per row, ending in a newline."""
    plain = copy.copy(table)
    plain.box = None
    buffer = io.StringIO()
    Console(file=buffer, width=UNLIMITED_WIDTH, markup=False, highlight=False, emoji=False, color_system=None).print(
        plain
    )
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def render_markdown(table: Table, notes: Sequence[str] = ()) -> str:
    """``table`` as a GitHub Markdown table (``|`` in a cell escaped), then ``notes`` as a list, ending in a newline.

    >>> demo = new_table(["agent", "objective $"])
    >>> demo.add_row("aco", "3.890")
    >>> print(render_markdown(demo, ["lower is better"]), end="")
    | agent | objective $ |
    |---|---:|
    | aco | 3.890 |
    <BLANKLINE>
    * lower is better
    """
    headers = [str(column.header) for column in table.columns]
    align = ["---:" if column.justify == "right" else "---" for column in table.columns]
    columns = [[str(cell) for cell in column.cells] for column in table.columns]
    rows = list(zip(*columns, strict=True)) if columns else []
    lines = [_markdown_row(headers), "|" + "|".join(align) + "|", *(_markdown_row(row) for row in rows)]
    if notes:
        lines += ["", *(f"* {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def _markdown_row(cells: Sequence[str]) -> str:
    """One Markdown table row of ``cells``."""
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
