"""The CLI's record/replay round trip and the bench JSON keys (real commands in subprocesses)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.subprocess  # every test here starts a child process


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run ``python -m training.cli.main ARGS`` in ``cwd`` (the repository importable from anywhere)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "training.cli.main", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


def test_replay__records_then_matches_bit_for_bit(tmp_path: Path) -> None:
    """Playing with --record then replaying the file reports a full match (exit 0)."""
    recording = tmp_path / "episode.json"
    played = cli("replay", "fleet5-synthetic", "--agent", "first-fit", "--seed", "4", "--record", str(recording))
    assert played.returncode == 0, played.stderr
    assert "objective_usd" in played.stdout
    replayed = cli("replay", str(recording))
    assert replayed.returncode == 0 and replayed.stdout.startswith("MATCH"), replayed.stdout + replayed.stderr
    with_agent = cli("replay", str(recording), "--agent", "first-fit")
    assert with_agent.returncode == 0, with_agent.stdout


def test_replay__a_changed_step_is_reported_with_its_index(tmp_path: Path) -> None:
    """Tampering with one recorded reward makes the replay fail at exactly that step (exit 1)."""
    recording = tmp_path / "episode.json"
    assert cli("replay", "toy3", "--agent", "cheapest", "--seed", "0", "--record", str(recording)).returncode == 0
    record = json.loads(recording.read_text())
    record["steps"][2]["reward"] = float.fromhex(record["steps"][2]["reward"]).__add__(1e-9).hex()
    recording.write_text(json.dumps(record))
    result = cli("replay", str(recording))
    assert result.returncode == 1
    assert "MISMATCH at step 2: reward" in result.stdout


def test_replay__a_different_agent_is_caught(tmp_path: Path) -> None:
    """Replaying a first-fit recording with the cheapest agent reports the first differing action."""
    recording = tmp_path / "episode.json"
    assert (
        cli("replay", "fleet5-synthetic", "--agent", "first-fit", "--seed", "1", "--record", str(recording)).returncode
        == 0
    )
    result = cli("replay", str(recording), "--agent", "cheapest")
    assert result.returncode == 1 and "MISMATCH at step" in result.stdout and "action" in result.stdout


def test_replay__matches_from_another_working_directory(tmp_path: Path) -> None:
    """A recording of a scenario given by a relative path replays from another folder (exit 0)."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(ROOT / "scenarios" / "toy3.yaml", tmp_path / "mine" / "my-toy.yaml")
    played = cli(
        "replay", "mine/my-toy.yaml", "--agent", "cheapest", "--seed", "0", "--record", "episode.json", cwd=tmp_path
    )
    assert played.returncode == 0, played.stderr
    replayed = cli("replay", "../episode.json", cwd=tmp_path / "elsewhere")
    assert replayed.returncode == 0 and replayed.stdout.startswith("MATCH"), replayed.stdout + replayed.stderr


def test_replay__a_recording_cut_short_is_incomplete_exit_1(tmp_path: Path) -> None:
    """A recording whose last steps were removed matches step for step but is reported incomplete (exit 1)."""
    recording = tmp_path / "episode.json"
    assert cli("replay", "toy3", "--agent", "cheapest", "--seed", "0", "--record", str(recording)).returncode == 0
    record = json.loads(recording.read_text())
    record["steps"] = record["steps"][:-2]
    recording.write_text(json.dumps(record))
    result = cli("replay", str(recording))
    assert result.returncode == 1 and result.stdout.startswith("INCOMPLETE"), result.stdout + result.stderr
    assert f"the {len(record['steps'])} recorded steps match" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\xff\xfe not text", "not UTF-8 text"),
        (b'{"format": "aco-env-recording", "version": 2, "seed": ', "not valid JSON"),
        (b'{"format": "aco-env-recording", "version": 2, "scenario": {}}', "config: missing"),
    ],
)
def test_replay__a_damaged_recording_is_one_line_exit_1(tmp_path: Path, content: bytes, message: str) -> None:
    """Non-UTF-8 bytes, broken JSON or a missing key: one stderr line naming the file and key, exit 1."""
    recording = tmp_path / "damaged.json"
    recording.write_bytes(content)
    result = cli("replay", str(recording))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert lines[0].startswith(f"aco-env replay: error: {recording}: ") and message in lines[0]


def test_replay__an_unknown_agent_is_a_usage_error() -> None:
    """`--agent nobody` exits 2 with one line naming the option and the registered agents."""
    result = cli("replay", "toy3", "--agent", "nobody")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "--agent nobody: unknown agent" in lines[0], result.stderr


def test_bench_quick__writes_the_documented_keys(tmp_path: Path) -> None:
    """`aco-env bench --quick --out FILE.json` writes the headline keys at the top level."""
    out = tmp_path / "bench.json"
    result = cli("bench", "--quick", "--only", "twin,env", "--out", str(out))
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    for key in ("env_steps_per_s", "cartpole_steps_per_s", "env_vs_cartpole", "sim_seconds_per_wall_second"):
        assert isinstance(data[key], float) and data[key] > 0, key


def test_bench_quick_rules__measures_the_rules_scenario_with_and_without_its_rules(tmp_path: Path) -> None:
    """`aco-env bench --quick --only rules`: decisions/s both ways, and the section in the Markdown."""
    out, markdown = tmp_path / "bench.json", tmp_path / "bench.md"
    result = cli("bench", "--quick", "--only", "rules", "--out", str(out), "--markdown", str(markdown))
    assert result.returncode == 0, result.stderr
    rules = json.loads(out.read_text())["rules"]
    assert rules["scenario"] == "fleet30-rules" and rules["jobs"] > 0
    for key in ("twin_decisions_per_s", "twin_decisions_per_s_without_rules", "env_steps_per_s", "twin_build_ms"):
        assert rules[key] > 0, key
    assert "## Placement rules" in markdown.read_text()


@pytest.mark.ray
@pytest.mark.slow  # about 30 s: a pool and a local Ray start, lookahead episodes under each backend
def test_bench_quick_backends__times_each_backend_and_checks_they_agree(tmp_path: Path) -> None:
    """`aco-env bench --quick --only backends`: every installed backend timed, same results, a speed-up each."""
    import importlib.util

    out, markdown = tmp_path / "bench.json", tmp_path / "bench.md"
    result = cli("bench", "--quick", "--only", "backends", "--out", str(out), "--markdown", str(markdown))
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    expected = ["serial", "processes"] + (["ray"] if importlib.util.find_spec("ray") else [])
    rows = data["backends"]["backends"]
    assert list(rows) == expected
    for name, row in rows.items():
        assert row["identical"] is True, name
        assert row["total_s"] == pytest.approx(row["start_s"] + row["cold_s"] + row["stop_s"])
        assert row["warm_s"] > 0 and row["heavy_s"] > 0 and row["learned_p50_ms"] > 0
    assert set(data["backends"]["learned_p50_vs_serial"]) == set(expected) - {"serial"}
    for kind in ("total", "warm", "heavy"):
        assert set(data["backend_speedup_vs_serial"][kind]) == set(expected) - {"serial"}
    table = markdown.read_text()
    assert "## Execution backends" in table
    assert all(f"| {name} | " in table for name in expected)
