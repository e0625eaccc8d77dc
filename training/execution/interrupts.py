"""Ctrl-C and SIGTERM, the same for every command and backend: exit 130 within seconds, one line, nothing left running.

``aco-env`` runs every command inside :class:`Interrupts`. With the default :class:`StopPolicy`:

1. **The first SIGINT or SIGTERM** raises ``KeyboardInterrupt`` in the main thread. A backend's
   ``map`` stops at once: the units not finished are cancelled and leaving the backend stops its
   workers without waiting for them (the ``processes`` backend kills its worker processes, the
   ``ray`` backend cancels its tasks with force and shuts its local Ray down). A unit in progress
   is abandoned, never half-written. The command keeps what was finished where it can be resumed
   (``aco-env suite --add-to``, ``aco-env train --resume``) and says how, ``aco-env`` prints that
   as one line and exits 130.
2. **A second signal**, or a command still running :data:`GRACE_S` seconds after the first,
   stops the process at once: a watchdog thread that sees every signal as it arrives
   (``signal.set_wakeup_fd``, so even while the main thread is inside C code: a solver, Ray)
   kills every child process, removes the temporary files of writes in progress (earlier
   outputs are untouched: :mod:`digital_twin.atomic_files`), prints one line and exits 130.
   A second signal never waits for the first one's clean-up, so it cannot deadlock in it.
3. **Worker processes** of the ``processes`` backend start with SIGINT and SIGTERM blocked and
   then ignore both (:func:`in_worker`): a Ctrl-C on a terminal reaches the whole process group,
   and only the main process decides (no worker prints a traceback). On Linux a worker is killed
   by the kernel when the main process dies (``PR_SET_PDEATHSIG``), so none outlives its command,
   even one ended by ``kill -9``. Ray's own processes do the same (Ray blocks SIGINT in them and
   ties their fate to the driver).

Commands that save their work on the first signal (training: ``model.zip`` and a checkpoint)
use :data:`SAVE_FIRST`: the first signal asks the run to stop, the second interrupts it (it still
saves), the third stops at once; there is no grace period.

Outside the main thread (where Python cannot install handlers) :class:`Interrupts` does nothing.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any

from digital_twin.atomic_files import IN_PROGRESS

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a command (Ctrl-C; ``kill``, ``timeout``, systemd, a batch scheduler)."""
GRACE_S = 8.0
"""Seconds a command may take to stop after the first signal before it is stopped at once."""
EXIT_INTERRUPTED = 130
"""The exit code of an interrupted command (128 + SIGINT), however it stopped."""
_CLOSE = b"\x00"
"""Written to the watchdog's pipe to end it (no signal has number 0)."""


@dataclass(frozen=True)
class StopPolicy:
    """How a command answers repeated signals.

    Attributes:
        hard_after: The signal that stops the process at once (2: the second).
        grace_s: Seconds after the first signal before the process is stopped at once
            (``None``: no limit; only ``hard_after`` signals stop it).
    """

    hard_after: int = 2
    grace_s: float | None = GRACE_S


DEFAULT = StopPolicy()
"""Evaluation, the suite, benchmarks: the first signal stops the work, the second the process."""
SAVE_FIRST = StopPolicy(hard_after=3, grace_s=None)
"""Training: the first signal asks for a stop at the next step, the second interrupts, the third ends the process."""


