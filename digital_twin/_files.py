"""Checks every reader of a user's file makes (private): what the path is, its size, its encoding, ragged CSV rows.

* :func:`not_a_file_reason` looks at a path with ``stat`` only. A reader must call it before
  opening: opening a FIFO blocks until a writer comes, and reading ``/dev/zero`` never ends.
  Each reader family words its own message around the reason (traces, job files, the fleet
  node list, scenario files), always naming the path.
* :func:`check_size` refuses, by ``stat`` alone, a file larger than ``limits.max_trace_bytes``
  (a 2 GB sparse file costs nothing to refuse), and :func:`read_bounded` reads a data file
  (decompressing ``.gz``, ``.bz2`` and ``.xz`` as a stream, in chunks) without ever holding more
  than that many bytes, refusing a file that decompresses more than
  ``limits.max_decompression_ratio`` times its compressed size (a decompression bomb) as soon as
  it does. Both apply :func:`digital_twin.limits.limits_in_force`. Every reader reads through them.
* :func:`read_utf8` reads a file as UTF-8 text; bytes that do not decode (a binary or
  compressed file, Latin-1 or UTF-16 text) are an error naming the file, the byte and its line.
* :func:`first_ragged_row` finds the first CSV record whose number of fields differs from the
  format's. pandas pads a short row with empty values without a word, so a row that lost its
  last columns would otherwise read as if those columns were merely empty.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import stat
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from digital_twin.errors import TraceError
from digital_twin.limits import Limits, limits_in_force

_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a FIFO, a named pipe"),
    (stat.S_ISCHR, "is a character device"),
    (stat.S_ISBLK, "is a block device"),
    (stat.S_ISSOCK, "is a socket"),
)
_OPENERS: dict[str, Callable[..., Any]] = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
CHUNK_BYTES = 4 * 1024 * 1024
"""Bytes decompressed at a time by :func:`read_bounded`."""
RATIO_FREE_BYTES = 1024 * 1024
"""Compressed bytes below which the ratio is measured against this many (a small file may expand a lot)."""
_NEWLINE, _COMMA, _QUOTE = ord("\n"), ord(","), ord('"')


def not_a_file_reason(path: Path) -> str | None:
    """Why ``path`` cannot be read as a data file, or ``None`` when it is a regular file.

    Only ``stat`` is called (symlinks are followed), never ``open``.

    Returns:
        ``None``, ``"no such file"``, ``"is a directory"``, ``"is a FIFO, a named pipe"``,
        ``"is a character device"`` (e.g. ``/dev/zero``), ``"is a block device"``,
        ``"is a socket"``, ``"is not a regular file"``, ``"cannot stat: <reason>"`` or
        ``"the path holds a NUL character"``.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot stat: {exc.strerror or exc}"
    except ValueError:  # a NUL character in the path
        return "the path holds a NUL character"
    if stat.S_ISREG(mode):
        return None
    return next((reason for test, reason in _KINDS if test(mode)), "is not a regular file")


def check_size(path: Path, what: str, limits: Limits | None = None) -> int:
    """The size of the regular file ``path`` in bytes, refused by ``stat`` alone above ``limits.max_trace_bytes``.

    Args:
        path: A regular file (already checked).
        what: What the file is, for messages (``"trace"``).
        limits: The limits to apply (default :func:`~digital_twin.limits.limits_in_force`).

    Raises:
        TraceError: ``"<file>: the <what> has N bytes, above limits.max_trace_bytes = M; raise it
            with ..."``, or the file cannot be looked at.
    """
    cap = (limits or limits_in_force()).max_trace_bytes
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise TraceError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if size > cap:
        raise TraceError(
            f"{path}: the {what} has {size:,} bytes, above limits.max_trace_bytes = {cap:,}; "
            f"{Limits.how_to_raise('max_trace_bytes')}"
        )
    return size


def read_bounded(path: Path, what: str, decompress: bool = True, limits: Limits | None = None) -> bytes:
    """The bytes of a data file, decompressed by its suffix (``.gz``, ``.bz2``, ``.xz``), bounded as they are read.

    The file's size is checked by ``stat`` first (:func:`check_size`); a compressed file is
    decompressed in chunks of :data:`CHUNK_BYTES`, and refused as soon as the bytes it gave pass
    ``limits.max_trace_bytes``, or pass ``limits.max_decompression_ratio`` times the compressed
    bytes read so far (at least :data:`RATIO_FREE_BYTES`). So a decompression bomb costs what
    its first ~100 MB cost, never its whole size.

    Args:
        path: A regular file (already checked).
        what: What the file is, for messages (``"trace"``).
        decompress: Decompress by suffix (False: the file's own bytes).
        limits: The limits to apply (default :func:`~digital_twin.limits.limits_in_force`).

    Raises:
        TraceError: Too large, expands too much, or cannot be read or decompressed; the message
            names the file (and the limit).
    """
    limits = limits or limits_in_force()
    size = check_size(path, what, limits)
    opener = _OPENERS.get(path.suffix.lower()) if decompress else None
    try:
        with path.open("rb") as raw:
            if opener is None:
                data = read_at_most(raw, limits.max_trace_bytes, expected=size)
                _check_total(path, what, len(data), limits)
                return data
            with opener(raw, "rb") as stream:
                return _decompressed(path, what, raw, stream, limits)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise TraceError(f"{path}: cannot read the {what} ({type(exc).__name__}: {exc})") from None


