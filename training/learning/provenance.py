"""Where a run came from: the command that started it, the code's commit, the date and the library versions.

``provenance.json`` in a run directory (written when the run starts) lets a shipped model
(``models/<name>/``, :mod:`training.learning.ship_model`) say exactly how to train it again:

| key | meaning |
|---|---|
| ``command`` | the command line that started the run (``aco-env run ...``), or ``null`` from Python |
| ``commit`` | the commit HEAD named in the checkout the code ran from, ``null`` outside a git checkout |
| ``started`` | UTC time the run started, ISO 8601 |
| ``versions`` | the versions of aco-env, torch, stable-baselines3, sb3-contrib and gymnasium |
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from digital_twin.atomic_files import write_text

PROVENANCE = "provenance.json"
"""The file's name in a run directory."""
PACKAGES = ("aco-env", "torch", "stable-baselines3", "sb3-contrib", "gymnasium")
"""Whose versions are recorded."""
_CHECKOUT = Path(__file__).resolve().parents[2]


def command_line(argv: list[str] | None = None) -> str:
    """``aco-env`` and this process's arguments (``sys.argv[1:]`` by default), quoted for a shell."""
    return shlex.join(["aco-env", *(sys.argv[1:] if argv is None else argv)])


def provenance(command: str | None) -> dict[str, Any]:
    """The record for a run started now by ``command``."""
    return {
        "command": command,
        "commit": _git_head(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": {name: _version(name) for name in PACKAGES},
    }


def write_provenance(run_dir: Path, command: str | None) -> Path:
    """Write ``run_dir/provenance.json`` (atomically: :mod:`digital_twin.atomic_files`)."""
    path = run_dir / PROVENANCE
    write_text(path, json.dumps(provenance(command), indent=1) + "\n")
    return path


def read_provenance(run_dir: Path) -> dict[str, Any] | None:
    """The run's record, ``None`` for a run made without one."""
    path = run_dir / PROVENANCE
    if not path.is_file():
        return None
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def _git_head(checkout: Path = _CHECKOUT) -> str | None:
    """The commit HEAD names in ``checkout``'s git directory (read from its files: no git process), else None.

    Follows a worktree's ``.git`` file, a symbolic ref and the packed refs.
    """
    git = checkout / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: PATH"
            git = Path(git.read_text(encoding="utf-8").split(":", 1)[1].strip())
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref: "):
            return head or None
        ref = head.removeprefix("ref: ")
        common = git / "commondir"
        roots = [git, (git / common.read_text(encoding="utf-8").strip()).resolve()] if common.is_file() else [git]
        for root in roots:
            if (root / ref).is_file():
                return (root / ref).read_text(encoding="utf-8").strip()
            packed = root / "packed-refs"
            if packed.is_file():
                for line in packed.read_text(encoding="utf-8").splitlines():
                    if line.endswith(" " + ref):
                        return line.split(" ", 1)[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return None
    return None


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None
