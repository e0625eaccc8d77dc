"""Recordings: found from any folder or machine, cut-short files caught, damaged files named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import aco_env  # noqa: F401  (registers the ids)
import scenarios
from aco_env.recording import RecordEpisode, RecordingError, load_recording, replay_recording
from aco_env.registration import CLUSTER_SCHEDULING_ID


def record_episode(path: Path, scenario: str = "toy3", seed: int = 0) -> dict[str, Any]:
    """Record one episode (first valid node, else defer) and return the file's content."""
    env = RecordEpisode(gym.make(CLUSTER_SCHEDULING_ID, scenario=scenario), path)
    obs, _ = env.reset(seed=seed)
    while True:
        obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        if terminated or truncated:
            return json.loads(path.read_text())


def write(path: Path, record: dict[str, Any]) -> Path:
    path.write_text(json.dumps(record))
    return path


def test_record_episode__stores_the_scenario_by_absolute_path_and_bundled_name(tmp_path: Path) -> None:
    """A recording of a bundled scenario names it and its absolute file, and is marked complete."""
    record = record_episode(tmp_path / "episode.json")
    assert record["version"] == 2 and record["complete"] is True
    assert record["scenario"]["bundled"] == "toy3"
    assert Path(record["scenario"]["path"]) == scenarios.path_of("toy3").resolve()
    assert record["steps"][-1]["terminated"] or record["steps"][-1]["truncated"]


