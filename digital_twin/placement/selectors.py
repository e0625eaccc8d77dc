"""Label selectors, as Kubernetes writes them: ``match_labels`` and ``match_expressions``.

Labels are ``str -> str`` mappings on nodes and jobs (:mod:`digital_twin.placement.labels`).
A :class:`Requirement` is one Kubernetes match expression; a :class:`LabelSelector` holds
``match_labels`` (each an ``In`` of one value) and ``match_expressions``, all of which must
hold (an empty selector matches everything, as in Kubernetes).

Operators (Kubernetes semantics): ``In`` / ``NotIn`` a set of values (``NotIn`` also holds
when the key is absent), ``Exists`` / ``DoesNotExist`` (no values), ``Gt`` / ``Lt`` one
integer, compared with the label's value read as an integer (a label that is absent or not
an integer does not match). Kubernetes allows ``Gt``/``Lt`` on node selectors only; here they
work on any selector.

Example:
    >>> zone_a = LabelSelector.parse({"match_labels": {"zone": "a"}}, "sel")
    >>> zone_a.matches({"zone": "a", "rack": "3"}), zone_a.matches({"zone": "b"})
    (True, False)
    >>> big = Requirement.parse({"key": "rack", "operator": "Gt", "values": [2]}, "expr")
    >>> big.matches({"rack": "3"}), big.matches({"rack": "x"})
    (True, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from digital_twin.errors import SpecError, short_repr

Labels = Mapping[str, str]
"""A node's or a job's labels: key -> value."""

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One match expression: ``key`` ``operator`` ``values`` (see the module docstring)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise SpecError(f"key must be a non-empty string, got {short_repr(self.key)}")
        if self.operator not in OPERATORS:
            raise SpecError(f"operator {short_repr(self.operator)} is not one of {OPERATORS}")
        n = len(self.values)
        if self.operator in ("In", "NotIn") and n == 0:
            raise SpecError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and n:
            raise SpecError(f"operator {self.operator} takes no values, got {short_repr(list(self.values))}")
        if self.operator in ("Gt", "Lt") and (n != 1 or _as_int(self.values[0]) is None):
            raise SpecError(f"operator {self.operator} needs exactly one integer value, "
                            f"got {short_repr(list(self.values))}")

    def matches(self, labels: Labels) -> bool:
        """Whether ``labels`` satisfy the expression."""
        value = labels.get(self.key)
        op = self.operator
        if op == "In":
            return value in self.values
        if op == "NotIn":
            return value not in self.values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        number = None if value is None else _as_int(value)
        if number is None:
            return False
        bound = int(self.values[0])
        return number > bound if op == "Gt" else number < bound

    @classmethod
    def parse(cls, data: object, where: str) -> Requirement:
        """From ``{key, operator, values}``; errors name ``where``."""
        section = mapping_of(data, where, ("key", "operator", "values"))
        values = section.get("values", [])
        if not isinstance(values, list):
            raise SpecError(f"{where}.values: expected a list, got {short_repr(values)}")
        try:
            return cls(
                label_key(section.get("key"), f"{where}.key"),
                section.get("operator"),  # type: ignore[arg-type]  # checked by __post_init__
                tuple(label_value(v, f"{where}.values[{k}]") for k, v in enumerate(values)),
            )
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """``match_labels`` and ``match_expressions``, all of which must hold (empty: matches all).

    Attributes:
        match_labels: ``(key, value)`` pairs, each required exactly, sorted by key.
        match_expressions: Further :class:`Requirement` s.
    """

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Labels) -> bool:
        """Whether ``labels`` satisfy every label and expression."""
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(expression.matches(labels) for expression in self.match_expressions)

    def keys(self) -> set[str]:
        """The label keys the selector reads."""
        return {key for key, _ in self.match_labels} | {e.key for e in self.match_expressions}

    def with_labels(self, extra: Mapping[str, str]) -> LabelSelector:
        """This selector with ``extra`` added to ``match_labels`` (Kubernetes' ``match_label_keys``)."""
        merged = dict(self.match_labels) | dict(extra)
        return LabelSelector(tuple(sorted(merged.items())), self.match_expressions)

    @classmethod
    def parse(cls, data: object, where: str) -> LabelSelector:
        """From ``{match_labels: {k: v}, match_expressions: [{key, operator, values}]}``."""
        section = mapping_of(data, where, ("match_labels", "match_expressions"))
        return cls(
            label_map(section.get("match_labels", {}), f"{where}.match_labels"),
            tuple(
                Requirement.parse(item, f"{where}.match_expressions[{k}]")
                for k, item in enumerate(list_of(section.get("match_expressions", []), f"{where}.match_expressions"))
            ),
        )


def label_map(data: object, where: str) -> tuple[tuple[str, str], ...]:
    """A ``{key: value}`` mapping of labels as sorted pairs (values may be written as integers)."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{where}: expected a mapping of label keys to values, got {short_repr(data)}")
    return tuple(sorted((label_key(k, f"{where}"), label_value(v, f"{where}.{k}")) for k, v in data.items()))


def label_key(value: object, where: str) -> str:
    """A label key: a non-empty string."""
    if not isinstance(value, str) or not value:
        raise SpecError(f"{where}: a label key must be a non-empty string, got {short_repr(value)}")
    return value


def label_value(value: object, where: str) -> str:
    """A label value: a string, or an integer written without quotes (kept as its digits)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise SpecError(f"{where}: a label value must be a string or an integer, got {short_repr(value)}")
    return str(value)


def _as_int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def mapping_of(data: object, where: str, known: tuple[str, ...]) -> Mapping[str, object]:
    """``data`` as a mapping with only ``known`` keys (else an error naming ``where``)."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{where}: expected a mapping, got {type(data).__name__} {short_repr(data)}")
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {short_repr(unknown)}; known: {list(known)}")
    return data


def list_of(data: object, where: str) -> list[object]:
    """``data`` as a list (else an error naming ``where``)."""
    if not isinstance(data, list):
        raise SpecError(f"{where}: expected a list, got {type(data).__name__} {short_repr(data)}")
    return data

