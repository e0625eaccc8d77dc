"""Fault injection for the tests: a real ``aco-env`` in its own session, signalled mid-work, and what is left after.

:func:`start` runs the command as a user would (``python -m training.cli.main``, its own process
group like a terminal job); :func:`wait_until_busy` waits until its workers have done real work
(CPU time, read from the process tree), so a signal lands while units are in progress;
:func:`interrupt` sends the signals and waits for the exit with a generous bound that only detects
a hang. Every process the command started is remembered, so a test can check none is left.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tests.hang_guard import HANG_GUARD_S
from tests.paths import ROOT

HANG_S = HANG_GUARD_S
"""Waiting longer than this for an interrupted command to end is a hang (the command takes seconds)."""
START_S = HANG_GUARD_S
"""A bound on waiting for the workers to start working (a loaded machine is slow; this only detects a hang)."""


@dataclass
class Probe:
    """A started command and every process seen in its tree."""

    process: subprocess.Popen[str]
    seen: dict[int, psutil.Process] = field(default_factory=dict)

    def tree(self) -> list[psutil.Process]:
        """The command's descendants now (remembered for :meth:`left_behind`)."""
        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.Error:
            return []
        self.seen.update({child.pid: child for child in children})
        return children

    def left_behind(self) -> list[str]:
        """The processes of the command's tree still alive (zombies excepted), as ``pid cmdline``."""
        alive = []
        for child in self.seen.values():
            try:
                if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{child.pid} {' '.join(child.cmdline())[:120]}")
            except psutil.Error:
                continue
        return alive

    def kill_all(self) -> None:
        """Clean up after a failed test: SIGKILL to the command and everything it started."""
        for child in [*self.seen.values(), psutil.Process(self.process.pid)]:
            try:
                child.kill()
            except psutil.Error:
                continue


def start(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> Probe:
    """``aco-env ARGS`` as a user starts it, in a new session (so Ctrl-C can go to its whole group)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "training.cli.main", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    return Probe(process)


def wait_until_busy(probe: Probe, workers: int, cpu_s: float = 3.0, marker: str | None = None) -> None:
    """Wait until ``workers`` processes of the tree (or the command itself when 0) have used ``cpu_s`` of CPU.

    With ``marker``, the process's command line must hold it (``"ray::"`` for Ray's workers).
    Fails (after killing the tree) when the command ends first or nothing works within :data:`START_S`.
    """
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if probe.process.poll() is not None:
            _, stderr = probe.process.communicate()
            raise AssertionError(f"the command ended before it was interrupted: {stderr[-2000:]}")
        candidates = probe.tree() if workers else [psutil.Process(probe.process.pid)]
        busy = 0
        for candidate in candidates:
            try:
                if marker is not None and marker not in " ".join(candidate.cmdline()):
                    continue
                times = candidate.cpu_times()
                busy += times.user + times.system >= cpu_s
            except psutil.Error:
                continue
        if busy >= max(workers, 1):
            return
        time.sleep(0.2)
    probe.kill_all()
    raise AssertionError("the workers did not start working")


@dataclass(frozen=True)
class Ending:
    """How an interrupted command ended."""

    code: int
    stdout: str
    stderr: str
    left: list[str]

    def lines(self) -> list[str]:
        """stderr's non-empty lines, less the notes a run prints as it starts (``backend: ...``, warnings, Ray's)."""
        return [
            line
            for line in self.stderr.splitlines()
            if line.strip() and not line.startswith(("backend: ", "warning: ")) and not _RAY_LOG.match(line)
        ]


_RAY_LOG = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(INFO|WARNING) ")
"""A line of Ray's own log as it starts (e.g. its note on token authentication)."""


def interrupt(probe: Probe, signum: int, times: int = 1, group: bool = False, gap_s: float = 0.05) -> Ending:
    """Send ``signum`` ``times`` times (to the process group when ``group``, as Ctrl-C does); wait for the end.

    Fails (after killing the tree) when the command is still running :data:`HANG_S` later.
    """
    probe.tree()
    for _ in range(times):
        probe.tree()
        if group:
            os.killpg(probe.process.pid, signum)
        else:
            os.kill(probe.process.pid, signum)
        time.sleep(gap_s)
    try:
        stdout, stderr = probe.process.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        probe.kill_all()
        raise AssertionError(f"still running {HANG_S:g} s after {times} signal(s): it hangs") from None
    deadline = time.monotonic() + 10.0  # killed processes are reaped by their parents; a bound, not a speed test
    while probe.left_behind() and time.monotonic() < deadline:
        time.sleep(0.1)
    return Ending(probe.process.returncode, stdout, stderr, probe.left_behind())


SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}
