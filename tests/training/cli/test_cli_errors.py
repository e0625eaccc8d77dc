"""The real ``aco-env`` command line on user mistakes: one line, the documented exit code, no traceback,
and nothing run or written before every input and output is checked."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import scenarios
from tests.hang_guard import HANG_GUARD_S
from tests.isolated_cli import run_cli
from tests.paths import ROOT

pytestmark = pytest.mark.subprocess  # every test here starts a child process


def real_cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m training.cli.main ARGS``: the command line as a user starts it."""
    return subprocess.run(
        [sys.executable, "-m", "training.cli.main", *args], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=HANG_GUARD_S,
    )


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``aco-env ARGS`` in a forked child of this worker (tests/isolated_cli.py), ``env`` set in the child.

    The same ``main`` as :func:`real_cli` with the same outputs and exit code, without an
    interpreter start per call; the entry point itself is :func:`real_cli`'s (the tests of
    ``--version``, no command and ``--debug``).
    """
    outcome = run_cli(list(args), timeout_s=HANG_GUARD_S, memory_bytes=8 << 30, env=env or {})
    assert outcome.code is not None, outcome
    return subprocess.CompletedProcess(list(args), outcome.code, outcome.stdout, outcome.stderr)


def assert_one_line_error(result: subprocess.CompletedProcess, code: int, *fragments: str) -> None:
    """Exit ``code``, stderr one ``aco-env ...: error: ...`` line naming every fragment, no traceback."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if ": error: " in line]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])


def test_cli__no_command_prints_the_command_list_and_exits_2() -> None:
    """`aco-env` alone lists every command (usage error code, as click does)."""
    result = real_cli()
    assert result.returncode == 2
    for command in ("run", "train", "evaluate", "validate", "replay", "bench", "reproduce", "scenarios"):
        assert command in result.stdout


def test_cli__version_and_exit_codes_in_help() -> None:
    """`--version` prints the installed version; `--help` documents every exit code."""
    version = real_cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("aco-env ")
    help_text = real_cli("evaluate", "--help").stdout
    for code in ("0 ", "1 ", "2 ", "3 ", "130"):
        assert f"  {code}" in help_text
    assert "--debug" in help_text


@pytest.mark.parametrize(("args", "code", "fragments"), [
    (["--agents", "nosuch"], 2, ["unknown agent 'nosuch'", "first-fit"]),
    (["--agents", ","], 2, ["--agents is empty"]),
    (["--agents", "first-fit,first-fit"], 2, ["first-fit more than once"]),
    (["--episodes", "0"], 2, ["--episodes", "must be >= 1"]),
    (["--episodes", "-1"], 2, ["--episodes", "must be >= 1"]),
    (["--scenario", "nosuch"], 2, ["no bundled scenario", "fleet5-synthetic"]),
    (["--agents", "sb3:nosuch:model.zip"], 2, ["unknown algorithm 'nosuch'", "maskable-ppo"]),
    (["--agents", "sb3:maskable-ppo:/no/such/model.zip"], 1, ["/no/such/model.zip", "no such model file"]),
    (["--background-cpu-pct", "150"], 2, ["--background-cpu-pct", "must be in [0, 100]"]),
    (["--background-cpu-pct", "nan"], 2, ["--background-cpu-pct", "must be in [0, 100]"]),
    (["--background-cpu-pct", "high"], 2, ["--background-cpu-pct", "expected a percent"]),
    (["--backend", "threads"], 2, ["--backend", "invalid choice", "'ray'"]),
    (["--address", "127.0.0.1:6379"], 2, ["--address names a Ray cluster", "--backend ray, not processes"]),
    (["--backend", "serial", "--address", "127.0.0.1:6379"], 2, ["--address", "not serial"]),
    (["--backend", "ray", "--address", "headnode"], 2, ["--address headnode", "HOST:PORT"]),
    (["--split", "holdout"], 2, ["--split", "invalid choice", "'test'"]),
    (["--split", "test", "--seed", "3"], 2, ["--seed", "not allowed with argument --split"]),
    (["--split", "test", "--episodes", "10001"], 2, ["--split test", "leave the test seeds", "<= 10,000"]),
    (["--baseline", "aco"], 2, ["--baseline", "'aco' is not one of --agents"]),
])
def test_evaluate__usage_and_data_errors_are_one_line(args: list[str], code: int, fragments: list[str]) -> None:
    """Unknown or empty agents, bad counts, unknown scenarios and algorithms: one line, exit 2 (1 for files)."""
    result = cli("evaluate", "--agents", "first-fit", "--episodes", "1", *args)
    assert_one_line_error(result, code, *fragments)


