"""The keys a sweep varies and their values, as typed on the command line or in a sweep file.

A key is a :class:`~training.learning.config.TrainConfig` field (``learning_rate``, ``n_steps``,
``net_arch``, ...) or ``hp.NAME`` for one of the algorithm's own keyword arguments (``--hp
NAME=VALUE`` of ``aco-env train``). Values are written as in YAML flow lists: ``1e-4,3e-4``;
``[64,64],[128,128]`` for a list-valued field. Each is checked against the field's type here,
with a :class:`~training.errors.UsageError` naming the key; the space they make is
:mod:`training.scale.sweeps.space`.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import yaml

from training.errors import UsageError
from training.learning.config import TrainConfig

HP_PREFIX = "hp."
"""Keys ``hp.NAME`` set ``TrainConfig.hyperparameters[NAME]`` (the algorithm's own arguments)."""
SWEEP_OWNED = ("logdir", "resume", "hyperparameters")
"""TrainConfig fields a sweep key cannot name: the sweep places and resumes runs; hp.NAME sets hyperparameters."""
FIELD_TYPES: dict[str, Any] = typing.get_type_hints(TrainConfig)
"""TrainConfig's fields and their types: the keys a sweep may name (but :data:`SWEEP_OWNED`)."""


def check_key(key: str) -> None:
    """A sweep key is a TrainConfig field (not one of :data:`SWEEP_OWNED`) or ``hp.NAME``.

    Raises:
        UsageError: Naming the key and listing the valid ones.
    """
    if key.startswith(HP_PREFIX):
        if not key.removeprefix(HP_PREFIX).isidentifier():
            raise UsageError(f"{key}: expected hp.NAME, NAME a keyword argument of the algorithm (e.g. hp.clip_range)")
        return
    if key in FIELD_TYPES and key not in SWEEP_OWNED:
        return
    valid = ", ".join(name for name in FIELD_TYPES if name not in SWEEP_OWNED)
    reason = {
        "logdir": "the sweep puts every run in SWEEP_DIR/runs/",
        "resume": "resume the whole sweep with aco-env sweep --resume SWEEP_DIR",
        "hyperparameters": "set one with hp.NAME (e.g. hp.clip_range)",
    }.get(key, "not a training option")
    raise UsageError(f"{key}: {reason}; the keys are hp.NAME or {valid}")


def parse_values(key: str, text: str) -> list[Any]:
    """The values of ``KEY=V1,V2,...`` (a YAML flow list without its brackets), each checked for the key's type.

    >>> parse_values("learning_rate", "1e-4,3e-4"), parse_values("net_arch", "[64,64],[128]")
    ([0.0001, 0.0003], [[64, 64], [128]])

    Raises:
        UsageError: Not a list of values of the key's type.
    """
    check_key(key)
    try:
        items = yaml.safe_load(f"[{text}]")
    except yaml.YAMLError:
        example = "1e-4,3e-4; [64,64],[128] for lists"
        raise UsageError(f"{key}={text}: expected comma-separated values (e.g. {example})") from None
    if not items:
        raise UsageError(f"{key}=: give at least one value")
    return [coerce(key, item) for item in items]


def parse_value(key: str, text: str) -> Any:
    """The one value of ``--set KEY=VALUE``; a list-valued field also takes ``64,64`` for ``[64,64]``.

    Raises:
        UsageError: Not a value of the key's type.
    """
    values = parse_values(key, text) if not _is_list_field(key) or text.lstrip().startswith("[") else [
        coerce(key, yaml.safe_load(f"[{text}]"))
    ]
    if len(values) != 1:
        raise UsageError(f"--set {key}={text}: expected one value (sweep several with --grid or --random)")
    return values[0]


def coerce(key: str, value: Any) -> Any:
    """``value`` (from YAML or the command line) as the JSON form of the key's type.

    Raises:
        UsageError: It is not of that type.
    """
    if key.startswith(HP_PREFIX):
        return _json_scalar(value)
    kind = FIELD_TYPES[key]
    origin = typing.get_origin(kind)
    try:
        if origin is tuple:
            items = value if isinstance(value, list) else str(value).split(",")
            item_kind = typing.get_args(kind)[0]
            return [_scalar(item_kind, item) for item in items]
        if origin is not None:  # Path | None: only resume, which check_key refuses
            raise TypeError
        return _scalar(kind, value)
    except (TypeError, ValueError):
        raise UsageError(f"{key}: expected {_type_name(kind)}, got {value!r}") from None


def load_sweep_file(path: Path) -> dict[str, Any]:
    """A YAML sweep file: ``set``, ``grid``, ``random`` (maps), ``seeds`` (list), ``samples``, ``scheduler``.

    Values may be YAML values or the command line's text (``random: {learning_rate: 1e-5:1e-3:log}``).

    Raises:
        UsageError: An unknown section or a section of the wrong kind.
        OSError: The file cannot be read.
    """
    document = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    sections = {"set": dict, "grid": dict, "random": dict, "seeds": list, "samples": int, "scheduler": str,
                "grace_period": int, "search_seed": int}
    if not isinstance(document, dict):
        raise UsageError(f"--config {path}: expected a YAML mapping with {', '.join(sections)}")
    for name, value in document.items():
        if name not in sections:
            raise UsageError(f"--config {path}: unknown section {name!r}; the sections are {', '.join(sections)}")
        if not isinstance(value, sections[name]):
            raise UsageError(f"--config {path}: {name} must be a {sections[name].__name__}")
    return document


def _scalar(kind: Any, value: Any) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "false"):
            return str(value).lower() == "true"
        raise ValueError(value)
    if kind is int:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(value)
        return int(value) if not isinstance(value, str) else int(value, 10)
    if kind is float:
        if isinstance(value, bool):
            raise ValueError(value)
        return float(value)
    if kind in (str, Path):
        if isinstance(value, list | dict):
            raise ValueError(value)
        return str(value)
    raise TypeError(kind)


def _json_scalar(value: Any) -> Any:
    """An ``hp.NAME`` value: numbers in YAML's text form (``1e-4``) become numbers, as ``--hp`` parses JSON."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _is_list_field(key: str) -> bool:
    return not key.startswith(HP_PREFIX) and typing.get_origin(FIELD_TYPES.get(key)) is tuple


def _type_name(kind: Any) -> str:
    if typing.get_origin(kind) is tuple:
        return f"a list of {_type_name(typing.get_args(kind)[0])}"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string", Path: "a path"}.get(
        kind, str(kind)
    )


__all__ = [
    "FIELD_TYPES",
    "HP_PREFIX",
    "SWEEP_OWNED",
    "check_key",
    "coerce",
    "load_sweep_file",
    "parse_value",
    "parse_values",
]
