"""Record an episode to a JSON file and replay it bit for bit.

A recording holds what is needed to re-create the episode exactly -- the scenario (name, file
and SHA-256 of its content), the env config, the seed and every action -- plus, to check a
replay, the SHA-256 of every observation and the exact (hex) reward of every step.

>>> import gymnasium as gym, aco_env, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "episode.json")
>>> env = RecordEpisode(gym.make("aco_env/Fleet5-v0"), path)
>>> obs, _ = env.reset(seed=3)
>>> while True:
...     obs, r, terminated, truncated, _ = env.step(len(obs["action_mask"]) - 1)  # always defer
...     if terminated or truncated:
...         break
>>> replay_recording(load_recording(path)).matched
True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import scenarios
from aco_env.env import ClusterSchedulingEnv
from aco_env.types import EnvConfig

FORMAT = "aco-env-recording"
VERSION = 1


def observation_digest(observation: dict[str, np.ndarray]) -> str:
    """SHA-256 over the keys, dtypes, shapes and bytes of an observation, in key order."""
    digest = hashlib.sha256()
    for key in sorted(observation):
        array = np.ascontiguousarray(observation[key])
        digest.update(f"{key}:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


class RecordEpisode(gym.Wrapper):
    """Writes every episode of the wrapped env to ``path`` (``{episode}`` in it is replaced by 0, 1, ...).

    The file is written when the episode ends. A ``reset()`` without a seed draws one from the
    env's own generator and records it, so every recording is replayable.

    Args:
        env: An env whose ``unwrapped`` is a :class:`ClusterSchedulingEnv`.
        path: Output file, e.g. ``"runs/episode-{episode}.json"``.
        agent: Optional agent name stored in the file (``aco-env replay`` can re-run it).
    """

    def __init__(self, env: gym.Env, path: str | Path, agent: str | None = None) -> None:
        super().__init__(env)
        if not isinstance(env.unwrapped, ClusterSchedulingEnv):
            raise TypeError("RecordEpisode needs an env whose unwrapped env is a ClusterSchedulingEnv")
        self.path_template = str(path)
        self.agent = agent
        self.episode = 0
        self._record: dict[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Reset and start a new recording."""
        if seed is None:
            seed = int(self.env.unwrapped.np_random.integers(2**31 - 1))
        observation, info = self.env.reset(seed=seed, options=options)
        base: ClusterSchedulingEnv = self.env.unwrapped  # type: ignore[assignment]  # checked in __init__
        scenario = base.scenario
        self._record = {
            "format": FORMAT,
            "version": VERSION,
            "scenario": {
                "name": scenario.name,
                "path": str(scenario.source) if scenario.source else None,
                "content_hash": scenario.content_hash,
            },
            "config": dataclasses.asdict(base.config),
            "seed": seed,
            "agent": self.agent,
            "reset_observation": observation_digest(observation),
            "steps": [],
        }
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
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
            self._write()
        return observation, reward, terminated, truncated, info

    def _write(self) -> None:
        path = Path(self.path_template.format(episode=self.episode))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self._record, indent=1) + "\n")
        self.episode += 1
        self._record = None


def load_recording(path: str | Path) -> dict[str, Any]:
    """Read a recording, checking its format and version."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable recording ({exc})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("version") != VERSION:
        raise ValueError(f"{path}: not an {FORMAT} version {VERSION} file")
    return record


@dataclass(frozen=True)
class ReplayReport:
    """The outcome of a replay.

    Attributes:
        matched: Every step's action, observation digest, reward and end flags matched.
        steps: Steps replayed.
        first_mismatch: ``None``, or (step index, what differed) for the first difference
            (step -1 is the reset observation).
        scenario_changed: The scenario file's content hash differs from the recorded one.
        episode_metrics: The replayed episode's metrics (when it ended).
    """

    matched: bool
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
    """
    scenario_ref = record["scenario"]
    scenario = scenarios.load(scenario_ref["path"] or scenario_ref["name"])
    changed = scenario.content_hash != scenario_ref["content_hash"]
    env = ClusterSchedulingEnv(scenario, config=EnvConfig(**record["config"]))
    observation, _ = env.reset(seed=record["seed"])
    if observation_digest(observation) != record["reset_observation"]:
        return ReplayReport(False, 0, (-1, "reset observation differs"), changed, None)
    metrics = None
    for index, expected in enumerate(record["steps"]):
        action = expected["action"] if choose is None else choose(env, observation)
        if action != expected["action"]:
            return ReplayReport(
                False, index, (index, f"action {action} != recorded {expected['action']}"), changed, None
            )
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
            return ReplayReport(False, index + 1, (index, detail + " differ"), changed, None)
        metrics = info.get("episode_metrics", metrics)
    return ReplayReport(True, len(record["steps"]), None, changed, metrics)
