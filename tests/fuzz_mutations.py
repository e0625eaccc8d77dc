"""Hypothesis strategies that break valid inputs: scenario documents, their bytes, trace and job files.

Every mutation is a pure function of what it was drawn with, and its drawn values are plain data
(strings, numbers, tuples), so hypothesis prints a failing example in a form one can replay.

* :func:`mutate_document`: structural edits of a parsed scenario (delete a key, add one, a value
  of the wrong type, a huge or non-finite number, a negative one, an empty or duplicated list
  item), dumped back to YAML.
* :func:`mutate_bytes`: edits of a file's bytes (truncation, other encodings with and without a
  byte-order mark, inserted binary or YAML syntax, CRLF, lines dropped or repeated, the whole
  file replaced by binary, nothing, or a hostile YAML document: an alias bomb, deep nesting, a
  recursive alias, tags).
* :func:`mutate_table`: edits of a delimited text file's cells and rows (a cell replaced by
  non-numeric, empty, NaN, infinite, huge, negative or quoted text; a row dropped, repeated,
  cut short or grown; the header lost), then optionally one byte-level edit.
* :func:`mutate_frame`: edits of a Parquet table's columns (wrong dtype, NaN, inf, negative,
  huge values, a column dropped or renamed, no rows).
"""

from __future__ import annotations

import copy
import datetime
import gzip
import io
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import yaml
from hypothesis import strategies as st

Path_ = tuple[str | int, ...]

NASTY_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, -0.5, 0.5, 5e-324, 1e-300, 1e308, float("inf"), float("-inf"), float("nan"),
    2**63, 10**30, 10**400, "", " ", "abc", "1e9", "0x1F", "1_000", "${FUZZ_UNSET_VARIABLE}/x.csv",
    "/dev/zero", "/", "/nonexistent/x.csv", "..", "\u00e9\u00e8\u00ea", "x" * 5000, "\x00a", "nan", ".inf",
    [], {}, [1, "a", None], {"a": {"b": [1]}}, [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]], [0] * 50,
    datetime.date(2020, 1, 1), b"\x00\xff",
)
"""Values that a scenario key should refuse (or, for a few keys, accept) with a clear message."""
SCALES = (0.0, -1.0, 1e-9, 1e9, 1e300, -1e300, 0.1, 0.5, 2.0, 10.0)
"""Factors a number is multiplied by: absurd ones, and mild ones that often leave the input valid."""
NASTY_CELLS = (
    "", " ", "abc", "nan", "NaN", "inf", "-inf", "-1", "-0", "1e400", "1e308", "9" * 400, "0x10", "1_000",
    " 5 ", "\uff11\uff12", "\x00", "''", '"', '"open', "1,2", ";", "\t", "None", "null", "\\N", "2023-13-45",
    "99999999999999999999", "1e-320", "3.5", "-3.5", "{'cpus': }", "{'memory': 1}", "\u00e9", "10000000",
)
"""Tokens that replace one cell of a table."""
INSERTIONS = (
    b"\x00", b"\t", b"\r", b"\xff\xfe", b"\xef\xbb\xbf", b"\xc3(", b"&a ", b"*a ", b"*undefined ",
    b"!!python/object/apply:os.system ['true'] ", b"!!timestamp ", b"!!binary ", b"!!set ", b"<<: ", b"{", b"[",
    b"'", b'"', b"---\n", b"...\n", b"%YAML 1.1\n", b"? ", b"- ", b": ", b"#", b"\n  ", b"9" * 5000, b",", b";",
)
"""Byte strings inserted into a file."""
_DEPTH = 5000


def _alias_bomb(levels: int) -> bytes:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, levels)]
    return ("\n".join(lines) + "\n").encode()


