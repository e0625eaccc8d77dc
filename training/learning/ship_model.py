"""Ship a trained run as ``models/<name>/``: the model, how it was trained, and its validation curve.

``python -m training.learning.ship_model RUN_DIR models/NAME --about "one line"`` copies the run's
``model.zip``, ``config.json`` (its options, and the deferral rule it plays under),
``provenance.json`` (the command that trained it, the commit, the date, the library versions:
:mod:`training.learning.provenance`) and ``learning_curve.png`` (validation seeds, and the
critic's explained variance), and writes ``README.md`` from them. A results table that quotes
the model names its folder (``sb3:models/NAME/model.zip``), so its rows reproduce from the
repository with the command printed beside them. Each file is written under a temporary name
and renamed into place once all are written; an existing folder is replaced only with ``--replace``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from digital_twin.atomic_files import AtomicBatch
from training.learning.provenance import PROVENANCE, read_provenance
from training.learning.run_dir import CONFIG, MODEL

CURVE = "learning_curve.png"
README = "README.md"
COPIED = (MODEL, CONFIG, PROVENANCE, CURVE)
"""The run's files a shipped model carries (the curve only when the run drew one)."""


class ShipError(ValueError):
    """A run that cannot be shipped (no model, no provenance, the folder exists)."""


def ship(run_dir: Path, destination: Path, about: str, replace: bool = False) -> Path:
    """Copy the run's files into ``destination`` and write its README; returns ``destination``.

    Raises:
        ShipError: ``run_dir`` has no model.zip, config.json or provenance.json with a command,
            or ``destination`` exists and ``replace`` is False.
    """
    for name in (MODEL, CONFIG):
        if not (run_dir / name).is_file():
            raise ShipError(f"{run_dir}: no {name}")
    record = read_provenance(run_dir)
    if record is None or not record.get("command"):
        raise ShipError(f"{run_dir}: no {PROVENANCE} naming the command that trained it (aco-env writes one)")
    if destination.exists() and not replace:
        raise ShipError(f"{destination}: exists (--replace to overwrite it)")
    destination.mkdir(parents=True, exist_ok=True)
    config = json.loads((run_dir / CONFIG).read_text(encoding="utf-8"))
    with AtomicBatch() as batch:  # every file renamed into place only once all are written
        for name in COPIED:
            if (run_dir / name).is_file():
                batch.write_bytes(destination / name, (run_dir / name).read_bytes())
        batch.write_text(destination / README, readme(destination, about, config, record, (run_dir / CURVE).is_file()))
    return destination


def readme(destination: Path, about: str, config: dict[str, Any], record: dict[str, Any], curve: bool) -> str:
    """The shipped model's README: what it is, how it was trained, how to play it."""
    versions = ", ".join(f"{name} {version}" for name, version in record.get("versions", {}).items() if version)
    lines = [
        f"# {destination.name}",
        "",
        about,
        "",
        f"* Trained by: `{record['command']}`",
        f"* Commit: {record.get('commit') or 'unknown'}; started {record.get('started', 'unknown')}; {versions}",
        f"* Scenario: `{config.get('scenario')}`"
        + (f", with `{', '.join(config['train_scenarios'])}`" if config.get("train_scenarios") else ""),
        f"* Plays under the `{config.get('deferral', 'next-event')}` deferral rule (config.json; docs/model.md,"
        ' "Learning")',
        f"* Play it: `aco-env evaluate --split validation --agents sb3:{destination.as_posix()}/{MODEL},first-fit,aco`",
    ]
    if curve:
        lines += ["", f"![learning curve on the validation seeds, and the critic's explained variance]({CURVE})"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m training.learning.ship_model RUN_DIR DEST --about TEXT``; exit 1 with one line on an error."""
    parser = argparse.ArgumentParser(prog="python -m training.learning.ship_model", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("destination", type=Path)
    parser.add_argument("--about", required=True, help="one line: what the model is")
    parser.add_argument("--replace", action="store_true", help="overwrite an existing destination")
    args = parser.parse_args(argv)
    try:
        print(ship(args.run_dir, args.destination, args.about, args.replace))
    except (ShipError, OSError, json.JSONDecodeError) as exc:
        print(f"ship_model: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
