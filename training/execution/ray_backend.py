"""The ``ray`` backend: units as Ray tasks, on a local Ray or on a cluster (``pip install 'aco-env[ray]'``).

Without an address, entering the backend starts a new local Ray (``ray.init(address="local")``:
new even when a Ray started by ``ray start`` runs on this machine or ``RAY_ADDRESS`` is set)
with one CPU per core this process may use, and leaving it shuts that Ray down. With an
address (``HOST:PORT`` of a head started with ``ray start --head``, ``ray://HOST:PORT`` for Ray
Client, or ``auto`` for the Ray started on this machine) it connects to that cluster, after
checking that something answers at ``HOST:PORT`` (``ray.init`` would wait without end for a
cluster that is not there), and leaving it disconnects and leaves the cluster running. A
process already connected to Ray (``ray.is_initialized()``) is used as it is, and stays
connected.

Each attempt of a unit is one task of one CPU with Ray's own retries off (``max_retries=0``):
retries are the backend's, the same under every backend (:mod:`training.execution.backend`). A task that
raises, or whose worker or node dies, is a failed attempt. Tasks carry the work function by
name (it is imported on the worker) and the unit by pickle, so every node needs the same
aco-env installed and nothing else: the scenario travels inside the unit.

Signals: ``ray.init`` installs Ray's own SIGTERM handler (it exits the driver from inside Ray,
which can abort the process with SIGABRT); :func:`connect` puts back the handlers that were
there before (``aco-env``'s, :mod:`training.execution.interrupts`), and waits for tasks in short
slices (:data:`WAIT_SLICE_S`) so that a signal is handled at once. :func:`connect` also keeps
Ray's C++ failure-signal handlers out of this process: ``ray.shutdown`` would otherwise reset
SIGTERM to its default action beneath Python (a second SIGTERM during or after the shutdown would
then kill the process by the signal, not end it with exit 130). On an interrupt, the running
tasks are cancelled with force (their workers are killed) and a local Ray is shut down.

Importing this module does not import Ray; entering the backend does (a missing Ray raises
``ModuleNotFoundError`` for ``ray``, which ``aco-env`` turns into the ``pip install`` line).
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from training.execution.backend import (
    RETRIES,
    Backend,
    BackendError,
    Outcome,
    attempt_in_worker,
    available_cores,
    describe_error,
)
from training.execution.interrupts import STOP_SIGNALS

CONNECT_TIMEOUT_S = 10.0
"""How long to wait for a TCP answer at a cluster's address before saying none is there."""
WAIT_SLICE_S = 0.25
"""``ray.wait`` waits at most this long at a time, so this process's signal handlers run in between."""


