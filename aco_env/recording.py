"""Record an episode to a JSON file and replay it bit for bit.

A recording holds what is needed to re-create the episode exactly -- the scenario (name, absolute
path, bundled name and SHA-256 of its content), the env config, the seed and every action --
plus, to check a replay, the SHA-256 of every observation and the exact (hex) reward of every
step. It is written when the episode ends and marked ``"complete": true``; a replay reports a
recording that stops before its episode does (a crash, a hand edit) as not complete. Recordings
replay from any folder, and recordings of bundled scenarios on any machine (see
:func:`find_scenario`).

>>> import gymnasium as gym, aco_env, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "episode.json")
>>> env = RecordEpisode(gym.make("aco_env/Fleet5-v6"), path)
>>> obs, _ = env.reset(seed=3)
>>> while True:
...     obs, r, terminated, truncated, _ = env.step(len(obs["action_mask"]) - 1)  # always defer
...     if terminated or truncated:
...         break
>>> report = replay_recording(load_recording(path))
>>> report.matched, report.complete
(True, True)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

import scenarios
from aco_env.env import ClusterSchedulingEnv
from aco_env.hindsight import scenario_of
from aco_env.types import EnvConfig
from digital_twin.atomic_files import write_text
from digital_twin.scenario import Scenario, load_scenario

FORMAT = "aco-env-recording"
VERSION = 2
"""Version 2 stores the scenario's absolute path and bundled name, and ``complete``."""
READABLE_VERSIONS = (1, 2)
"""Version 1 files (scenario path as given when recording, no ``complete``) still replay."""


class RecordingError(ValueError):
    """A recording cannot be read or replayed; the message names the file or key and the fix."""


def observation_digest(observation: dict[str, np.ndarray]) -> str:
    """SHA-256 over the keys, dtypes, shapes and bytes of an observation, in key order."""
    digest = hashlib.sha256()
    for key in sorted(observation):
        array = np.ascontiguousarray(observation[key])
        digest.update(f"{key}:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


class RecordEpisode(gym.Wrapper[dict[str, np.ndarray], np.int64, dict[str, np.ndarray], np.int64]):
    """Writes every episode of the wrapped env to ``path`` (``{episode}`` in it is replaced by 0, 1, ...).

    The file is written when the episode ends. A ``reset()`` without a seed draws one from the
    env's own generator and records it, so every recording is replayable.

    Args:
        env: An env whose ``unwrapped`` is a :class:`ClusterSchedulingEnv`.
        path: Output file, e.g. ``"runs/episode-{episode}.json"``.
        agent: Optional agent name stored in the file (``aco-env replay`` can re-run it).
    """

    def __init__(
        self, env: gym.Env[dict[str, np.ndarray], np.int64], path: str | Path, agent: str | None = None
    ) -> None:
        super().__init__(env)
        if not isinstance(env.unwrapped, ClusterSchedulingEnv):
            raise TypeError("RecordEpisode needs an env whose unwrapped env is a ClusterSchedulingEnv")
        self._base = env.unwrapped
        self.path_template = str(path)
        self.agent = agent
        self.episode = 0
        self._record: dict[str, Any] | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset and start a new recording."""
        base = self._base
        if seed is None:
            seed = int(base.np_random.integers(2**31 - 1))
        observation, info = self.env.reset(seed=seed, options=options)
        self._record = {
            "format": FORMAT,
            "version": VERSION,
            "scenario": scenario_reference(scenario_of(base)),
            "config": dataclasses.asdict(base.config),
            "seed": seed,
            "agent": self.agent,
            "reset_observation": observation_digest(observation),
            "complete": False,  # set when the episode ends, just before the file is written
            "steps": [],
        }
        return observation, info

    def step(self, action: np.int64) -> tuple[dict[str, np.ndarray], SupportsFloat, bool, bool, dict[str, Any]]:
        """Step and append the action, observation digest and exact reward."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        if self._record is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        self._record["steps"].append(
            {
                "action": int(np.asarray(action).reshape(())),
                "reward": float(reward).hex(),
                "observation": observation_digest(observation),
                "terminated": bool(terminated),
                "truncated": bool(truncated),
            }
        )
        if terminated or truncated:
            self._record["episode_metrics"] = info.get("episode_metrics")
            self._record["complete"] = True
            self._write()
        return observation, reward, terminated, truncated, info

    def _write(self) -> None:
        path = Path(self.path_template.format(episode=self.episode))
        write_text(path, json.dumps(self._record, indent=1) + "\n")  # renamed into place: never half a file
        self.episode += 1
        self._record = None


