"""Ctrl-C and SIGTERM, once and twice, on every backend: exit 130, one line, no traceback, no process left.

The commands run as users run them (their own process group) and are signalled while their workers
are busy with oracle episodes (minutes of work each), so an answer within the hang bound shows that
a unit in progress is abandoned. The waits bound work (the workers' CPU time) and detect hangs; no
test asserts a duration. The in-process tests check the mechanism's parts: the first signal raises,
a second (or a stop that takes too long) ends the process at once, workers ignore Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.paths import ROOT
from tests.training.faults.probes import interrupt, start, wait_until_busy

ORACLE_RUN = ("evaluate", "--agents", "oracle", "--episodes", "4", "--no-progress")


def _assert_interrupted(ending, command: str = "evaluate") -> str:  # type: ignore[no-untyped-def]
    """Exit 130, one line on stderr naming the command, no traceback, nothing left running; returns the line."""
    assert ending.code == 130, (ending.code, ending.stderr[-3000:])
    assert "Traceback" not in ending.stderr + ending.stdout, ending.stderr[-3000:]
    assert len(ending.lines()) == 1, ending.stderr[-3000:]
    assert ending.lines()[0].startswith(f"aco-env {command}: interrupted"), ending.lines()
    assert ending.left == [], ending.left
    return ending.lines()[0]


@pytest.mark.subprocess
@pytest.mark.heavy
def test_evaluate_processes__sigterm_twice_mid_episode_exits_130_and_leaves_no_process(tmp_path: Path) -> None:
    """Two SIGTERMs while the pool's workers solve oracle episodes: exit 130, no worker left (it used to hang)."""
    probe = start(*ORACLE_RUN, "--backend", "processes", "--out", str(tmp_path / "out"))
    wait_until_busy(probe, workers=2)
    line = _assert_interrupted(interrupt(probe, signal.SIGTERM, times=2))
    assert "stopped at once" in line or "nothing was written" in line
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.subprocess
@pytest.mark.heavy
def test_evaluate_processes__ctrl_c_to_the_group_exits_130_in_one_line_without_worker_tracebacks(
    tmp_path: Path,
) -> None:
    """Ctrl-C to the whole process group (a terminal's) once: the running units are abandoned, not waited for."""
    probe = start(*ORACLE_RUN, "--backend", "processes", "--out", str(tmp_path / "out"))
    wait_until_busy(probe, workers=2)
    line = _assert_interrupted(interrupt(probe, signal.SIGINT, group=True))
    assert "nothing was written" in line and "run the command again" in line


@pytest.mark.subprocess
@pytest.mark.heavy
def test_evaluate_serial__sigterm_once_mid_episode_exits_130(tmp_path: Path) -> None:
    """SIGTERM once while this process itself plays an oracle episode."""
    probe = start(*ORACLE_RUN, "--backend", "serial", "--out", str(tmp_path / "out"))
    wait_until_busy(probe, workers=0, cpu_s=4.0)  # its start-up takes 1.5 s, an oracle episode about 6
    _assert_interrupted(interrupt(probe, signal.SIGTERM))


