"""Fuzzing ``aco-env validate`` and ``aco-env evaluate`` with broken scenario, trace and job files.

Valid inputs (tests/fuzz_seeds.py: the bundled scenarios, small scenarios for every telemetry
reader and job source, small valid files in every format) are broken by the strategies of
tests/fuzz_mutations.py: wrong types, missing and extra keys, other encodings, binary bytes,
huge, non-finite and negative numbers, truncation, empty files, deep nesting and alias bombs.
Whatever the input, the command must answer as a user can act on:

* with exit code 0 (a mutation may leave the input valid), 1 (invalid) or, for ``validate``,
  3 (valid, data missing);
* with one verdict line (``validate``: ``OK``/``INVALID``/``MISSING DATA``, only notes after
  ``OK``) or one ``aco-env evaluate: error:`` line, naming the file at fault (the scenario, or
  the broken data file); a refusal that quotes a value written into a table cell, or of a
  broken Parquet value, names its line, row, column or the header;
* never a traceback, an "unexpected ..." message (what ``main`` says of an exception no
  reader turned into a data error), a Python warning, a hang or a memory blow-up.

Bounds: each example runs in a forked child (tests/isolated_cli.py explains why a fork per
example) with at most :data:`MEMORY_BYTES` more address space than the parent and
:data:`CPU_S` seconds of CPU time (work, whatever the machine's load); a runaway loop or a
blow-up fails that one example. ``evaluate`` (first-fit,
one episode, serial) runs on the small scenarios only, whose ``limits:`` (never mutated there)
keep any episode small. The number of examples is fixed per test.

Determinism: ``derandomize=True`` and no example database, so every run (CI's too) tries the
same examples; a failure prints the example's drawn values and a ``@reproduce_failure`` blob.
Shrinking is off: an example runs a whole command, so shrinking one failure could take minutes,
and the drawn values (a scenario, a key path, an edit) already read as the reproduction.
Set ``ACO_ENV_FUZZ_REPORT=FILE`` to append every example and its answer to ``FILE`` (JSON
lines), to read the messages the readers give, and ``ACO_ENV_FUZZ_SCALE=N`` to try N times as
many examples.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz_mutations import mutate_bytes, mutate_document, mutate_frame, mutate_table
from tests.fuzz_seeds import SMALL_SCENARIOS, DataSeed, World, build_world
from tests.hang_guard import HANG_GUARD_S
from tests.isolated_cli import Outcome, run_cli, warm_up

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks with RLIMIT_AS (Linux)"),
    pytest.mark.subprocess,  # each example runs in a forked child
]

CPU_S = 30
"""CPU seconds one example may use (most use 10-300 ms): past it, a loop that does not end."""
MEMORY_BYTES = 1536 * 1024 * 1024
"""Address space one example may add to the parent's (validating a million jobs, the default limit, takes 320 MB)."""
REPORT_ENV = "ACO_ENV_FUZZ_REPORT"
SCALE_ENV = "ACO_ENV_FUZZ_SCALE"
"""Multiplies every test's number of examples (default 1; e.g. 20 for a long local run)."""
FUZZ = settings(
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_VERDICTS = {"OK": 0, "INVALID": 1, "MISSING DATA": 3}
_LOCATION = re.compile(r"line \d+|row \d+|:\d+(:|$| )|column '|field '|lines|header")
_CELL_EDIT = re.compile(r"^line \d+ field \d+ = (.+)$")
_STDERR_NOTES = ("warning: ", "note: ", "backend: ")
"""What a command may print on stderr besides its error line (log notes, the backend it runs on)."""
_PYTHON_WARNING = re.compile(r"^\S+:\d+: \w*Warning: ", re.MULTILINE)


def _examples(n: int) -> int:
    return n * int(os.environ.get(SCALE_ENV, "1"))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    warm_up()
    return build_world(tmp_path_factory.mktemp("fuzz-world"))


def _run(world: World, command: str, scenario: Path) -> Outcome:
    argv = ["validate", str(scenario)]
    if command == "evaluate":
        out = world.root / "out"
        shutil.rmtree(out, ignore_errors=True)
        argv = ["evaluate", "--scenario", str(scenario), "--agents", "first-fit", "--episodes", "1",
                "--backend", "serial", "--no-progress", "--out", str(out)]
    env = {"ACO_ENV_TRACES": str(world.traces), "ACO_ENV_DEBUG": "0"}
    return run_cli(argv, timeout_s=HANG_GUARD_S, cpu_s=CPU_S, memory_bytes=MEMORY_BYTES, env=env)


def _answer(outcome: Outcome, command: str) -> tuple[int, str]:
    """The exit code and the one line that answers, after every rule of the module docstring."""
    shown = f"code {outcome.code}\nstdout:\n{outcome.stdout}\nstderr:\n{outcome.stderr}"
    assert not outcome.over_cpu, f"ran past {CPU_S} CPU seconds: a loop that does not end"
    assert not outcome.timed_out, f"hung: no answer after {HANG_GUARD_S:g} s"
    assert not outcome.died, "the child died without answering"
    assert outcome.code in ((0, 1, 3) if command == "validate" else (0, 1)), shown
    everything = outcome.stdout + outcome.stderr
    assert "Traceback" not in everything, shown
    assert ": error: unexpected " not in everything and "(a bug: " not in everything, shown
    assert not _PYTHON_WARNING.search(outcome.stderr), shown
    noise = [line for line in outcome.stderr.splitlines() if line and not line.startswith(_STDERR_NOTES)]
    if command == "validate":
        assert not noise, shown
        verdicts = [line for line in outcome.stdout.splitlines() if not line.startswith("  ")]
        assert len(verdicts) == 1, shown
        assert outcome.code == 0 or outcome.stdout.count("\n") == 1, shown  # notes follow OK only
        kind = next((k for k in _VERDICTS if verdicts[0].startswith(f"{k} ")), None)
        assert kind is not None and _VERDICTS[kind] == outcome.code, shown
        return outcome.code, verdicts[0]
    if outcome.code == 0:
        assert not noise and "wrote " in outcome.stdout, shown
        return 0, "wrote results"
    assert len(noise) == 1 and noise[0].startswith("aco-env evaluate: error: "), shown
    return 1, noise[0]


def _check(
    world: World, command: str, scenario: Path, names: list[str], edits: Any, located: bool = False
) -> None:
    """Run ``command`` on ``scenario``; a refusal must name one of ``names`` (and a location when ``located``)."""
    outcome = _run(world, command, scenario)
    report = os.environ.get(REPORT_ENV)
    if report:
        with open(report, "a", encoding="utf-8") as handle:
            record = {"command": command, "edits": repr(edits)[:500], "code": outcome.code, "s": outcome.seconds,
                      "stdout": outcome.stdout[-2000:], "stderr": outcome.stderr[-2000:]}
            handle.write(json.dumps(record) + "\n")
    code, line = _answer(outcome, command)
    if code == 1:
        assert any(name in line for name in names), (f"does not name {names}", line)
        assert len(line) <= 1200, ("too long to read", line)
        quoted = [cell for cell in _injected_cells(edits) if cell in line]
        if located or quoted:
            assert _LOCATION.search(line), ("names no line, row or column", line)


def _injected_cells(edits: Any) -> list[str]:
    """The distinctive tokens a table edit wrote into a cell (a message quoting one must say where it is)."""
    cells = []
    for edit in edits if isinstance(edits, list) else []:
        found = _CELL_EDIT.match(edit) if isinstance(edit, str) else None
        if found:
            cell = ast.literal_eval(found.group(1)).strip()
            if len(cell) >= 3 and not cell.replace(".", "").replace("-", "").isdigit():
                cells.append(cell)
    return cells


def _write_scenario(world: World, data: bytes) -> Path:
    path = world.root / "scenarios" / "fuzzed.yaml"
    path.write_bytes(data)
    return path


@settings(FUZZ, max_examples=_examples(150))
@given(data=st.data())
def test_validate__mutated_scenario_documents_get_a_clear_verdict(world: World, data: st.DataObject) -> None:
    """Keys deleted, added, given wrong types or absurd numbers, in every scenario: one clear verdict."""
    name = data.draw(st.sampled_from(sorted(world.scenarios)), label="scenario")
    text, edits = data.draw(mutate_document(world.document(name)), label="mutation")
    path = _write_scenario(world, text)
    _check(world, "validate", path, [str(path)], edits)


@settings(FUZZ, max_examples=_examples(100))
@given(data=st.data())
def test_validate__mutated_scenario_bytes_get_a_clear_verdict(world: World, data: st.DataObject) -> None:
    """Scenario files truncated, re-encoded, binary, or hostile YAML (alias bombs, deep nesting): one verdict."""
    name = data.draw(st.sampled_from(sorted(world.scenarios)), label="scenario")
    mutated, what = data.draw(mutate_bytes(world.scenarios[name].read_bytes()), label="mutation")
    path = _write_scenario(world, mutated)
    _check(world, "validate", path, [str(path)], what)


def _mutated_data(world: World, seed: DataSeed, data: st.DataObject) -> tuple[Path, Any, bool]:
    """A broken copy of the seed's file (or folder) in a fresh folder: it, the edits, whether one cell broke."""
    folder = world.root / "mutated"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    target = folder / seed.file.name
    if seed.file.is_dir():
        shutil.copytree(seed.file, target)
        return target, _mutate_folder(target, data), False
    if seed.file.suffix == ".parquet":
        import pandas as pd

        mutated, what = data.draw(mutate_frame(pd.read_parquet(seed.file)), label="mutation")
        target.write_bytes(mutated)
        return target, what, what.startswith("row ")
    delimiter = None if seed.file.suffix == ".swf" else ","
    mutated, edits = data.draw(mutate_table(seed.file.read_bytes(), delimiter), label="mutation")
    target.write_bytes(mutated)
    return target, edits, False


def _mutate_folder(folder: Path, data: st.DataObject) -> Any:
    """One edit of a PlanetLab day: a VM file's lines, or the folder's files."""
    files = sorted(folder.iterdir())
    kind = data.draw(st.sampled_from(["file", "file", "no-files", "subfolder", "readme", "empty-file", "short"]),
                     label="folder edit")
    victim = data.draw(st.sampled_from(files), label="VM file")
    if kind == "file":
        mutated, edits = data.draw(mutate_table(victim.read_bytes(), None), label="mutation")
        victim.write_bytes(mutated)
        return (victim.name, edits)
    if kind == "no-files":
        for file in files:
            file.unlink()
    elif kind == "subfolder":
        (folder / "20110307").mkdir()
    elif kind == "readme":
        (folder / "README").write_text("PlanetLab traces\n")
    elif kind == "empty-file":
        victim.write_bytes(b"")
    else:
        victim.write_text("\n".join(victim.read_text().splitlines()[:100]) + "\n")
    return (kind, victim.name)


def _pointing_at(world: World, seed: DataSeed, target: Path) -> Path:
    """The seed's scenario with its data key set to ``target``, written as the fuzzed scenario."""
    import yaml

    document = world.document(seed.scenario)
    section = document
    for part in seed.key[:-1]:
        section = section[part]
    section[seed.key[-1]] = str(target)
    return _write_scenario(world, yaml.safe_dump(document, sort_keys=False).encode())


@settings(FUZZ, max_examples=_examples(200))
@given(data=st.data())
def test_validate__mutated_trace_and_job_files_get_a_clear_verdict(world: World, data: st.DataObject) -> None:
    """Every reader's file broken cell by cell, row by row and byte by byte: one verdict naming the file."""
    seed = data.draw(st.sampled_from(world.data_seeds), label="data file")
    target, edits, located = _mutated_data(world, seed, data)
    path = _pointing_at(world, seed, target)
    _check(world, "validate", path, [str(target)], edits, located)


@settings(FUZZ, max_examples=_examples(40))
@given(data=st.data())
def test_evaluate__mutated_small_scenarios_and_files_answer_in_one_line(world: World, data: st.DataObject) -> None:
    """`aco-env evaluate` (first-fit, one episode) on broken small scenarios and files: results or one error line."""
    name = data.draw(st.sampled_from(sorted(SMALL_SCENARIOS)), label="scenario")
    seeds = [seed for seed in world.data_seeds if seed.scenario == name]
    if seeds and data.draw(st.booleans(), label="break a data file"):
        seed = data.draw(st.sampled_from(seeds), label="data file")
        target, edits, _ = _mutated_data(world, seed, data)
        _check(world, "evaluate", _pointing_at(world, seed, target), [str(target)], edits)
        return
    text, edits = data.draw(mutate_document(world.document(name), protected=("limits",)), label="mutation")
    path = _write_scenario(world, text)
    _check(world, "evaluate", path, [str(path)], edits)


def _spin_forever(argv: list[str]) -> int:
    while True:
        pass


def _sleep_forever(argv: list[str]) -> int:
    import time

    while True:
        time.sleep(1)


def _allocate_too_much(argv: list[str]) -> int:
    blocks = [bytearray(256 * 1024 * 1024) for _ in range(16)]  # 4 GiB
    return len(blocks)


@pytest.mark.parametrize(
    ("main", "expected"),
    [(_spin_forever, "over cpu"), (_sleep_forever, "hung"), (_allocate_too_much, "MemoryError")],
)
def test_isolated_cli__a_hang_or_a_blow_up_fails_one_example(
    monkeypatch: pytest.MonkeyPatch, main: Any, expected: str
) -> None:
    """The bounds the fuzz tests rely on: a loop ends at its CPU cap, a sleeper at the guard, an allocation fails."""
    import training.cli.main

    monkeypatch.setattr(training.cli.main, "main", main)
    # The spinner gets 1 CPU second; the sleeper, which uses none, a 1 s guard (it never answers,
    # so the guard's length changes nothing but how long the test waits). The allocation gets the
    # examples' CPU cap: zero-filling its first 512 MB takes over a CPU second on some machines
    # (page faults), and its bound is the memory one.
    timeout_s = 1.0 if expected == "hung" else HANG_GUARD_S
    cpu_s = CPU_S if expected == "MemoryError" else 1
    outcome = run_cli(["validate", "x.yaml"], timeout_s=timeout_s, cpu_s=cpu_s, memory_bytes=512 * 1024 * 1024, env={})
    if expected == "over cpu":
        assert outcome.over_cpu and outcome.died and outcome.code is None
    elif expected == "hung":
        assert outcome.timed_out and outcome.code is None and not outcome.over_cpu
    else:
        assert outcome.code == -1 and "MemoryError" in outcome.stderr
