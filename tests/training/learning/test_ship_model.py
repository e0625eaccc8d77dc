"""Models in and out of runs: provenance.json, shipped models/<name>/, and --init-from."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest

from aco_env import ClusterSchedulingEnv
from agents import agent_deferral, make_agent
from tests.paths import ROOT
from tests.train_helpers import TINY
from training.evaluation.rollout import play_episode
from training.learning.config import TrainConfig
from training.learning.provenance import PACKAGES, command_line, read_provenance
from training.learning.ship_model import (
    SB3_DATA,
    ShipError,
    main,
    portable_command,
    portable_config,
    portable_model,
    ship,
)
from training.learning.train import train

COMMAND = "aco-env train --timesteps 512"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run started with :data:`COMMAND`."""
    return train(TrainConfig(logdir=tmp_path_factory.mktemp("runs"), **TINY), command=COMMAND)


@pytest.mark.training
def test_provenance__a_run_records_its_command_commit_date_and_versions(run_dir: Path) -> None:
    """provenance.json names the command, the checkout's commit (40 hex digits, or null outside git) and versions."""
    record = read_provenance(run_dir)
    assert record is not None and record["command"] == COMMAND
    assert record["commit"] is None or re.fullmatch(r"[0-9a-f]{40}", record["commit"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["started"])
    assert set(record["versions"]) == set(PACKAGES)


def test_command_line__quotes_the_arguments_for_a_shell() -> None:
    """The recorded command is aco-env and the arguments, quoted where a shell needs it."""
    assert command_line(["train", "--logdir", "my runs"]) == "aco-env train --logdir 'my runs'"


@pytest.mark.training
def test_ship__the_folder_carries_the_model_its_config_and_how_it_was_trained(run_dir: Path, tmp_path: Path) -> None:
    """The shipped folder plays like the run's model, under its deferral rule, and its README names the command."""
    shipped = ship(run_dir, tmp_path / "models" / "tiny", about="A tiny test model.")
    assert {p.name for p in shipped.iterdir()} >= {"model.zip", "config.json", "provenance.json", "README.md"}
    text = (shipped / "README.md").read_text()
    assert f"`{COMMAND}`" in text and "A tiny test model." in text
    config = json.loads((shipped / "config.json").read_text())
    assert agent_deferral(f"sb3:{shipped / 'model.zip'}") == config["deferral"]
    env, twin_env = ClusterSchedulingEnv("fleet5-synthetic"), ClusterSchedulingEnv("fleet5-synthetic")
    ours = play_episode(env, make_agent(f"sb3:{shipped / 'model.zip'}", env), seed=5000)
    theirs = play_episode(twin_env, make_agent(f"sb3:{run_dir / 'model.zip'}", twin_env), seed=5000)
    assert ours.metrics == theirs.metrics


@pytest.mark.training
def test_ship__refuses_an_existing_folder_and_a_run_without_provenance(run_dir: Path, tmp_path: Path) -> None:
    """An existing destination needs --replace; a run that records no command cannot be shipped (exit 1, one line)."""
    ship(run_dir, tmp_path / "m", about="x")
    with pytest.raises(ShipError, match="exists"):
        ship(run_dir, tmp_path / "m", about="x")
    ship(run_dir, tmp_path / "m", about="y", replace=True)
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("model.zip", "config.json"):
        (bare / name).write_bytes((run_dir / name).read_bytes())
    assert main([str(bare), str(tmp_path / "n"), "--about", "x"]) == 1
    (bare / "provenance.json").write_bytes((run_dir / "provenance.json").read_bytes())
    (bare / "model.zip").write_bytes(b"not a zip archive")
    assert main([str(bare), str(tmp_path / "n"), "--about", "x"]) == 1
    assert not (tmp_path / "n").exists()


def test_portable_command__ships_no_machine_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The log folder becomes the default, a file read here becomes relative, one read elsewhere is refused."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    command = f"aco-env train --logdir={tmp_path}/logs --init-from {tmp_path}/models/a.zip --seed 3"
    assert portable_command(command) == "aco-env train --logdir=runs --init-from models/a.zip --seed 3"
    config = portable_config({"logdir": str(tmp_path / "x"), "init_from": str(tmp_path / "models/a.zip"), "seed": 3})
    assert config == {"logdir": "runs", "init_from": "models/a.zip", "seed": 3}
    with pytest.raises(ShipError, match="--init-from"):
        portable_command(f"aco-env train --init-from {tmp_path.parent}/elsewhere.zip")


def _archive(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return out.getvalue()


def _entries(archive: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        return {name: opened.read(name) for name in opened.namelist()}


def test_portable_model__the_archive_names_the_default_log_folder_and_keeps_the_weights(tmp_path: Path) -> None:
    """tensorboard_log becomes runs/<run folder>, the other entries stay the same bytes; a portable archive is kept."""
    weights = bytes(range(256)) * 4
    data = {"tensorboard_log": str(tmp_path / "logs" / "fleet5-synthetic__maskable-ppo__0__1"), "gamma": 1.0}
    shipped = _entries(portable_model(_archive({SB3_DATA: json.dumps(data).encode(), "policy.pth": weights})))
    assert json.loads(shipped[SB3_DATA]) == {
        "tensorboard_log": "runs/fleet5-synthetic__maskable-ppo__0__1",
        "gamma": 1.0,
    }
    assert shipped["policy.pth"] == weights
    for portable in ({"tensorboard_log": "runs/x"}, {"tensorboard_log": None}, {}):
        archive = _archive({SB3_DATA: json.dumps(portable).encode(), "policy.pth": weights})
        assert portable_model(archive) == archive
    assert portable_model(_archive({"policy.pth": weights})) == _archive({"policy.pth": weights})


def test_shipped_models__name_no_machine_path() -> None:
    """Every models/*/model.zip records its log folder under runs/ (or none), as ship() writes it."""
    archives = sorted((ROOT / "models").glob("*/model.zip"))
    assert archives
    for path in archives:
        log = json.loads(_entries(path.read_bytes())[SB3_DATA]).get("tensorboard_log")
        assert log is None or log.startswith("runs/"), (path, log)


@pytest.mark.training
def test_init_from__a_run_starts_from_the_saved_weights_on_any_fleet_size(run_dir: Path, tmp_path: Path) -> None:
    """--init-from copies the policy's weights (5 nodes into a 3-node run); nothing trained, they are the same."""
    from sb3_contrib import MaskablePPO

    start = run_dir / "model.zip"
    options = dict(TINY, timesteps=0)
    started = train(TrainConfig(logdir=tmp_path, scenario="toy3", init_from=start, **options))
    theirs = MaskablePPO.load(start).policy.state_dict()
    ours = MaskablePPO.load(started / "model.zip").policy.state_dict()
    assert theirs.keys() == ours.keys()
    assert all(bool((theirs[key] == ours[key]).all()) for key in theirs)


@pytest.mark.training
def test_init_from__weights_that_do_not_fit_are_refused_naming_the_file(tmp_path: Path) -> None:
    """A flat (mlp) policy's weights do not fit another fleet size: one DataError naming --init-from and the file."""
    from training.errors import DataError

    flat = train(TrainConfig(logdir=tmp_path, policy="mlp", **TINY)) / "model.zip"
    with pytest.raises(DataError, match=rf"--init-from {flat}: its weights do not fit"):
        train(TrainConfig(logdir=tmp_path, scenario="toy3", policy="mlp", init_from=flat, **dict(TINY, timesteps=0)))
