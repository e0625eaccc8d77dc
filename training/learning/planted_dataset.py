"""Imitation datasets from planted episodes: decision states labelled by the planted expert.

On a planted scenario every episode has a schedule proven optimal (:mod:`digital_twin.planted`).
:func:`collect_planted` plays episodes and labels each decision state with the action of the
``planted`` expert (:mod:`agents.planted`, a hindsight expert: right for labelling training
states, never for the evaluated policy):

* by default the expert plays itself: every state is on the planted trajectory and every label
  is the planted action, proven optimal (following it from the state attains the optimum);
* with ``agent``, that agent plays and the expert labels the states it visits (DAgger-style);
  ``on_planted`` says per row whether the state is still on the planted trajectory. Off it the
  label is the expert's fallback (the valid node of least completion cost), not a proven optimum.

:func:`save_planted_dataset` writes the ``.npz`` file (:data:`training.learning.planted_format.FILE_FORMAT`
lists its arrays), :func:`load_planted_dataset` reads it back; :meth:`PlantedDataset.labels` gives
the :class:`~training.learning.labels.Labels` behaviour cloning fits (``aco-env train --bc-dataset``).
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import scenarios
from aco_env import ClusterSchedulingEnv
from aco_env.actions import as_action_index
from aco_env.hindsight import planted_action_of, planted_of
from agents import make_agent
from digital_twin.atomic_files import atomic_open
from digital_twin.scenario import Scenario
from training.evaluation.agreement import PlantedTracker
from training.learning.labels import Labels
from training.learning.planted_format import EPISODE_ARRAYS, FORMAT_VERSION, META, OBS_PREFIX, ROW_ARRAYS
from training.progress import Progress

EXPERT = "planted"
"""The registered expert that labels every state."""


class PlantedDatasetError(ValueError):
    """A file that is not a planted dataset of this format (the message names what is wrong)."""


@dataclass(frozen=True)
class PlantedDataset:
    """Decision states of planted episodes, each labelled by the planted expert (n rows, E episodes).

    Attributes:
        observations: The env's observation per row, key by key, each ``(n, ...)`` float32.
        action: ``(n,)`` int64, the label (the expert's action in the state).
        taken: ``(n,)`` int64, the action the played agent took.
        on_planted: ``(n,)`` bool, the state is on the planted trajectory (the label is proven optimal).
        episode: ``(n,)`` int64, the row's episode (an index into the ``episode_*`` arrays).
        episode_seeds: ``(E,)`` int64, each episode's env seed.
        episode_optimum_usd: ``(E,)`` float64, its proven optimum (USD).
        episode_objective_usd: ``(E,)`` float64, the played agent's objective (USD).
        meta: ``format_version``, ``scenario``, ``agent``, ``seed``, ``episodes``, ``env_config``.
    """

    observations: dict[str, np.ndarray]
    action: np.ndarray  # (n,) int64
    taken: np.ndarray  # (n,) int64
    on_planted: np.ndarray  # (n,) bool
    episode: np.ndarray  # (n,) int64
    episode_seeds: np.ndarray  # (E,) int64
    episode_optimum_usd: np.ndarray  # (E,) float64
    episode_objective_usd: np.ndarray  # (E,) float64
    meta: dict[str, Any]

    def __len__(self) -> int:
        return len(self.action)

    def labels(self) -> Labels:
        """Every row as behaviour cloning's labels (the masks are ``obs_action_mask`` > 0)."""
        return Labels(self.observations, self.action, self.observations["action_mask"] > 0)


def collect_planted(
    scenario: str | Scenario, episodes: int, seed: int, agent: str | None = None, progress: bool = True
) -> PlantedDataset:
    """Play ``episodes`` episodes (seeds ``seed, seed + 1, ...``) and label every decision with the expert's action.

    Args:
        scenario: A planted scenario (loaded, or a bundled name or YAML path).
        episodes: Episodes to play (>= 1).
        seed: The first episode's seed (env and agents).
        agent: Who plays (a registered name or ``sb3:PATH``; it takes its deterministic action);
            ``None``: the expert itself.
        progress: A bar on a terminal, else one summary line.

    Raises:
        ValueError: The scenario is not planted, or ``episodes < 1``.
    """
    scenario = scenarios.load(scenario)
    if not scenario.planted:
        raise ValueError(f"{scenario.name} is not a planted scenario (workload source: planted)")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    env = ClusterSchedulingEnv(scenario)
    expert = make_agent(EXPERT, env)
    player = expert if agent is None else make_agent(agent, env)
    rows: list[tuple[dict[str, np.ndarray], int, int, bool, int]] = []
    optima, objectives = [], []
    with Progress(episodes, "planted dataset", "episode", enabled=progress) as bar:
        for k in range(episodes):
            objective, optimum = _play(env, expert, player, seed + k, k, rows)
            objectives.append(objective)
            optima.append(optimum)
            bar.update()
    observations = {key: np.stack([row[0][key] for row in rows]) for key in rows[0][0]}
    meta = {
        "format_version": FORMAT_VERSION,
        "scenario": scenario.name,
        "agent": agent or EXPERT,
        "seed": seed,
        "episodes": episodes,
        "env_config": dataclasses.asdict(env.config),
    }
    return PlantedDataset(
        observations,
        np.array([row[1] for row in rows], dtype=np.int64),
        np.array([row[2] for row in rows], dtype=np.int64),
        np.array([row[3] for row in rows], dtype=bool),
        np.array([row[4] for row in rows], dtype=np.int64),
        np.arange(seed, seed + episodes, dtype=np.int64),
        np.array(optima, dtype=np.float64),
        np.array(objectives, dtype=np.float64),
        meta,
    )


def _play(
    env: ClusterSchedulingEnv,
    expert: Any,
    player: Any,
    seed: int,
    index: int,
    rows: list[tuple[dict[str, np.ndarray], int, int, bool, int]],
) -> tuple[float, float]:
    """Play one episode, appending ``(observation, label, taken, on_planted, index)`` per decision.

    Returns:
        The played agent's objective and the episode's optimum (USD).
    """
    observation, _ = env.reset(seed=seed)
    expert.reset(seed)
    if player is not expert:
        player.reset(seed)
    episode = planted_of(env)
    assert episode is not None  # the scenario is planted
    tracker = PlantedTracker(episode.optimum_usd)
    n_actions = int(env.action_space.n)
    while True:
        label = int(np.asarray(expert.predict(observation)[0]).reshape(-1)[0])
        taken = label if player is expert else int(np.asarray(player.predict(observation)[0]).reshape(-1)[0])
        rows.append((observation, label, taken, tracker.on_trajectory, index))
        planted = planted_action_of(env)
        observation, _, terminated, truncated, info = env.step(taken)
        if planted is not None:
            tracker.record(as_action_index(taken, n_actions), planted, valid=not info["invalid_action"])
        if terminated or truncated:
            return float(info["episode_metrics"]["objective_usd"]), episode.optimum_usd


def save_planted_dataset(dataset: PlantedDataset, path: Path) -> Path:
    """Write ``dataset`` as a compressed ``.npz`` at ``path`` (its name must end in ``.npz``); returns the path.

    Raises:
        ValueError: ``path`` does not end in ``.npz`` (NumPy would append it).
        OSError: The file cannot be written.
    """
    path = Path(path)
    if path.suffix != ".npz":
        raise ValueError(f"{path}: a planted dataset is a .npz file; end the name in .npz")
    arrays: dict[str, np.ndarray] = {OBS_PREFIX + key: value for key, value in dataset.observations.items()}
    arrays.update({name: getattr(dataset, name) for name in (*ROW_ARRAYS, *EPISODE_ARRAYS)})
    arrays[META] = np.array(json.dumps(dataset.meta))
    with atomic_open(path, "wb") as file:  # renamed into place: never half a dataset
        np.savez_compressed(file, **arrays)  # type: ignore[arg-type]  # numpy's stubs: **kwds of ArrayLike
    return path


def load_planted_dataset(path: Path) -> PlantedDataset:
    """The dataset :func:`save_planted_dataset` wrote at ``path``.

    Raises:
        OSError: The file cannot be read.
        PlantedDatasetError: It is not a planted dataset (not an ``.npz``, an array missing, rows of
            different lengths, another format version).
    """
    try:
        with np.load(Path(path), allow_pickle=False) as file:
            arrays = {name: file[name] for name in file.files}
    except (ValueError, EOFError, zipfile.BadZipFile) as exc:  # not a NumPy file, or truncated
        raise PlantedDatasetError(f"{path}: not a planted dataset (.npz): {exc}") from None
    missing = [name for name in (*ROW_ARRAYS, *EPISODE_ARRAYS, META, OBS_PREFIX + "action_mask") if name not in arrays]
    if missing:
        raise PlantedDatasetError(f"{path}: not a planted dataset: no array {missing[0]!r}")
    try:
        meta = json.loads(str(arrays.pop(META)))
    except ValueError:
        meta = None
    if not isinstance(meta, dict):
        raise PlantedDatasetError(f"{path}: not a planted dataset: {META!r} is not a JSON object")
    if meta.get("format_version") != FORMAT_VERSION:
        raise PlantedDatasetError(
            f"{path}: planted dataset format {meta.get('format_version')!r}, this version reads {FORMAT_VERSION}"
        )
    observations = {name[len(OBS_PREFIX) :]: arrays.pop(name) for name in list(arrays) if name.startswith(OBS_PREFIX)}
    rows = {len(arrays[name]) for name in ROW_ARRAYS} | {len(value) for value in observations.values()}
    if len(rows) != 1:
        raise PlantedDatasetError(f"{path}: the row arrays have different lengths {sorted(rows)}")
    return PlantedDataset(observations, **{name: arrays[name] for name in (*ROW_ARRAYS, *EPISODE_ARRAYS)}, meta=meta)
