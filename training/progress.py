"""Progress: a bar on a terminal, one summary line per stage anywhere else.

A log file (``make run > log``, CI) must stay readable: tqdm's carriage-return redraws would
fill it with thousands of partial lines. :class:`Progress` draws a tqdm bar only when stderr is
a terminal and otherwise logs a line each time another tenth of the stage is done
(``training: 20,480 of 204,800 steps (10 %) in 41.0 s``: a long stage, the RL steps of ``aco-env
run``, shows in a log that it advances) and one when the stage ends (``evaluate: 25 episodes in
12.3 s``), through the ``training`` logger. The lines are counted in work, never in time: the
same run logs the same lines.
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


LOGGED_PARTS = 10
"""Off a terminal, a stage logs a line each time another ``1 / LOGGED_PARTS`` of it is done."""


class Progress:
    """A stage of work with a known size: a tqdm bar on a terminal, progress lines and a summary otherwise.

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
        self._logged_parts = 0

    def update(self, n: int = 1, note: str | None = None) -> None:
        """Count ``n`` finished units; ``note`` (e.g. the current agent and seed) shows on the bar."""
        self.done += n
        if self._bar is not None:
            if note is not None:
                self._bar.set_postfix_str(note, refresh=False)
            self._bar.update(n)
        elif self.enabled and self.total > 0:
            parts = min(LOGGED_PARTS - 1, self.done * LOGGED_PARTS // self.total)  # the last part: the summary
            if parts > self._logged_parts:
                self._logged_parts = parts
                logger.info(
                    "%s: %s of %s %ss (%d %%) in %.1f s", self.desc, f"{self.done:,}", f"{self.total:,}", self.unit,
                    100 * self.done // self.total, time.perf_counter() - self._started,
                )

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
