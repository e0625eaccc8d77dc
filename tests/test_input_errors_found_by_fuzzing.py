"""Bad inputs that tests/test_fuzz_inputs.py found answered with a traceback-like or unclear message.

Each test pins one finding at the reader or check where the bad input is first seen: the error
is a :class:`~digital_twin.errors.SpecError` (or ``TraceError``) on one line that names the file
and, where it applies, the line, row or key.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from digital_twin.scenario import ScenarioError, load_scenario

ROOT = Path(__file__).resolve().parents[1]


def _scenario_error(path: Path) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert "\n" not in message, message
    assert message.startswith(f"{path}: "), message
    return message


def test_validate__a_binary_file_is_named_with_its_problem(tmp_path: Path) -> None:
    """`aco-env validate` on random bytes: INVALID naming the file and the bytes, not "unexpected ReaderError"."""
    path = tmp_path / "binary.yaml"
    path.write_bytes(bytes(range(128, 256)) * 8)
    result = subprocess.run(
        [sys.executable, "-m", "training.cli", "validate", str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert result.returncode == 1, result
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        f"INVALID {path}: not UTF-8 text: byte 0x80 at line 1 (byte offset 0) cannot be decoded "
        "(invalid start byte); a scenario file is YAML text: save it as UTF-8"
    ]


@pytest.mark.parametrize(("data", "fragments"), [
    (b"name: caf\xe9\n", ["not UTF-8 text", "byte 0xe9 at line 1"]),  # Latin-1
    ("name: x\n".encode("utf-32"), ["control character U+0000 at line 1", "UTF-32"]),
    (b"name: x\nseed: \x00\n", ["control character U+0000 at line 2"]),
    (b"\xff\xfen\x00a\x00m", ["not UTF-16-LE text", "truncated data"]),  # UTF-16, cut mid-character
])
def test_scenario_file__bytes_that_are_not_yaml_text_name_the_encoding_and_line(
    tmp_path: Path, data: bytes, fragments: list[str]
) -> None:
    """Latin-1, UTF-32, a NUL byte, truncated UTF-16: one line naming the file, the byte or character and the line."""
    path = tmp_path / "s.yaml"
    path.write_bytes(data)
    message = _scenario_error(path)
    for fragment in fragments:
        assert fragment in message


def test_scenario_file__utf16_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """UTF-16 with a BOM is YAML text (PyYAML reads it): the keys are checked as usual."""
    path = tmp_path / "s.yaml"
    path.write_bytes("schema_version: 2\n".encode("utf-16"))
    assert "horizon_s: is required" in _scenario_error(path)


def test_scenario_file__a_syntax_error_is_one_line_with_line_and_column(tmp_path: Path) -> None:
    """PyYAML's multi-line message (with a snippet and carets) becomes one line: where, what, and the context."""
    path = tmp_path / "s.yaml"
    path.write_text("a: [1, 2\nb: 3\n")
    assert _scenario_error(path) == (
        f"{path}: not valid YAML: line 2, column 2: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence at line 1, column 4)"
    )


@pytest.mark.parametrize(("text", "shown"), [
    ("seed: !!timestamp x\n", "cannot read 'x' as timestamp"),  # PyYAML: AttributeError
    ("seed: 2001-13-45\n", "cannot read '2001-13-45' as timestamp"),  # implicit timestamp: ValueError
    ("seed: !!bool maybe\n", "cannot read 'maybe' as bool"),  # KeyError
    ("seed: !!int ''\n", "cannot read '' as int"),  # IndexError
    ("seed: !!int abc\n", "cannot read 'abc' as int"),  # ValueError
    ("seed: !!float .\n", "cannot read '.' as float"),
    ("seed: " + "9" * 5000 + "\n", "as int"),  # beyond Python's int-from-text digit limit
])
def test_scenario_file__a_scalar_yaml_cannot_convert_is_located(tmp_path: Path, text: str, shown: str) -> None:
    """A tagged or implicitly typed scalar PyYAML's constructor fails on: its line and column, not a crash."""
    path = tmp_path / "s.yaml"
    path.write_text("schema_version: 2\n" + text)
    message = _scenario_error(path)
    assert "not valid YAML: line 2, column 7: " in message
    assert shown in message
