"""Scenario files: the bundled catalogue, bad files (named file and key), the CLI's validate/scenarios."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import scenarios
from aco_env.registration import CLUSTER_SCHEDULING_ID
from digital_twin import DigitalTwin
from digital_twin.scenario import Scenario, ScenarioError, load_scenario
from tests.helpers import first_fit, run_twin
from tests.paths import ROOT
from tests.toy3 import toy3_spec

REAL_DATA = [name for name in scenarios.names() if scenarios.load(name).data_files]
"""Bundled scenarios that read real traces from ACO_ENV_TRACES (the others ship their own data)."""
GOOD = yaml.safe_load((scenarios.CATALOGUE_DIR / "toy3.yaml").read_text())
FULL_SCALE = frozenset({"openb1523-alibaba2023", "spotgpu4278-alibaba2026"})
"""Bundled whole-cluster scenarios (thousands of nodes, 7,255 pods over 149 days): their full episode is slow."""


def aco_env_cli(*args: str) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess."""
    return subprocess.run([sys.executable, "-m", "training.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT)


def test_catalogue__lists_the_bundled_scenarios() -> None:
    """The default, the toy and the real-data scenarios (one per trace family) are bundled."""
    assert set(scenarios.names()) >= {"fleet5-synthetic", "toy3", "fleet5-alibaba2018",
                                      "fleet5-alibaba2018-machines", "gpu32-alibaba2023", "hpc-swf",
                                      "fleet5-planetlab", "vm5-azure2017", "fleet5-alibaba2017", "fleet5-azure-llm",
                                      "fleet5-synthetic-varied", "fleet5-synthetic-quiet"}


@pytest.mark.smoke
def test_toy3_yaml__is_the_hand_worked_instance() -> None:
    """scenarios/toy3.yaml builds exactly the spec of tests/toy3.py."""
    spec = scenarios.load("toy3").make_spec(np.random.default_rng(0))
    expected = toy3_spec()
    assert spec.fleet == expected.fleet and spec.jobs == expected.jobs
    np.testing.assert_array_equal(spec.telemetry.background_pct, expected.telemetry.background_pct)
    assert (spec.settings, spec.fixed_interruptions_s) == (expected.settings, expected.fixed_interruptions_s)


@pytest.mark.smoke
def test_default_scenario__same_seed_same_jobs_and_contention() -> None:
    """Per-episode jobs are seeded; background load reaches 60-90 % on some node during bursts."""
    scenario = scenarios.load("fleet5-synthetic")
    one = scenario.make_spec(np.random.default_rng(3)).jobs
    assert one == scenario.make_spec(np.random.default_rng(3)).jobs
    assert one != scenario.make_spec(np.random.default_rng(4)).jobs
    assert 30 <= len(one) <= 50
    background = scenario.telemetry.background_pct[:, :, 0]
    assert background.max() >= 60.0


def test_bundled_synthetic_trace__regenerates_byte_for_byte(tmp_path: Path) -> None:
    """The committed script with its fixed seed reproduces the bundled telemetry file."""
    from scenarios.make_synthetic_telemetry import OUTPUT, main

    main(["--out", str(tmp_path / "trace.csv")])
    assert (tmp_path / "trace.csv").read_bytes() == OUTPUT.read_bytes()


def test_bundled_synthetic_trace__matches_the_alibaba_statistics() -> None:
    """Mean, spread, autocorrelation and daily swing are near the Alibaba 2018 mean trace's."""
    cpu = np.loadtxt(scenarios.CATALOGUE_DIR / "data" / "synthetic_dc_mean_300s.csv", delimiter=",", skiprows=1)[:, 0]
    centred = cpu - cpu.mean()
    lag1 = (centred[1:] * centred[:-1]).mean() / centred.var()
    profile = cpu[: len(cpu) // 288 * 288].reshape(-1, 288).mean(axis=0)
    assert abs(cpu.mean() - 40.2) < 3 and abs(cpu.std() - 9.8) < 1.5
    assert abs(lag1 - 0.81) < 0.08
    assert abs((profile.max() - profile.min()) / 2 - 14.5) < 3


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n in FULL_SCALE
        else pytest.param(n, marks=pytest.mark.heavy) if "500" in n  # 500 nodes: seconds of CPU (the rest layer)
        else n
        for n in scenarios.names()
    ],
)
def test_every_bundled_scenario__runs_a_full_episode(name: str) -> None:
    """Each bundled scenario (real-data ones when ACO_ENV_TRACES has the data) runs to its end."""
    scenario = scenarios.load(name)
    if scenario.missing_data():
        pytest.skip(f"data not present: {scenario.missing_data()[0]}")
    spec = scenario.make_spec(np.random.default_rng(0))
    run_twin(DigitalTwin(spec), first_fit, seed=0, check_every=max(1, len(spec.jobs) // 100))


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def _with(path: tuple, value: object) -> dict:
    """A deep copy of the good toy scenario with ``value`` at key ``path`` (``...`` deletes it)."""
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


BAD_SCENARIOS = [
    (_with(("colour",), "blue"), r"top level: unknown key\(s\) \['colour'\]"),
    (_with(("spot", "recovery"), 5), r"spot: unknown key\(s\) \['recovery'\]"),
    (_with(("weights", "sla_usd"), 1), r"weights: unknown key\(s\) \['sla_usd'\]"),
    (_with(("horizon_s",), "long"), r"horizon_s: expected a number, got str"),
    (_with(("horizon_s",), -5), r"horizon_s: must be a finite number > 0, got -5"),
    (_with(("horizon_s",), ...), r"horizon_s: is required"),
    (_with(("schema_version",), 3), r"schema_version: unsupported version 3"),
    (_with(("name",), ...), r"name: is required"),
    (_with(("cost_model",), "per-core"), r"cost_model: must be one of"),
    (_with(("job_budget",), 0), r"job_budget: must be >= 1"),
    (_with(("queue_ttl_s",), True), r"queue_ttl_s: expected a number, got a boolean"),
    (_with(("weights", "eviction_usd"), -1), r"weights: objective weight eviction_usd must be"),
    (_with(("fleet", "nodes", 0, "cpu_cores"), 0), r"bad.yaml: fleet.nodes\[0\]: node 'n0': cpu_cores must be"),
    (_with(("fleet", "nodes", 1, "cores"), 4), r"fleet.nodes\[1\]: unknown key\(s\) \['cores'\]"),
    (_with(("fleet", "preset"), "default-5"), r"fleet: give exactly one of"),
    (_with(("telemetry", "reader"), "magic"), r"telemetry.reader: unknown reader 'magic'"),
    (_with(("telemetry", "cpu_pct"), [50, 10]), r"cpu_pct must be one number or a list of 3"),
    (_with(("telemetry", "tick"), 600), r"telemetry: unknown option\(s\) \['tick'\]"),
    (_with(("workload", "source"), "kafka"), r"workload.source: unknown source 'kafka'"),
    (_with(("workload", "jobs", 2, "priority"), 0), r"jobs\[2\]: job 'D': priority must be"),
    (_with(("workload", "jobs", 0, "cpu"), 1), r"jobs\[0\]: unknown key\(s\) \['cpu'\]"),
    (_with(("workload", "jobs", 1, "workload"), "interactive"), r"job 'B': workload 'interactive'"),
    (_with(("spot", "fixed_interruptions_s"), [[5], [], []]), r"node 'n0' is on-demand"),
    ("schema_version: 1\nname: [unclosed\n", r"not valid YAML"),
    ("- just\n- a list\n", r"top level: expected a mapping"),
]


@pytest.mark.parametrize(("data", "message"), BAD_SCENARIOS)
def test_bad_scenario__error_names_the_file_and_key(tmp_path: Path, data: object, message: str) -> None:
    """Each malformed scenario fails at load or first build with a ScenarioError naming file and key."""
    path = _write(tmp_path, data)
    with pytest.raises(ScenarioError, match=message) as info:
        load_scenario(path).make_spec(np.random.default_rng(0))
    assert str(path) in str(info.value)


def test_bad_scenario__missing_data_file_is_named(tmp_path: Path) -> None:
    """A telemetry path that does not exist is reported with the file's path."""
    data = yaml.safe_load((scenarios.CATALOGUE_DIR / "fleet5-synthetic.yaml").read_text())
    data["telemetry"]["path"] = "no/such/trace.csv"
    path = _write(tmp_path, data)
    with pytest.raises(ScenarioError, match=r"no/such/trace.csv"):
        load_scenario(path).make_spec(np.random.default_rng(0))


def test_bad_scenario__trace_shorter_than_horizon(tmp_path: Path) -> None:
    """A horizon longer than the trace is refused (no silent wrap-around)."""
    data = yaml.safe_load((scenarios.CATALOGUE_DIR / "fleet5-synthetic.yaml").read_text())
    data["telemetry"]["path"] = str(scenarios.CATALOGUE_DIR / "data" / "synthetic_dc_mean_300s.csv")
    data["horizon_s"] = 30 * 86_400
    path = _write(tmp_path, data)
    with pytest.raises(ScenarioError, match=r"bad.yaml.*(shorter|too short|wrap)"):
        load_scenario(path).make_spec(np.random.default_rng(0))


def test_bad_scenario__unset_traces_variable_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ACO_ENV_TRACES unset a real-data scenario loads, reports missing data, and says what to set."""
    monkeypatch.delenv("ACO_ENV_TRACES", raising=False)
    scenario = load_scenario(scenarios.path_of("fleet5-alibaba2018"))
    assert scenario.missing_data()
    with pytest.raises(ScenarioError, match=r"needs data that is not present.*set ACO_ENV_TRACES"):
        scenario.make_spec(np.random.default_rng(0))


@pytest.mark.subprocess
def test_cli_validate__bundled_files_pass_and_bad_files_fail(tmp_path: Path) -> None:
    """`aco-env validate` exits 0 on every bundled scenario whose data is here, 1 naming the key on a bad one.

    (A valid scenario whose trace is absent exits 3: tests/training/cli/test_cli_errors.py.)
    """
    present = [n for n in scenarios.names() if not scenarios.load(n).missing_data()]
    assert "fleet5-synthetic" in present  # bundled data needs no traces
    good = aco_env_cli("validate", *[str(scenarios.path_of(n)) for n in present])
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.count("OK ") == len(present)
    bad = aco_env_cli("validate", str(_write(tmp_path, BAD_SCENARIOS[0][0])))
    assert bad.returncode == 1
    assert "bad.yaml" in bad.stdout and "colour" in bad.stdout and "Traceback" not in bad.stderr


@pytest.mark.subprocess
def test_cli_validate__bad_data_row_is_named(tmp_path: Path) -> None:
    """A scenario whose trace has a bad row fails validation naming the trace file and line."""
    trace = tmp_path / "trace.csv"
    rows = ["cpu_util_percent,mem_util_percent"] + ["40,80"] * 60
    rows[7] = "40,abc"
    trace.write_text("\n".join(rows) + "\n")
    data = yaml.safe_load((scenarios.CATALOGUE_DIR / "fleet5-synthetic.yaml").read_text())
    data["telemetry"]["path"] = str(trace)
    data["telemetry"]["mapping"]["nodes"] = [{"offset": 0}] * 5
    result = aco_env_cli("validate", str(_write(tmp_path, data)))
    assert result.returncode == 1
    assert "trace.csv" in result.stdout and "line 8" in result.stdout, result.stdout


@pytest.mark.subprocess
def test_cli_scenarios__lists_names_data_presence_readers_and_sources() -> None:
    """`aco-env scenarios` prints every bundled scenario with its node count and data status, then every
    telemetry reader and workload source a scenario can name, on one line each with what it reads."""
    from digital_twin.scenario.sources import JOB_FILE_SOURCES, TRACE_READERS, describe_sources

    result = aco_env_cli("scenarios")
    assert result.returncode == 0
    for name in scenarios.names():
        assert name in result.stdout
    assert re.search(r"fleet5-synthetic +5 ", result.stdout)
    described = describe_sources()
    assert [n for n, _ in described["telemetry.reader"]] == [*TRACE_READERS, "constant"]
    built_in = ["synthetic", "workflows", "planted", "planted-priced", "jobs"]
    assert [n for n, _ in described["workload.source"]] == [*JOB_FILE_SOURCES, *built_in]
    for key, entries in described.items():
        for name, line in entries:
            assert line and "``" not in line, name
            row = rf"^{re.escape(key)} +{re.escape(name)} +{re.escape(line)}$"
            assert len(re.findall(row, result.stdout, re.M)) == 1, name
    assert re.search(r"^telemetry.reader +planetlab +Read a folder of PlanetLab", result.stdout, re.M)
    assert re.search(r"^workload.source +azure-vm +Read an Azure vmtable.csv", result.stdout, re.M)
    assert re.search(r"^workload.source +alibaba2017-batch +Read an Alibaba v2017", result.stdout, re.M)


@pytest.mark.skipif(not os.environ.get("ACO_ENV_TRACES"), reason="real traces not present")
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in FULL_SCALE else n for n in REAL_DATA]
)
def test_real_data_scenario__full_episode_through_the_env(name: str) -> None:
    """With ACO_ENV_TRACES set, each real-data scenario plays a full env episode."""
    import gymnasium as gym

    import aco_env  # noqa: F401

    scenario = scenarios.load(name)
    if scenario.missing_data():
        pytest.skip(f"data not present: {scenario.missing_data()[0]}")
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario=name)
    obs, _ = env.reset(seed=0)
    while True:
        obs, _, terminated, truncated, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        if terminated or truncated:
            break
    assert info["episode_metrics"]["completed_jobs"] + info["episode_metrics"]["running_jobs"] > 0


def test_with_background_cpu__replaces_the_cpu_column_only_and_load_costs_money() -> None:
    """A constant background: cpu everywhere, the trace's memory kept; under contention it costs first-fit more."""
    scenario = scenarios.load("fleet5-synthetic")
    loaded = scenario.with_background_cpu(85)
    trace, constant = scenario.telemetry.background_pct, loaded.telemetry.background_pct
    assert (constant[..., 0] == 85.0).all()
    assert np.array_equal(constant[..., 1], trace[..., 1]) and loaded.telemetry.tick_s == scenario.telemetry.tick_s
    assert loaded.fleet is scenario.fleet and "85 %" in loaded.description
    for bad in (-1, 100.5, float("nan"), True, "85"):
        with pytest.raises(ValueError, match=r"\[0, 100\]"):
            scenario.with_background_cpu(bad)  # type: ignore[arg-type]

    def first_fit_cost(s: Scenario) -> float:
        twin = DigitalTwin(s.make_spec(np.random.default_rng(0)))
        twin.reset(np.random.default_rng(0))
        while not twin.done:
            twin.place(twin.feasible_mask().index(True))
        return twin.objective().cost_usd

    assert first_fit_cost(scenario.with_background_cpu(0)) < first_fit_cost(loaded)  # slower runs, longer bills


SCENARIOS_PAGE = ROOT / "docs" / "scenarios.md"
"""The page a user copies scenario YAML from ("bring your own trace or fleet")."""


@pytest.mark.parametrize(
    "family", ["**PlanetLab", "**Azure VM requests", "**Alibaba cluster-trace-v2017", "**Real spot behaviour"]
)
def test_scenarios_page_snippet__is_a_valid_scenario_section(family: str) -> None:
    """Each trace family's YAML snippet on docs/scenarios.md parses as a scenario section."""
    from digital_twin.limits import Limits
    from digital_twin.scenario.schema import Section
    from digital_twin.scenario.spot_section import spot_replay_loader
    from digital_twin.scenario.telemetry_section import telemetry_loader
    from digital_twin.scenario.workload_section import jobs_loader

    page = SCENARIOS_PAGE.read_text()
    block = re.search(re.escape(family) + r".*?```yaml\n(.*?)```", page, re.S)
    assert block, family
    (key, section), = yaml.safe_load(block.group(1)).items()
    parsed = Section(section, "docs/scenarios.md", key)
    if key == "telemetry":
        telemetry_loader(parsed, 14_400.0, [], Limits())
    elif key == "spot":
        spot_replay_loader(parsed, [])
    else:
        jobs_loader(parsed, 14_400.0, None, [], Limits())


def test_scenarios_page_example__loads_at_the_current_schema_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's whole example is today's schema (a copied version 1 would silently drop interference) and loads."""
    from digital_twin.scenario.loader import SCHEMA_VERSION

    block = re.search(r"```yaml\n(schema_version.*?)```", SCENARIOS_PAGE.read_text(), re.S)
    assert block and yaml.safe_load(block.group(1))["schema_version"] == SCHEMA_VERSION
    path = tmp_path / "my-cluster.yaml"
    path.write_text(block.group(1))
    monkeypatch.setenv("MY_DATA", str(tmp_path))
    loaded = load_scenario(path)
    assert {p.name for p in loaded.missing_data()} == {"usage.csv", "jobs.swf"}  # valid; only the data is absent
