"""Building a frozen spec dataclass from a mapping a user wrote (private): nodes and jobs of a scenario.

:func:`from_mapping` is the one check of such a mapping: it must be a mapping, hold only the
dataclass's field names and every required one; the dataclass then checks the values. Each
error names where the mapping is (``"fleet.nodes[2]"``), so a scenario's reader can add the file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from digital_twin.errors import SpecError, short_repr

T = TypeVar("T")


def from_mapping(cls: type[T], data: object, where: str, what: str) -> T:
    """``cls(**data)`` for a mapping of exactly ``cls``'s field names.

    Args:
        cls: A dataclass whose ``__post_init__`` raises :class:`SpecError` for bad values.
        data: The mapping (anything else is an error).
        where: Where it is, for messages (``"workload.jobs[3]"``).
        what: What it describes, for messages (``"node"``, ``"job"``).

    Raises:
        SpecError: ``"<where>: ..."``: not a mapping, an unknown key, a missing required key, or
            the dataclass's own error.

    >>> from digital_twin.fleet import NodeSpec
    >>> from_mapping(NodeSpec, {"node_id": "a", "arch": "x86_64"}, "nodes[0]", "node")
    Traceback (most recent call last):
    ...
    digital_twin.errors.SpecError: nodes[0]: missing key(s) ['instance', 'cpu_cores', 'mem_gb', 'price_per_hour_usd']
    """
    if not isinstance(data, Mapping):
        raise SpecError(f"{where}: expected a mapping of {what} fields, got {type(data).__name__} {short_repr(data)}")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # cls is a dataclass
    names = [field.name for field in fields]
    unknown = sorted((key for key in data if key not in names), key=str)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {short_repr(unknown)}; known: {sorted(names)}")
    required = [f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [name for name in required if name not in data]
    if missing:
        raise SpecError(f"{where}: missing key(s) {missing}")
    values: dict[str, Any] = dict(data)
    try:
        return cls(**values)
    except (SpecError, TypeError) as exc:
        raise SpecError(f"{where}: {exc}") from None