def test_evaluate__a_ray_address_where_no_cluster_answers_fails_at_once(tmp_path: Path) -> None:
    """--backend ray --address HOST:PORT with nothing listening: one line naming the address, exit 1, no files."""
    import socket

    pytest.importorskip("ray", reason="the ray extra is not installed")
    with socket.socket() as probe:  # a port nothing listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        result = cli("evaluate", "--agents", "first-fit", "--episodes", "1", "--backend", "ray",
                     "--address", f"127.0.0.1:{port}", "--out", str(tmp_path))
    assert_one_line_error(result, 1, f"address 127.0.0.1:{port}", "no Ray cluster answers there", "ray start --head")
    assert not (tmp_path / "results.json").exists()


def test_evaluate__a_truncated_model_zip_is_a_data_error(tmp_path: Path) -> None:
    """A model zip cut short is named as truncated or corrupt, exit 1, before any episode runs."""
    model = tmp_path / "model.zip"
    with zipfile.ZipFile(model, "w") as archive:
        archive.writestr("data", "x" * 10_000)
        archive.writestr("policy.pth", os.urandom(10_000))
    model.write_bytes(model.read_bytes()[:-200])
    result = cli("evaluate", "--agents", f"sb3:ppo:{model}", "--episodes", "1")
    assert_one_line_error(result, 1, str(model))


def test_evaluate__a_model_without_config_needs_its_algorithm(tmp_path: Path) -> None:
    """sb3:PATH without config.json beside it says to write sb3:ALGO:PATH (usage error)."""
    model = tmp_path / "model.zip"
    with zipfile.ZipFile(model, "w") as archive:
        archive.writestr("data", "{}")
    result = cli("evaluate", "--agents", f"sb3:{model}", "--episodes", "1")
    assert_one_line_error(result, 2, "no config.json", "sb3:ALGO:PATH")


def test_evaluate__missing_scenario_data_names_the_variable(tmp_path: Path) -> None:
    """A real-data scenario without its traces: exit 1, naming the file and ACO_ENV_TRACES."""
    env = {k: v for k, v in os.environ.items() if k != "ACO_ENV_TRACES"}
    result = subprocess.run(
        [sys.executable, "-m", "training.cli.main", "evaluate", "--scenario", "fleet5-alibaba2018", "--agents",
         "first-fit", "--episodes", "1"],
        capture_output=True, text=True, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, timeout=HANG_GUARD_S,
    )
    assert_one_line_error(result, 1, "ACO_ENV_TRACES", "needs data that is not present")


def test_evaluate__an_output_that_cannot_be_written_fails_before_any_episode(tmp_path: Path) -> None:
    """--out and --tensorboard under a file: exit 1 at once (no episode played, nothing written)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for option in ("--out", "--tensorboard"):
        result = cli("evaluate", "--agents", "first-fit", "--episodes", "1", option, str(blocker / "sub"),
                     "--out" if option == "--tensorboard" else "--seed", str(tmp_path / "ok") if option ==
                     "--tensorboard" else "0")
        assert_one_line_error(result, 1, option, "cannot write there")
        assert "episode" not in result.stderr.replace("error", "")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_evaluate__a_read_only_out_folder_fails_at_once(tmp_path: Path) -> None:
    """A folder without write permission is refused before the first episode."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    result = cli("evaluate", "--agents", "first-fit", "--episodes", "1", "--out", str(folder))
    assert_one_line_error(result, 1, "--out", "cannot write there")


