"""Outputs under faults: a full disk mid-`evaluate` keeps the earlier results.json and names the file; two runs
on one --out are refused, not both reported as a success."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from digital_twin import atomic_files
from tests.training.cli.test_cli_errors import assert_one_line_error, cli
from tests.training.faults.probes import interrupt, start, wait_until_busy
from training.cli.main import main
from training.outputs import LOCK_FILE, folder_lock

QUICK = ("evaluate", "--agents", "first-fit,cheapest", "--backend", "serial", "--no-progress")


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.name != LOCK_FILE}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (root only; skipped where mounting is not allowed), unmounted after the test."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` to the last ``leave`` bytes."""
    filler = disk / "filler"
    with filler.open("wb") as file:
        try:
            while True:
                file.write(b"\0" * 65536)
                file.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    os.truncate(filler, filler.stat().st_size - leave)


@pytest.mark.subprocess
def test_evaluate__a_full_disk_keeps_the_earlier_results_and_names_the_file(small_disk: Path) -> None:
    """A real full disk (tmpfs) mid-write: exit 1, one line naming the file and the cause; the earlier files intact."""
    out = small_disk / "out"
    assert cli(*QUICK, "--episodes", "2", "--out", str(out)).returncode == 0
    earlier = _files(out)
    _fill(small_disk, leave=16 * 1024)
    result = cli(*QUICK, "--episodes", "30", "--out", str(out))
    assert_one_line_error(result, 1, f"cannot write {out}/", "the disk is full (No space left on device)",
                          "the file there before is unchanged")  # fmt: skip
    assert _files(out) == earlier  # results.json, leaderboard.md and the plots as they were; no temporary file


def test_evaluate__a_write_failing_on_results_json_keeps_it_and_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same in process, the disk's answer patched in (ENOSPC at results.json's flush): the message names it."""
    out = tmp_path / "out"
    assert main([*QUICK, "--episodes", "1", "--out", str(out)]) == 0
    earlier = _files(out)
    real = os.fsync

    def full_disk(descriptor: int) -> None:
        if Path(os.readlink(f"/proc/self/fd/{descriptor}")).name.startswith(".results.json."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(descriptor)

    monkeypatch.setattr(atomic_files.os, "fsync", full_disk)
    capsys.readouterr()
    assert main([*QUICK, "--episodes", "3", "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"aco-env evaluate: error: cannot write {out / 'results.json'}: the disk is full (No space left on device); "
        "the file there before is unchanged"
    )
    assert _files(out) == earlier


@pytest.mark.subprocess
@pytest.mark.parametrize("command", ["evaluate", "suite"])
def test_out__a_second_run_on_a_locked_folder_is_refused_before_any_work(command: str, tmp_path: Path) -> None:
    """While a run holds --out's lock, another run into it exits 1 at once with one line; the folder is untouched."""
    out = tmp_path / "out"
    tiny = Path(__file__).parents[1] / "suite" / "tiny_suite.yaml"
    args = QUICK if command == "evaluate" else ("suite", "--suite", str(tiny), "--agents", "first-fit",
                                                 "--cache", str(tmp_path / "cache"), "--backend", "serial")  # fmt: skip
    with folder_lock(out, "--out"):
        result = cli(*args, "--out", str(out))
    assert_one_line_error(result, 1, f"--out {out}: another aco-env run is writing there", "give another --out")
    assert [path.name for path in out.iterdir()] == [LOCK_FILE]


@pytest.mark.subprocess
@pytest.mark.heavy
def test_evaluate__two_runs_on_one_out_the_second_is_refused_while_the_first_works(tmp_path: Path) -> None:
    """Two real `aco-env evaluate` on one --out at once: the second is refused (it used to report success too)."""
    out = tmp_path / "out"
    first = start("evaluate", "--agents", "oracle", "--episodes", "2", "--backend", "serial", "--no-progress",
                  "--out", str(out))  # fmt: skip
    wait_until_busy(first, workers=0, cpu_s=3.0)  # past its start-up (1.5 s): the lock is held, an episode runs
    second = cli(*QUICK, "--episodes", "1", "--out", str(out))
    assert_one_line_error(second, 1, "another aco-env run is writing there")
    assert interrupt(first, signal.SIGTERM).code == 130
    assert not (out / "results.json").exists()
    assert cli(*QUICK, "--episodes", "1", "--out", str(out)).returncode == 0  # the lock went with the first run
    assert json.loads((out / "results.json").read_text())["episodes"] == 1
