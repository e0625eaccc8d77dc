"""Reading YAML mappings into typed values with errors that name the file and the key.

Every message that shows a value from the file shows it through
:func:`~digital_twin.errors.short_repr` (at most 200 characters, bounded work), so a huge
value cannot make the error itself slow or large.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from digital_twin.errors import SpecError, closest, did_you_mean, short_repr
from digital_twin.limits import Limits

T = TypeVar("T")

_KIND_NAMES = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true/false",
    "list": "a list",
    "dict": "a mapping",
}  # type name -> how an error message names it
_EXPONENT = re.compile(r"^[-+]?[0-9][0-9_]*(\.[0-9_]*)?[eE][-+]?[0-9]+$")


class ScenarioError(SpecError):
    """A scenario file is invalid; the message starts with ``<file>: <key path>:``."""


class Section:
    """A YAML mapping being read; unknown keys are errors once :meth:`finish` is called.

    Every key the reader asks about (read, or only looked for with :meth:`has`) is a known key:
    an unknown key's error lists them all, with the closest ones first. A required key that is
    missing is reported with the keys of the mapping that are close to it (``horizon:`` for
    ``horizon_s:``).

    Args:
        data: The mapping (anything else is an error naming ``where``).
        file: The scenario file (for messages).
        where: Dotted key path of this mapping, e.g. ``"telemetry.mapping"``.
    """

    def __init__(self, data: object, file: Path | str, where: str) -> None:
        if not isinstance(data, Mapping):
            raise ScenarioError(f"{file}: {where or 'top level'}: expected a mapping, got {type(data).__name__}")
        self.data = data
        self.file = file
        self.where = where
        self._read: set[str] = set()
        self._known: set[str] = set()

    def path(self, key: str) -> str:
        """Dotted path of ``key`` in this section."""
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str, problem: str) -> ScenarioError:
        """An error naming the file and the key."""
        return ScenarioError(f"{self.file}: {self.path(key)}: {problem}")

    def has(self, key: str) -> bool:
        """Whether ``key`` is present (it is a known key from now on, present or not)."""
        self._known.add(key)
        return key in self.data

    def missing(self, key: str) -> ScenarioError:
        """The error for a required ``key`` that is absent, naming the keys written instead that are close to it."""
        close = closest(key, [k for k in self.data if k not in self._read and isinstance(k, str)])
        found = f" (found {' and '.join(map(repr, close))}: misspelt?)" if close else ""
        return self.error(key, f"is required{found}")

    def get(
        self,
        key: str,
        kind: type | tuple[type, ...],
        default: Any = ...,
        *,
        required: bool = False,
        nullable: bool = False,
    ) -> Any:
        """The value of ``key`` checked against ``kind`` (``int`` accepts no bool; ``float`` accepts ints).

        A missing key gives ``default`` (an error when required or without default); an
        explicit ``null`` gives ``None`` when ``nullable``, else an error.
        """
        self._read.add(key)
        if key not in self.data:
            if required or default is ...:
                raise self.missing(key)
            return default
        value = self.data[key]
        if value is None:
            if nullable:
                return None
            raise self.error(key, f"must not be null (expected {_names(kind if isinstance(kind, tuple) else (kind,))})")
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(value, bool) and bool not in kinds:
            raise self.error(key, f"expected {_names(kinds)}, got a boolean")
        if not isinstance(value, kinds):
            hint = ""
            if isinstance(value, str) and _EXPONENT.match(value) and float in kinds:
                # PyYAML reads YAML 1.1: 1e9 and 1.0e12 are text, 1.0e+9 is a number.
                hint = " (YAML reads an exponent without a dot and a sign as text: write e.g. 1.0e+9)"
            elif isinstance(value, str) and _EXPONENT.match(value) and int in kinds:
                hint = " (write the integer in digits, e.g. 1000000000)"
            raise self.error(key, f"expected {_names(kinds)}, got {type(value).__name__} {short_repr(value)}{hint}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(key, f"must be finite, got {value}")
        return value

    def positive(self, key: str, default: Any = ..., *, nullable: bool = False) -> Any:
        """A number > 0 (or the default; ``None`` for an explicit null when ``nullable``)."""
        value = self.get(key, float, default, nullable=nullable)
        if value is not None and value <= 0:
            raise self.error(key, f"must be > 0, got {value:g}")
        return value

    @overload
    def section(self, key: str, *, required: Literal[True] = True) -> Section: ...

    @overload
    def section(self, key: str, *, required: bool) -> Section | None: ...

    def section(self, key: str, *, required: bool = True) -> Section | None:
        """The nested mapping under ``key`` (``None`` when it is absent and not required)."""
        self._read.add(key)
        if key not in self.data:
            if required:
                raise self.missing(key)
            return None
        return Section(self.data[key], self.file, self.path(key))

    def rest(self) -> dict[str, Any]:
        """All keys not read yet (they become keyword arguments); marks them read."""
        out = {k: v for k, v in self.data.items() if k not in self._read}
        self._read.update(out)
        return out

    def finish(self) -> None:
        """Raise for any key that was never read (unknown keys are errors, not ignored)."""
        unknown = sorted(set(self.data) - self._read, key=str)
        if unknown:
            known = sorted(self._read | self._known)
            raise ScenarioError(
                f"{self.file}: {self.where or 'top level'}: unknown key(s) {short_repr(unknown)}"
                f"{did_you_mean(unknown[0], known)}; known here: {known}"
            )


def check_options(
    function: Callable[..., Any], options: Mapping[str, Any], file: Path | str, where: str, skip: int = 1
) -> None:
    """Raise naming the file and key if ``options`` has a key that is not a keyword parameter.

    ``skip`` leading parameters are positional (supplied by the loader, e.g. the path).
    """
    parameters = inspect.signature(function).parameters
    names = list(parameters)[skip:]
    keyword = {
        n
        for n in names
        if parameters[n].kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    }
    unknown = sorted(set(options) - keyword, key=str)
    if unknown:
        raise ScenarioError(f"{file}: {where}: unknown option(s) {short_repr(unknown)}; known: {sorted(keyword)}")


def call_with_options(
    function: Callable[..., Any], options: Mapping[str, Any], file: Path | str, where: str, *positional: Any
) -> Any:
    """Call ``function(*positional, **options)`` after checking every option is a parameter of it.

    YAML lists become tuples. Errors from the function are re-raised naming the file and key.
    """
    check_options(function, options, file, where, skip=len(positional))
    kwargs = {k: _tuples(v) for k, v in options.items()}
    try:
        return function(*positional, **kwargs)
    except SpecError as exc:
        raise ScenarioError(f"{file}: {where}: {exc}") from None
    except TypeError as exc:
        raise ScenarioError(f"{file}: {where}: {exc}") from None


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def _names(kinds: tuple[type, ...]) -> str:
    return " or ".join(_KIND_NAMES.get(k.__name__, k.__name__) for k in kinds)


def section_options(
    section: Section, function: Callable[..., Any], skip: int = 1
) -> tuple[dict[str, Any], Section | None]:
    """The ``options`` mapping of ``section``, checked against ``function``'s keyword parameters.

    Returns:
        ``(options, options_section)``; ``({}, None)`` when there is no ``options`` key.
    """
    options_section = section.section("options", required=False)
    options = options_section.rest() if options_section else {}
    check_options(function, options, section.file, section.path("options"), skip=skip)
    return options, options_section


def check_limit(section: Section, key: str, limits: Limits, name: str, value: float, what: str) -> None:
    """``limits.check`` with the error naming the file and ``key``."""
    try:
        limits.check(name, value, what)
    except SpecError as exc:
        raise section.error(key, str(exc)) from None


def checked(section: Section, key: str | None, build: Callable[[], T]) -> T:
    """``build()``, re-raising errors with the file and ``key`` (``None``: the message names it)."""
    try:
        return build()
    except (SpecError, TypeError) as exc:
        if key is None:
            raise ScenarioError(f"{section.file}: {exc}") from None
        raise section.error(key, str(exc)) from None
