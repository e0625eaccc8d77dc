"""The README's gym loop runs as printed (so the newcomer's first example stays true)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_gym_loop__runs_and_return_equals_minus_objective() -> None:
    """The ```python block under "A gym loop" runs and prints a return equal to minus the objective."""
    text = (ROOT / "README.md").read_text()
    code = re.search(r"## A gym loop\n\n```python\n(.*?)```", text, re.S).group(1)
    assert len(code.strip().splitlines()) <= 20
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    match = re.search(r"return (-?[\d.]+) = -objective ([\d.]+) USD", out)
    assert match and float(match.group(1)) == -float(match.group(2))
