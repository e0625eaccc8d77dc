"""`aco-env sweep`: the search space is checked before Ray starts; a real sweep of 4 configurations x 2
seeds is killed (SIGKILL of its process group) after its first trial finished, resumed, and leaves one
run directory per trial, the finished ones untouched, and best.json naming the summary's best trial."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.paths import ROOT
from training.errors import UsageError
from training.scale.sweeps.keys import parse_value, parse_values
from training.scale.sweeps.space import RandomAxis, SweepSpec, check_spec, parse_random

TINY = ["--timesteps", "128", "--set", "batch_size=64", "--set", "n_epochs=1", "--set", "eval_episodes=0",
        "--set", "curve_episodes=1", "--set", "curve_every=-1", "--set", "checkpoint_every=64"]
"""Options of trials that train in seconds: 128 steps, one validation episode, no final evaluation."""
FOUR_BY_TWO = ["--grid", "learning_rate=1e-4,3e-4", "--grid", "n_steps=64,128", "--seeds", "0,1"]
"""4 hyperparameter points x 2 seeds = 8 trials, one run directory each."""
FIRST_TRIAL_TIMEOUT_S = HANG_GUARD_S
"""Longest wait for the first trial to finish (a local Ray starts in ~10 s; a trial's process imports torch)."""
RUN_TIMEOUT_S = HANG_GUARD_S

pytest.importorskip("ray", reason="the ray extra is not installed")


def sweep_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "training.cli.main", "sweep", *args]


def run_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    return env


def kill_session(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the sweep's process group, then anything left of its session (Ray's workers have groups of their own)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=HANG_GUARD_S)
    deadline = time.monotonic() + 30
    while (left := session_processes(process.pid)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)


def session_processes(session: int) -> list[int]:
    """Live (not zombie) processes of session ``session``."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == session and fields[0] != "Z":  # fields: state, ppid, pgrp, session
                pids.append(int(stat.parent.name))
    return pids


def finished_trials(out: Path) -> list[Path]:
    return sorted((out / "trials").glob("*.json"))


def read_summary(out: Path) -> list[dict[str, str]]:
    with open(out / "summary.csv", newline="") as file:
        return list(csv.DictReader(file))


# --- the search space: checked before Ray starts ---------------------------------------------------------


def test_sweep_space__values_take_the_fields_types() -> None:
    """Grid values are YAML flow lists converted to the field's type; lists for list fields; hp.NAME as JSON."""
    assert parse_values("learning_rate", "1e-4,3e-4") == [1e-4, 3e-4]
    assert parse_values("n_steps", "64,128") == [64, 128]
    assert parse_values("net_arch", "[64,64],[128]") == [[64, 64], [128]]
    assert parse_values("hp.clip_range", "0.1,0.2") == [0.1, 0.2]
    assert parse_value("net_arch", "64,64") == [64, 64]
    assert parse_value("eval_agents", "first-fit,aco") == ["first-fit", "aco"]
    assert parse_random("n_steps", "64:512:log") == RandomAxis(low=64, high=512, log=True)
    assert parse_random("algo", "ppo,maskable-ppo") == RandomAxis(choices=("ppo", "maskable-ppo"))


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: parse_values("nosuch", "1,2"), ["nosuch", "not a training option", "learning_rate"]),
        (lambda: parse_values("n_steps", "64,1.5"), ["n_steps", "an integer", "1.5"]),
        (lambda: parse_values("logdir", "x"), ["logdir", "SWEEP_DIR/runs"]),
        (lambda: parse_random("learning_rate", "1e-3:1e-5"), ["learning_rate", "LOW < HIGH"]),
        (lambda: parse_random("learning_rate", "0:1e-3:log"), ["LOW > 0"]),
        (lambda: check_spec(SweepSpec(grid={"n_steps": [64, 0]})), ["n_steps", "must be >= 1"]),
        (lambda: check_spec(SweepSpec(grid={"algo": ["nosuch"]})), ["algo", "must be one of"]),
        (lambda: check_spec(SweepSpec(grid={"seed": [1]})), ["--seeds"]),
    ],
    ids=["unknown-key", "not-an-int", "sweep-owned", "empty-range", "log-of-zero", "out-of-range", "bad-choice",
         "seed-axis"],
)
def test_sweep_space__mistakes_are_usage_errors_naming_the_key(call: object, words: list[str]) -> None:
    """An unknown key, a value of the wrong type, range or choice: a UsageError naming the key."""
    with pytest.raises(UsageError) as error:
        call()  # type: ignore[operator]
    assert all(word in str(error.value) for word in words), str(error.value)


