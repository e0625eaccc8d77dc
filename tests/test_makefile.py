"""The commands a newcomer types: `make test` runs every step and reports each failure; `aco-env --help` is instant.

`make test` runs here with its tools replaced by small scripts (a venv of stand-in executables
that log their call and exit as told), so the test checks the Makefile's own logic, in
milliseconds, whatever the real suite would take.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.paths import ROOT

pytestmark = pytest.mark.subprocess  # runs make and the CLI in child processes

_TOOL = """#!/bin/sh
echo "$(basename "$0") ${ACO_ENV_TEST_LAYER:-} $*" >> "{log}"
case "$(basename "$0") ${ACO_ENV_TEST_LAYER:-} $*" in
  *compile_core*) exit 0 ;;
  {failing}) exit 1 ;;
esac
exit 0
"""


def _make_test(tmp_path: Path, failing: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`make test` with stand-in tools; the calls whose ``tool layer args`` match the shell pattern ``failing`` fail."""
    venv, log = tmp_path / "venv", tmp_path / "calls.log"
    (venv / "bin").mkdir(parents=True)
    for tool in ("python", "lint-imports", "mypy"):
        path = venv / "bin" / tool
        path.write_text(_TOOL.replace("{log}", str(log)).replace("{failing}", failing))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    (venv / ".installed-stamp").touch()  # newer than pyproject.toml: no pip install
    result = subprocess.run(
        ["make", "-s", "test", f"VENV={venv}"], capture_output=True, text=True, cwd=ROOT, timeout=HANG_GUARD_S,
        env={**os.environ, "MAKEFLAGS": ""},
    )
    calls = [line for line in log.read_text().splitlines() if "compile_core" not in line]
    return result, calls


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test__runs_every_step_after_a_failure_and_names_each_failure(tmp_path: Path) -> None:
    """lint-imports and the tests fail: mypy still runs; the last line names both failures, and each report is shown."""
    result, calls = _make_test(tmp_path, "lint-imports*|python\\ \\ -m\\ pytest*")
    assert sorted(call.split()[0] for call in calls) == ["lint-imports", "mypy", "python"]
    assert [call for call in calls if call.startswith("python")] == ["python  -m pytest -q -n auto --dist loadgroup"]
    assert result.returncode != 0
    lines = result.stdout.strip().splitlines()
    assert "--- lint-imports" in lines and "--- mypy" in lines
    assert lines[-1].startswith("make test: FAILED: lint-imports tests")


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test__passes_when_every_step_passes(tmp_path: Path) -> None:
    """Every step passes: exit 0 and a last line that says so."""
    result, calls = _make_test(tmp_path, "no-such-call")
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(calls) == 3 and result.stdout.strip().splitlines()[-1].startswith("make test: every step passed")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["evalute"]])
def test_cli_front__imports_neither_the_twin_nor_numpy_nor_torch(argv: list[str]) -> None:
    """`aco-env --help`, `--version` and an unknown command load only the CLI: bounded work, well under a second."""
    code = (
        "import sys\n"
        "from training.cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('numpy', 'digital_twin', 'torch', 'pandas', 'scipy', 'yaml', 'gymnasium', 'agents', 'aco_env')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            timeout=HANG_GUARD_S)
    assert result.stderr.strip().splitlines()[-1] == "[]", result.stderr
