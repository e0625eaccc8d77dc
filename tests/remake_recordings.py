"""Re-make the fixture recordings' observation digests from their own actions, after an observation change.

``python -m tests.remake_recordings`` replays every recording in ``tests/data/recordings`` with
its recorded actions and writes the new observation digests in place. Everything else must stay
as recorded: each step's exact reward and end flags and the episode's metrics (the metrics the
recording has; newer ones are not added). A mismatch stops the run before that file is written and
names the file and step: then the change altered the dynamics, not only what is observed, and
the recording must not be re-made.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from aco_env.env import ClusterSchedulingEnv
from aco_env.recording import find_scenario, load_recording, observation_digest
from aco_env.types import EnvConfig
from digital_twin.atomic_files import write_text
from tests.paths import DATA

RECORDINGS = DATA / "recordings"


def loaded(path: Path) -> dict[str, Any]:
    """The recording at ``path``, its test scenario (not a bundled one) read from ``tests/data``, where it lives."""
    record = load_recording(path)
    if record["scenario"]["bundled"] is None:  # recorded elsewhere
        record["scenario"]["path"] = str(DATA / Path(record["scenario"]["path"]).name)
    return record


def remade(path: Path) -> dict[str, Any]:
    """The recording at ``path`` with new observation digests.

    Raises:
        AssertionError: A reward, an end flag or a metric differs from the recorded one.
    """
    record = loaded(path)
    scenario, changed = find_scenario(record["scenario"])
    assert not changed, f"{path}: the scenario's content changed"
    raw = json.loads(path.read_text())
    env = ClusterSchedulingEnv(scenario, config=EnvConfig(**record["config"]))
    observation, _ = env.reset(seed=record["seed"])
    raw["reset_observation"] = observation_digest(observation)
    metrics: dict[str, float] = {}
    for index, step in enumerate(raw["steps"]):
        observation, reward, terminated, truncated, info = env.step(step["action"])
        where = f"{path}: step {index}"
        assert float(reward).hex() == step["reward"], f"{where}: reward {float(reward)!r} differs"
        assert (terminated, truncated) == (step["terminated"], step["truncated"]), f"{where}: end flags differ"
        step["observation"] = observation_digest(observation)
        if terminated or truncated:
            metrics = info["episode_metrics"]
    for key, value in raw["episode_metrics"].items():
        assert metrics.get(key) == value, f"{path}: metric {key} {metrics.get(key)!r} != recorded {value!r}"
    return raw


def main() -> int:
    """Re-make every recording; 0 when all were written."""
    for path in sorted(RECORDINGS.glob("*.json")):
        write_text(path, json.dumps(remade(path), indent=1) + "\n")
        print(f"re-made {path.name}: actions, rewards, end flags and metrics as recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
