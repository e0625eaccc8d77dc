"""The twin's compiled core (digital_twin.native): the same episodes as the sources, used only while fresh."""

from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import aco_env  # noqa: F401  (registers the ids)
from aco_env.hindsight import scenario_of
from aco_env.registration import CLUSTER_SCHEDULING_ID
from digital_twin import DigitalTwin, native
from digital_twin.sim.deferral import NEW_FIT
from tests.hang_guard import HANG_GUARD_S
from tests.layers import LAYER_VARIABLE
from tests.paths import ROOT

# Scenarios with deferrals, spot interruptions, contention, waiting, utility terms and placement rules between them.
_SCENARIOS = ("fleet5-synthetic", "toy3", "fleet20-synthetic", "fleet5-utility", "fleet30-rules")


def play_digest(episodes: int = 3) -> str:
    """SHA-256 of everything a few episodes per scenario produce: observations, rewards, infos, event logs.

    Random valid actions (the defer action included) from a seeded generator, through the env;
    then the event log of a first-fit twin on one episode of each scenario.
    """
    digest = hashlib.sha256()
    for name in _SCENARIOS:
        env = gym.make(CLUSTER_SCHEDULING_ID, scenario=name)
        rng = np.random.default_rng(0)
        for seed in range(episodes):
            observation, info = env.reset(seed=seed)
            done = False
            while not done:
                for key in sorted(observation):
                    digest.update(observation[key].tobytes())
                valid = np.flatnonzero(observation["action_mask"])
                observation, reward, terminated, truncated, info = env.step(int(rng.choice(valid)))
                digest.update(repr((reward, terminated, truncated, sorted(info["objective"].items()))).encode())
                done = terminated or truncated
            digest.update(repr(sorted(info["episode_metrics"].items())).encode())
        twin = DigitalTwin(scenario_of(env).make_spec(np.random.default_rng(1)), record_events=True)
        twin.reset(np.random.default_rng(1))
        while not twin.done:  # first fit, deferring (new-fit) every other decision that has a choice
            mask = twin.feasible_mask()
            if len(twin.decisions()) % 2 and mask.count(True) > 1:
                twin.defer(NEW_FIT)
            else:
                twin.place(mask.index(True))
        digest.update(repr((twin.event_log, twin.decisions(), twin.objective_dict())).encode())
    return digest.hexdigest()


@pytest.mark.skipif(native.status != native.COMPILED, reason=f"no compiled core: {native.reason}")
@pytest.mark.subprocess
def test_compiled_and_pure_python_twins_play_identical_episodes() -> None:
    for name in native.COMPILED_MODULES:
        importlib.import_module(f"digital_twin.{name}")
    compiled_modules = [sys.modules[f"digital_twin.{name}"].__file__ for name in native.COMPILED_MODULES]
    assert all(str(path).endswith(".so") for path in compiled_modules), compiled_modules
    built = {  # every extension of the build but the shared library: the sim package, nothing else
        ".".join(path.relative_to(native.BUILD_DIR / "digital_twin").parts).split(".cpython")[0]
        for path in native.BUILD_DIR.rglob("*.so")
        if "__mypyc" not in path.name
    }
    assert built == set(native.COMPILED_MODULES) and all(name.startswith("sim.") for name in built)
    code = (
        "from digital_twin import native; assert native.status == native.PURE, native.reason; "
        "import digital_twin.sim.event_loop as loop; assert loop.__file__.endswith('.py'), loop.__file__; "
        "from tests.digital_twin.test_native_core import play_digest; print(play_digest())"
    )
    pure = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, native.PURE_PYTHON_ENV: "1"},
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=True,
    )
    assert pure.stdout.strip() == play_digest()


def test_a_stale_build_is_never_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    digest_file = tmp_path / "SOURCES.sha256"
    digest_file.write_text("0" * 64 + "\n")  # the digest of other sources
    monkeypatch.setattr(native, "DIGEST_FILE", digest_file)
    monkeypatch.setattr(native, "status", native.status)
    monkeypatch.setattr(native, "reason", native.reason)
    monkeypatch.delenv(native.PURE_PYTHON_ENV, raising=False)
    package_path = ["sources"]
    with pytest.warns(RuntimeWarning, match="older than the sources"):
        native.decide()
    native.activate(package_path)
    assert package_path == ["sources"]
    assert native.status == native.PURE


def test_a_fresh_build_goes_first_unless_pure_python_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest_file = tmp_path / "SOURCES.sha256"
    digest_file.write_text(native.source_digest() + "\n")
    monkeypatch.setattr(native, "DIGEST_FILE", digest_file)
    monkeypatch.setattr(native, "_built_for_this_interpreter", lambda: True)
    monkeypatch.setattr(native, "status", native.status)
    monkeypatch.setattr(native, "reason", native.reason)
    monkeypatch.setenv(native.PURE_PYTHON_ENV, "1")
    package_path = ["sources"]
    native.decide()
    native.activate(package_path)
    assert (package_path, native.status) == (["sources"], native.PURE)
    monkeypatch.delenv(native.PURE_PYTHON_ENV)
    native.decide()
    native.activate(package_path)
    build = native.BUILD_DIR / "digital_twin" / native.COMPILED_PACKAGE
    assert (package_path, native.status) == ([str(build), "sources"], native.COMPILED)


def test_the_digest_changes_with_any_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "digital_twin"
    (package / "workloads").mkdir(parents=True)
    (package / "twin.py").write_text("x = 1\n")
    (package / "workloads" / "synthetic.py").write_text("y = 2\n")
    monkeypatch.setattr(native, "PACKAGE_DIR", package)
    monkeypatch.setattr(native, "BUILD_DIR", package / "_compiled")
    before = native.source_digest()
    (package / "_compiled").mkdir()
    (package / "_compiled" / "generated.py").write_text("z = 3\n")  # the build's own files do not count
    assert native.source_digest() == before
    (package / "workloads" / "synthetic.py").write_text("y = 3\n")
    assert native.source_digest() != before


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="CI builds the compiled core; elsewhere it is optional")
def test_ci_runs_the_compiled_twin() -> None:
    assert native.status == native.COMPILED, native.reason


@pytest.mark.skipif(native.status != native.COMPILED, reason=f"no compiled core: {native.reason}")
@pytest.mark.subprocess
def test_doctests_of_the_compiled_modules_pass_on_their_sources() -> None:
    root = ROOT
    files = [f"digital_twin/{name.replace('.', '/')}.py" for name in native.COMPILED_MODULES]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--doctest-modules", *files],
        cwd=root,
        env={**{k: v for k, v in os.environ.items() if k != LAYER_VARIABLE}, native.PURE_PYTHON_ENV: "1"},
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "no tests ran" not in result.stdout, result.stdout