class Interrupts:
    """The signal handling of one command run (a context manager; see the module docstring).

    Args:
        where: Names the command in the line printed on a hard stop (``"aco-env evaluate"``).
        policy: How repeated signals are answered.
        until_exit: The process exits right after the block: on leaving it, a stop signal ends
            the process at once with exit 130 (rather than the previous handlers coming back), so
            a signal that arrives while the interpreter shuts down can neither kill the process
            by the signal nor wait on a clean-up.
    """

    def __init__(self, where: str, policy: StopPolicy = DEFAULT, until_exit: bool = False) -> None:
        self.where = where
        self.policy = policy
        self.until_exit = until_exit
        self._active = False
        self._handled = 0
        self._previous: dict[int, Any] = {}
        self._previous_wakeup = -1
        self._pipe: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is not threading.main_thread():
            return self
        read, write = os.pipe()
        os.set_blocking(write, False)  # set_wakeup_fd needs it: a full pipe must never block a signal
        self._pipe = (read, write)
        self._previous_wakeup = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        self._previous = {signum: signal.signal(signum, self._handle) for signum in STOP_SIGNALS}
        self._thread = threading.Thread(target=self._watch, name="aco-env interrupts", daemon=True)
        self._thread.start()
        self._active = True
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        if not self._active:
            return
        self._active = False
        for signum, handler in self._previous.items():
            signal.signal(signum, _exit_at_once if self.until_exit else handler)
        signal.set_wakeup_fd(self._previous_wakeup)
        assert self._pipe is not None and self._thread is not None
        read, write = self._pipe
        self._closing.set()
        with contextlib.suppress(OSError):
            os.write(write, _CLOSE)
        self._thread.join()
        os.close(read)
        os.close(write)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        """The main thread's handler: the first signal raises; the watchdog answers the next (raising cuts clean-up)."""
        del signum, frame
        self._handled += 1
        if self._handled == 1:
            raise KeyboardInterrupt

    def _watch(self) -> None:
        """The watchdog: counts the signals as the C handler reports them; stops the process when the policy says."""
        assert self._pipe is not None
        read = self._pipe[0]
        received = 0
        deadline: float | None = None
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([read], [], [], timeout)
            if self._closing.is_set():
                return
            if not ready:
                stop_now(self.where, f"still running {self.policy.grace_s:g} s after the interrupt")
            received += sum(1 for byte in os.read(read, 256) if byte in STOP_SIGNALS)
            if received >= self.policy.hard_after:
                stop_now(self.where, "interrupted again")
            if received and deadline is None and self.policy.grace_s is not None:
                deadline = time.monotonic() + self.policy.grace_s


def _exit_at_once(signum: int, frame: FrameType | None) -> None:
    """After the command returned: a stop signal ends the process now, with the interrupted exit code."""
    del signum, frame
    os._exit(EXIT_INTERRUPTED)


def stop_now(where: str, reason: str) -> None:
    """End the process at once: kill every child process, remove unfinished temporary files, one line, exit 130.

    Callable from any thread; never returns.
    """
    try:
        killed = kill_children()
        for temporary in list(IN_PROGRESS):
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        children = f"; {killed} child process(es) killed" if killed else ""
        line = (
            f"{where}: {reason}: stopped at once{children}; files being written were dropped, "
            "earlier outputs are unchanged\n"
        )
        os.write(sys.stderr.fileno(), line.encode("utf-8", "replace"))
    finally:
        os._exit(EXIT_INTERRUPTED)


def kill_children() -> int:
    """Send SIGKILL to every descendant of this process (workers, Ray's processes); returns how many."""
    import psutil  # only when stopping at once

    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return 0
    killed = 0
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.kill()
            killed += 1
    return killed


@contextlib.contextmanager
def blocked_in_new_processes() -> Iterator[None]:
    """Block SIGINT and SIGTERM in this thread while the block starts processes (they inherit the mask).

    A worker started inside it cannot be interrupted while it imports, before :func:`in_worker`
    runs; a signal that arrives meanwhile is kept pending and delivered when the block ends.
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def in_worker(parent_pid: int) -> None:
    """A worker process's set-up: ignore SIGINT and SIGTERM, and die with the process ``parent_pid``.

    The ``processes`` backend's pool initializer. On Linux the kernel kills the worker when its
    parent dies (``PR_SET_PDEATHSIG``); a worker whose parent is already gone exits at once.
    """
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        _die_with_parent()
    if os.getppid() != parent_pid:
        os._exit(1)


def _die_with_parent() -> None:
    import ctypes

    set_parent_death_signal = 1  # PR_SET_PDEATHSIG, linux/prctl.h
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(set_parent_death_signal, signal.SIGKILL, 0, 0, 0)


__all__ = [
    "DEFAULT",
    "EXIT_INTERRUPTED",
    "GRACE_S",
    "SAVE_FIRST",
    "STOP_SIGNALS",
    "Interrupts",
    "StopPolicy",
    "blocked_in_new_processes",
    "in_worker",
    "kill_children",
    "stop_now",
]
