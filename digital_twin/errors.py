"""Exceptions raised by the digital twin.

Every error the twin raises for bad input is a ``ValueError`` subclass whose message names
the thing at fault (a node id, a job id, a file and row), so that callers can show it as is.
"""

from __future__ import annotations


class SpecError(ValueError):
    """A fleet, job or twin specification is invalid (bad size, unknown type, ...)."""


class InvalidPlacementError(ValueError):
    """A placement was asked for that the twin cannot perform (node full, down, wrong arch...).

    The twin's state is unchanged when this is raised.
    """


class TraceError(ValueError):
    """A trace or workload file cannot be read; the message names the file and row or column."""
