"""Execution backends for batch work: independent units run anywhere, results come back in order.

A *unit* is one call ``work(unit)`` of a module-level function on a picklable value; an
evaluation's unit is one agent's episode on one seed (:func:`training.evaluation.evaluator.play_unit`).
:meth:`Backend.map` runs a batch of units and returns their results in the order the units were
given, whatever order they finish in, so every backend returns the same results as long as each
unit depends on nothing but itself (its own env, agent and seed).

| name | where the units run | at once |
|---|---|---|
| ``serial`` | this process, one after another | 1 |
| ``processes`` | a ``ProcessPoolExecutor`` of spawned processes | the cores this process may use |
| ``ray`` | Ray tasks, on a local Ray or on a cluster (``address``) | the Ray's CPUs |

Failures: a unit that raises is run again, up to :data:`RETRIES` more times (a worker process
that dies counts as a failure of the units it was running). A unit that fails every attempt ends
the batch: the units not yet finished are cancelled and :class:`UnitsFailedError` names the failed
units, their attempts and last error; no result of the batch is returned.

Logging: warnings a unit logs in a worker process travel back with its result and are logged
here, through the same loggers, so they read the same under every backend.

Backends are context managers: entering starts the workers (the pool; Ray, unless this process
is already connected to one), leaving stops what entering started (a cluster given by address
keeps running). One backend runs any number of batches. Leaving on an error or an interrupt
(``KeyboardInterrupt``: Ctrl-C or SIGTERM, :mod:`training.execution.interrupts`) stops the workers
at once, abandoning the units they were running; leaving normally waits for nothing (every unit
of every batch has finished by then). The pool is
:class:`training.execution.process_backend.ProcessBackend`; Ray is imported only by
:class:`training.execution.ray_backend.RayBackend`, when it is entered;
:func:`training.execution.registry.make_backend` builds each by name.
"""

from __future__ import annotations

import logging
import os
import traceback
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, Generic, Self, TypeVar

logger = logging.getLogger(__name__)

RETRIES = 2
"""Extra attempts of a unit that raised (so a unit runs at most ``1 + RETRIES`` times)."""

U = TypeVar("U")
R = TypeVar("R")


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask; ``os.cpu_count()`` where there is none)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass(frozen=True)
class UnitFailure:
    """A unit that failed every attempt.

    Attributes:
        unit: The unit's label (``str(unit)``, e.g. ``"aco seed 3"``).
        attempts: How many times it ran (``1 + retries``).
        error: The last attempt's error, ``"Type: message"`` on one line.
        traceback: The last attempt's traceback, as the worker formatted it.
    """

    unit: str
    attempts: int
    error: str
    traceback: str = field(default="", repr=False, compare=False)


class UnitsFailedError(RuntimeError):
    """A batch ended because units failed every attempt; nothing of the batch was returned.

    Attributes:
        failures: The failed units, in unit order.
        cancelled: Units of the batch that were not finished when it ended.
    """

    def __init__(self, failures: Sequence[UnitFailure], cancelled: int) -> None:
        self.failures = tuple(failures)
        self.cancelled = cancelled
        listed = "; ".join(f"{f.unit} ({f.error})" for f in self.failures)
        attempts = self.failures[0].attempts if self.failures else 0
        super().__init__(
            f"{len(self.failures)} unit(s) failed {attempts} attempt(s) each: {listed}"
            + (f"; {cancelled} other unit(s) cancelled" if cancelled else "")
        )

    def for_user(self, what: str = "episode") -> str:
        """One line for a command's user: each failed unit, its attempts and error; nothing was written."""
        failed = "; ".join(f"{f.unit} failed {f.attempts} times ({f.error})" for f in self.failures)
        cancelled = f"; {self.cancelled} other {what}(s) cancelled" if self.cancelled else ""
        return f"{failed}{cancelled}; nothing was written (--debug shows the tracebacks)"


class BackendError(RuntimeError):
    """A backend cannot start: e.g. no Ray cluster answers at the address given."""


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """What one attempt of a unit gives back from wherever it ran.

    Attributes:
        value: ``work(unit)``; ``None`` when the attempt raised.
        error: ``"Type: message"`` of the exception it raised, else ``None``.
        traceback: The formatted traceback of that exception (``""`` without one).
        records: Log records of level WARNING and above the unit emitted in a worker process
            (empty when it ran in this process: its records were logged as they came).
    """

    value: R | None = None
    error: str | None = None
    traceback: str = ""
    records: tuple[logging.LogRecord, ...] = ()


def attempt(work: Callable[[U], R], unit: U) -> Outcome[R]:
    """One attempt of ``work(unit)`` in this process: its value, or the exception it raised as text."""
    try:
        return Outcome(value=work(unit))
    except Exception as exc:  # every failure of a unit is reported, retried, never raised here
        return Outcome(error=describe_error(exc), traceback=traceback.format_exc())


def attempt_in_worker(work: Callable[[U], R], unit: U) -> Outcome[R]:
    """:func:`attempt` in a worker process, with the warnings it logs kept for the caller to log.

    The worker's root handlers are set aside while the unit runs (a worker runs one unit at a
    time), so a record is logged once, by the caller, never also on the worker's stderr.
    """
    capture = _Capture()
    root = logging.getLogger()
    handlers = root.handlers[:]
    root.handlers[:] = [capture]
    try:
        outcome = attempt(work, unit)
    finally:
        root.handlers[:] = handlers
    return Outcome(outcome.value, outcome.error, outcome.traceback, tuple(capture.records))


