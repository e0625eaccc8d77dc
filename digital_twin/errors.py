"""Exceptions raised by the digital twin, and the one way their messages show a user value.

Every error the twin raises for bad input is a ``ValueError`` subclass whose message names
the thing at fault (a node id, a job id, a file and row), on one line, so that callers can show
it as is (:func:`one_line` flattens a library's multi-line message quoted in it).
A message that quotes a value read from a user's file goes through :func:`short_repr`, so a
huge value (a 1 GB string, a list expanded from YAML aliases) can never make the message
itself expensive to build or to print.
"""

from __future__ import annotations

import difflib
import math
import reprlib
from collections.abc import Iterable

MAX_SHOWN_CHARS = 200
"""Longest text :func:`short_repr` returns (values are cut, with ``...``, beyond it)."""

_REPR = reprlib.Repr()
# Bounded work whatever the value: at most 3 levels of nesting and 6 items per container.
_REPR.maxlevel = 3
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = MAX_SHOWN_CHARS
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 6


class SpecError(ValueError):
    """A fleet, job or twin specification is invalid (bad size, unknown type, ...)."""


class SettingError(SpecError):
    """One setting has a bad value: ``"<name> <problem>"``, e.g. ``"tick_s must be a finite number > 0, got 0"``.

    Attributes:
        name: The setting (``"tick_s"``, ``"cost_model"``).
        problem: What is wrong with its value (``"must be a finite number > 0, got 0"``): a
            scenario file's error puts it after the key's path in the file.
    """

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name} {problem}")
        self.name = name
        self.problem = problem

    def __reduce__(self) -> tuple[type[SettingError], tuple[str, str]]:
        """Pickle with both arguments (an exception otherwise pickles with its message alone)."""
        return (type(self), (self.name, self.problem))


class PastMismatchError(SpecError):
    """A spec does not continue a twin's episode: it differs before now (the message says where).

    Raised by :meth:`digital_twin.DigitalTwin.continued_in`.
    """


class InvalidPlacementError(ValueError):
    """A placement was asked for that the twin cannot perform (node full, down, wrong arch...).

    The twin's state is unchanged when this is raised.
    """


class TraceError(ValueError):
    """A trace or workload file cannot be read; the message names the file and row or column."""


def one_line(text: str, limit: int = 300) -> str:
    r"""``text`` (e.g. a library's multi-line exception message) on one line, cut to ``limit`` characters.

    >>> one_line("Invalid data\n  in file")
    'Invalid data in file'
    """
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


SUGGESTED_WORD_CHARS = 100
"""Longest word :func:`did_you_mean` compares (a longer one is no misspelling; bounded work)."""


def did_you_mean(word: object, choices: Iterable[object]) -> str:
    """``" (did you mean 'x'?)"`` naming the choices closest to ``word`` (:func:`closest`), or ``""``.

    >>> did_you_mean("fleet5-synthetc", ["fleet5-synthetic", "toy3"])
    " (did you mean 'fleet5-synthetic'?)"
    >>> did_you_mean("xyz", ["fleet5-synthetic"])
    ''
    """
    close = closest(word, choices)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def closest(word: object, choices: Iterable[object]) -> list[str]:
    """The (at most two) choices that look like a misspelling of ``word``: similar, or it with a part dropped.

    >>> closest("horizon", ["horizon_s", "seed"])
    ['horizon_s']
    >>> closest("weigths", ["weights", "seed"])
    ['weights']
    """
    text = str(word)
    if len(text) > SUGGESTED_WORD_CHARS:
        return []
    names = [str(choice) for choice in choices]
    close = difflib.get_close_matches(text, names, n=2, cutoff=0.7)
    if not close:  # a prefix or a suffix dropped: "horizon" for "horizon_s"
        close = [name for name in names if len(text) >= 3 and (name.startswith(text) or text.startswith(name))][:2]
    return close


def short_repr(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """``repr(value)`` for an error message, cut to at most ``limit`` characters.

    The work is bounded too: containers show at most 6 items and 3 levels (``reprlib``), so
    a value of any size (or a recursive one) is shown at once.

    >>> short_repr("long")
    "'long'"
    >>> short_repr(list(range(1000)))
    '[0, 1, 2, 3, 4, 5, ...]'
    >>> len(short_repr("x" * 10_000)) <= MAX_SHOWN_CHARS
    True
    """
    try:
        text = _REPR.repr(value)
    except ValueError:  # an int beyond Python's int-to-text digit limit
        return f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def positive_number(value: object, name: str) -> float:
    """``value`` as a float, if it is a finite int or float > 0 (a bool is not a number here).

    >>> positive_number(300, "tick_s")
    300.0
    >>> positive_number(0, "tick_s")
    Traceback (most recent call last):
    ...
    digital_twin.errors.SettingError: tick_s must be a finite number > 0, got 0

    Raises:
        SettingError: ``"<name> must be a finite number > 0, got <value>"``.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and value > 0):
        raise SettingError(name, f"must be a finite number > 0, got {short_repr(value)}")
    return float(value)
