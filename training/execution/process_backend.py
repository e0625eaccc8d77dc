"""The ``processes`` backend: units in a pool of spawned processes, one per core by default.

``concurrent.futures.ProcessPoolExecutor`` with the spawn start method: each worker imports what
it needs and gets every unit by pickle, as a Ray worker does (a fork would copy this process's
state: threads, generators, caches). A worker that dies (killed, out of memory) breaks the pool:
the units it and the others were running count a failed attempt, and the next submission starts
a new pool (:mod:`training.execution.backend` has the retry rules).

Leaving the backend cancels the units not started and waits for the running ones (a unit is
never cut short here; Ctrl-C on a terminal reaches the workers too, which stops them at once).
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from training.execution.backend import RETRIES, Backend, Outcome, attempt_in_worker, available_cores, describe_error

logger = logging.getLogger(__name__)


class ProcessBackend(Backend):
    """Units in a pool of spawned processes (``concurrent.futures.ProcessPoolExecutor``).

    Args:
        workers: Processes in the pool; ``None`` = :func:`available_cores`.
        retries: Extra attempts of a unit that raised.
    """

    name = "processes"

    def __init__(self, workers: int | None = None, retries: int = RETRIES) -> None:
        super().__init__(retries)
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self._workers = workers or available_cores()
        self._pool: ProcessPoolExecutor | None = None

    @property
    def workers(self) -> int:
        """The pool's size."""
        return self._workers

    def describe(self) -> str:
        """``processes, N worker processes``."""
        return f"processes, {self._workers} worker process(es)"

    def _start(self) -> None:
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self._workers, mp_context=multiprocessing.get_context("spawn"))

    def _stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _submit(self, work: Callable[[Any], Any], unit: Any) -> Hashable:
        if self._pool is None:
            raise RuntimeError("a ProcessBackend runs units only inside `with backend:`")
        try:
            return self._pool.submit(attempt_in_worker, work, unit)
        except BrokenProcessPool:  # a worker died earlier: the old pool takes no more work
            logger.warning("processes: a worker process died; starting a new pool")
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._new_pool()
            return self._pool.submit(attempt_in_worker, work, unit)

    def _wait(self, handles: Sequence[Hashable]) -> list[tuple[Hashable, Outcome[Any]]]:
        futures: list[Future[Outcome[Any]]] = list(handles)  # type: ignore[arg-type]  # what _submit returned
        done, _ = wait(futures, return_when=FIRST_COMPLETED)
        finished = []
        for future in done:
            try:
                outcome = future.result()
            except BrokenProcessPool as exc:  # the worker running it (or another one) died
                outcome = Outcome(error=f"worker process died ({describe_error(exc)})")
            finished.append((future, outcome))
        return finished

    def _cancel(self, handles: Sequence[Hashable]) -> None:
        for future in handles:
            future.cancel()  # type: ignore[attr-defined]  # a Future; running ones finish first


__all__ = ["ProcessBackend"]
