"""The layer rules of docs/architecture.md ("Layout"), checked at import time and by import-linter."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # every test here starts a child process

ROOT = Path(__file__).resolve().parents[1]


def _modules_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT)
    return {name.split(".")[0] for name in out.stdout.split()}


def test_digital_twin__imports_none_of_our_packages_nor_rl_libraries() -> None:
    """Importing digital_twin loads no gymnasium, torch, SB3, nor our upper layers."""
    loaded = _modules_after_import("digital_twin")
    forbidden = {"gymnasium", "torch", "stable_baselines3", "sb3_contrib", "aco_env", "agents", "training", "scenarios"}
    assert not loaded & forbidden


def test_import_linter__contracts_hold() -> None:
    """import-linter's contracts in pyproject.toml (layers and forbidden imports) are kept."""
    lint_imports = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(lint_imports).exists():
        pytest.skip("import-linter is not installed")
    result = subprocess.run([lint_imports], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


GUARDED_TESTS = '''
import importlib.util
import pytest


def test_unmarked():
    import ray  # noqa: F401


@pytest.mark.ray
def test_marked():
    assert importlib.util.find_spec("ray") is not None
'''


def test_layers__a_run_of_every_layer_refuses_ray_in_a_fast_layer_test_only(tmp_path: Path) -> None:
    """In a run of every layer (`make test`) an unmarked test may not import Ray (LayerError); a `ray` test may."""
    if importlib.util.find_spec("ray") is None:  # found, not imported: this worker's fast-layer tests stay guarded
        pytest.skip("the ray extra is not installed")
    (tmp_path / "test_guarded.py").write_text(GUARDED_TESTS)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.layers", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-o", "addopts=", str(tmp_path / "test_guarded.py")],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "ACO_ENV_TEST_LAYER": ""},
    )  # fmt: skip
    assert "1 failed, 1 passed" in result.stdout, result.stdout[-3000:]
    assert "LayerError: the fast layer imports no ray: mark the test `ray`" in result.stdout
