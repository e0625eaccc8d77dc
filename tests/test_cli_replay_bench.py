"""The CLI's record/replay round trip and the bench JSON keys (real commands in subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "training.cli", *args], capture_output=True, text=True, cwd=ROOT)


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


def test_bench_quick__writes_the_documented_keys(tmp_path: Path) -> None:
    """`aco-env bench --quick --out FILE.json` writes the headline keys of issue 4."""
    out = tmp_path / "bench.json"
    result = cli("bench", "--quick", "--only", "twin,env", "--out", str(out))
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    for key in ("env_steps_per_s", "cartpole_steps_per_s", "env_vs_cartpole", "sim_seconds_per_wall_second"):
        assert isinstance(data[key], float) and data[key] > 0, key
