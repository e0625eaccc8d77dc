"""Scenario files are user input: reading one is bounded, and every size it asks for is checked.

An alias bomb, an oversized or recursive file, or a size far beyond reason (a tick of a
microsecond, a billion jobs) is refused with one line naming the file, the key, the limit and
how to raise it, before anything large is built. Tests assert what is refused and what is
said, never how long it took.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

import scenarios
from digital_twin.errors import MAX_SHOWN_CHARS, SpecError, short_repr
from digital_twin.limits import Limits
from digital_twin.scenario import ScenarioError, load_scenario
from digital_twin.scenario.sources import constant_telemetry
from digital_twin.telemetry import Telemetry
from digital_twin.traces import TraceSeries

TOY = yaml.safe_load((scenarios.CATALOGUE_DIR / "toy3.yaml").read_text())
SYNTHETIC = yaml.safe_load((scenarios.CATALOGUE_DIR / "fleet5-synthetic.yaml").read_text())
SYNTHETIC["telemetry"]["path"] = str(scenarios.CATALOGUE_DIR / "data" / "synthetic_dc_mean_300s.csv")

BOMB = """\
schema_version: 1
name: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def write(tmp_path: Path, data: object, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def changed(base: dict, *edits: tuple[tuple, object]) -> dict:
    """A deep copy of ``base`` with each ``(key path, value)`` set."""
    data = copy.deepcopy(base)
    for keys, value in edits:
        node = data
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
    return data


# --- reading the file ----------------------------------------------------------------------


def test_load_scenario__alias_bomb_is_refused_naming_the_limit(tmp_path: Path) -> None:
    """A billion-laughs file (9^9 values once expanded) is refused before any value is built."""
    path = write(tmp_path, BOMB)
    with pytest.raises(ScenarioError, match=r"scenario\.yaml: the YAML holds more than 1,000,000 values "
                                            r"once its aliases .* limits\.max_yaml_nodes"):
        load_scenario(path)


def test_load_scenario__anchors_for_a_little_reuse_still_work(tmp_path: Path) -> None:
    """Anchors, aliases and merge keys for reuse give the same scenario as the file written out."""
    text = (scenarios.CATALOGUE_DIR / "toy3.yaml").read_text()
    text = text.replace(
        "    - {node_id: n0, arch: x86_64, instance: on-demand, cpu_cores: 4, mem_gb: 16, price_per_hour_usd: 0.36}",
        "    - &small {node_id: n0, arch: x86_64, instance: on-demand, cpu_cores: 4, mem_gb: 16,"
        " price_per_hour_usd: 0.36}",
    ).replace(
        "    - {node_id: n2, arch: x86_64, instance: on-demand, cpu_cores: 2, mem_gb: 8, price_per_hour_usd: 0.72}",
        "    - {<<: *small, node_id: n2, cpu_cores: 2, mem_gb: 8, price_per_hour_usd: 0.72}",
    )
    assert "*small" in text
    reused = load_scenario(write(tmp_path, text)).make_spec(np.random.default_rng(0))
    plain = scenarios.load("toy3").make_spec(np.random.default_rng(0))
    assert reused.fleet == plain.fleet and reused.jobs == plain.jobs


def test_load_scenario__recursive_alias_is_refused(tmp_path: Path) -> None:
    """A list that contains itself through an alias is refused (nothing to expand forever)."""
    path = write(tmp_path, "schema_version: 1\nname: &x [1, *x]\n")
    with pytest.raises(ScenarioError, match=r"scenario\.yaml: a YAML alias .* cannot be recursive"):
        load_scenario(path)


def test_load_scenario__deep_nesting_is_a_clear_error(tmp_path: Path) -> None:
    """Thousands of nested brackets give a ScenarioError, not a RecursionError traceback."""
    path = write(tmp_path, "schema_version: 1\nname: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ScenarioError, match=r"scenario\.yaml: the YAML is nested too deeply"):
        load_scenario(path)


def test_load_scenario__file_above_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    """A file over max_scenario_bytes is refused, naming the limit and how the caller raises it."""
    path = write(tmp_path, "# " + "x" * (Limits().max_scenario_bytes + 10) + "\n")
    with pytest.raises(ScenarioError, match=r"larger than limits\.max_scenario_bytes = 4,194,304 bytes; "
                                            r"raise it with load_scenario\(path, limits=Limits"):
        load_scenario(path)
    small = write(tmp_path, TOY, "toy.yaml")
    with pytest.raises(ScenarioError, match="max_scenario_bytes = 100 bytes"):
        load_scenario(small, limits=Limits(max_scenario_bytes=100))


def test_load_scenario__file_cannot_raise_the_limits_on_its_own_reading(tmp_path: Path) -> None:
    """`limits: {max_yaml_nodes: ...}` in the file is refused: only the caller may raise it."""
    path = write(tmp_path, changed(TOY, (("limits",), {"max_yaml_nodes": 10**12})))
    with pytest.raises(ScenarioError, match=r"limits\.max_yaml_nodes: is checked before the file is read"):
        load_scenario(path)


@pytest.mark.heavy  # seconds of CPU: the rest layer (make test), not make test-fast
def test_error_messages__a_huge_value_is_shown_cut(tmp_path: Path) -> None:
    """A 100,000-item value in the wrong place is quoted in at most a few hundred characters."""
    path = write(tmp_path, changed(TOY, (("name",), list(range(100_000)))))
    with pytest.raises(ScenarioError, match=r"name: expected a string, got list \[0, 1, 2") as info:
        load_scenario(path)
    assert len(str(info.value)) < len(str(path)) + 2 * MAX_SHOWN_CHARS


def test_short_repr__bounded_for_any_value() -> None:
    """Long strings, deep and recursive lists and huge ints are all shown in <= 200 characters."""
    deep: list = ["lol"] * 9
    for _ in range(8):
        deep = [deep] * 9
    loop: list = []
    loop.append(loop)
    for value in ("x" * 10**6, deep, loop, 10**5000, {str(k): k for k in range(10**4)}):
        assert len(short_repr(value)) <= MAX_SHOWN_CHARS


def test_exponent_without_dot_and_sign__hint_says_how_to_write_it(tmp_path: Path) -> None:
    """YAML 1.1 reads `1e9` as text: the error says to write `1.0e+9` (or the digits of an integer)."""
    text = (scenarios.CATALOGUE_DIR / "toy3.yaml").read_text()
    path = write(tmp_path, text.replace("horizon_s: 3600", "horizon_s: 1e9"))
    with pytest.raises(ScenarioError, match=r"horizon_s: expected a number, got str '1e9' .*write e\.g\. 1\.0e\+9"):
        load_scenario(path)
    path = write(tmp_path, text.replace("horizon_s: 3600", "horizon_s: 3600\njob_budget: 1e9"))
    with pytest.raises(ScenarioError, match=r"job_budget: expected an integer, got str '1e9' .*in digits"):
        load_scenario(path)


# --- sizes asked for -----------------------------------------------------------------------

TOO_LARGE = [
    (changed(TOY, (("horizon_s",), 1.0e12)),
     r"horizon_s: horizon_s = 1e\+12 s is above limits\.max_horizon_s = 315,360,000; "
     r"raise it with `limits: \{max_horizon_s: N\}` in the scenario"),
    (changed(TOY, (("horizon_s",), 1.0e12), (("telemetry", "tick_s"), 1.0e9)),
     r"horizon_s: horizon_s = 1e\+12 s is above limits\.max_horizon_s"),
    (changed(TOY, (("telemetry", "tick_s"), 1.0e-6)),
     r"telemetry\.tick_s: horizon_s / tick_s = 3,600,000,000 ticks is above limits\.max_ticks"),
    (changed(TOY, (("telemetry", "tick_s"), 0)), r"telemetry\.tick_s: must be a finite number > 0, got 0"),
    (changed(TOY, (("telemetry", "tick_s"), -300)), r"telemetry\.tick_s: must be a finite number > 0, got -300"),
    (changed(SYNTHETIC, (("telemetry", "options"), {"tick_s": 1.0e-6})),
     r"telemetry\.options\.tick_s: horizon_s / tick_s = 14,400,000,000 ticks is above limits\.max_ticks"),
    (changed(SYNTHETIC, (("telemetry", "options"), {"tick_s": 0})),
     r"telemetry\.options\.tick_s: must be a finite number > 0, got 0"),
    (changed(SYNTHETIC, (("horizon_s",), 1.0e12)),
     r"horizon_s: horizon_s = 1e\+12 s is above limits\.max_horizon_s"),
    (changed(SYNTHETIC, (("horizon_s",), 3.0e8), (("limits",), {"max_ticks": 10})),
     r"horizon_s: horizon_s / tick_s = 1,000,000 ticks is above limits\.max_ticks = 10"),
    (changed(TOY, (("job_budget",), 10**9)),
     r"job_budget: job_budget = 1,000,000,000 is above limits\.max_jobs = 1,000,000; "
     r"raise it with `limits: \{max_jobs: N\}`"),
    (changed(SYNTHETIC, (("workload", "options", "base_rate_per_s"), 1000.0)),
     r"workload\.options\.base_rate_per_s: base_rate_per_s x \(1 \+ diurnal_amplitude\) x horizon_s = "
     r"14,400,000 arrivals is above limits\.max_jobs"),
    (changed(TOY, (("fleet",), {"generate": {"types": {"big": {"arch": "x86_64", "instance": "on-demand",
                                                               "cpu_cores": 4, "mem_gb": 8,
                                                               "price_per_hour_usd": 1.0}},
                                             "counts": {"big": 10**9}}})),
     r"fleet\.generate\.counts: the counts add up to 1,000,000,000 nodes, which is above limits\.max_nodes"),
    (changed(TOY, (("fleet",), {"generate": {"types": {}, "counts": {"big": 2.5}}})),
     r"fleet\.generate\.counts: the count of 'big' must be an integer >= 0, got 2\.5"),
    (changed(TOY, (("limits",), {"max_ticks": 5})),
     r"horizon_s / tick_s = 6 ticks is above limits\.max_ticks = 5"),
    (changed(TOY, (("limits",), {"max_ticks": 0})), r"limits\.max_ticks must be an integer >= 1, got 0"),
    (changed(TOY, (("limits",), {"max_ticks": "many"})), r"limits\.max_ticks: expected an integer"),
    (changed(TOY, (("limits",), {"max_tick": 10})), r"limits: unknown key\(s\) \['max_tick'\]"),
]


@pytest.mark.parametrize(("data", "message"), TOO_LARGE)
def test_scenario__size_beyond_a_limit_is_refused_at_load(tmp_path: Path, data: dict, message: str) -> None:
    """Each oversized or invalid size is refused by load_scenario itself, naming the file and key."""
    path = write(tmp_path, data)
    with pytest.raises(ScenarioError, match=message) as info:
        load_scenario(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_scenario__limits_mapping_raises_a_limit(tmp_path: Path) -> None:
    """The same horizon is refused by default and accepted with `limits: {max_horizon_s: .., max_ticks: ...}`."""
    long = changed(TOY, (("horizon_s",), 3.6e9))  # 114 years, 6,000,000 ticks of 600 s
    with pytest.raises(ScenarioError, match="max_horizon_s"):
        load_scenario(write(tmp_path, long))
    with pytest.raises(ScenarioError, match="max_ticks"):
        load_scenario(write(tmp_path, changed(long, (("limits",), {"max_horizon_s": 4 * 10**9}))))
    raised = load_scenario(write(tmp_path, changed(long, (("limits",), {"max_horizon_s": 4 * 10**9,
                                                                         "max_ticks": 10**7}))))
    assert raised.limits.max_ticks == 10**7 and raised.limits.max_jobs == Limits().max_jobs


LOAD_TIME = [
    (changed(TOY, (("limits",), {"max_telemetry_cells": 10})),
     r"telemetry: 6 telemetry ticks x 3 nodes is above limits\.max_telemetry_cells = 10"),
    (changed(SYNTHETIC, (("limits",), {"max_telemetry_cells": 200})),
     r"telemetry: 48 telemetry ticks x 5 nodes is above limits\.max_telemetry_cells = 200"),
]


@pytest.mark.parametrize(("data", "message"), LOAD_TIME)
def test_scenario__size_from_the_data_is_refused_before_the_arrays(tmp_path: Path, data: dict, message: str) -> None:
    """Sizes known only with the data (ticks x nodes) are refused when first built, naming the limit."""
    scenario = load_scenario(write(tmp_path, data))
    with pytest.raises(ScenarioError, match=message):
        scenario.make_spec(np.random.default_rng(0))


def test_scenario__job_file_with_more_jobs_than_the_limit(tmp_path: Path) -> None:
    """A job file holding more than max_jobs jobs is refused when read, saying to set job_budget."""
    log = tmp_path / "jobs.swf"
    log.write_text("".join(f"{k} {10 * k} -1 100 4 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n" for k in range(1, 4)))
    data = changed(TOY, (("workload",), {"source": "swf", "path": str(log)}), (("limits",), {"max_jobs": 2}))
    scenario = load_scenario(write(tmp_path, data))
    with pytest.raises(ScenarioError, match=r"jobs\.swf: the file holds more than limits\.max_jobs = 2 jobs; "
                                            r"set job_budget"):
        scenario.make_spec(np.random.default_rng(0))
    budgeted = load_scenario(write(tmp_path, changed(data, (("job_budget",), 2))))
    assert len(budgeted.make_spec(np.random.default_rng(0)).jobs) == 2


@pytest.mark.parametrize("name", scenarios.names())
def test_bundled_scenarios__stay_far_below_the_default_limits(name: str) -> None:
    """Every bundled scenario (real-data ones when present) builds with limits ten times lower."""
    path = scenarios.path_of(name)
    default = Limits()
    low = Limits(**{f: getattr(default, f) // 10 for f in default.__dataclass_fields__})
    scenario = load_scenario(path, limits=low)
    if scenario.missing_data():
        pytest.skip(f"data not present: {scenario.missing_data()[0]}")
    scenario.make_spec(np.random.default_rng(0))


# --- tick_s > 0 wherever it is read --------------------------------------------------------


@pytest.mark.parametrize("tick_s", [0, -1.0, float("nan"), float("inf"), True])
def test_tick_s__not_positive_is_a_spec_error_everywhere(tick_s: float) -> None:
    """Telemetry, Telemetry.constant, the constant reader and resampling refuse the tick, no ZeroDivisionError."""
    with pytest.raises(SpecError, match="tick_s must be"):
        Telemetry(np.zeros((2, 1, 2)), tick_s)
    with pytest.raises(SpecError, match="tick_s must be"):
        Telemetry.constant(1, 10.0, 10.0, 600.0, tick_s)
    with pytest.raises(SpecError, match="tick_s must be"):
        constant_telemetry(1, 600.0, cpu_pct=10.0, mem_pct=10.0, tick_s=tick_s)
    with pytest.raises(SpecError, match="tick_s must be"):
        TraceSeries(np.zeros((2, 1, 2)), 300.0, ("m",), "test").resample(tick_s)


def test_trace_series__resample_to_a_tiny_tick_is_refused() -> None:
    """Refining 300 s ticks to microseconds would make 6e8 ticks: refused before allocating."""
    series = TraceSeries(np.zeros((2, 1, 2)), 300.0, ("m",), "test")
    with pytest.raises(SpecError, match=r"600,000,000 ticks x 1 machine\(s\), above 20,000,000 cells"):
        series.resample(1e-6)