def test_sweep_space__spec_round_trips_and_counts_trials() -> None:
    """sweep.json reads back equal; trials = grid combinations x seeds x samples; seed is a grid axis of Tune's."""
    spec = SweepSpec(base={"timesteps": 128}, grid={"learning_rate": [1e-4, 3e-4], "n_steps": [64, 128]},
                     random={"ent_coef": RandomAxis(low=0.001, high=0.1, log=True)}, seeds=(0, 1), samples=2)
    assert SweepSpec.from_json(spec.to_json()) == spec
    assert spec.trials == 16 and spec.swept == ["learning_rate", "n_steps", "sample", "ent_coef", "seed"]
    space = spec.param_space()
    assert space["seed"] == {"grid_search": [0, 1]} and space["n_steps"] == {"grid_search": [64, 128]}


def resolved_trials(spec: SweepSpec) -> list[dict[str, object]]:
    """The trial configs Tune makes of ``spec``'s space (its variant generator, as ``Tuner.fit`` uses it)."""
    from ray.tune.experiment import Experiment
    from ray.tune.search import BasicVariantGenerator

    generator = BasicVariantGenerator()
    generator.add_configurations([Experiment("space", lambda config: None, config=spec.param_space(), num_samples=1)])
    trials = []
    while (trial := generator.next_trial()) is not None:
        trials.append(dict(trial.config))
    return trials


def test_sweep_space__random_draws_are_seeded_and_shared_by_every_seed_of_a_sample() -> None:
    """3 samples x 2 seeds: each sample's values are the same for both seeds and are the spec's own draws;
    the same search seed draws the same values, another seed others; integers stay integers in range."""
    random = {"learning_rate": RandomAxis(low=1e-5, high=1e-3, log=True), "n_steps": RandomAxis(low=64, high=512),
              "ent_coef": RandomAxis(choices=(0.0, 0.01))}
    spec = SweepSpec(random=random, seeds=(0, 1), samples=3, search_seed=7)
    trials = resolved_trials(spec)
    assert len(trials) == spec.trials == 6
    draws = spec.draws()
    for trial in trials:
        assert {key: trial[key] for key in random} == draws[int(trial["sample"])]  # type: ignore[call-overload]
    assert sorted((t["sample"], t["seed"]) for t in trials) == [(k, s) for k in range(3) for s in (0, 1)]
    assert draws == SweepSpec(random=random, seeds=(0, 1), samples=3, search_seed=7).draws()
    assert draws != SweepSpec(random=random, seeds=(0, 1), samples=3, search_seed=8).draws()
    assert all(isinstance(d["n_steps"], int) and 64 <= d["n_steps"] <= 512 for d in draws)
    assert all(1e-5 <= d["learning_rate"] <= 1e-3 and d["ent_coef"] in (0.0, 0.01) for d in draws)


def test_sweep_cli__a_bad_key_is_one_line_before_ray_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`aco-env sweep --grid nosuch=1`: exit 2, one line naming the key, no sweep folder (in-process: no Ray)."""
    from training.cli.main import main

    code = main(["sweep", "--grid", "nosuch=1,2", "--out", str(tmp_path / "sweep")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and lines[-1].startswith("aco-env sweep: error: nosuch:"), lines
    assert not (tmp_path / "sweep").exists()


def test_sweep_cli__another_sweep_in_out_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--out holding a sweep with another search space: exit 2 saying how to resume it; --resume takes no space."""
    from training.cli.main import main

    out = tmp_path / "sweep"
    out.mkdir()
    (out / "sweep.json").write_text(SweepSpec(grid={"n_steps": [64]}).to_json())
    assert main(["sweep", "--grid", "n_steps=128", "--out", str(out)]) == 2
    assert f"aco-env sweep --resume {out}" in capsys.readouterr().err
    assert main(["sweep", "--resume", str(out), "--grid", "n_steps=128"]) == 2
    assert "keeps its options" in capsys.readouterr().err