def read_at_most(handle: BinaryIO, cap: int, expected: int) -> bytes:
    """The bytes of ``handle`` from where it stands, ``cap + 1`` at most (so a caller sees that there were more).

    Reads ``expected`` bytes (the size ``stat`` gave) and one more in one call, then, only if the
    file grew since, the rest in chunks of :data:`CHUNK_BYTES` up to the cap. A single
    ``read(cap + 1)`` would allocate ``cap + 1`` bytes up front (1 GiB for a trace) whatever the
    file's size: address space a memory limit counts, and what ``tracemalloc`` reports.
    """
    data = handle.read(min(expected, cap) + 1)
    if len(data) <= expected or len(data) > cap:
        return data
    chunks = [data]
    total = len(data)
    while total <= cap and (chunk := handle.read(min(CHUNK_BYTES, cap + 1 - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _decompressed(path: Path, what: str, raw: BinaryIO, stream: BinaryIO, limits: Limits) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := stream.read(CHUNK_BYTES):
        total += len(chunk)
        _check_total(path, what, total, limits)
        consumed = max(raw.tell(), RATIO_FREE_BYTES)
        if total > limits.max_decompression_ratio * consumed:
            raise TraceError(
                f"{path}: the {what} expands more than limits.max_decompression_ratio = "
                f"{limits.max_decompression_ratio:,} times its compressed size ({total:,} bytes from the first "
                f"{raw.tell():,}; a decompression bomb?); {Limits.how_to_raise('max_decompression_ratio')}"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _check_total(path: Path, what: str, total: int, limits: Limits) -> None:
    if total > limits.max_trace_bytes:
        raise TraceError(
            f"{path}: the {what} holds more than limits.max_trace_bytes = {limits.max_trace_bytes:,} bytes "
            f"(decompressed); {Limits.how_to_raise('max_trace_bytes')}"
        )


def read_utf8(path: Path, what: str) -> str:
    """The text of a UTF-8 file (a leading byte-order mark dropped).

    Args:
        path: A regular file (already checked).
        what: What the file is, for messages (``"node list"``).

    Raises:
        TraceError: It cannot be read, or is not UTF-8 text: ``"<file>: the <what> is not UTF-8
            text: byte 0x8b on line 1 cannot be decoded (...)"``.
    """
    raw = read_bounded(path, what, decompress=False)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TraceError(
            f"{path}: the {what} is not UTF-8 text: byte 0x{raw[exc.start]:02x} on line {line} cannot be decoded "
            f"({exc.reason}; a binary or compressed file, or text in another encoding?)"
        ) from None


def first_ragged_row(source: Path | bytes, expected: int | None) -> tuple[int, int, int] | None:
    """The first CSV record whose field count differs from ``expected``.

    Records are split as the ``csv`` module (and pandas) split them: ``,`` between fields,
    ``"`` quoting (so a quoted field may hold commas and newlines), blank lines skipped.
    ``.gz``/``.bz2``/``.xz`` files are decompressed first. A fast byte count over the whole
    file finds candidate records; only when there is one is the file re-read with the ``csv``
    module, which decides.

    Args:
        source: A regular file (already checked; read with :func:`read_bounded`), or its bytes.
        expected: Fields every record must have; ``None`` = as many as the first record (a
            header).

    Returns:
        ``(line, fields, expected)`` of the first bad record (``line`` is the 1-based file line
        where it starts), or ``None`` when every record has ``expected`` fields.
    """
    data = read_bounded(source, "file") if isinstance(source, Path) else source
    if not _maybe_ragged(data, expected):
        return None
    return _exact_first_ragged(data, expected)


def _maybe_ragged(data: bytes, expected: int | None) -> bool:
    """Whether some non-empty line may have another field count (a quick filter, no false "no")."""
    buffer = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buffer == _NEWLINE)
    commas = np.flatnonzero(buffer == _COMMA)
    quotes = np.flatnonzero(buffer == _QUOTE)
    if quotes.size:
        # Inside quotes (an odd number of quote characters before) a comma or newline is data.
        newlines = newlines[np.searchsorted(quotes, newlines) % 2 == 0]
        commas = commas[np.searchsorted(quotes, commas) % 2 == 0]
    ends = newlines if data.endswith(b"\n") else np.append(newlines, len(data))
    starts = np.concatenate(([0], newlines + 1))[: ends.size]
    fields = 1 + np.searchsorted(commas, ends) - np.searchsorted(commas, starts)
    length = ends - starts
    if length.size:
        carriage = np.zeros(length.size, dtype=bool)
        nonempty = length > 0
        carriage[nonempty] = buffer[ends[nonempty] - 1] == ord("\r")
        length = length - carriage
    fields = fields[length > 0]
    if fields.size == 0:
        return False
    target = fields[0] if expected is None else expected
    return bool((fields != target).any())


def _exact_first_ragged(data: bytes, expected: int | None) -> tuple[int, int, int] | None:
    text = data.decode("utf-8-sig", errors="replace")
    reader = csv.reader(io.StringIO(text, newline=""))
    start = 1
    try:
        for record in reader:
            if len(record) > 1 or any(field.strip() for field in record):  # not a blank line
                if expected is None:
                    expected = len(record)
                elif len(record) != expected:
                    return start, len(record), expected
            start = reader.line_num + 1
    except csv.Error:  # a field too long for the csv module: leave the verdict to pandas
        return None
    return None
