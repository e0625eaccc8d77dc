"""The kinds of ``TrainConfig`` field the command line treats specially, as simple-parsing fields.

simple-parsing (:mod:`simple_parsing`) turns a dataclass into ``--kebab-case`` options, each
with the docstring under its field as help. These helpers declare, on the field itself, what
argparse's defaults would get wrong: integers with a minimum (a smaller value is a usage error,
exit 2), comma-separated lists (``--net-arch 64,64``), and ``--hp KEY=VALUE`` repeated into a
dict. The minimum is kept in the field's metadata, so :class:`~training.learning.config.TrainConfig`
checks the same bound for library callers (:func:`minimum_of`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import Field
from typing import Any, cast

import simple_parsing

from training.checks import count

MINIMUM = "minimum"
"""The metadata key of a counted field's smallest value."""


def counted(default: int, minimum: int) -> Any:
    """An ``int`` field whose option rejects values below ``minimum`` (``argument --x: must be >= 0, got -5``)."""
    return simple_parsing.field(default=default, type=count(minimum), metavar="N", metadata={MINIMUM: minimum})


def minimum_of(field: Field[Any]) -> int | None:
    """The smallest value a :func:`counted` field takes (``None`` for other fields)."""
    return field.metadata.get(MINIMUM)


def comma_separated(default: tuple[Any, ...], kind: Callable[[str], Any], metavar: str) -> Any:
    """A tuple field given as one comma-separated option value, e.g. ``--net-arch 64,64``."""

    def parse(text: str) -> tuple[Any, ...]:
        try:
            return tuple(kind(item) for item in text.split(",") if item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}") from None

    return simple_parsing.field(default=default, type=parse, nargs=None, metavar=metavar)


def optional_path(metavar: str) -> Any:
    """A ``Path | None`` field (default ``None``) that takes exactly one path."""
    from pathlib import Path

    return simple_parsing.field(default=None, type=Path, nargs=None, metavar=metavar)


def key_values(option: str) -> Any:
    """A ``dict[str, Any]`` field set by repeating ``OPTION KEY=VALUE`` (values parsed as JSON when they are)."""
    return simple_parsing.field(
        default_factory=dict, alias=option, action=_MergeKeyValue, type=parse_key_value, metavar="KEY=VALUE"
    )


def parse_key_value(item: str) -> tuple[str, Any]:
    """An argparse ``type``: ``KEY=VALUE`` -> ``(KEY, VALUE)``, the value parsed as JSON when it is JSON.

    >>> parse_key_value("clip_range=0.1"), parse_key_value("policy=Mlp")
    (('clip_range', 0.1), ('policy', 'Mlp'))
    """
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. clip_range=0.1), got {item!r}")
    try:
        return key.strip(), json.loads(text)
    except json.JSONDecodeError:
        return key.strip(), text


class _MergeKeyValue(argparse.Action):
    """Adds each ``(key, value)`` to a new dict (the default one is never changed)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        key, value = cast(tuple[str, Any], values)  # parse_key_value made it a pair
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest, None) or {}), key: value})