def scenario_reference(scenario: Scenario) -> dict[str, Any]:
    """What a recording stores to find ``scenario`` again, from any folder or machine.

    Keys: ``name``; ``path``, the file's absolute path (``None`` for a scenario built in code);
    ``bundled``, the catalogue name when the file is a bundled scenario, else ``None``; and
    ``content_hash``, the SHA-256 of the file that :func:`find_scenario` checks.
    """
    source = scenario.source.resolve() if scenario.source is not None else None
    bundled = source is not None and source.parent == scenarios.CATALOGUE_DIR and source.stem in scenarios.names()
    return {
        "name": scenario.name,
        "path": str(source) if source is not None else None,
        "bundled": source.stem if bundled and source is not None else None,
        "content_hash": scenario.content_hash,
    }


def find_scenario(reference: dict[str, Any]) -> tuple[Scenario, bool]:
    """The recorded scenario, and whether its content changed since the recording.

    Tried in order: the recorded ``path`` (absolute since version 2; a version-1 path may be
    relative to the folder it was recorded in), then the ``bundled`` scenario of this
    installation. The first whose content hash matches wins; if none matches, the first that
    exists is used and reported as changed. A bundled scenario named like the recorded file or
    scenario is also used, but only when its content is identical (version-1 recordings of
    bundled scenarios made on another machine).

    Raises:
        RecordingError: None of them exists.
    """
    recorded = [str(reference["path"])] if reference.get("path") else []
    recorded += _bundled_file(reference.get("bundled"))
    guessed = _bundled_file(Path(reference.get("path") or "").stem) + _bundled_file(reference["name"])
    changed: list[Scenario] = []
    for path in dict.fromkeys(recorded + guessed):  # in order, without repeats
        if not Path(path).is_file():
            continue
        scenario = load_scenario(path)
        if scenario.content_hash == reference["content_hash"]:
            return scenario, False
        if path in recorded:
            changed.append(scenario)
    if changed:
        return changed[0], True
    where = f"{reference['path']} does not exist" if reference.get("path") else "no file was recorded"
    raise RecordingError(
        f"scenario: cannot find {reference['name']!r} ({where}, and no bundled scenario has the recorded "
        "content); put the scenario file back or set the recording's scenario.path to where it is now"
    )


def _bundled_file(name: object) -> list[str]:
    """``[path]`` of the bundled scenario ``name``, or ``[]`` when there is none."""
    return [str(scenarios.path_of(name))] if isinstance(name, str) and name in scenarios.names() else []


_KEYS: dict[str, type | tuple[type, ...]] = {
    "scenario": dict,
    "config": dict,
    "seed": int,
    "reset_observation": str,
    "steps": list,
}
_SCENARIO_KEYS: dict[str, type | tuple[type, ...]] = {"name": str, "path": (str, type(None)), "content_hash": str}
_STEP_KEYS: dict[str, type | tuple[type, ...]] = {
    "action": int,
    "reward": str,
    "observation": str,
    "terminated": bool,
    "truncated": bool,
}
_RECORD_AGAIN = "record the episode again (aco-env replay SCENARIO --agent NAME --seed S --record FILE)"


