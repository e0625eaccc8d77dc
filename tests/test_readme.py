"""The README's gym loop runs as printed (so the newcomer's first example stays true)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.subprocess  # every test here starts a child process


def test_readme_gym_loop__runs_and_return_equals_minus_objective() -> None:
    """The ```python block under "A gym loop" runs and prints a return equal to minus the objective."""
    text = (ROOT / "README.md").read_text()
    code = re.search(r"## A gym loop\n\n```python\n(.*?)```", text, re.S).group(1)
    assert len(code.strip().splitlines()) <= 20
    assert 'metrics = info["episode_metrics"]' in code  # the env's own final-step metrics, no fallback
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    match = re.search(r"return (-?[\d.]+) = -objective ([\d.]+) USD", out)
    assert match and float(match.group(1)) == -float(match.group(2))


def test_readme_sb3_script__runs_with_one_torch_thread(tmp_path: Path) -> None:
    """The README's own-SB3-script block runs as printed (a shorter budget) and saves a loadable model."""
    text = (ROOT / "README.md").read_text()
    code = re.search(r"Your own SB3 script:\n\n```python\n(.*?)```", text, re.S).group(1)
    assert "torch.set_num_threads(1)" in code
    short = code.replace("model.learn(20_000)", "model.learn(64)")
    assert short != code
    subprocess.run([sys.executable, "-c", short], capture_output=True, text=True, check=True, cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (tmp_path / "my-model.zip").exists()
