"""Writing files so that a reader sees the old content or the new, never a part: every output goes through here.

A file is written to a unique temporary name in its own folder (``.NAME.<random>.tmp``: two
writers never share one), flushed to the disk (``fsync``) and renamed over the old file
(``os.replace``, atomic on POSIX and Windows). Until the rename the old file is untouched; a
write that fails (a full disk, a quota, no permission, an interrupt) removes the temporary file,
leaves the old file as it was and raises :class:`OutputError`, an ``OSError`` whose message names
the file and the cause in one line (``cannot write out/results.json: the disk is full (No space
left on device); the file there before is unchanged``).

* :func:`atomic_open` is the context manager every writer uses (text or bytes); :func:`write_text`
  and :func:`write_bytes` write a whole file at once.
* :class:`AtomicBatch` writes several files that belong together (results.json with its
  leaderboard and plots): each goes to its temporary name, and only when every one is written are
  they renamed into place, one after another. A failure before that leaves every old file as it
  was.

The file keeps the permission bits of the file it replaces (a new file gets ``0o666`` less the
umask, like ``open``). :data:`IN_PROGRESS` lists the temporary files being written at this moment,
so that a process stopped at once (a second Ctrl-C) can remove them before it exits.

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = write_text(folder / "a.json", '{"x": 1}')
    >>> with atomic_open(folder / "a.json") as handle:
    ...     _ = handle.write('{"x": 2}')
    >>> (folder / "a.json").read_text(), sorted(p.name for p in folder.iterdir())
    ('{"x": 2}', ['a.json'])
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

IN_PROGRESS: set[str] = set()
"""Temporary files being written now (absolute paths); each is removed or renamed when its write ends."""

_CAUSES = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EACCES: "no permission to write there",
    errno.EPERM: "no permission to write there",
    errno.EROFS: "a read-only file system",
    errno.EFBIG: "the file is larger than this process may write",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ENOENT: "the folder does not exist",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EISDIR: "the path is a folder",
}


class OutputError(OSError):
    """A file could not be written; the file there before (if any) is unchanged.

    ``filename`` is the file that was to be written (not its temporary name), ``errno`` and
    ``strerror`` the operating system's; ``str()`` is one line for the user.
    """

    def __str__(self) -> str:
        reason = self.strerror or "unknown error"
        cause = _CAUSES.get(self.errno or 0)
        shown = f"{cause} ({reason})" if cause else reason
        return f"cannot write {self.filename}: {shown}; the file there before is unchanged"


def output_error(path: str | os.PathLike[str], exc: OSError) -> OutputError:
    """``exc`` (raised while writing ``path`` or its temporary file) as an :class:`OutputError` naming ``path``."""
    if isinstance(exc, OutputError):
        return exc
    return OutputError(exc.errno or errno.EIO, exc.strerror or str(exc), os.fspath(path))


@contextlib.contextmanager
def atomic_open(
    path: str | os.PathLike[str], mode: str = "w", *, encoding: str | None = "utf-8", newline: str | None = None
) -> Iterator[IO[Any]]:
    """Open a temporary file for ``path``; when the block ends without an error it replaces ``path``.

    Args:
        path: The file to write (its folder is created when missing).
        mode: ``"w"`` (text) or ``"wb"`` (bytes).
        encoding: The text encoding (ignored for bytes).
        newline: As for :func:`open` (text only).

    Raises:
        OutputError: The file could not be written or renamed (the old file is unchanged).
        ValueError: ``mode`` is not ``"w"`` or ``"wb"``.
    """
    with AtomicBatch() as batch, batch.open(path, mode, encoding=encoding, newline=newline) as handle:
        yield handle


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; returns the path (see :func:`atomic_open`)."""
    with atomic_open(path, "w", encoding=encoding) as handle:
        handle.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path (see :func:`atomic_open`)."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)
    return Path(path)