def load_recording(path: str | Path) -> dict[str, Any]:
    """Read a recording, checking its format, version and keys.

    Raises:
        RecordingError: The file cannot be read, is not UTF-8 JSON, is not a recording of a
            readable version, or a key is missing or has the wrong type; the message starts
            with the file and names the key (e.g. ``steps[3].reward``).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read the recording ({exc.strerror or exc})") from None
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RecordingError(f"{path}: not UTF-8 text (bad byte at offset {exc.start}); {_RECORD_AGAIN}") from None
    except json.JSONDecodeError as exc:
        raise RecordingError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); {_RECORD_AGAIN}"
        ) from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise RecordingError(f'{path}: not an {FORMAT} file (it needs "format": "{FORMAT}")')
    if record.get("version") not in READABLE_VERSIONS:
        raise RecordingError(
            f"{path}: version: {record.get('version')!r} is not a readable {FORMAT} version {READABLE_VERSIONS}"
        )
    _check_keys(path, record, _KEYS, "")
    if record["seed"] < 0:
        raise RecordingError(f"{path}: seed: must be an integer >= 0, got {record['seed']}; {_RECORD_AGAIN}")
    _check_keys(path, record["scenario"], _SCENARIO_KEYS, "scenario.")
    for index, step in enumerate(record["steps"]):
        if not isinstance(step, dict):
            raise RecordingError(f"{path}: steps[{index}]: expected an object, got {type(step).__name__}")
        _check_keys(path, step, _STEP_KEYS, f"steps[{index}].")
        try:
            float.fromhex(step["reward"])
        except ValueError:
            raise RecordingError(f"{path}: steps[{index}].reward: not a hex float: {step['reward']!r}") from None
    if not isinstance(record.get("complete", False), bool):
        raise RecordingError(f"{path}: complete: expected true or false, got {record['complete']!r}")
    try:
        EnvConfig(**record["config"])
    except (TypeError, ValueError) as exc:  # an unknown field or a value out of range
        raise RecordingError(f"{path}: config: {exc}") from None
    return record


def _check_keys(path: Path, mapping: dict[str, Any], keys: dict[str, type | tuple[type, ...]], where: str) -> None:
    """Each key of ``keys`` is in ``mapping`` with its type (an integer is never a bool)."""
    for key, kind in keys.items():
        if key not in mapping:
            raise RecordingError(f"{path}: {where}{key}: missing; {_RECORD_AGAIN}")
        value = mapping[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise RecordingError(f"{path}: {where}{key}: expected {expected}, got {value!r:.60}")


@dataclass(frozen=True)
class ReplayReport:
    """The outcome of a replay.

    Attributes:
        matched: Every recorded step's action, observation digest, reward and end flags matched.
        complete: The recording holds the whole episode: it is marked complete (version 1: its
            last step ended the episode) and the replayed episode ended at its last step. A
            recording cut short (a crash, a hand edit) can match step for step and not be complete.
        steps: Steps replayed.
        first_mismatch: ``None``, or (step index, what differed) for the first difference
            (step -1 is the reset observation).
        scenario_changed: The scenario file's content hash differs from the recorded one.
        episode_metrics: The replayed episode's metrics when it ended at the last recorded
            step, else ``None``.
    """

    matched: bool
    complete: bool
    steps: int
    first_mismatch: tuple[int, str] | None
    scenario_changed: bool
    episode_metrics: dict[str, float] | None


ActionSource = Callable[[ClusterSchedulingEnv, dict[str, np.ndarray]], int]
"""Chooses an action in a replay; the default replays the recorded actions."""


def replay_recording(record: dict[str, Any], choose: ActionSource | None = None) -> ReplayReport:
    """Re-run a recorded episode and compare every step bit for bit.

    Args:
        record: From :func:`load_recording`.
        choose: If given (e.g. an agent), it picks the actions instead of the recording, and
            the replay also checks that it picks the recorded ones.

    Raises:
        RecordingError: The scenario cannot be found (see :func:`find_scenario`).
    """
    scenario, changed = find_scenario(record["scenario"])
    env = ClusterSchedulingEnv(scenario, config=EnvConfig(**record["config"]))
    marked_complete = record.get("complete", record["version"] == 1)

    def report(steps: int, mismatch: tuple[int, str] | None, metrics: dict[str, float] | None = None) -> ReplayReport:
        complete = mismatch is None and metrics is not None and marked_complete
        return ReplayReport(mismatch is None, complete, steps, mismatch, changed, metrics)

    observation, _ = env.reset(seed=record["seed"])
    if observation_digest(observation) != record["reset_observation"]:
        return report(0, (-1, "reset observation differs"))
    metrics = None
    for index, expected in enumerate(record["steps"]):
        if metrics is not None:
            return report(index, (index, f"the episode ended at step {index - 1} but the recording goes on"))
        action = expected["action"] if choose is None else choose(env, observation)
        if action != expected["action"]:
            return report(index, (index, f"action {action} != recorded {expected['action']}"))
        observation, reward, terminated, truncated, info = env.step(action)
        problems = [
            name
            for name, same in (
                ("reward", float(reward).hex() == expected["reward"]),
                ("observation", observation_digest(observation) == expected["observation"]),
                ("terminated", terminated == expected["terminated"]),
                ("truncated", truncated == expected["truncated"]),
            )
            if not same
        ]
        if problems:
            detail = ", ".join(problems)
            if "reward" in problems:
                detail += f" (reward {float(reward)!r} != {float.fromhex(expected['reward'])!r})"
            return report(index + 1, (index, detail + " differ"))
        if terminated or truncated:
            metrics = info["episode_metrics"]
    return report(len(record["steps"]), None, metrics)
