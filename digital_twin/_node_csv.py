"""Reading a node list: one CSV row per node, checked and named by file and line."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from digital_twin._files import first_ragged_row, not_a_file_reason, read_utf8
from digital_twin.errors import TraceError, short_repr


class _Named(Protocol):
    @property
    def node_id(self) -> str: ...


Node = TypeVar("Node", bound=_Named)
"""The node type a reader builds (:class:`digital_twin.fleet.NodeSpec`)."""


def read_node_csv(
    path: Path,
    what: str,
    columns: Sequence[str],
    id_column: str,
    make_node: Callable[[Mapping[str, str], str], Node],
    limit: int | None,
) -> list[Node]:
    """The nodes of a CSV file with a header, one per row, in file order.

    Args:
        path: The file.
        what: What the file is, for messages (``"node list"``).
        columns: Columns the header must have (others are ignored).
        id_column: The column holding the node id, for the duplicate message.
        make_node: ``make_node(row, "<path>:<line>")`` -> the row's node; raises
            :class:`TraceError` naming that place.
        limit: Keep only the first ``limit`` rows (``None``: all).

    Raises:
        TraceError: Missing file or column, not UTF-8, a ragged row, a node id seen before,
            a CSV parse error, or no rows; the message names the file and line (header = 1).
    """
    reason = not_a_file_reason(path)  # before opening: a FIFO would block, /dev/zero never end
    if reason is not None:
        raise TraceError(f"{path}: cannot open {what} ({reason})")
    text = read_utf8(path, what)
    if (ragged := first_ragged_row(path, None)) is not None:
        line, fields, expected = ragged
        raise TraceError(f"{path}:{line}: the row has {fields} fields, the header has {expected}")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    nodes: dict[str, tuple[Node, int]] = {}  # node id -> the node and its line
    try:
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise TraceError(f"{path}: missing column(s) {missing}; expected header {','.join(columns)}")
        for line, row in enumerate(reader, start=2):
            if limit is not None and len(nodes) >= limit:
                break
            node = make_node(row, f"{path}:{line}")
            if node.node_id in nodes:
                first = nodes[node.node_id][1]
                shown = short_repr(node.node_id)
                raise TraceError(f"{path}:{line}: duplicate {id_column} {shown} (first on line {first})")
            nodes[node.node_id] = (node, line)
    except csv.Error as exc:  # e.g. a field above the csv module's size limit
        raise TraceError(f"{path}:{reader.line_num}: cannot parse the {what} as CSV ({exc})") from None
    if not nodes:
        raise TraceError(f"{path}: the {what} has no rows")
    return [node for node, _ in nodes.values()]
