"""Reading job files safely: a regular file, UTF-8 text, CSV cells as strings.

A path that is not a regular file (a directory, a FIFO, ``/dev/zero``), or a file above
``limits.max_trace_bytes``, is refused by ``stat`` before it is opened; a compressed file is
decompressed within the same bound (:func:`digital_twin._files.read_bounded`). A CSV row with
fewer (or more) fields than the header is refused, even when the missing columns are ones the
reader does not use. Every failure is a
:class:`~digital_twin.errors.TraceError` naming the file (and the line, where there is one).
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from digital_twin._files import check_size, first_ragged_row, not_a_file_reason, read_bounded
from digital_twin.errors import TraceError

HEADER_LINES = 1
"""Lines before the first data row of a CSV file (the header)."""


def require_file(path: Path, what: str) -> None:
    """Refuse, by ``stat`` alone, a path that is not a regular file (opening a FIFO would block), or too large a one.

    Raises:
        TraceError: ``"<file>: cannot open <what> (<reason>)"``, e.g. ``(is a directory)``, or
            the file has more than ``limits.max_trace_bytes`` bytes.
    """
    reason = not_a_file_reason(path)
    if reason is not None:
        raise TraceError(f"{path}: cannot open {what} ({reason})")
    check_size(path, what)


def open_text(path: Path, what: str) -> str:
    """Read a whole text file, turning OS and decoding errors into :class:`TraceError`.

    The path is checked with :func:`require_file` first.
    """
    require_file(path, what)
    raw = read_bounded(path, what, decompress=False)
    try:
        return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text's newlines
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not a UTF-8 text {what} (byte {exc.start})") from None


def read_csv_strings(path: Path, what: str, *, names: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a comma-separated file, every cell as a string.

    Empty cells are missing (``NaN``); any other text is kept verbatim, so the numeric
    checks can quote it. Blank lines (and rows whose every cell is empty) are skipped, but
    the frame's index stays the 0-based data-row number so :func:`line_of` is exact. CRLF line
    endings read like LF.

    Args:
        path: The file.
        what: What the file is, for messages (``"pod list"``).
        names: Column names of a file without a header (its line 1 is data; every row must have
            exactly ``len(names)`` fields), or ``None`` when line 1 is a header (column names are
            stripped of surrounding spaces).

    Raises:
        TraceError: Missing or unreadable file (or not a regular file), empty file, no data
            rows, a row with more or fewer fields than the header (or ``names``), or a header
            that is not comma-separated.
    """
    require_file(path, what)
    if names is not None and path.stat().st_size == 0:  # pandas reads it as a table without rows
        raise TraceError(f"{path}: the {what} is empty (0 bytes)")
    layout: dict[str, Any] = {} if names is None else {"header": None, "names": list(names)}
    expected = "the header has" if names is None else f"the {what} has"
    data = read_bounded(path, what)  # decompressed once, within limits.max_trace_bytes
    try:
        with warnings.catch_warnings():
            # index_col=False stops pandas from silently using the first column as the index
            # when the first row has one field too many; it warns instead, which we raise.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                io.BytesIO(data),
                dtype=str,
                index_col=False,
                keep_default_na=False,
                na_values=[""],
                skip_blank_lines=False,
                encoding="utf-8",
                **layout,
            )
    except pd.errors.EmptyDataError:
        empty = "no header line" if names is None else "no lines"
        raise TraceError(f"{path}: the {what} is empty ({empty})") from None
    except pd.errors.ParserWarning:
        ragged = first_ragged_row(data, len(names)) if names is not None else None
        if ragged is not None:
            line, fields, wanted = ragged
            raise TraceError(f"{path}:{line}: the row has {fields} fields, {expected} {wanted}") from None
        raise TraceError(
            f"{path}:{_first_data_line(path)}: the row has more fields than the header"
        ) from None
    except pd.errors.ParserError as exc:
        raise TraceError(_parser_message(path, what, exc, expected)) from None
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not a UTF-8 text {what} (byte {exc.start})") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot open {what} ({exc.strerror or exc})") from None
    ragged = first_ragged_row(data, None if names is None else len(names))
    if ragged is not None:
        line, fields, wanted = ragged
        raise TraceError(
            f"{path}:{line}: the row has {fields} fields, {expected} {wanted} (every row "
            "needs every column, even the columns this reader does not use)"
        )
    frame.columns = [str(c).strip() for c in frame.columns]
    frame = frame[~frame.isna().all(axis=1)]
    if frame.empty:
        rows = "has a header but no data rows" if names is None else "has no data rows"
        raise TraceError(f"{path}: the {what} {rows}")
    frame.attrs["header_lines"] = HEADER_LINES if names is None else 0  # read by line_of
    return frame


def _first_data_line(path: Path) -> int:
    """1-based number of the first non-blank line after the header (for error messages)."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if number > HEADER_LINES and line.strip():
                return number
    return HEADER_LINES + 1


def _parser_message(path: Path, what: str, exc: Exception, expected: str = "the header has") -> str:
    """Reword pandas' tokenizer error as ``"<file>:<line>: ..."``."""
    text = str(exc).strip()
    found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if found:
        fields, line, saw = found.groups()
        return f"{path}:{line}: the row has {saw} fields, {expected} {fields}"
    return f"{path}: cannot parse the {what} as CSV: {text}"