def describe_error(exc: BaseException) -> str:
    """``"Type: message"`` on one line (the message cut to 300 characters)."""
    message = " ".join(str(exc).split())
    message = message if len(message) <= 300 else message[:297] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class _Capture(logging.Handler):
    """Keeps WARNING-and-above records, made picklable (message formatted, arguments dropped)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        self.records.append(record)


class Backend(ABC):
    """Runs batches of units (template method: :meth:`map` keeps the books, subclasses run attempts).

    Subclasses implement :meth:`_submit` (start one attempt, return its handle) and
    :meth:`_wait` (block until attempts finish, return their outcomes), and may override
    :meth:`_start`, :meth:`_stop` and :meth:`_cancel`.

    Args:
        retries: Extra attempts of a unit that raised (>= 0).

    Attributes:
        name: The backend's key in :data:`training.execution.registry.BACKENDS`.
    """

    name: ClassVar[str]

    def __init__(self, retries: int = RETRIES) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.retries = retries

    @property
    @abstractmethod
    def workers(self) -> int:
        """How many units run at once (once started)."""

    def describe(self) -> str:
        """One line for the user: the backend and where its units run."""
        return f"{self.name}, {self.workers} worker(s)"

    def map(
        self,
        work: Callable[[U], R],
        units: Sequence[U],
        on_done: Callable[[U], None] | None = None,
    ) -> list[R]:
        """``[work(unit) for unit in units]``, run on this backend; results in unit order.

        Args:
            work: A module-level function (workers import it by name); ``work(unit)`` must
                depend on ``unit`` only.
            units: Picklable values; ``str(unit)`` names a unit in errors.
            on_done: Called in this process with each unit as it succeeds (progress).

        Raises:
            UnitsFailedError: A unit failed ``1 + retries`` times (the rest were cancelled).
        """
        results: dict[int, R] = {}
        errors: dict[int, int] = {}
        pending: dict[Hashable, int] = {self._submit(work, unit): index for index, unit in enumerate(units)}
        failures: list[tuple[int, UnitFailure]] = []
        try:
            while pending and not failures:
                for handle, outcome in self._wait(list(pending)):
                    index = pending.pop(handle)
                    for record in outcome.records:
                        logging.getLogger(record.name).handle(record)
                    if outcome.error is None:
                        results[index] = outcome.value  # type: ignore[assignment]  # None only with an error
                        if on_done is not None:
                            on_done(units[index])
                        continue
                    errors[index] = errors.get(index, 0) + 1
                    logger.debug("%s: attempt %d failed:\n%s", units[index], errors[index], outcome.traceback)
                    if errors[index] <= self.retries:
                        logger.warning("%s: %s; retrying", units[index], outcome.error)
                        pending[self._submit(work, units[index])] = index
                    else:
                        failure = UnitFailure(str(units[index]), errors[index], outcome.error, outcome.traceback)
                        failures.append((index, failure))
        finally:
            if pending:  # a unit failed for good, or this process was interrupted
                self._cancel(list(pending))
        if failures:
            in_order = [failure for _, failure in sorted(failures, key=lambda pair: pair[0])]
            raise UnitsFailedError(in_order, cancelled=len(pending))
        return [results[index] for index in range(len(units))]

    def __enter__(self) -> Self:
        self._start()
        logger.info("backend: %s", self.describe())
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop(abort=kind is not None)

    # Optional hooks: B027 flags empty non-abstract methods, but doing nothing is their valid default.
    def _start(self) -> None:  # noqa: B027
        """Start the workers (nothing by default)."""

    def _stop(self, abort: bool = False) -> None:  # noqa: B027
        """Stop what :meth:`_start` started (nothing by default); ``abort``: at once, without waiting for units."""

    def _cancel(self, handles: Sequence[Hashable]) -> None:  # noqa: B027
        """Cancel attempts that have not finished (nothing by default)."""

    @abstractmethod
    def _submit(self, work: Callable[[U], R], unit: U) -> Hashable:
        """Start one attempt of ``work(unit)``; returns a handle :meth:`_wait` will return with its outcome."""

    @abstractmethod
    def _wait(self, handles: Sequence[Hashable]) -> list[tuple[Hashable, Outcome[Any]]]:
        """Block until at least one of ``handles`` has finished; return the finished ones with their outcomes."""


class SerialBackend(Backend):
    """Every unit in this process, one after another, in submission order (nothing to start)."""

    name = "serial"

    def __init__(self, retries: int = RETRIES) -> None:
        super().__init__(retries)
        self._queue: deque[tuple[int, Callable[[Any], Any], Any]] = deque()
        self._submitted = 0

    @property
    def workers(self) -> int:
        """One: this process."""
        return 1

    def describe(self) -> str:
        """``serial, in this process``."""
        return "serial, in this process"

    def _submit(self, work: Callable[[U], R], unit: U) -> Hashable:
        self._submitted += 1
        self._queue.append((self._submitted, work, unit))
        return self._submitted

    def _wait(self, handles: Sequence[Hashable]) -> list[tuple[Hashable, Outcome[Any]]]:
        handle, work, unit = self._queue.popleft()  # handles are queued in submission order
        return [(handle, attempt(work, unit))]

    def _cancel(self, handles: Sequence[Hashable]) -> None:
        self._queue.clear()


__all__ = [
    "RETRIES",
    "Backend",
    "BackendError",
    "Outcome",
    "SerialBackend",
    "UnitFailure",
    "UnitsFailedError",
    "attempt",
    "attempt_in_worker",
    "available_cores",
]
