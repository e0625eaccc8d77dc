"""Progress: a bar on a terminal, one summary line per stage anywhere else.

A log file (``make run > log``, CI) must stay readable: tqdm's carriage-return redraws would
fill it with thousands of partial lines. :class:`Progress` draws a tqdm bar only when stderr is
a terminal and otherwise logs a single line when the stage ends (``evaluate: 25 episodes in
12.3 s``) through the ``training`` logger.
"""

from __future__ import annotations

import logging
import sys
import time
from types import TracebackType

from tqdm import tqdm

logger = logging.getLogger("training")


def on_terminal() -> bool:
    """Whether stderr is an interactive terminal (progress bars are drawn only then)."""
    return sys.stderr.isatty()


class Progress:
    """A stage of work with a known size: a tqdm bar on a terminal, a summary line otherwise.

    Use as a context manager (or call :meth:`close`); the summary is logged at INFO level.

    Args:
        total: Units of work in the stage.
        desc: The stage's name, e.g. ``"evaluate"``.
        unit: The unit's name, e.g. ``"episode"`` (pluralised with an ``s``).
        enabled: False shows nothing at all (neither bar nor summary).
    """

    def __init__(self, total: int, desc: str, unit: str, enabled: bool = True) -> None:
        self.total = total
        self.desc = desc
        self.unit = unit
        self.enabled = enabled
        self.done = 0
        self._started = time.perf_counter()
        self._bar = tqdm(total=total, desc=desc, unit=unit) if enabled and on_terminal() else None
        self._closed = False

    def update(self, n: int = 1, note: str | None = None) -> None:
        """Count ``n`` finished units; ``note`` (e.g. the current agent and seed) shows on the bar."""
        self.done += n
        if self._bar is not None:
            if note is not None:
                self._bar.set_postfix_str(note, refresh=False)
            self._bar.update(n)

    def close(self, summary: bool = True) -> None:
        """End the stage: close the bar, or log the summary line (unless ``summary`` is False)."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif self.enabled and summary:
            units = self.unit if self.done == 1 else self.unit + "s"
            logger.info("%s: %s %s in %.1f s", self.desc, f"{self.done:,}", units, time.perf_counter() - self._started)

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close(summary=kind is None)  # a stage cut short by an error or Ctrl-C has no summary
