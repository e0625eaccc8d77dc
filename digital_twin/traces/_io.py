"""Shared low-level reading and validation for the trace readers (private).

Everything here turns a bad file into a :class:`~digital_twin.errors.TraceError` whose message
names the file and the 1-based line (CSV) or row (Parquet) or the column at fault. The happy
path is one ``pandas.read_csv(engine="c")`` call with explicit dtypes; the slow work (finding
which line holds the bad text, mapping a record to its line number) only runs on the error path.

Record indices: a CSV is read with ``skip_blank_lines=False``, so the pandas row index is the
index of the record in the file (blank lines included, dropped afterwards). :class:`Where`
turns such an index into ``"line N"``.

Documented cleaning (dropped error codes, sentinel times, long gaps filled on request) is
reported through :mod:`logging` (loggers under ``digital_twin.traces``, level ``WARNING``), one
record per rule and file read, carrying a :class:`TraceCleaning` as ``record.cleaning``.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import logging
import lzma
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from digital_twin._files import check_size, first_ragged_row, not_a_file_reason, read_bounded
from digital_twin.errors import TraceError, short_repr

FLOAT = "float64"
TEXT = "str"
_OPENERS: dict[str, Callable[..., TextIO]] = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_OTHER_DELIMITERS = (";", "\t", "|")
FIRST_LINE_CHARS = 1024 * 1024
"""Characters :func:`first_line` reads at most (a file without newlines has no first line to speak of)."""


@dataclass(frozen=True)
class TraceCleaning:
    """What one documented cleaning rule changed in one file read.

    Attached to the rule's log record as ``record.cleaning`` (the message says the same in
    words), so a caller can collect them with a :class:`logging.Handler`.

    Attributes:
        path: The file (or the series' source text).
        rule: ``"error-code"`` (Alibaba -1/101 dropped), ``"sentinel-time"``,
            ``"empty-usage"``, ``"missing-usage"`` (Borg rows or values dropped),
            ``"long-gap"`` (long gaps filled by sample-and-hold) or ``"mostly-filled"`` (most
            of a node's episode is filled, not observed). The job sources of
            :mod:`digital_twin.workloads` report with the same record: ``"left-censored"`` and
            ``"right-censored"`` (Azure VMs, Alibaba 2017 tasks: kept or dropped as asked),
            ``"missing-value"``, ``"status"``, ``"no-size"``, ``"reversed-times"`` (Alibaba
            2017 tasks dropped); the carbon-intensity reader
            (:func:`digital_twin.energy.read_eia_carbon_csv`): ``"empty-row"`` and
            ``"implausible-generation"`` (hours filled by interpolation), ``"frozen-rows"``
            (repeated rows, reported and kept).
        count: How many rows (``"long-gap"``: gaps; ``"mostly-filled"``: nodes) it concerns.
    """

    path: str
    rule: str
    count: int


def log_cleaning(logger: logging.Logger, cleaning: TraceCleaning, message: str) -> None:
    """Report one documented cleaning at ``WARNING`` level, with ``cleaning`` on the record.

    Args:
        logger: The reader module's logger (``logging.getLogger(__name__)``).
        cleaning: What was cleaned, with counts.
        message: The same in words, starting with the file.
    """
    logger.warning(message, extra={"cleaning": cleaning})


def check_file(path: str | Path) -> Path:
    """Return ``path`` as a :class:`Path` after checking that it is a non-empty regular file of a readable size.

    Only ``stat`` is used: a FIFO or a device (``/dev/zero``) is refused before it is opened, and
    so is a file above ``limits.max_trace_bytes`` (:func:`digital_twin._files.check_size`).

    Raises:
        TraceError: The file is missing, is not a regular file (directory, FIFO, device), has
            zero bytes, or too many.
    """
    path = Path(path)
    reason = not_a_file_reason(path)
    if reason == "no such file":
        raise TraceError(f"{path}: file not found")
    if reason is not None:
        raise TraceError(f"{path}: not a regular file ({reason}); give the path of a trace file")
    if check_size(path, "trace") == 0:
        raise TraceError(f"{path}: empty file (0 bytes)")
    return path


def _open_text(path: Path) -> TextIO:
    opener = _OPENERS.get(path.suffix.lower())
    if opener is not None:
        return opener(path, "rt", encoding="utf-8-sig", newline="")
    return path.open(encoding="utf-8-sig", newline="")


def first_line(path: Path) -> str:
    """The first line of a (possibly gzip/bz2/xz-compressed) text file, without its newline.

    Raises:
        TraceError: The file cannot be decoded as UTF-8 text, its first line holds a NUL
            character (a binary file, or UTF-16 or UTF-32 text without a byte-order mark, which
            decodes as UTF-8 with a NUL beside every ASCII character), or it holds only blank lines.
    """
    try:
        with _open_text(path) as handle:
            while line := handle.readline(FIRST_LINE_CHARS):  # bounded: a file may hold no newline
                if "\x00" in line:
                    raise TraceError(
                        f"{path}: line 1 holds NUL characters: a binary file, or text saved as UTF-16 or UTF-32? "
                        "Save it as UTF-8"
                    )
                return line.rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: cannot read as UTF-8 text ({exc})") from exc
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise TraceError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from exc
    raise TraceError(f"{path}: empty file (no lines)")


def _split(line: str) -> list[str]:
    return next(csv.reader([line]))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_delimiter(path: Path, line: str, expected_fields: int) -> list[str]:
    """Split ``line`` on commas and reject a file written with another delimiter.

    Args:
        path: The file (for the message).
        line: Its first line.
        expected_fields: Minimum number of comma-separated fields a valid first line has.

    Returns:
        The fields of ``line``.

    Raises:
        TraceError: The line has fewer fields than expected; the message names a delimiter
            (``;``, tab, ``|``) found instead of ``,``.
    """
    if not line.strip():
        raise TraceError(f"{path}: line 1 is blank, expected at least {expected_fields} columns")
    fields = _split(line)
    if len(fields) < expected_fields:
        found = [d for d in _OTHER_DELIMITERS if d in line]
        if found:
            shown = "tab" if found[0] == "\t" else repr(found[0])
            raise TraceError(
                f"{path}: line 1 has {len(fields)} comma-separated column(s) but contains {shown}:"
                f" wrong delimiter? This reader expects ',' and at least {expected_fields} columns"
            )
        raise TraceError(
            f"{path}: line 1 has {len(fields)} column(s), expected at least {expected_fields}"
        )
    return fields


class Where:
    """Turns a record index of a table file into a human location (``"line 7"``, ``"row 7"``).

    Args:
        path: The file.
        header_lines: Lines before the first record (1 for a CSV header, 0 without).
        kind: ``"csv"`` (locations are 1-based file lines; quoted multi-line fields are
            handled by re-scanning the file on the error path) or ``"rows"`` (Parquet and other
            binary tables: 1-based data rows).
    """

    def __init__(self, path: Path, header_lines: int, kind: str = "csv") -> None:
        self.path = path
        self.header_lines = header_lines
        self.kind = kind

    def __call__(self, record: int) -> str:
        """``"line N"`` (CSV) or ``"row N"`` for the 0-based ``record`` index."""
        if self.kind != "csv":
            return f"row {record + 1}"
        try:
            with _open_text(self.path) as handle:
                reader = csv.reader(handle)
                start = 1
                for index, _ in enumerate(reader):
                    if index == record + self.header_lines:
                        return f"line {start}"
                    start = reader.line_num + 1
        except (OSError, UnicodeDecodeError, csv.Error):
            pass
        return f"line {record + self.header_lines + 1}"


def read_csv(
    path: Path,
    *,
    dtypes: dict[str, str],
    names: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, Where]:
    """Read a comma-separated file with required, typed columns.

    Args:
        path: A checked file (see :func:`check_file`).
        dtypes: Required column name -> ``FLOAT`` or ``TEXT``. Other columns are read as well
            (so that a row with too many fields is caught) but not typed.
        names: Column names of a headerless file (its line 1 is data), or ``None`` when the
            file's line 1 is a header.

    Returns:
        The frame (blank lines removed; the index is the record index in the file) and a
        :class:`Where` for messages.

    Raises:
        TraceError: Wrong delimiter, missing header, unexpected header, missing columns,
            a row with more or fewer fields than the header (or ``names``), non-numeric text
            in a ``FLOAT`` column, or no data rows.
    """
    line = first_line(path)
    if names is None:
        header = check_delimiter(path, line, min(len(dtypes), 2))
        _check_header(path, header, dtypes)
        where = Where(path, header_lines=1)
    else:
        fields = check_delimiter(path, line, len(names))
        _check_no_header(path, fields, names, dtypes)
        where = Where(path, header_lines=0)
    kwargs = {"header": None, "names": list(names)} if names is not None else {"header": 0}
    data = read_bounded(path, "trace")  # decompressed once, within limits.max_trace_bytes
    try:
        frame = pd.read_csv(io.BytesIO(data), engine="c", dtype=dtypes, skip_blank_lines=False, **kwargs)
    except pd.errors.ParserError as exc:
        raise TraceError(f"{path}: malformed CSV: {_parser_detail(exc)}") from exc
    except (OSError, UnicodeDecodeError, EOFError) as exc:  # before ValueError: a subclass
        raise TraceError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from exc
    except (ValueError, TypeError, OverflowError):  # non-numeric text in a float column, or a long first row
        # (pandas takes a first row with one field too many as having an index column: the
        # row's length is the error then, not its text)
        _check_row_lengths(path, data, None if names is None else len(names))
        frame = _read_as_text_and_locate(path, data, dtypes, where, kwargs)
    _check_row_lengths(path, data, None if names is None else len(names))
    frame = frame[frame.notna().any(axis=1)]  # blank lines carry no data
    if frame.empty:
        raise TraceError(f"{path}: no data rows")
    return frame, where


def _check_row_lengths(path: Path, data: bytes, expected: int | None) -> None:
    """Refuse a record of ``data`` (the file's bytes) with fewer or more fields than the format, even unused ones.

    pandas pads a short row with empty values, so without this a row that lost its last
    columns would read as if they were empty.
    """
    ragged = first_ragged_row(data, expected)
    if ragged is not None:
        line, fields, wanted = ragged
        kind = "a short row" if fields < wanted else "a long row"
        raise TraceError(
            f"{path}: line {line} has {fields} field(s), expected {wanted} ({kind}: every row "
            "needs every column of the format, even the columns this reader does not use)"
        )


def _check_header(path: Path, header: list[str], dtypes: dict[str, str]) -> None:
    if all(_is_number(field) for field in header if field.strip()):
        raise TraceError(
            f"{path}: line 1 is a data row ({','.join(header)[:80]}), expected a header naming "
            f"the columns {list(dtypes)}"
        )
    stripped = [field.strip() for field in header]
    missing = [name for name in dtypes if name not in header]
    if missing:
        hints = []
        for name in missing:
            close = [h for h in header if h.strip().lower() == name.lower()]
            if close or name in stripped:
                hints.append(f"{short_repr(name)} (found {(close or [name])[0]!r}: check case and spaces)")
            else:
                hints.append(repr(name))
        raise TraceError(
            f"{path}: missing column(s) {', '.join(hints)} in the header (line 1); "
            f"found columns {header}"
        )


def _check_no_header(
    path: Path, fields: list[str], names: Sequence[str], dtypes: dict[str, str]
) -> None:
    numeric = [i for i, name in enumerate(names) if dtypes.get(name) == FLOAT]
    if numeric and not any(_is_number(fields[i]) for i in numeric):
        raise TraceError(
            f"{path}: line 1 looks like a header ({','.join(fields)[:80]}), but this format has "
            f"no header row: expected data in the columns {list(names)}"
        )


def _parser_detail(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if match:
        expected, line, saw = match.groups()
        return (
            f"line {line} has {saw} fields, expected {expected} (wrong delimiter or a stray comma?)"
        )
    return text


def _read_as_text_and_locate(
    path: Path, data: bytes, dtypes: dict[str, str], where: Where, kwargs: dict[str, Any]
) -> pd.DataFrame:
    """Error path: read the float columns of ``data`` (the file's bytes) as text; report the first non-numeric cell."""
    text_dtypes = dict.fromkeys(dtypes, TEXT)
    try:
        frame = pd.read_csv(io.BytesIO(data), engine="c", dtype=text_dtypes, skip_blank_lines=False, **kwargs)
    except (ValueError, TypeError, OSError) as exc:
        raise TraceError(f"{path}: cannot read ({exc})") from exc
    for name, kind in dtypes.items():
        if kind != FLOAT:
            continue
        raw = frame[name]
        numbers = pd.to_numeric(raw, errors="coerce")
        bad = np.flatnonzero(numbers.isna().to_numpy() & raw.notna().to_numpy())
        if bad.size:
            record = int(frame.index[bad[0]])
            raise TraceError(
                f"{path}: {where(record)}, column {short_repr(name)}: non-numeric value "
                f"{str(raw.iloc[bad[0]])[:40]!r}"
            )
        frame[name] = numbers.astype(FLOAT)
    return frame
