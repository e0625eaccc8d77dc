"""Ship a trained run as ``models/<name>/``: the model, how it was trained, and its validation curve.

``python -m training.learning.ship_model RUN_DIR models/NAME --about "one line"`` copies the run's
``model.zip``, ``config.json`` (its options, and the deferral rule it plays under),
``provenance.json`` (the command that trained it, the commit, the date, the library versions:
:mod:`training.learning.provenance`) and ``learning_curve.png`` (validation seeds, and the
critic's explained variance), and writes ``README.md`` from them. A results table that quotes
the model names its folder (``sb3:models/NAME/model.zip``), so its rows reproduce from the
repository with the command printed beside them. Each file is written under a temporary name
and renamed into place once all are written; an existing folder is replaced only with ``--replace``.

A shipped folder names no machine's paths: the log folder (where TensorBoard files went, which
changes nothing in training) becomes the default ``runs`` in the command, config.json and the
model's archive, and a path the run read inside the current folder (``--init-from models/...``)
becomes relative to it. A run that read a file from elsewhere is refused: ship what it read
first and train from there.
"""

from __future__ import annotations

import argparse
import io
import json
import shlex
import sys
import zipfile
from pathlib import Path, PurePath
from typing import Any

from digital_twin.atomic_files import AtomicBatch
from training.learning.provenance import PROVENANCE, read_provenance
from training.learning.run_dir import CONFIG, MODEL

CURVE = "learning_curve.png"
README = "README.md"


class ShipError(ValueError):
    """A run that cannot be shipped (no model, no provenance, the folder exists)."""


def ship(run_dir: Path, destination: Path, about: str, replace: bool = False) -> Path:
    """Copy the run's files into ``destination`` and write its README; returns ``destination``.

    Raises:
        ShipError: ``run_dir`` has no model.zip, config.json or provenance.json with a command,
            or ``destination`` exists and ``replace`` is False.
        zipfile.BadZipFile: The run's model.zip is not a zip archive (nothing is written).
    """
    for name in (MODEL, CONFIG):
        if not (run_dir / name).is_file():
            raise ShipError(f"{run_dir}: no {name}")
    record = read_provenance(run_dir)
    if record is None or not record.get("command"):
        raise ShipError(f"{run_dir}: no {PROVENANCE} naming the command that trained it (aco-env writes one)")
    if destination.exists() and not replace:
        raise ShipError(f"{destination}: exists (--replace to overwrite it)")
    config = portable_config(json.loads((run_dir / CONFIG).read_text(encoding="utf-8")))
    record = {**record, "command": portable_command(record["command"])}
    model = portable_model((run_dir / MODEL).read_bytes())
    destination.mkdir(parents=True, exist_ok=True)
    with AtomicBatch() as batch:  # every file renamed into place only once all are written
        batch.write_bytes(destination / MODEL, model)
        batch.write_text(destination / CONFIG, json.dumps(config, indent=1) + "\n")
        batch.write_text(destination / PROVENANCE, json.dumps(record, indent=1) + "\n")
        if (run_dir / CURVE).is_file():
            batch.write_bytes(destination / CURVE, (run_dir / CURVE).read_bytes())
        batch.write_text(destination / README, readme(destination, about, config, record, (run_dir / CURVE).is_file()))
    return destination


LOG_OPTIONS = ("--logdir",)
"""Options that only say where a run's logs go: shipped as the default."""
DEFAULT_LOGDIR = "runs"
READ_OPTIONS = ("--init-from", "--resume", "--bc-dataset", "--scenario", "--train-scenario")
"""Options naming a file the run read: shipped relative to the current folder."""


def portable_command(command: str) -> str:
    """``command`` with its log folder the default and the files it read relative to the current folder.

    >>> import os; here = os.getcwd()
    >>> portable_command(f"aco-env run --logdir {here}/../logs --init-from {here}/models/a/model.zip")
    'aco-env run --logdir runs --init-from models/a/model.zip'

    Raises:
        ShipError: The run read a file outside the current folder.
    """
    words = shlex.split(command)
    for k in range(1, len(words)):
        option, _, inline = words[k].partition("=")
        value_at = k if inline else k + 1
        if option in LOG_OPTIONS and value_at < len(words):
            words[value_at] = f"{option}={DEFAULT_LOGDIR}" if inline else DEFAULT_LOGDIR
        elif option in READ_OPTIONS and value_at < len(words):
            value = inline if inline else words[value_at]
            relative = _relative(value, option)
            words[value_at] = f"{option}={relative}" if inline else relative
    return shlex.join(words)


def portable_config(config: dict[str, Any]) -> dict[str, Any]:
    """A run's config.json with ``logdir`` the default and read paths relative (:func:`portable_command`)."""
    shipped = dict(config)
    if "logdir" in shipped:
        shipped["logdir"] = DEFAULT_LOGDIR
    for key in ("init_from", "resume", "bc_dataset"):
        if shipped.get(key):
            shipped[key] = _relative(str(shipped[key]), key)
    return shipped


SB3_DATA = "data"
"""The JSON entry of a Stable-Baselines3 archive holding the model's attributes (``tensorboard_log`` among them)."""


def portable_model(archive: bytes) -> bytes:
    """A Stable-Baselines3 ``model.zip`` with its ``tensorboard_log`` under the default log folder.

    ``runs/<the run's folder name>``, as a run made with ``--logdir runs`` records it; every
    other entry (the weights among them) is copied byte for byte, with its compression. An
    archive without the attribute, with it unset or already so, is returned as it is.

    Raises:
        zipfile.BadZipFile: ``archive`` is not a zip archive.
    """
    with zipfile.ZipFile(io.BytesIO(archive)) as source:
        if SB3_DATA not in source.namelist():
            return archive
        data = json.loads(source.read(SB3_DATA))
        log = data.get("tensorboard_log")
        portable = f"{DEFAULT_LOGDIR}/{PurePath(log).name}" if log else log
        if portable == log:
            return archive
        data["tensorboard_log"] = portable
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as target:
            for info in source.infolist():
                content = json.dumps(data, indent=4).encode() if info.filename == SB3_DATA else source.read(info)
                target.writestr(info, content)
    return out.getvalue()


def _relative(value: str, option: str) -> str:
    path = Path(value)
    if not path.is_absolute():
        return value
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        raise ShipError(
            f"{option} {value}: outside this folder; ship what the run read first (models/...) and train from there"
        ) from None


def readme(destination: Path, about: str, config: dict[str, Any], record: dict[str, Any], curve: bool) -> str:
    """The shipped model's README: what it is, how it was trained, how to play it."""
    commit = (record.get("commit") or "unknown")[:10]
    lines = [
        f"# {destination.name}",
        "",
        about,
        "",
        f"* Trained by: `{record['command']}`",
        f"* Commit {commit}, started {record.get('started', 'unknown')} (versions: {PROVENANCE})",
        f"* Scenario: `{config.get('scenario')}`"
        + (f", with the `train_scenarios` of {CONFIG}" if config.get("train_scenarios") else ""),
        f"* Deferral rule: `{config.get('deferral', 'next-event')}` ({CONFIG}; docs/model.md, \"Learning\")",
        f"* Play it: `aco-env evaluate --split validation --scenario {config.get('scenario')}"
        f" --agents sb3:{destination.as_posix()}/{MODEL},first-fit,aco`",
    ]
    if curve:
        lines += ["", f"![validation curve and explained variance]({CURVE})"]
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
    except (ShipError, OSError, json.JSONDecodeError, zipfile.BadZipFile) as exc:
        print(f"ship_model: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