@pytest.mark.ray
@pytest.mark.subprocess
@pytest.mark.heavy
@pytest.mark.parametrize("times", [2, pytest.param(1, marks=pytest.mark.slow)])
def test_evaluate_ray__sigterm_mid_episode_exits_130_without_ray_aborting(times: int, tmp_path: Path) -> None:
    """SIGTERM to `--backend ray` (once, twice): exit 130 and one line, not Ray's SIGABRT; no Ray process left."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    probe = start(*ORACLE_RUN, "--backend", "ray", "--out", str(tmp_path / "out"))
    wait_until_busy(probe, workers=1, marker="ray::")
    _assert_interrupted(interrupt(probe, signal.SIGTERM, times=times))


@pytest.mark.subprocess
@pytest.mark.heavy
@pytest.mark.slow
def test_suite__sigterm_twice_mid_task_exits_130_and_leaves_no_process(tmp_path: Path) -> None:
    """`aco-env suite` (the processes backend): two SIGTERMs while its workers play; exit 130, nothing left."""
    tiny = Path(__file__).parents[1] / "suite" / "tiny_suite.yaml"
    probe = start("suite", "--suite", str(tiny), "--agents", "oracle", "--tasks", "default", "--cache",
                  str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--no-progress")  # fmt: skip
    wait_until_busy(probe, workers=1)
    _assert_interrupted(interrupt(probe, signal.SIGTERM, times=2), "suite")


@pytest.mark.subprocess
@pytest.mark.heavy
def test_suite__an_interrupt_after_a_task_writes_it_and_gives_the_command_for_the_rest(tmp_path: Path) -> None:
    """SIGTERM once after the first task finished: suite.json holds it, and the line says how to play the rest."""
    tiny = Path(__file__).parents[1] / "suite" / "tiny_suite.yaml"
    out = tmp_path / "out"
    probe = start("suite", "--suite", str(tiny), "--agents", "oracle", "--cache", str(tmp_path / "cache"),
                  "--out", str(out), "--no-progress", "--backend", "processes")  # fmt: skip
    _wait_for_line(probe.process, "planted5: ")
    wait_until_busy(probe, workers=1, cpu_s=6.0)
    line = _assert_interrupted(interrupt(probe, signal.SIGTERM), "suite")
    import json

    document = json.loads((out / "suite.json").read_text())
    assert list(document["tasks"]) == ["planted5"] and list(document["tasks"]["planted5"]["agents"]) == ["oracle"]
    assert f"--tasks default --add-to {out} --out {out}" in line


def _wait_for_line(process: subprocess.Popen[str], prefix: str) -> None:
    """Read the command's stdout until a line starts with ``prefix`` (a task's report); fail if it ends first."""
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(prefix):
            return
    raise AssertionError(f"the command ended before printing {prefix!r}: {process.communicate()[1][-2000:]}")


# ------------------------------------------------------------------------------------ the mechanism's parts
GUARDED = """
import os, signal, subprocess, sys, time
from training.execution.interrupts import Interrupts, StopPolicy
child = subprocess.Popen(["sleep", "600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
with Interrupts("probe", StopPolicy(grace_s={grace})):
    try:
        print(child.pid, flush=True)  # the handlers are in place, and the KeyboardInterrupt is caught
        while True:
            time.sleep(0.05)
    except KeyboardInterrupt:
        print("first", flush=True)
        while True:  # a clean-up that never ends
            time.sleep(0.05)
"""


def _guarded(grace: float | None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(GUARDED.format(grace=grace))], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip


@pytest.mark.subprocess
def test_interrupts__the_first_signal_raises_and_a_second_ends_a_stuck_clean_up_at_once() -> None:
    """The first SIGTERM raises KeyboardInterrupt; the second ends the process (130, one line), killing its children."""
    process = _guarded(grace=None)
    assert process.stdout is not None
    child = int(process.stdout.readline())
    process.send_signal(signal.SIGTERM)
    assert process.stdout.readline().strip() == "first"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=HANG_GUARD_S)
    assert process.returncode == 130
    assert stderr.strip() == (
        "probe: interrupted again: stopped at once; 1 child process(es) killed; files being written were dropped, "
        "earlier outputs are unchanged"
    )
    assert not _still_alive(child)


@pytest.mark.subprocess
def test_interrupts__a_stop_still_running_after_the_grace_period_is_ended() -> None:
    """One signal, and a clean-up that never ends: the watchdog ends the process after the grace period (130)."""
    process = _guarded(grace=0.5)
    assert process.stdout is not None
    child = int(process.stdout.readline())
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=HANG_GUARD_S)
    assert process.returncode == 130
    assert stderr.startswith("probe: still running 0.5 s after the interrupt: stopped at once")
    assert not _still_alive(child)


def _still_alive(pid: int) -> bool:
    """Whether ``pid`` still runs, waiting a bounded while for one just sent SIGKILL (it dies when next scheduled)."""
    deadline = time.monotonic() + 10.0  # a bound on a busy machine, not a speed test
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _running(pid)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_interrupts__the_previous_handlers_come_back_and_the_first_signal_raises() -> None:
    """In process: inside, SIGINT raises KeyboardInterrupt once; outside, the handlers are those before."""
    from training.execution.interrupts import Interrupts

    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    with Interrupts("probe"), pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGTERM)
    assert {signum: signal.getsignal(signum) for signum in before} == before


def _handlers_in_worker(unit: int) -> tuple[str, str]:
    return str(signal.getsignal(signal.SIGINT)), str(signal.getsignal(signal.SIGTERM))


@pytest.mark.subprocess
def test_process_backend__workers_ignore_ctrl_c_and_sigterm() -> None:
    """A pool worker ignores SIGINT and SIGTERM (the main process decides, and kills it on an interrupt)."""
    from training.execution.process_backend import ProcessBackend

    with ProcessBackend(workers=1) as backend:
        [handlers] = backend.map(_handlers_in_worker, [0])
    assert handlers == (str(signal.SIG_IGN), str(signal.SIG_IGN))


AFTER_RAY_SHUTDOWN = """
import signal
import ray
from training.execution.ray_backend import connect
handled = []
signal.signal(signal.SIGTERM, lambda signum, frame: handled.append(signum))
connect(None, num_cpus=1)
ray.shutdown()
signal.raise_signal(signal.SIGTERM)  # killed by it if the handler was reset beneath Python
print("handled" if handled == [signal.SIGTERM] else f"not handled: {handled}", flush=True)
"""


@pytest.mark.ray
@pytest.mark.subprocess
def test_ray_backend__sigterm_still_reaches_the_python_handler_after_a_local_ray_shut_down() -> None:
    """Ray's shutdown leaves the driver's SIGTERM handler in place (its C++ handlers would reset it to the default)."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    process = subprocess.run([sys.executable, "-c", AFTER_RAY_SHUTDOWN], cwd=ROOT, capture_output=True, text=True,
                             timeout=HANG_GUARD_S, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert (process.returncode, process.stdout.strip()) == (0, "handled"), process.stderr[-2000:]
