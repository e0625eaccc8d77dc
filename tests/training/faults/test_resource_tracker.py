"""An interrupted command ends in one line: multiprocessing's resource tracker cleans up after it silently."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.paths import ROOT

ENDS_AT_ONCE = """
import multiprocessing, os, sys
if sys.argv[1] == "quiet":
    from training.execution.process_backend import quiet_resource_tracker
    quiet_resource_tracker()
queue = multiprocessing.get_context("spawn").Queue()  # semaphores the tracker watches
queue.put(1)
os._exit(130)  # as a second signal ends a command: nothing released
"""


@pytest.mark.subprocess
def test_quiet_resource_tracker__a_process_ended_at_once_leaves_no_warning() -> None:
    """Ended by os._exit holding a pool's semaphores: the tracker warns by default, not once quietened."""
    endings = {
        mode: subprocess.run(
            [sys.executable, "-c", ENDS_AT_ONCE, mode], cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD_S
        )
        for mode in ("default", "quiet")
    }
    assert all(ending.returncode == 130 for ending in endings.values())
    assert "resource_tracker" in endings["default"].stderr  # the test can fail: the warning exists
    assert endings["quiet"].stderr == ""
