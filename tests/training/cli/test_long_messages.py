"""Error lines stay readable whatever a user's path or value holds: a 5,000-character trace path (a fuzz finding:
a 5,230-character line) keeps its start and its end, and the line what is wrong."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import scenarios
from training.cli.main import main


def test_validate__a_5000_character_trace_path_gives_a_short_line_that_names_the_file_and_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """INVALID and one line under 1,200 characters: the path's start and its file name, then the reason."""
    long = tmp_path / ("d" * 5000) / "trace.csv"
    text = scenarios.path_of("fleet5-alibaba2018").read_text()
    scenario = tmp_path / "long.yaml"
    scenario.write_text(re.sub(r"path: .*\n", f"path: {long}\n", text, count=1))
    assert main(["validate", str(scenario)]) == 1
    [line] = capsys.readouterr().out.splitlines()
    assert len(line) <= 1200, len(line)
    assert line.startswith(f"INVALID {scenario}: {tmp_path}/ddd")
    reason = "not a regular file (cannot stat: File name too long); give the path of a trace file"
    assert line.endswith(f"/trace.csv: {reason}")
