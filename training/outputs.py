"""One run at a time per output folder, and shared files merged under a lock.

Every file a command writes is written atomically (:mod:`digital_twin.atomic_files`): to a
temporary name, then renamed into place. That keeps each file whole, but two runs writing into
one ``--out`` would still each report success while the folder holds a mix of both, or only the
second. So a command that writes a folder holds :func:`folder_lock` on it from its checks to its
last file: a second run on the same folder is refused at once, before any work, with one line.
The lock is ``filelock``'s (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows) on the
folder's :data:`LOCK_FILE`: the operating system releases it when the holder ends however it
ends (a crash, ``kill -9``), so a stale lock cannot block later runs.

:func:`new_folder` claims a folder no earlier run holds (a default ``--out`` that never
overwrites). :func:`write_generated` rewrites the generated blocks of a page that people also
write in (``docs/benchmarks.md``, ``docs/results.md``) and nothing else of it.
:func:`shared_file_lock` is the blocking lock of a file several runs update (the suite's
reference cache): a writer takes it, reads the file again, merges its entries and replaces it.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from digital_twin.atomic_files import write_text
from training.errors import DataError

LOCK_FILE = ".aco-env.lock"
"""The lock file a command holds in its output folder while it runs."""
SHARED_LOCK_TIMEOUT_S = 600.0
"""A bound on waiting for another run's update of a shared file (an update takes milliseconds)."""


def new_folder(parent: Path, stem: str) -> Path:
    """Create ``PARENT/STEM``, or ``STEM-2``, ``STEM-3``, ... : the first name nobody holds yet.

    Each name is claimed by ``mkdir`` (which fails if the folder exists), so runs started at the
    same second, in threads or processes, never share a folder.
    """
    parent.mkdir(parents=True, exist_ok=True)
    suffix = 1
    while True:
        path = parent / (stem if suffix == 1 else f"{stem}-{suffix}")
        try:
            path.mkdir()
        except FileExistsError:
            suffix += 1
        else:
            return path


def timestamped(stem: str) -> str:
    """``<stem>__<YYYYmmdd-HHMMSS>`` (local time): a run's folder name that sorts by start."""
    return f"{stem}__{time.strftime('%Y%m%d-%H%M%S')}"


@contextlib.contextmanager
def folder_lock(folder: Path, option: str) -> Iterator[Path]:
    """Hold ``folder``'s lock while the block runs (the folder is created when missing).

    Args:
        folder: The output folder.
        option: The option that named it (``"--out"``), for the message.

    Raises:
        DataError: Another run holds the lock (``"--out OUT: another aco-env run is writing
            there ..."``), or the lock file cannot be created.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    lock = FileLock(path, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise DataError(
            f"{option} {folder}: another aco-env run is writing there (it holds {path}); "
            f"wait for it to end, or give another {option}"
        ) from None
    except OSError as exc:
        raise DataError(f"{option} {folder}: cannot lock the folder ({exc.strerror or exc})") from None
    try:
        yield folder
    finally:
        lock.release()


@contextlib.contextmanager
def shared_file_lock(path: Path, timeout_s: float = SHARED_LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the lock of a file several runs update (``PATH.lock`` beside it) while the block runs.

    Raises:
        OSError: The lock cannot be taken within ``timeout_s`` seconds (``filelock.Timeout`` is one)
            or its file cannot be created.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_name(path.name + ".lock"), timeout=timeout_s):
        yield


__all__ = ["LOCK_FILE", "SHARED_LOCK_TIMEOUT_S", "folder_lock", "shared_file_lock"]


GENERATED_BEGIN = "<!-- generated: {name} (rebuilt by {command}; edit the text outside these markers) -->"
GENERATED_END = "<!-- end of generated: {name} -->"
_BLOCK = re.compile(r"<!-- generated: (?P<name>[\w.-]+) \(.*?\) -->\n.*?<!-- end of generated: (?P=name) -->\n", re.S)


def replace_generated(text: str, blocks: dict[str, str], command: str) -> str:
    r"""``text`` with the body of each generated block named in ``blocks`` replaced; nothing else changes.

    A block is the lines between ``<!-- generated: NAME (...) -->`` and ``<!-- end of generated:
    NAME -->``. A name of ``blocks`` the page has no block for is appended at the end of the page,
    in its markers, so a new table shows up where a person can move it; a block of the page that
    ``blocks`` does not name is kept as it is.

    >>> page = "# Title\n\nHand-written.\n"
    >>> once = replace_generated(page, {"t": "| a |\n"}, "make x")
    >>> twice = replace_generated(once.replace("Hand-written.", "Edited by hand."), {"t": "| b |\n"}, "make x")
    >>> "Edited by hand." in twice and "| b |" in twice and "| a |" not in twice
    True
    """
    done: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in blocks:
            return match.group(0)
        done.add(name)
        return _block(name, blocks[name], command)

    text = _BLOCK.sub(fill, text)
    missing = [name for name in blocks if name not in done]
    if missing and not text.endswith("\n"):
        text += "\n"
    return text + "".join("\n" + _block(name, blocks[name], command) for name in missing)


def generated_names(text: str) -> list[str]:
    r"""The names of the generated blocks of a page, in page order.

    >>> generated_names("x\n<!-- generated: a (by y) -->\n| 1 |\n<!-- end of generated: a -->\n")
    ['a']
    """
    return [match.group("name") for match in _BLOCK.finditer(text)]


def _block(name: str, body: str, command: str) -> str:
    body = body if body.endswith("\n") else body + "\n"
    begin = GENERATED_BEGIN.format(name=name, command=command)
    return f"{begin}\n{body}{GENERATED_END.format(name=name)}\n"


def write_generated(path: Path, blocks: dict[str, str], command: str, title: str) -> Path:
    """Rewrite the generated blocks of the page at ``path`` (:func:`replace_generated`), atomically.

    A page that does not exist yet starts as ``# title``; its hand-written text is never touched.
    """
    text = path.read_text(encoding="utf-8") if path.exists() else f"# {title}\n"
    write_text(path, replace_generated(text, blocks, command))
    return path
