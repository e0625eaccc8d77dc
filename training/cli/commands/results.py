"""Rebuild a results page's tables from the results folders kept in the repository (``make results``).

Every ``FROM/NAME/results.json`` (written by ``aco-env evaluate --out FROM/NAME``, with its
``provenance.json``) becomes the generated block ``NAME`` of ``--page``: the command, commit and
date that made it, then its leaderboard. Only the generated blocks change; the page's hand-written
text is kept as it is (:mod:`training.evaluation.results_page`). To add a table: evaluate with
``--out docs/results/NAME``, run ``make results``, and move the new block where it belongs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from training.checks import writable_file
from training.errors import DataError, UsageError

HELP = "rebuild the tables of docs/results.md from the results folders kept in docs/results/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--from, --page."""
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=Path("docs/results"),
        help="folder of results folders, one per table (default: %(default)s)",
    )
    parser.add_argument("--page", type=Path, default=Path("docs/results.md"), help="the page (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    """Rewrite the page's generated blocks; print their names."""
    from training.evaluation.results_page import ResultsPageError, write_results_page

    if not args.source.is_dir():
        raise UsageError(f"--from {args.source}: not a folder")
    writable_file(args.page, "--page")
    try:
        names = write_results_page(args.source, args.page)
    except ResultsPageError as exc:
        raise DataError(str(exc)) from None
    if not names:
        raise DataError(f"--from {args.source}: no results folder (NAME/results.json) in it")
    print(f"wrote {len(names)} table(s) into {args.page}: {', '.join(names)}")
    return 0