class RayBackend(Backend):
    """Units as Ray tasks (one CPU each), on a new local Ray or on the cluster at ``address``.

    Args:
        address: ``HOST:PORT`` of a Ray head, ``ray://HOST:PORT`` or ``auto``; ``None`` = a local Ray.
        retries: Extra attempts of a unit that failed.
    """

    name = "ray"

    def __init__(self, address: str | None = None, retries: int = RETRIES) -> None:
        super().__init__(retries)
        self.address = address
        self._owned = False  # this backend started the Ray it uses
        self._task: Any = None  # the remote attempt_in_worker, once started
        self._cpus = 0
        self._nodes = 0

    @property
    def workers(self) -> int:
        """The CPUs of the Ray this backend uses (tasks of one CPU each run at once)."""
        return self._cpus

    def describe(self) -> str:
        """``ray, <where>, N node(s), M CPU(s)``."""
        if self.address is not None:
            where = f"cluster at {self.address}"
        else:
            where = "a local Ray" if self._owned else "the Ray this process is connected to"
        return f"ray, {where}, {self._nodes} node(s), {self._cpus} CPU(s)"

    def _start(self) -> None:
        import ray  # the ray extra: only here

        if ray.is_initialized():
            if self.address is not None:
                raise BackendError(f"address {self.address}: this process is already connected to a Ray")
        else:
            connect(self.address)
            self._owned = True
        try:
            self._task = ray.remote(attempt_in_worker).options(num_cpus=1, max_retries=0, retry_exceptions=False)
            self._cpus = int(ray.cluster_resources().get("CPU", 0))
            self._nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
        except BaseException:  # `with` calls no __exit__ when __enter__ fails: stop what was started here
            self._stop()
            raise

    def _stop(self, abort: bool = False) -> None:
        import ray

        del abort  # the tasks were cancelled with force (_cancel); what is left is Ray's to stop
        self._task = None
        if self._owned:
            ray.shutdown()  # a local Ray stops; a cluster is only disconnected from
            self._owned = False

    def _submit(self, work: Callable[[Any], Any], unit: Any) -> Hashable:
        if self._task is None:
            raise RuntimeError("a RayBackend runs units only inside `with backend:`")
        return self._task.remote(work, unit)  # type: ignore[no-any-return]  # an ObjectRef

    def _wait(self, handles: Sequence[Hashable]) -> list[tuple[Hashable, Outcome[Any]]]:
        import ray

        ready: list[Any] = []
        while not ready:  # in slices: a signal handler runs between two waits
            ready, _ = ray.wait(list(handles), num_returns=1, timeout=WAIT_SLICE_S)
        finished: list[tuple[Hashable, Outcome[Any]]] = []
        for ref in ready:
            try:
                outcome = ray.get(ref)
            except ray.exceptions.RayError as exc:  # the task could not run: its worker or node died, ...
                cause = getattr(exc, "cause", None)  # a RayTaskError wraps what the worker raised
                outcome = Outcome(error=describe_error(cause if isinstance(cause, BaseException) else exc))
            finished.append((ref, outcome))
        return finished

    def _cancel(self, handles: Sequence[Hashable]) -> None:
        import ray

        for ref in handles:
            try:
                ray.cancel(ref, force=True)  # force: a running unit's worker is killed, not waited for
            except Exception as exc:  # already finished or lost: nothing left to cancel
                logging.getLogger(__name__).debug("ray.cancel: %s", describe_error(exc))


def connect(address: str | None, num_cpus: int | None = None) -> None:
    """``ray.init``: a new local Ray (no address; ``num_cpus``, default the cores) or the cluster at ``address``.

    The SIGINT and SIGTERM handlers in place before are put back after ``ray.init`` (which installs
    a SIGTERM handler of its own that exits from inside Ray and can abort the process), and stay in
    place through ``ray.shutdown`` (see the module docstring).

    Raises:
        BackendError: ``address`` is malformed or nothing answers there (checked before ``ray.init``,
            which would wait without end).
    """
    import ray
    from ray._private import ray_constants

    if address is not None:
        check_reachable(address)
    # Read by the driver's core worker as it starts (Ray's RAY_DISABLE_FAILURE_SIGNAL_HANDLER; its
    # workers keep their own): not installed, the handlers are not reset to SIG_DFL by ray.shutdown.
    ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
    handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    try:
        if address is None:
            ray.init(address="local", num_cpus=num_cpus or available_cores(), include_dashboard=False,
                     logging_level=logging.WARNING)
        else:
            ray.init(address=address, logging_level=logging.WARNING)
    finally:
        for signum, handler in handlers.items():  # Ray's SIGTERM handler would abort the process
            if handler is not None and threading.current_thread() is threading.main_thread():
                signal.signal(signum, handler)


def parse_address(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``HOST:PORT`` or ``ray://HOST:PORT``; ``None`` for anything else (``auto`` too).

    >>> parse_address("127.0.0.1:6379"), parse_address("ray://head:10001"), parse_address("head")
    (('127.0.0.1', 6379), ('head', 10001), None)
    """
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in host):
        return None
    return host, int(port)


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Check that something accepts TCP connections at a Ray address's ``HOST:PORT``.

    ``auto`` (Ray looks for a cluster started on this machine, and says so when there is none)
    is not checked.

    Raises:
        BackendError: The address is not ``HOST:PORT`` / ``ray://HOST:PORT``, or nothing answers there.
    """
    if address == "auto":
        return
    parsed = parse_address(address)
    if parsed is None:
        raise BackendError(f"address {address}: expected HOST:PORT (a Ray head's address), ray://HOST:PORT or auto")
    host, port = parsed
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise BackendError(
            f"address {address}: no Ray cluster answers there ({reason}); start one with "
            f"`ray start --head --port={port}`, or check the address"
        ) from None


__all__ = ["CONNECT_TIMEOUT_S", "WAIT_SLICE_S", "RayBackend", "check_reachable", "parse_address"]
