"""Run ``aco-env`` in a forked child with a memory cap and a CPU-time cap: one fuzz example per child.

:func:`run_cli` forks; the child caps its address space (``RLIMIT_AS``: what it has at the fork
plus ``memory_bytes``) and its CPU time (``RLIMIT_CPU``: ``cpu_s`` seconds, the work it may do,
whatever the machine's load), redirects stdout and stderr to buffers, shows every Python
warning once, calls :func:`training.cli.main.main` with ``argv`` and sends back the exit code and
both outputs through a pipe. A child that spins past its CPU time is ended by the kernel
(``SIGXCPU``: ``over_cpu``); one that waits forever without working is killed after
``timeout_s`` of wall time, a hang guard (:mod:`tests.hang_guard`), not a speed check.

Why a fork per example and not the examples in-process or one child for all of them:

* the parent (the pytest worker, where hypothesis runs) never holds a fuzzed input's memory and
  cannot be hung by one: a blow-up fails one example with a ``MemoryError`` in the child, a
  runaway loop is ended at its CPU-time cap, and in both cases hypothesis shrinks and reports that example as
  it does any failing one (a single child for all examples would lose which example it was);
* a fork starts with every module the parent imported (the CLI, pandas, the twin), so an
  example costs a few milliseconds more than an in-process call, not an interpreter start (the
  child freezes the objects it inherits, so its collections never walk, and copy, the worker's heap);
* ``main`` configures the root logger and installs a SIGTERM handler: in the child, that
  cannot leak into the pytest worker's later tests.

Linux only (``os.fork``, ``RLIMIT_AS``); the fuzz tests skip elsewhere.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import resource
import select
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

CHILD_FAILED = -1
"""The exit code reported when ``main`` itself raised (it should turn every error into a code)."""


@dataclass(frozen=True)
class Outcome:
    """What one run answered.

    Attributes:
        code: The exit code (``None`` when the child was killed or died without answering).
        stdout: What it printed on stdout.
        stderr: What it printed on stderr (including a traceback ``main`` let through).
        seconds: Wall time of the run (reported, never checked).
        timed_out: Killed at the hang guard (``timeout_s`` of wall time, no answer).
        died: The child ended without answering (a signal, e.g. a crash in C code).
        over_cpu: The child used up its CPU time (``cpu_s``) and was ended by ``SIGXCPU``.
    """

    code: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    died: bool = False
    over_cpu: bool = False


def warm_up() -> None:
    """Import what the commands import lazily, once in the parent, so each child starts with it."""
    from training.cli import main
    from training.evaluation import evaluator, leaderboard, results_writer  # noqa: F401

    main.build_parser()
    import pyarrow.parquet  # noqa: F401  (the generic reader's Parquet files)


def run_cli(
    argv: Sequence[str], *, timeout_s: float, memory_bytes: int, env: dict[str, str], cpu_s: int | None = None
) -> Outcome:
    """``aco-env argv`` in a forked child (see the module docstring); ``env`` is set in the child only."""
    read_end, write_end = os.pipe()
    start = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the child only runs main
        pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(list(argv), memory_bytes, cpu_s, env, write_end)
    os.close(write_end)
    try:
        payload, timed_out = _read_until(read_end, start + timeout_s)
    finally:
        os.close(read_end)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    seconds = time.monotonic() - start
    over_cpu = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU
    if timed_out or not payload:
        return Outcome(None, "", "", seconds, timed_out=timed_out, died=not timed_out, over_cpu=over_cpu)
    answer = json.loads(payload)
    return Outcome(answer["code"], answer["stdout"], answer["stderr"], seconds)


def _child(argv: list[str], memory_bytes: int, cpu_s: int | None, env: dict[str, str], write_end: int) -> None:
    try:
        gc.freeze()
        os.environ.update(env)
        limit = _address_space() + memory_bytes
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
        if cpu_s is not None:  # a forked child's CPU time starts at zero
            _, hard = resource.getrlimit(resource.RLIMIT_CPU)
            soft = cpu_s if hard == resource.RLIM_INFINITY else min(cpu_s, hard)
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.resetwarnings()
            warnings.simplefilter("default")
            try:
                from training.cli.main import main

                code = main(argv)
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else CHILD_FAILED
            except BaseException:
                traceback.print_exc(file=err)
                code = CHILD_FAILED
        payload = json.dumps({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}).encode()
        view = memoryview(payload)
        while view:
            view = view[os.write(write_end, view) :]
    finally:
        sys.stdout.flush()
        os._exit(0)


def _address_space() -> int:
    """This process's virtual memory size in bytes (``VmSize`` of ``/proc/self/status``)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _read_until(fd: int, deadline: float) -> tuple[bytes, bool]:
    """Everything written to ``fd`` until it closes, or ``(what came, True)`` at the deadline."""
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