class AtomicBatch:
    """Files written together: each to a temporary name, all renamed into place when the batch ends well.

    Use as a context manager; an error inside it (or in a write) removes every temporary file
    and leaves every old file as it was. The renames at the end are quick and need no space;
    if one still fails, the files renamed before it are new and the rest old, and the
    :class:`OutputError` names the file that failed.

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> with AtomicBatch() as batch:
        ...     _ = batch.write_text(folder / "a.txt", "a")
        ...     _ = batch.write_bytes(folder / "b.bin", b"b")
        ...     sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
        []
        >>> sorted(p.name for p in folder.iterdir())
        ['a.txt', 'b.bin']
    """

    def __init__(self) -> None:
        self._staged: list[tuple[str, Path]] = []  # (temporary file, its final path), in write order
        self._open = False

    def __enter__(self) -> AtomicBatch:
        self._open = True
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._open = False
        if kind is None:
            self._commit()
        else:
            self._discard()

    @contextlib.contextmanager
    def open(
        self,
        path: str | os.PathLike[str],
        mode: str = "w",
        *,
        encoding: str | None = "utf-8",
        newline: str | None = None,
    ) -> Iterator[IO[Any]]:
        """A temporary file for ``path``, renamed into place when the batch ends (see :func:`atomic_open`)."""
        if mode not in ("w", "wb"):
            raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
        if not self._open:
            raise RuntimeError("an AtomicBatch writes only inside `with batch:`")
        target = Path(path)
        temporary = _temporary_file(target)
        try:
            descriptor = os.open(temporary, os.O_WRONLY)
            handle: IO[Any] = (
                os.fdopen(descriptor, "w", encoding=encoding, newline=newline)
                if mode == "w"
                else os.fdopen(descriptor, "wb")
            )
            with handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, _mode_for(target))
        except OSError as exc:
            _remove(temporary)
            raise output_error(target, exc) from None
        except BaseException:
            _remove(temporary)
            raise
        self._staged.append((temporary, target))

    def write_text(self, path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
        """Stage ``text`` for ``path``; returns the path."""
        with self.open(path, "w", encoding=encoding) as handle:
            handle.write(text)
        return Path(path)

    def write_bytes(self, path: str | os.PathLike[str], data: bytes) -> Path:
        """Stage ``data`` for ``path``; returns the path."""
        with self.open(path, "wb") as handle:
            handle.write(data)
        return Path(path)

    def _commit(self) -> None:
        staged, self._staged = self._staged, []
        for index, (temporary, target) in enumerate(staged):
            try:
                os.replace(temporary, target)
            except OSError as exc:
                for left, _ in staged[index:]:
                    _remove(left)
                raise output_error(target, exc) from None
            IN_PROGRESS.discard(temporary)
        for folder in dict.fromkeys(target.parent for _, target in staged):
            _sync_folder(folder)

    def _discard(self) -> None:
        staged, self._staged = self._staged, []
        for temporary, _ in staged:
            _remove(temporary)


def _temporary_file(target: Path) -> str:
    """A new empty file beside ``target`` with a name no other writer has (``.NAME.<random>.tmp``)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise output_error(target, exc) from None
    os.close(descriptor)
    IN_PROGRESS.add(temporary)
    return temporary


def _mode_for(target: Path) -> int:
    """The permission bits of the file being replaced, else those ``open`` gives a new file."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_UMASK


def _remove(temporary: str) -> None:
    IN_PROGRESS.discard(temporary)
    with contextlib.suppress(OSError):
        os.unlink(temporary)


def _sync_folder(folder: Path) -> None:
    """Flush the folder's entries (the renames) to the disk; best effort (not every system allows it)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()
"""The process's umask when this module was imported (read once: setting it is not thread-safe)."""

__all__ = ["IN_PROGRESS", "AtomicBatch", "OutputError", "atomic_open", "output_error", "write_bytes", "write_text"]