# --- a real sweep, killed and resumed ------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.subprocess
@pytest.mark.training
@pytest.mark.slow  # 75-133 s here; the default suite's end-to-end sweep is the cluster's (test_ray_cluster.py)
def test_sweep__killed_and_resumed_finishes_with_one_run_directory_per_trial(tmp_path: Path) -> None:
    """Acceptance: 4 points x 2 seeds, SIGKILLed after >= 1 trial finished, resumed: 8 run dirs, done ones untouched."""
    out = tmp_path / "sweep"
    log = tmp_path / "first.log"
    with log.open("wb") as output:
        process = subprocess.Popen(sweep_command(*FOUR_BY_TWO, *TINY, "--out", str(out)), cwd=ROOT, env=run_env(),
                                   stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + FIRST_TRIAL_TIMEOUT_S
        while not finished_trials(out):
            assert process.poll() is None, log.read_text()
            if time.monotonic() > deadline:  # the hang guard (tests/hang_guard.py), not a speed check
                pytest.fail(f"hung: no trial finished in {FIRST_TRIAL_TIMEOUT_S} s:\n{log.read_text()}")
            time.sleep(0.2)
    finally:
        kill_session(process)
    done_before = {path.stem: json.loads(path.read_text()) for path in finished_trials(out)}
    assert 1 <= len(done_before) < 8, f"kill came too late: {len(done_before)} of 8 trials had finished"
    models = {trial: Path(record["run_dir"]) / "model.zip" for trial, record in done_before.items()}
    saved = {trial: model.stat().st_mtime_ns for trial, model in models.items()}

    resumed = subprocess.run(sweep_command("--resume", str(out)), cwd=ROOT, env=run_env(), capture_output=True,
                             text=True, timeout=RUN_TIMEOUT_S)

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    rows = read_summary(out)
    assert len(rows) == 8 and {row["status"] for row in rows} == {"finished"}, rows
    assert {(row["learning_rate"], row["n_steps"], row["seed"]) for row in rows} == {
        (lr, n, seed) for lr in ("0.0001", "0.0003") for n in ("64", "128") for seed in ("0", "1")}
    run_dirs = sorted((out / "runs").iterdir())
    assert len(run_dirs) == 8 and sorted(Path(row["run_dir"]) for row in rows) == run_dirs
    for run_dir in run_dirs:
        assert (run_dir / "model.zip").is_file() and (run_dir / "config.json").is_file(), run_dir
        assert list((run_dir / "tb_1").glob("events.out.tfevents.*")), run_dir
    assert {trial: model.stat().st_mtime_ns for trial, model in models.items()} == saved, "a finished trial re-ran"
    best = json.loads((out / "best.json").read_text())
    winner = min(rows, key=lambda row: float(row["objective_usd"]))
    assert best["trial_id"] == winner["trial_id"] and best["run_dir"] == winner["run_dir"]
    assert best["objective_usd"] == pytest.approx(float(winner["objective_usd"]))
    assert best["config"]["learning_rate"] == float(winner["learning_rate"])
    assert "resuming the sweep" in resumed.stderr


@pytest.mark.ray
@pytest.mark.subprocess
@pytest.mark.training
@pytest.mark.slow  # 60-128 s here: two Ray start-ups and trial processes importing torch
def test_sweep__ctrl_c_says_how_to_resume_and_the_resume_finishes(tmp_path: Path) -> None:
    """Ctrl-C: a short and a long trial, SIGINT after the short one: exit 130 naming --resume; resumed: 2 runs."""
    out = tmp_path / "sweep"
    command = sweep_command("--grid", "timesteps=64,12288", *TINY[2:], "--set", "n_steps=64",
                            "--set", "checkpoint_every=256", "--out", str(out))
    process = subprocess.Popen(command, cwd=ROOT, env=run_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + FIRST_TRIAL_TIMEOUT_S
        while not finished_trials(out) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        _, stderr = process.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        kill_session(process)
    assert process.returncode == 130, stderr
    assert f"continue with: aco-env sweep --resume {out}" in stderr, stderr
    assert not (out / "best.json").exists()
    [short] = finished_trials(out)

    resumed = subprocess.run(sweep_command("--resume", str(out)), cwd=ROOT, env=run_env(), capture_output=True,
                             text=True, timeout=RUN_TIMEOUT_S)

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    rows = read_summary(out)
    assert sorted(row["timesteps"] for row in rows) == ["12288", "64"], rows
    assert {row["status"] for row in rows} == {"finished"} and short.stem in {row["trial_id"] for row in rows}
    assert len(list((out / "runs").iterdir())) == 2
    assert json.loads((out / "best.json").read_text())["trial_id"] == rows[0]["trial_id"]


@pytest.mark.ray
@pytest.mark.subprocess
@pytest.mark.training
@pytest.mark.slow  # about 60 s: a local Ray and four tiny trials
def test_sweep__asha_stops_the_worse_trials_and_finished_ones_keep_their_model(tmp_path: Path) -> None:
    """--scheduler asha, 4 learning rates, rungs at 128 and 256 of 512 steps: some trials are stopped at a rung
    (no model.zip, no record), the others finish (model.zip, record, status finished) and best.json names one."""
    out = tmp_path / "sweep"
    args = ["--grid", "learning_rate=1e-4,3e-4,1e-3,3e-3", "--timesteps", "512", "--scheduler", "asha",
            "--grace-period", "128", "--set", "batch_size=64", "--set", "n_epochs=1", "--set", "n_steps=64",
            "--set", "eval_episodes=0", "--set", "curve_episodes=1", "--set", "curve_every=128", "--out", str(out)]
    result = subprocess.run(sweep_command(*args), cwd=ROOT, env=run_env(), capture_output=True, text=True,
                            timeout=RUN_TIMEOUT_S)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = read_summary(out)
    assert len(rows) == 4 and {row["status"] for row in rows} == {"finished", "stopped"}, rows
    for row in rows:
        finished = row["status"] == "finished"
        assert finished == (int(row["steps"]) == 512) == (Path(row["run_dir"]) / "model.zip").is_file(), row
        assert finished == (out / "trials" / f"{row['trial_id']}.json").is_file(), row
    assert json.loads((out / "best.json").read_text())["trial_id"] in {row["trial_id"] for row in rows}