def test_replay__finds_a_scenario_file_from_another_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scenario given by a relative path when recording is found again from another working directory."""
    (tmp_path / "mine").mkdir()
    shutil.copy(scenarios.path_of("toy3"), tmp_path / "mine" / "my-toy.yaml")
    monkeypatch.chdir(tmp_path)
    record = record_episode(tmp_path / "episode.json", scenario="mine/my-toy.yaml")
    assert Path(record["scenario"]["path"]).is_absolute() and record["scenario"]["bundled"] is None
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    report = replay_recording(load_recording(tmp_path / "episode.json"))
    assert report.matched and report.complete and not report.scenario_changed


def test_replay__finds_a_bundled_scenario_recorded_on_another_machine(tmp_path: Path) -> None:
    """When the recorded path does not exist here, the bundled scenario of that name replays it."""
    record = record_episode(tmp_path / "episode.json")
    record["scenario"]["path"] = "/another/machine/checkout/scenarios/toy3.yaml"
    report = replay_recording(load_recording(write(tmp_path / "moved.json", record)))
    assert report.matched and report.complete and not report.scenario_changed


def test_replay__a_version_1_recording_still_replays(tmp_path: Path) -> None:
    """A version-1 file (no bundled name or complete flag) from another machine replays as complete."""
    record = record_episode(tmp_path / "episode.json")
    del record["scenario"]["bundled"], record["complete"]
    record.update(version=1)
    record["scenario"]["path"] = "/another/machine/checkout/scenarios/toy3.yaml"
    report = replay_recording(load_recording(write(tmp_path / "v1.json", record)))
    assert report.matched and report.complete


def test_replay__a_scenario_that_cannot_be_found_is_a_clear_error(tmp_path: Path) -> None:
    """A missing, non-bundled scenario file raises a RecordingError naming it and the fix."""
    record = record_episode(tmp_path / "episode.json")
    record["scenario"].update(path="/nowhere/my-cluster.yaml", bundled=None, name="my-cluster")
    with pytest.raises(RecordingError, match=r"cannot find 'my-cluster' \(/nowhere/my-cluster.yaml does not exist"):
        replay_recording(load_recording(write(tmp_path / "lost.json", record)))


def test_replay__a_changed_scenario_file_is_reported(tmp_path: Path) -> None:
    """A recorded file whose content changed still replays, flagged as changed."""
    scenario = tmp_path / "my-toy.yaml"
    scenario.write_text(scenarios.path_of("toy3").read_text().replace("name: toy3", "name: my-toy"))
    record_episode(tmp_path / "episode.json", scenario=str(scenario))
    scenario.write_text(scenario.read_text() + "# a comment changes the hash, not the episode\n")
    report = replay_recording(load_recording(tmp_path / "episode.json"))
    assert report.scenario_changed and report.matched and report.complete


@pytest.mark.parametrize("cut", ["last step dropped", "half the steps dropped", "not marked complete"])
def test_replay__a_recording_cut_short_matches_but_is_not_complete(tmp_path: Path, cut: str) -> None:
    """Steps missing at the end (or no complete mark) give matched and not complete, without metrics."""
    record = record_episode(tmp_path / "episode.json", scenario="fleet5-synthetic", seed=4)
    if cut == "last step dropped":
        record["steps"] = record["steps"][:-1]
    elif cut == "half the steps dropped":
        record["steps"] = record["steps"][: len(record["steps"]) // 2]
    else:
        record["complete"] = False
    report = replay_recording(load_recording(write(tmp_path / "cut.json", record)))
    assert report.matched and not report.complete
    assert (report.episode_metrics is None) == (cut != "not marked complete")


def test_replay__steps_after_the_episode_end_are_a_mismatch(tmp_path: Path) -> None:
    """A recording that goes on after the step that ended the episode does not match."""
    record = record_episode(tmp_path / "episode.json")
    ended_at = len(record["steps"]) - 1
    record["steps"].append(dict(record["steps"][-1]))
    report = replay_recording(load_recording(write(tmp_path / "long.json", record)))
    assert not report.matched and not report.complete
    assert report.first_mismatch == (ended_at + 1, f"the episode ended at step {ended_at} but the recording goes on")


def _drop(record: dict[str, Any], key: str) -> None:
    """Delete a dotted key such as ``steps.1.reward``."""
    *parents, last = key.split(".")
    for part in parents:
        record = record[int(part)] if part.isdigit() else record[part]
    del record[int(last) if last.isdigit() else last]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("steps", "steps: missing"),
        ("seed", "seed: missing"),
        ("scenario", "scenario: missing"),
        ("config", "config: missing"),
        ("scenario.content_hash", "scenario.content_hash: missing"),
        ("steps.1.reward", r"steps\[1\]\.reward: missing"),
    ],
)
def test_load_recording__a_missing_key_is_named_with_the_file(tmp_path: Path, damage: str, message: str) -> None:
    """Each required key, when missing, gives a RecordingError naming the file and the key."""
    record = record_episode(tmp_path / "episode.json")
    _drop(record, damage)
    path = write(tmp_path / "damaged.json", record)
    with pytest.raises(RecordingError, match=f"^{tmp_path / 'damaged.json'}: {message}"):
        load_recording(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"format": "aco-env-recording", "version": 2, \xff\xfe}', r"not UTF-8 text \(bad byte at offset 46\)"),
        (b'{"format": "aco-env-recording", "version": 2, "steps": [', "not valid JSON"),
        (b"[1, 2, 3]", "not an aco-env-recording file"),
        (b'{"format": "aco-env-recording", "version": 9}', "version: 9 is not a readable"),
    ],
)
def test_load_recording__bad_bytes_or_json_are_named_with_the_file(
    tmp_path: Path, content: bytes, message: str
) -> None:
    """Non-UTF-8 bytes, broken JSON, another format or version: a RecordingError naming the file."""
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(RecordingError, match=f"^{path}: {message}"):
        load_recording(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seed": "3"}, "seed: expected int, got '3'"),
        ({"seed": True}, "seed: expected int, got True"),
        ({"config": {"queue_window": 4, "colour": "red"}}, "config: .*colour"),
        ({"config": {"reward_scale": -1.0}}, "config: reward_scale must be a positive"),
        ({"complete": "yes"}, "complete: expected true or false"),
        ({"seed": -5}, "seed: must be an integer >= 0, got -5"),  # a NumPy ValueError "(a bug)" before
    ],
)
def test_load_recording__a_wrong_value_is_named_with_the_file(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    """A key of the wrong type or an invalid env config gives a RecordingError naming the key."""
    record = record_episode(tmp_path / "episode.json")
    record.update(change)
    path = write(tmp_path / "wrong.json", record)
    with pytest.raises(RecordingError, match=f"^{path}: {message}"):
        load_recording(path)
