"""Recorded episodes replay bit for bit: a change to the twin's internals must not change one action's outcome.

``tests/data/recordings`` holds episodes of first-fit, cheapest, random, ACO (both deferral rules)
and mc-wscpt on the toy, the default scenario as schema 1 wrote it (``fleet5-synthetic-v1.yaml``,
no interference), a fleet with cpu contention, an overloaded fleet whose queues grow long and a
workflow scenario. Each step's action, observation digest, exact reward and end flags, and the
episode's metrics, must match. A recording's scenario path is relative to the repository
(``tests/data/...`` or ``scenarios/...``). When a change alters what is observed on purpose (a new
observation column), the recordings are re-made from their own actions (``python -m
tests.remake_recordings``, which refuses when a reward, an end flag or a metric moved), and
CHANGELOG.md says what changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aco_env.recording import replay_recording
from tests.paths import DATA
from tests.remake_recordings import loaded, remade

RECORDINGS = sorted((DATA / "recordings").glob("*.json"))


def test_recordings__are_present() -> None:
    """The fixture recordings exist (a glob that finds nothing would make the test below vacuous)."""
    assert len(RECORDINGS) >= 7


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_recorded_episode__replays_bit_for_bit(path: Path) -> None:
    """Every step's action, observation digest, exact reward and end flags match; the file is complete."""
    record = loaded(path)
    report = replay_recording(record)
    assert report.matched, report.first_mismatch
    assert report.complete and not report.scenario_changed
    assert report.steps == len(record["steps"])


def test_remake_recordings__keeps_a_recording_and_refuses_one_whose_reward_moved(tmp_path: Path) -> None:
    """Re-making changes nothing of an intact recording, and stops at a step whose recorded reward differs."""
    source = DATA / "recordings" / "toy3-cheapest-0-next-event.json"
    assert remade(source) == json.loads(source.read_text())
    moved = json.loads(source.read_text())
    moved["steps"][2]["reward"] = float.hex(float.fromhex(moved["steps"][2]["reward"]) + 1e-9)
    path = tmp_path / source.name
    path.write_text(json.dumps(moved))
    with pytest.raises(AssertionError, match=r"step 2: reward"):
        remade(path)