HOSTILE_DOCUMENTS: tuple[bytes, ...] = (
    _alias_bomb(9),
    _alias_bomb(4),
    b"a: " + b"[" * _DEPTH + b"]" * _DEPTH + b"\n",
    b"a: " + b"{x: " * 2000 + b"1" + b"}" * 2000 + b"\n",
    b"- " * 3000 + b"x\n",
    b"&a [*a]\n",
    b"a: &a {b: *a}\n",
    b"!!python/object/apply:os.system ['echo pwned']\n",
    b"!!binary aGVsbG8=\n",
    b"!!set {a, b}\n",
    b"!!timestamp 2001-12-14\n",
    b"schema_version: 2\n---\nschema_version: 2\n",
    b"---\n...\n",
    b"[1, 2, 3]\n",
    b"just a string\n",
    b"42\n",
    b"~\n",
    b"? [a, b]\n: c\n",
    b"{[1]: 2}\n",
    b"{null: 1, 1: 2, 1.5: 3, true: 4}\n",
    b"a: 1\na: 2\n",
    b"<<: *nope\n",
    b"a: !!int " + b"9" * 10000 + b"\n",
    b"a: " + b"9" * 10000 + b"\n",
    b"a: '" + b"x" * 100000,
    b"%TAG ! tag:evil.com,2000:\n--- !foo\nx: 1\n",
    b"\t- a\n",
)
"""Whole files that are hostile YAML (alias bombs, deep nesting, recursion, tags, odd documents)."""
ENCODINGS = ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1", "cp1252", "utf-8-sig")


