"""`aco-env export-planted` through the real CLI: the file holds the states played, labelled by the planted expert."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils import seeding

import scenarios
from aco_env import ClusterSchedulingEnv
from aco_env.observation import JOB_FEATURES, NODE_FEATURES
from tests.paths import ROOT
from training.learning.planted_dataset import PlantedDatasetError, load_planted_dataset

DTYPES = {
    "action": np.int64,
    "taken": np.int64,
    "on_planted": np.bool_,
    "episode": np.int64,
    "episode_seeds": np.int64,
    "episode_optimum_usd": np.float64,
    "episode_objective_usd": np.float64,
}


def export(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "training.cli.main", "export-planted", *args, "--no-progress"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def replayed_observations(scenario: str, seed: int, actions: np.ndarray) -> list[dict[str, np.ndarray]]:
    """The observations of the env reset to ``seed`` and stepped through ``actions`` (before each action)."""
    env = ClusterSchedulingEnv(scenario)
    obs, _ = env.reset(seed=seed)
    seen = []
    for action in actions:
        seen.append(obs)
        obs, *_ = env.step(int(action))
    return seen


@pytest.mark.subprocess
def test_export_planted_cli__the_expert_dataset_holds_its_states_with_optimal_labels(tmp_path: Path) -> None:
    """The expert plays (the default): every row on the planted trajectory, the documented dtypes, states replay."""
    out = tmp_path / "planted5.npz"
    result = export("--scenario", "planted5", "--episodes", "2", "--seed", "3", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {out}:") and "on the planted trajectory" in result.stdout
    with np.load(out, allow_pickle=False) as file:
        arrays = {name: file[name] for name in file.files}
    n, nodes = len(arrays["action"]), 5
    assert {name: arrays[name].dtype for name in DTYPES} == {name: np.dtype(dtype) for name, dtype in DTYPES.items()}
    assert arrays["obs_nodes"].shape == (n, nodes, len(NODE_FEATURES))
    assert arrays["obs_action_mask"].shape == (n, nodes + 1)
    assert all(arrays[f"obs_{key}"].dtype == np.float32 for key in ("nodes", "history", "job", "queue", "clock"))
    assert json.loads(str(arrays["meta"]))["agent"] == "planted"
    assert arrays["on_planted"].all() and (arrays["action"] == arrays["taken"]).all()
    assert list(arrays["episode_seeds"]) == [3, 4]
    scenario = scenarios.load("planted5")
    for index, seed in enumerate((3, 4)):
        optimum = scenario.planted_episode(seeding.np_random(seed)[0]).optimum_usd
        assert arrays["episode_optimum_usd"][index] == optimum
        assert arrays["episode_objective_usd"][index] == pytest.approx(optimum, rel=1e-9)
        rows = np.flatnonzero(arrays["episode"] == index)
        for k, obs in zip(rows, replayed_observations("planted5", seed, arrays["taken"][rows]), strict=True):
            for key, value in obs.items():
                np.testing.assert_array_equal(arrays[f"obs_{key}"][k], value)
    dataset = load_planted_dataset(out)
    assert len(dataset) == n and dataset.labels().masks.dtype == bool


@pytest.mark.subprocess
def test_export_planted_cli__another_agent_plays_and_the_trajectory_flag_ends_at_its_first_deviation(
    tmp_path: Path,
) -> None:
    """--agent first-fit: rows on the trajectory until first-fit's first other action; every label is valid."""
    out = tmp_path / "dagger.npz"
    result = export("--agent", "first-fit", "--episodes", "1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    dataset = load_planted_dataset(out)
    agreed = dataset.taken == dataset.action
    expected = np.concatenate([[True], np.cumprod(agreed[:-1]).astype(bool)])  # every earlier action agreed
    np.testing.assert_array_equal(dataset.on_planted, expected)
    assert 0 < dataset.on_planted.sum() < len(dataset)
    labels = dataset.labels()
    assert labels.masks[np.arange(len(dataset)), labels.actions].all()
    assert dataset.meta["agent"] == "first-fit" and dataset.episode_objective_usd[0] > dataset.episode_optimum_usd[0]


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--scenario", "fleet5-synthetic"], 2, ["--scenario fleet5-synthetic", "not a planted scenario", "planted5"]),
        (["--agent", "nosuch"], 2, ["--agent", "nosuch"]),
        (["--agent", "first-fit,cheapest"], 2, ["--agent", "one agent"]),
        (["--out", "data.csv"], 2, ["--out data.csv", ".npz"]),
        (["--out", "/proc/no/such.npz"], 1, ["--out /proc/no", "cannot write"]),
    ],
    ids=["not-planted", "unknown-agent", "two-agents", "not-npz", "unwritable"],
)
def test_export_planted_cli__bad_input_is_one_line_before_any_episode(
    args: list[str], code: int, words: list[str], tmp_path: Path
) -> None:
    """A wrong scenario, agent or file: the exit code and one error line naming it; no file."""
    if "--out" not in args:
        args = [*args, "--out", str(tmp_path / "x.npz")]
    result = export("--episodes", "1", *args)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr and lines[-1].startswith("aco-env export-planted: error:")
    assert all(word in lines[-1] for word in words), lines[-1]
    assert not list(tmp_path.iterdir())


def test_load_planted_dataset__refuses_what_is_not_one(tmp_path: Path) -> None:
    """Not a NumPy file, and an .npz without the labels: PlantedDatasetError naming the file and what lacks."""
    text = tmp_path / "text.npz"
    text.write_text("not numpy")
    with pytest.raises(PlantedDatasetError, match="not a planted dataset"):
        load_planted_dataset(text)
    other = tmp_path / "other.npz"
    np.savez(other, obs_action_mask=np.ones((2, 3), dtype=np.float32))
    with pytest.raises(PlantedDatasetError, match="no array 'action'"):
        load_planted_dataset(other)


def test_file_format__help_names_every_array() -> None:
    """Every array the writer writes is in the command's help (the one place the format is written)."""
    from training.cli.commands import export_planted
    from training.learning.planted_format import EPISODE_ARRAYS, META, ROW_ARRAYS

    for name in (*ROW_ARRAYS, *EPISODE_ARRAYS, META, "obs_action_mask"):
        assert f"  {name} " in export_planted.__doc__, name


def test_file_format__the_documented_widths_are_the_observations() -> None:
    """The table's node and job widths are the env's (a new observation column changes the format)."""
    from training.learning.planted_format import FILE_FORMAT

    shapes = dict(re.findall(r"^  (obs_\w+) +(\([^)]*\))", FILE_FORMAT, flags=re.MULTILINE))
    assert shapes["obs_nodes"] == f"(n, N, {len(NODE_FEATURES)})"
    assert shapes["obs_job"] == f"(n, {len(JOB_FEATURES)})"
