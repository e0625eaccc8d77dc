"""The ``processes`` backend: units in a pool of spawned processes, one per core by default.

``concurrent.futures.ProcessPoolExecutor`` with the spawn start method: each worker imports what
it needs and gets every unit by pickle, as a Ray worker does (a fork would copy this process's
state: threads, generators, caches). A worker that dies (killed, out of memory) breaks the pool:
the units it and the others were running count a failed attempt, and the next submission starts
a new pool (:mod:`training.execution.backend` has the retry rules).

Workers start with SIGINT and SIGTERM blocked, then ignore both and die with this process
(:func:`training.execution.interrupts.in_worker`): a Ctrl-C on a terminal, which reaches the whole
process group, is this process's to handle. Leaving the backend normally shuts the pool down
(every unit has finished); leaving on an error or an interrupt kills the worker processes at once
(a unit in progress is abandoned, nothing of it is returned) and waits only for them to be gone.

The pool's queues hold semaphores that multiprocessing's resource tracker (a helper process)
unlinks if this process ends without releasing them, as it does when a second signal ends it at
once; the tracker then warns on stderr. It still cleans up, but without the warning
(:func:`quiet_resource_tracker`): an interrupted command prints one line.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from training.execution.backend import RETRIES, Backend, Outcome, attempt_in_worker, available_cores, describe_error
from training.execution.interrupts import blocked_in_new_processes, in_worker

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
        quiet_resource_tracker()
        return ProcessPoolExecutor(
            self._workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=in_worker,
            initargs=(os.getpid(),),
        )

    def _stop(self, abort: bool = False) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if abort:
            kill_workers(pool)
        else:
            pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self, work: Callable[[Any], Any], unit: Any) -> Hashable:
        if self._pool is None:
            raise RuntimeError("a ProcessBackend runs units only inside `with backend:`")
        with blocked_in_new_processes():  # the pool starts its workers in submit
            try:
                return self._pool.submit(attempt_in_worker, work, unit)
            except BrokenProcessPool:  # a worker died earlier: the old pool takes no more work
                logger.warning("processes: a worker process died; starting a new pool")
                kill_workers(self._pool)
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
            future.cancel()  # type: ignore[attr-defined]  # a Future; running ones stop with the pool (_stop)


WORKER_EXIT_TIMEOUT_S = 10.0
"""A bound on waiting for a killed worker to be gone (the kernel ends it at once; never reached in practice)."""


RESOURCE_TRACKER_QUIET = "ignore::UserWarning:multiprocessing.resource_tracker"
"""A ``-W`` filter: the resource tracker's warnings about semaphores it cleans up after this process."""


def quiet_resource_tracker() -> None:
    """Have multiprocessing's resource tracker start with its leak warnings off.

    The tracker inherits ``sys.warnoptions`` when it starts (with this process's first
    semaphore), so the filter goes there before the pool is made; a tracker already running keeps
    its options. Other warnings, here and in the workers, are untouched.
    """
    if RESOURCE_TRACKER_QUIET not in sys.warnoptions:
        sys.warnoptions.append(RESOURCE_TRACKER_QUIET)


def kill_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's worker processes (SIGKILL) and shut it down without waiting for its units.

    Python 3.14 has ``pool.kill_workers()``; before it, the pool's ``_processes`` (its workers by
    pid, there since Python 3.2) are the only handle on them. Waiting for the pool's manager thread
    (``_executor_manager_thread``, since 3.9) lets it close the pool's queues, so that their
    semaphores are released now, not reported as leaked by multiprocessing's resource tracker.
    """
    workers = list(dict(getattr(pool, "_processes", None) or {}).values())  # a copy: the pool's thread edits it
    for worker in workers:
        with contextlib.suppress(OSError, ValueError):  # already gone
            worker.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            worker.join(WORKER_EXIT_TIMEOUT_S)
    manager = getattr(pool, "_executor_manager_thread", None)  # it sees the workers gone and closes the queues
    if manager is not None and manager is not threading.current_thread():
        manager.join(WORKER_EXIT_TIMEOUT_S)


__all__ = ["ProcessBackend", "kill_workers"]
