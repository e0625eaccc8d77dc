"""Scenario files through libyaml's C parser: the same documents, the same refusals and messages, and a file of
40,000 inline jobs read without PyYAML's pure-Python scanner."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import scenarios
from digital_twin.limits import Limits
from digital_twin.scenario import ScenarioError, load_scenario, yaml_file
from digital_twin.scenario.yaml_file import read_scenario_file

pytestmark = pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML without libyaml")

BROKEN = {
    "syntax": "a: [1, 2\nb: 3\n",
    "tab": "a:\n\tb: 1\n",
    "bad bytes": b"name: \xff\xfe x\n",
    "control character": "name: a\x07b\n",
    "timestamp": "when: !!timestamp x\n",
    "deep": "a: " + "[" * 150 + "]" * 150 + "\n",
    "alias bomb": "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdef", "bcdefg", strict=True)),
    "recursive": "a: &a [*a]\n",
    "undefined alias": "a: *nowhere\n",
    "two documents": "a: 1\n---\nb: 2\n",
}


def _without_libyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml_file, "_CParser", None)


@pytest.mark.parametrize("name", scenarios.names())
def test_read_scenario_file__the_c_parser_reads_every_bundled_scenario_as_the_python_one(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every bundled scenario: the same document and hash with libyaml and without."""
    path = scenarios.path_of(name)
    fast = read_scenario_file(path, Limits())
    _without_libyaml(monkeypatch)
    assert read_scenario_file(path, Limits()) == fast


@pytest.mark.parametrize("case", BROKEN)
def test_read_scenario_file__refusals_are_worded_the_same_with_and_without_libyaml(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Syntax errors, bad bytes, control characters, bad scalars, depth, alias bombs: one message either way."""
    path = tmp_path / "broken.yaml"
    text = BROKEN[case]
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    limits = Limits(max_yaml_nodes=100_000)
    with pytest.raises(ScenarioError) as fast:
        read_scenario_file(path, limits)
    _without_libyaml(monkeypatch)
    with pytest.raises(ScenarioError) as slow:
        read_scenario_file(path, limits)
    assert str(fast.value) == str(slow.value)
    assert str(fast.value).startswith(f"{path}: ")


@pytest.mark.heavy  # seconds of CPU: the rest layer (make test), not make test-fast
def test_load_scenario__40000_inline_jobs_are_read_without_the_python_scanner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 4 MB scenario of 40,000 inline jobs (under max_scenario_bytes) loads through libyaml alone."""
    head = scenarios.path_of("toy3").read_text().split("  jobs:\n")[0]
    jobs = "".join(
        f"    - {{job_id: j{i}, arrival_s: {i % 3000}, duration_s: {600 + i % 900}, workload: batch, cpu_cores: 1, "
        "mem_gb: 2}\n"
        for i in range(40_000)
    )
    path = tmp_path / "jobs40k.yaml"
    path.write_text(f"{head}  jobs:\n{jobs}")
    assert 3_500_000 < path.stat().st_size < Limits().max_scenario_bytes

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pure-Python loader was used")

    monkeypatch.setattr(yaml_file, "_BoundedLoader", refuse)
    scenario = load_scenario(path)
    assert len(scenario.jobs(None)) == 40_000  # type: ignore[arg-type]  # fixed jobs draw nothing