def test_cli__debug_shows_the_traceback() -> None:
    """--debug (or ACO_ENV_DEBUG=1) prints the traceback above the one-line error."""
    for args, env in ((["--debug"], None), ([], {"ACO_ENV_DEBUG": "1"})):
        result = real_cli("evaluate", *args, "--agents", "nosuch") if env is None else cli(
            "evaluate", "--agents", "nosuch", env=env
        )
        assert result.returncode == 2 and "Traceback" in result.stderr, result.stderr


def test_evaluate__logs_are_free_of_progress_redraws(tmp_path: Path) -> None:
    """Off a terminal: no carriage returns, one summary line for the stage, the leaderboard on stdout."""
    result = cli("evaluate", "--agents", "first-fit,cheapest", "--episodes", "2", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr + result.stdout
    assert [line for line in result.stderr.splitlines() if "episodes in" in line] == [
        next(line for line in result.stderr.splitlines() if "episodes in" in line)
    ]
    assert "evaluate fleet5-synthetic: 4 episodes in" in result.stderr
    assert (tmp_path / "results.json").exists()


def test_validate__valid_but_data_missing_exits_3_and_names_the_file() -> None:
    """A valid scenario whose traces are absent is not OK: MISSING DATA, the file, exit 3."""
    env = {k: v for k, v in os.environ.items() if k != "ACO_ENV_TRACES"}
    result = subprocess.run(
        [sys.executable, "-m", "training.cli.main", "validate", "fleet5-alibaba2018"],
        capture_output=True, text=True, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, timeout=HANG_GUARD_S,
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout.startswith("MISSING DATA fleet5-alibaba2018") and "ACO_ENV_TRACES" in result.stdout
    present = cli("validate", "fleet5-synthetic")
    assert present.returncode == 0 and present.stdout.startswith("OK fleet5-synthetic")


def test_validate__an_invalid_file_beats_missing_data(tmp_path: Path) -> None:
    """With an invalid file and a data-missing one, the exit code is 1 (the worst)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nname: bad\n")
    env = {k: v for k, v in os.environ.items() if k != "ACO_ENV_TRACES"}
    result = subprocess.run(
        [sys.executable, "-m", "training.cli.main", "validate", "fleet5-alibaba2018", str(bad)],
        capture_output=True, text=True, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, timeout=HANG_GUARD_S,
    )
    assert result.returncode == 1
    assert "MISSING DATA" in result.stdout and "INVALID" in result.stdout


def test_validate__warns_of_jobs_that_fit_no_node(tmp_path: Path) -> None:
    """A GPU job on a cpu-only fleet: OK (the file is valid), with a warning naming the job, exit 0."""
    path = tmp_path / "cpu-fleet.yaml"
    path.write_text(
        "schema_version: 2\nname: cpu-fleet\nhorizon_s: 3600\nfleet:\n  nodes:\n"
        "    - {node_id: a, arch: x86_64, instance: on-demand, cpu_cores: 8, mem_gb: 32, price_per_hour_usd: 0.2}\n"
        "telemetry: {reader: constant, cpu_pct: 10, mem_pct: 10, tick_s: 300}\n"
        "workload:\n  source: jobs\n  jobs:\n"
        "    - {job_id: g1, arrival_s: 0, duration_s: 600, workload: batch, cpu_cores: 2, mem_gb: 4, gpu_count: 1}\n"
        "    - {job_id: c1, arrival_s: 10, duration_s: 600, workload: batch, cpu_cores: 2, mem_gb: 4}\n"
    )
    result = cli("validate", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"OK {path}")
    assert "warning: 1 of 2 jobs of the episode fit no node of the fleet" in result.stdout and "'g1'" in result.stdout


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (["bench", "--only", "nosuch"], 2, "unknown section(s) nosuch"),
    (["reproduce", "--tier", "T9.9"], 2, "unknown tier(s) T9.9"),
    (["reproduce", "--seeds", "0"], 2, "must be >= 1"),
])
def test_bench_and_reproduce__bad_options_are_usage_errors(args: list[str], code: int, fragment: str) -> None:
    """Unknown sections and tiers and a zero seed count: one line, exit 2."""
    assert_one_line_error(cli(*args), code, fragment)


def test_bench__an_unwritable_out_file_fails_before_measuring(tmp_path: Path) -> None:
    """--out under a file fails at once with exit 1 (no section runs)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = cli("bench", "--quick", "--only", "twin", "--out", str(blocker / "bench.json"))
    assert_one_line_error(result, 1, "--out")
    assert "twin:" not in result.stdout


def test_bench_quick_scale__reports_decisions_per_job(tmp_path: Path) -> None:
    """`aco-env bench --quick --only scale` writes decisions per job for first-fit and ACO."""
    import json

    out = tmp_path / "bench.json"
    result = cli("bench", "--quick", "--only", "scale", "--out", str(out))
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    keys = set(data["decisions_per_job"])
    assert {"fleet5-synthetic/first-fit/next-event", "fleet5-synthetic/aco/new-fit"} <= keys
    assert all(value >= 1.0 for value in data["decisions_per_job"].values())
    assert data["aco_vs_first_fit_wall"]["fleet5-synthetic"] > 0


def test_scenarios__every_bundled_name_is_listed() -> None:
    """`aco-env scenarios` lists each bundled scenario."""
    result = cli("scenarios")
    assert result.returncode == 0
    for name in scenarios.names():
        assert name in result.stdout


def test_evaluate__a_bad_oracle_memory_budget_is_a_usage_error() -> None:
    """ACO_ENV_ORACLE_MEMORY_GB=lots: one line naming the variable, exit 2, before any episode."""
    result = cli("evaluate", "--agents", "oracle", "--episodes", "1", env={"ACO_ENV_ORACLE_MEMORY_GB": "lots"})
    assert_one_line_error(result, 2, "ACO_ENV_ORACLE_MEMORY_GB")


def test_evaluate__an_oracle_over_its_memory_budget_decomposes_with_a_warning(tmp_path: Path) -> None:
    """With a budget too small for the exact programs the oracle decomposes: warned, bound still below first-fit."""
    import json

    result = cli("evaluate", "--agents", "first-fit,oracle", "--episodes", "1", "--out", str(tmp_path),
                 env={"ACO_ENV_ORACLE_MEMORY_GB": "0.001"})
    assert result.returncode == 0, result.stderr
    assert "above the memory budget: decomposed" in result.stderr
    document = json.loads((tmp_path / "results.json").read_text())
    assert set(document["agents"]) == {"first-fit", "oracle"} and not document.get("skipped")
    oracle_row = document["agents"]["oracle"]["per_episode"][0]
    first_fit_row = document["agents"]["first-fit"]["per_episode"][0]
    assert oracle_row["objective_lower_bound_usd"] <= first_fit_row["objective_usd"]


MACHINE_SAMPLE = "fleet5-alibaba2018-machines"


@pytest.mark.skipif(bool(scenarios.load(MACHINE_SAMPLE).missing_data()), reason="real traces not present")
def test_evaluate__a_trace_cleaning_note_appears_once_for_all_agents(tmp_path: Path) -> None:
    """The machine-usage sample's gap filling is logged once per load, not once per agent."""
    result = cli("evaluate", "--scenario", MACHINE_SAMPLE, "--agents", "first-fit,cheapest,aco",
                 "--episodes", "2", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("warning:") and "filled" in line]
    assert len(notes) == 1, result.stderr
