"""Stopping a training run on Ctrl-C or SIGTERM without losing its work.

While SB3 trains, :class:`StopRequest` turns the first SIGINT or SIGTERM into a request that
:class:`training.learning.callbacks.StopOnRequest` honours at the next environment step (the networks,
the optimizer and the envs are then in a consistent state); a second signal interrupts at once.
The run then saves ``model.zip`` and a checkpoint, closes its TensorBoard writer and raises
:class:`TrainingInterrupted` (a ``KeyboardInterrupt``, so ``aco-env`` exits 130). Outside SB3's
loop (behaviour cloning, evaluation) the ``KeyboardInterrupt`` itself stops the run, which then
saves the same way.

SubprocVecEnv workers share the terminal's process group, so Ctrl-C reaches them too: they call
:func:`ignore_stop_signals` and leave stopping to the main process, which closes them.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TrainingInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C or SIGTERM, after saving its work.

    Args:
        run_dir: The run directory.
        num_timesteps: Environment steps trained when it stopped.
        saved: The files written on the way out (``model.zip``, the checkpoint).
    """

    def __init__(self, run_dir: Path, num_timesteps: int, saved: list[Path]) -> None:
        super().__init__(run_dir, num_timesteps, saved)
        self.run_dir = run_dir
        self.num_timesteps = num_timesteps
        self.saved = saved

    def __str__(self) -> str:
        saved = " and ".join(str(path) for path in self.saved) or "nothing"
        return (
            f"stopped at {self.num_timesteps:,} steps; saved {saved}; "
            f"continue with: aco-env train --resume {self.run_dir}"
        )


class StopRequest:
    """A context manager during which SIGINT and SIGTERM request a stop instead of raising.

    The first signal sets :attr:`requested`; a second one raises ``KeyboardInterrupt`` (to stop
    now, e.g. when a step hangs). The previous handlers come back on exit. Outside the main
    thread, where Python cannot install handlers, it does nothing.
    """

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.signal(signum, self._handle) for signum in STOP_SIGNALS}
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        del signum, frame
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True


def ignore_stop_signals() -> None:
    """In an env worker process: ignore SIGINT and SIGTERM, so only the main process decides.

    A worker still ends when the main process closes the envs or dies (its pipe closes).
    """
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