def paths(document: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every key path of a parsed YAML value (mappings and lists), depth first, the root excluded."""
    out: list[Path_] = []
    items: Any = ()
    if isinstance(document, dict):
        items = document.items()
    elif isinstance(document, list):
        items = enumerate(document)
    for key, value in items:
        out.append((*prefix, key))
        out.extend(paths(value, (*prefix, key)))
    return out


def _parent_and_key(document: Any, path: Path_) -> tuple[Any, str | int]:
    parent = document
    for part in path[:-1]:
        parent = parent[part]
    return parent, path[-1]


def _delete(document: Any, path: Path_, _: Any) -> None:
    parent, key = _parent_and_key(document, path)
    del parent[key]


def _replace(document: Any, path: Path_, value: Any) -> None:
    parent, key = _parent_and_key(document, path)
    parent[key] = copy.deepcopy(value)


def _extra(document: Any, path: Path_, value: Any) -> None:
    parent, key = _parent_and_key(document, path)
    target = parent[key]
    if isinstance(target, dict):
        target["fuzz_extra_key"] = copy.deepcopy(value)
    elif isinstance(target, list):
        target.append(copy.deepcopy(value))
    else:
        parent[key] = {"fuzz_extra_key": copy.deepcopy(value)}


def _scale(document: Any, path: Path_, factor: Any) -> None:
    parent, key = _parent_and_key(document, path)
    value = parent[key]
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 1e300:
        parent[key] = value * factor
    else:
        parent[key] = factor


def _duplicate(document: Any, path: Path_, _: Any) -> None:
    parent, key = _parent_and_key(document, path)
    if isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
    else:
        parent[f"{key}_copy"] = copy.deepcopy(parent[key])


def _as_text(document: Any, path: Path_, _: Any) -> None:
    parent, key = _parent_and_key(document, path)
    parent[key] = str(parent[key])


EDITS: dict[str, Callable[[Any, Path_, Any], None]] = {
    "delete": _delete,
    "replace": _replace,
    "extra": _extra,
    "scale": _scale,
    "duplicate": _duplicate,
    "as-text": _as_text,
}
"""Structural edits of a document at a key path (the third argument is the drawn value or factor)."""


@st.composite
def mutate_document(draw: st.DrawFn, document: dict[str, Any], protected: tuple[str, ...] = ()) -> tuple[bytes, list]:
    """1 to 3 structural edits of ``document`` (keys under ``protected`` untouched); returns the YAML and the edits."""
    document = copy.deepcopy(document)
    edits = []
    for _ in range(draw(st.integers(1, 3), label="number of edits")):
        candidates = [p for p in paths(document) if p and p[0] not in protected]
        if not candidates:
            break
        path = draw(st.sampled_from(candidates), label="key path")
        edit = draw(st.sampled_from(sorted(EDITS)), label="edit")
        argument = draw(st.sampled_from(SCALES), label="factor") if edit == "scale" else None
        if edit in ("replace", "extra"):
            argument = draw(st.sampled_from(NASTY_VALUES), label="value")
        EDITS[edit](document, path, argument)
        edits.append((edit, path, argument))
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True).encode(), edits


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


@st.composite
def mutate_bytes(draw: st.DrawFn, data: bytes, hostile: bool = True) -> tuple[bytes, str]:
    """One byte-level edit of ``data`` (``hostile``: may also be replaced by a hostile YAML document)."""
    kinds = ["truncate", "encode", "insert", "binary", "empty", "crlf", "drop-line", "repeat-line", "gzip"]
    kind = draw(st.sampled_from(kinds + (["hostile"] if hostile else [])), label="byte edit")
    at = draw(st.integers(0, max(len(data), 1)), label="offset")
    lines = _lines(data)
    line = at % max(len(lines), 1)
    if kind == "truncate":
        return data[:at], f"truncated at byte {at}"
    if kind == "encode":
        encoding = draw(st.sampled_from(ENCODINGS), label="encoding")
        text = data.decode("utf-8", errors="replace").replace("fuzz seed", "fuzz s\u00e9ed \u2013 \u00fc")
        return text.encode(encoding, errors="replace"), f"encoded as {encoding}"
    if kind == "insert":
        inserted = draw(st.one_of(st.sampled_from(INSERTIONS), st.binary(min_size=1, max_size=12)), label="bytes")
        return data[:at] + inserted + data[at:], f"inserted {inserted[:40]!r} at byte {at}"
    if kind == "binary":
        return draw(st.binary(min_size=1, max_size=2000), label="binary"), "replaced by binary"
    if kind == "empty":
        return b"", "emptied"
    if kind == "crlf":
        return data.replace(b"\n", b"\r\n"), "CRLF line endings"
    if kind == "drop-line":
        return b"\n".join(lines[:line] + lines[line + 1 :]), f"dropped line {line + 1}"
    if kind == "repeat-line":
        return b"\n".join(lines[: line + 1] + lines[line:]), f"repeated line {line + 1}"
    if kind == "gzip":
        return gzip.compress(data, mtime=0), "gzip-compressed under the same name"
    document = draw(st.sampled_from(HOSTILE_DOCUMENTS), label="hostile document")
    return document, f"replaced by hostile YAML {document[:60]!r}"


@st.composite
def mutate_table(draw: st.DrawFn, data: bytes, delimiter: str | None) -> tuple[bytes, list[str]]:
    """1 or 2 cell or row edits of a delimited text (``delimiter`` ``None``: whitespace), maybe a byte edit too."""
    text = data.decode("utf-8")
    newline = "\r\n" if "\r\n" in text else "\n"
    rows = text.split(newline)
    while rows and rows[-1] == "":
        rows.pop()
    done: list[str] = []
    for _ in range(draw(st.integers(1, 2), label="number of table edits")):
        if not rows:
            break
        kind = draw(st.sampled_from(["cell", "cell", "cell", "scale", "row"]), label="table edit")
        index = draw(st.integers(0, len(rows) - 1), label="row")
        cells = rows[index].split(delimiter) or [""]
        sep = delimiter if delimiter is not None else " "
        column = draw(st.integers(0, len(cells) - 1), label="column")
        if kind == "cell":
            cells[column] = draw(st.sampled_from(NASTY_CELLS), label="cell")
            rows[index] = sep.join(cells)
            done.append(f"line {index + 1} field {column + 1} = {cells[column]!r}")
        elif kind == "scale":
            factor = draw(st.sampled_from(["-1", "1e12", "1e-12", "0", "1e300"]), label="factor")
            try:
                cells[column] = repr(float(cells[column]) * float(factor))
            except ValueError:
                cells[column] = factor
            rows[index] = sep.join(cells)
            done.append(f"line {index + 1} field {column + 1} x {factor}")
        else:
            rows, what = _row_edit(draw, rows, index, cells, sep)
            done.append(what)
    mutated = (newline.join(rows) + newline).encode("utf-8")
    if draw(st.booleans(), label="also a byte edit"):
        mutated, what = draw(mutate_bytes(mutated, hostile=False))
        done.append(what)
    return mutated, done


def _row_edit(draw: st.DrawFn, rows: list[str], index: int, cells: list[str], sep: str) -> tuple[list[str], str]:
    kind = draw(
        st.sampled_from(["drop", "repeat", "short", "long", "no-header", "header-last", "blank", "only-first",
                         "reverse", "other-delimiter"]),
        label="row edit",
    )
    if kind == "drop":
        return rows[:index] + rows[index + 1 :], f"dropped line {index + 1}"
    if kind == "repeat":
        return rows[: index + 1] + rows[index:], f"repeated line {index + 1}"
    if kind == "short":
        return [*rows[:index], sep.join(cells[:-1]), *rows[index + 1 :]], f"line {index + 1} lost its last field"
    if kind == "long":
        return [*rows[:index], sep.join([*cells, "7"]), *rows[index + 1 :]], f"line {index + 1} got a field more"
    if kind == "no-header":
        return rows[1:], "dropped line 1"
    if kind == "header-last":
        return rows[1:] + rows[:1], "moved line 1 to the end"
    if kind == "blank":
        return [*rows[:index], "", "", *rows[index:]], f"blank lines before line {index + 1}"
    if kind == "only-first":
        return rows[:1], "kept line 1 only"
    if kind == "reverse":
        return rows[::-1], "reversed the lines"
    other = draw(st.sampled_from([";", "\t", "|"]), label="delimiter")
    return [row.replace(sep, other) for row in rows], f"delimiter {other!r}"


FRAME_VALUES: tuple[Any, ...] = (np.nan, np.inf, -np.inf, -1.0, 1e300, 101.0, 0.5, "abc", None, True)


@st.composite
def mutate_frame(draw: st.DrawFn, frame: pd.DataFrame) -> tuple[bytes, str]:
    """One edit of a Parquet table's columns or rows, written as Parquet (or its bytes broken)."""
    frame = frame.copy()
    kind = draw(st.sampled_from(["value", "dtype", "drop", "rename", "no-rows", "extra", "bytes"]), label="frame edit")
    column = draw(st.sampled_from(list(frame.columns)), label="column")
    if kind == "value":
        row = draw(st.integers(0, len(frame) - 1), label="row")
        value = draw(st.sampled_from(FRAME_VALUES), label="value")
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
        what = f"row {row} column {column!r} = {value!r}"
    elif kind == "dtype":
        frame[column] = frame[column].astype(str)
        what = f"column {column!r} as text"
    elif kind == "drop":
        frame = frame.drop(columns=[column])
        what = f"dropped column {column!r}"
    elif kind == "rename":
        frame = frame.rename(columns={column: column.upper()})
        what = f"renamed column {column!r}"
    elif kind == "no-rows":
        frame = frame.iloc[:0]
        what = "no rows"
    elif kind == "extra":
        frame["time"] = [datetime.datetime(2020, 1, 1)] * len(frame)
        what = "an extra datetime column"
    else:
        buffer = io.BytesIO()
        frame.to_parquet(buffer)
        mutated, what = draw(mutate_bytes(buffer.getvalue(), hostile=False))
        return mutated, f"Parquet bytes {what}"
    buffer = io.BytesIO()
    try:
        frame.to_parquet(buffer)
    except Exception:  # pyarrow cannot write a column of mixed types: write it as text
        frame[column] = frame[column].astype(str)
        frame.to_parquet(buffer)
        what += " (written as text)"
    return buffer.getvalue(), what
