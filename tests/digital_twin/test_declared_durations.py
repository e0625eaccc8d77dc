"""Declared durations: what submitters state beside the true run time, from sources and the scenario's model."""

from __future__ import annotations

import dataclasses
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import scenarios
from digital_twin import JobSpec
from digital_twin.declared_durations import (
    CLASS_MEDIAN,
    COARE_MEDIAN_ACCURACY,
    EXACT,
    NOISY,
    DeclaredDurations,
    fit_accuracy,
    fit_swf_accuracy,
)
from digital_twin.errors import SettingError, SpecError, TraceError
from digital_twin.scenario import Scenario
from digital_twin.scenario.loader import parse_scenario
from digital_twin.scenario.schema import ScenarioError
from digital_twin.spot.poisson import draw_interruptions
from digital_twin.workload import Workload
from digital_twin.workloads import jobs_from_dicts, load_swf_jobs

NOISY_SCENARIOS = ("fleet5-synthetic", "fleet20-synthetic", "fleet5-utility", "planted5", "hpc-swf", "vm5-azure2017")
"""Bundled scenarios with the default model (those whose real data is absent are skipped)."""
SWF_LINE = "{id} {submit} -1 {run} 4 -1 -1 -1 {requested} -1 -1 1 1 -1 -1 -1 -1 -1\n"


def _bundled(name: str) -> Scenario:
    scenario = scenarios.load(name)
    if scenario.missing_data():
        pytest.skip(f"{name}: real data absent ({scenario.missing_data()[0]})")
    return scenario


def _write_swf(path: Path, rows: list[tuple[int, int, int, int]]) -> Path:
    """An SWF log of ``(id, submit, run, requested)`` rows (other fields unknown)."""
    lines = [SWF_LINE.format(id=i, submit=t, run=run, requested=req) for i, t, run, req in rows]
    path.write_text("; MaxProcs: 8\n" + "".join(lines))
    return path


def _scenario(tmp_path: Path, workload: dict[str, Any]) -> Scenario:
    """A one-node scenario with ``workload`` as its workload section (file ``tmp_path/s.yaml``)."""
    data = {
        "schema_version": 2,
        "name": "declared",
        "horizon_s": 7200,
        "fleet": {"nodes": [{"node_id": "n0", "arch": "x86_64", "instance": "on-demand", "cpu_cores": 64,
                             "mem_gb": 256, "price_per_hour_usd": 1}]},
        "telemetry": {"reader": "constant", "cpu_pct": 0, "mem_pct": 0, "tick_s": 600},
        "workload": workload,
    }
    return parse_scenario(data, tmp_path / "s.yaml", "hash")


# ---------------------------------------------------------------- bundled scenarios
@pytest.mark.parametrize("name", NOISY_SCENARIOS)
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_bundled_scenarios__declarations_are_finite_and_never_the_truth(name: str, seed: int) -> None:
    """Under the default (noisy) model every job declares a finite positive duration, never its true one."""
    jobs = _bundled(name).make_spec(np.random.default_rng(seed)).jobs
    assert len(jobs) > 0
    declared = jobs.declared_duration_s
    assert np.all(np.isfinite(declared) & (declared > 0))
    assert not np.any(declared == jobs.duration_s)
    assert all(job.declared_duration_s == d for job, d in zip(jobs, declared.tolist(), strict=True))


def test_toy3__declares_exactly_the_true_durations() -> None:
    """toy3 says ``model: exact``: the hand-worked instance's declarations are the truth."""
    jobs = scenarios.load("toy3").make_spec(np.random.default_rng(0)).jobs
    np.testing.assert_array_equal(jobs.declared_duration_s, jobs.duration_s)


@pytest.mark.parametrize("name", ["fleet5-synthetic", "planted5"])
def test_same_seed__same_declarations_and_other_seeds_differ(name: str) -> None:
    """Declarations are drawn from the episode seed: equal for one seed, different for another."""
    scenario = _bundled(name)
    first, again, other = (scenario.make_spec(np.random.default_rng(s)).jobs for s in (3, 3, 4))
    np.testing.assert_array_equal(first.declared_duration_s, again.declared_duration_s)
    assert first == again
    assert not np.array_equal(first.declared_duration_s[:1], other.declared_duration_s[:1])


@pytest.mark.parametrize("name", ["fleet5-synthetic", "planted5", "hpc-swf"])
def test_declarations__leave_the_episode_draws_as_they_were(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs, planted interruptions and the generator's later draws (spot interruptions) are as without declarations."""
    scenario = _bundled(name)
    rng = np.random.default_rng(11)
    spec = scenario.make_spec(rng)
    with monkeypatch.context() as patch:
        patch.setattr(Scenario, "_declared", lambda self, jobs, rng: jobs)  # the episode before declarations
        rng_before = np.random.default_rng(11)
        spec_before = scenarios.load(name).make_spec(rng_before)  # a fresh copy: none of its data cached
    assert rng.bit_generator.state == rng_before.bit_generator.state
    for name_ in ("job_ids", "arrival_s", "duration_s", "cpu_cores", "mem_gb", "workload_index", "deadline_s"):
        np.testing.assert_array_equal(getattr(spec.jobs, name_), getattr(spec_before.jobs, name_))
    assert spec.fixed_interruptions_s == spec_before.fixed_interruptions_s
    settings = spec.settings
    drawn = draw_interruptions(spec.fleet, float(settings.horizon_s), settings.spot_recovery_s, rng)
    drawn_before = draw_interruptions(spec.fleet, float(settings.horizon_s), settings.spot_recovery_s, rng_before)
    assert drawn == drawn_before
    assert np.isnan(spec_before.jobs.declared_duration_s).all()


def test_planted_episode__keeps_its_optimum_and_declares_every_job() -> None:
    """A planted episode's certificate and nodes are unchanged; its jobs declare durations."""
    scenario = scenarios.load("planted5")
    episode = scenario.planted_episode(np.random.default_rng(5))
    assert np.isfinite(episode.spec.jobs.declared_duration_s).all()
    assert len(episode.planted_nodes) == len(episode.spec.jobs)
    np.testing.assert_array_equal(
        episode.spec.jobs.declared_duration_s, scenario.make_spec(np.random.default_rng(5)).jobs.declared_duration_s
    )


# ---------------------------------------------------------------- the models
def _workload(n: int = 2000, seed: int = 0) -> Workload:
    rng = np.random.default_rng(seed)
    durations = rng.lognormal(7.0, 1.0, size=n)
    kinds = ("batch", "stream", "latency-critical")
    return Workload.of(JobSpec(f"j{i}", float(i), float(d), kinds[i % 3], 1, 1) for i, d in enumerate(durations))


def test_noisy__accuracy_is_lognormal_around_the_median() -> None:
    """true / declared has the configured median and log-sd, and is sometimes above 1 (no capping)."""
    jobs = _workload()
    declared = DeclaredDurations(NOISY, median_accuracy=0.2, sigma=0.5).apply(jobs, np.random.default_rng(1))
    accuracy = jobs.duration_s / declared.declared_duration_s
    assert np.median(accuracy) == pytest.approx(0.2, rel=0.05)
    assert np.std(np.log(accuracy)) == pytest.approx(0.5, rel=0.05)
    default = DeclaredDurations().apply(jobs, np.random.default_rng(1))
    assert np.median(jobs.duration_s / default.declared_duration_s) == pytest.approx(COARE_MEDIAN_ACCURACY, rel=0.1)
    assert np.any(jobs.duration_s > default.declared_duration_s)  # some users underestimate
    np.testing.assert_array_equal(declared.duration_s, jobs.duration_s)


def test_noisy__declarations_are_the_c_library_exp_of_the_draws() -> None:
    """Each declaration is ``true / exp(draw)`` by the C library's exp, bit for bit: not numpy's SIMD kernel,
    whose last bits differ between machines (a seed gives the same episode everywhere)."""
    jobs = _workload(2000)
    config = DeclaredDurations(NOISY, median_accuracy=0.2, sigma=1.0)
    draws = np.random.default_rng(3).normal(math.log(0.2), 1.0, size=len(jobs))
    expected = [true / math.exp(draw) for true, draw in zip(jobs.duration_s.tolist(), draws.tolist(), strict=True)]
    declared = config.apply(jobs, np.random.default_rng(3)).declared_duration_s
    assert declared.tolist() == expected


def test_class_median__is_the_median_of_the_jobs_class() -> None:
    """class-median declares, per workload class, the median true duration of that class in the workload."""
    jobs = _workload(301)
    declared = DeclaredDurations(CLASS_MEDIAN).apply(jobs, None).declared_duration_s
    for k in range(3):
        members = jobs.workload_index == k
        assert np.all(declared[members] == np.median(jobs.duration_s[members]))


def test_from_trace__keeps_source_declarations_unless_false() -> None:
    """``from_trace: true`` fills only missing declarations; ``false`` replaces them all."""
    jobs = Workload.of([JobSpec("a", 0.0, 60.0, "batch", 1, 1, declared_duration_s=600.0),
                        JobSpec("b", 1.0, 30.0, "batch", 1, 1)])
    kept = DeclaredDurations(EXACT).apply(jobs, None)
    assert kept.declared_duration_s.tolist() == [600.0, 30.0]
    replaced = DeclaredDurations(EXACT, from_trace=False).apply(jobs, None)
    assert replaced.declared_duration_s.tolist() == [60.0, 30.0]
    assert DeclaredDurations(EXACT).apply(kept, None) is kept  # nothing to fill


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"model": "guess"}, "model"),
        ({"median_accuracy": 0.0}, "median_accuracy"),
        ({"sigma": -1.0}, "sigma"),
        ({"sigma": math.inf}, "sigma"),
        ({"sigma": True}, "sigma"),
        ({"from_trace": "yes"}, "from_trace"),
    ],
)
def test_config__bad_values_name_the_key(changes: dict[str, Any], key: str) -> None:
    """Each bad value of :class:`DeclaredDurations` raises a SettingError naming its field."""
    with pytest.raises(SettingError) as caught:
        DeclaredDurations(**changes)
    assert caught.value.name == key


def test_noisy__needs_a_generator() -> None:
    """The noisy model without a generator is an error, not a silent fallback."""
    with pytest.raises(SpecError, match="generator"):
        DeclaredDurations().apply(_workload(3), None)


# ---------------------------------------------------------------- sources
def test_swf__requested_time_is_the_declaration(tmp_path: Path) -> None:
    """SWF ``requested_time`` > 0 is declared as is (even below run_time); -1 and 0 declare none."""
    path = _write_swf(tmp_path / "log.swf", [(1, 0, 100, 400), (2, 10, 50, -1), (3, 20, 70, 0), (4, 30, 500, 300)])
    jobs = load_swf_jobs(path)
    assert [j.declared_duration_s for j in jobs] == [400.0, None, None, 300.0]
    assert [j.duration_s for j in jobs] == [100.0, 50.0, 70.0, 500.0]


def test_swf__undeclared_jobs_are_filled_by_the_scenario_model(tmp_path: Path) -> None:
    """In a scenario the -1 jobs get the model's declaration; the logged requests stay."""
    _write_swf(tmp_path / "log.swf", [(1, 0, 100, 400), (2, 10, 50, -1)])
    workload = {"source": "swf", "path": "log.swf"}
    noisy = _scenario(tmp_path, workload).make_spec(np.random.default_rng(0)).jobs.declared_duration_s
    assert noisy[0] == 400.0 and np.isfinite(noisy[1]) and noisy[1] != 50.0
    exact = _scenario(tmp_path, {**workload, "declared_durations": {"model": "exact"}})
    assert exact.make_spec(np.random.default_rng(0)).jobs.declared_duration_s.tolist() == [400.0, 50.0]
    ignored = _scenario(tmp_path, {**workload, "declared_durations": {"model": "exact", "from_trace": False}})
    assert ignored.make_spec(np.random.default_rng(0)).jobs.declared_duration_s.tolist() == [100.0, 50.0]


def test_swf__a_negative_requested_time_other_than_minus_one_is_an_error(tmp_path: Path) -> None:
    """requested_time is a used field: -2 is refused naming the file and line."""
    path = _write_swf(tmp_path / "log.swf", [(1, 0, 100, -2)])
    with pytest.raises(TraceError, match=r"log\.swf:2: field 'requested_time' is -2"):
        load_swf_jobs(path)


def test_fit_accuracy__fits_a_written_swf_log(tmp_path: Path) -> None:
    """The fit is the median of run/requested and the sd of its log, over jobs with both times known."""
    rows = [(1, 0, 10, 100), (2, 1, 40, 100), (3, 2, 30, 60), (4, 3, 50, -1), (5, 4, -1, 100), (6, 5, 0, 100)]
    median, sigma = fit_swf_accuracy(_write_swf(tmp_path / "log.swf", rows))
    ratios = np.array([0.1, 0.4, 0.5])
    assert median == pytest.approx(0.4)
    assert sigma == pytest.approx(float(np.std(np.log(ratios))))
    assert fit_accuracy(np.array([10.0, 40.0, 30.0]), np.array([100.0, 100.0, 60.0])) == (median, sigma)


def test_fit_accuracy__refuses_a_log_without_requested_times(tmp_path: Path) -> None:
    """A log whose requested times are all unknown (as NASA iPSC 1993) cannot be fitted."""
    with pytest.raises(SpecError, match="at least 2 jobs"):
        fit_swf_accuracy(_write_swf(tmp_path / "log.swf", [(1, 0, 10, -1), (2, 1, 20, -1)]))


def test_fit_accuracy__on_the_real_nasa_log_if_present() -> None:
    """The bundled hpc-swf log (NASA iPSC 1993) has no requested_time: its jobs declare none."""
    scenario = _bundled("hpc-swf")
    path = scenario.data_files[0]
    assert all(job.declared_duration_s is None for job in load_swf_jobs(path, limit=200))
    with pytest.raises(SpecError):
        fit_swf_accuracy(path)


def test_explicit_jobs__may_declare_a_duration() -> None:
    """An inline job's optional ``declared_duration_s`` is read; a bad one names the job and field."""
    job = {"job_id": "a", "arrival_s": 0, "duration_s": 60, "workload": "batch", "cpu_cores": 1, "mem_gb": 1}
    jobs = jobs_from_dicts([{**job, "declared_duration_s": 90}, {**job, "job_id": "b"}])
    assert [j.declared_duration_s for j in jobs] == [90, None]
    with pytest.raises(SpecError, match=r"jobs\[0\].*declared_duration_s must be a finite number > 0"):
        jobs_from_dicts([{**job, "declared_duration_s": 0}])


# ---------------------------------------------------------------- JobSpec and Workload
@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, math.inf, "60", True])
def test_jobspec__bad_declared_duration_names_the_job(value: object) -> None:
    """declared_duration_s must be a finite number > 0 (or None); the error names the job and field."""
    with pytest.raises(SpecError, match=r"job 'a': declared_duration_s must be a finite number > 0"):
        JobSpec("a", 0.0, 60.0, "batch", 1, 1, declared_duration_s=value)  # type: ignore[arg-type]


def test_workload__carries_declarations_through_every_path() -> None:
    """of, from_columns, head, then, take, pickling and JobSpecs agree on the column (NaN = None)."""
    jobs = [JobSpec("a", 0.0, 60.0, "batch", 1, 1, declared_duration_s=90.0), JobSpec("b", 1.0, 30.0, "batch", 1, 1),
            JobSpec("c", 2.0, 10.0, "stream", 1, 1, declared_duration_s=5.0)]
    whole = Workload.of(jobs)
    np.testing.assert_array_equal(whole.declared_duration_s, [90.0, math.nan, 5.0])
    assert whole.declared_or_true_s().tolist() == [90.0, 30.0, 5.0]
    columns = {name: getattr(whole, name) for name in ("arrival_s", "duration_s", "workload_index", "cpu_cores",
                                                        "mem_gb", "gpu_count", "gpu_vram_gb", "priority",
                                                        "preemptible", "deadline_s", "declared_duration_s")}
    rebuilt = Workload.from_columns(whole.job_ids, **columns)
    assert list(rebuilt) == jobs
    without = Workload.from_columns(whole.job_ids, **{k: v for k, v in columns.items() if k != "declared_duration_s"})
    assert np.isnan(without.declared_duration_s).all() and without[0].declared_duration_s is None
    assert list(whole.head(2).then(Workload.of(jobs[2:]))) == jobs
    assert list(whole.take([0, 2])) == [jobs[0], jobs[2]]
    assert whole.take([0, 2]).declared_duration_s.tolist()[1:] == [whole.declared_duration_s[2]]
    assert list(pickle.loads(pickle.dumps(whole))) == jobs
    assert whole != Workload.of([dataclasses.replace(jobs[0], declared_duration_s=None), *jobs[1:]])


def test_workload__bad_declaration_columns_are_refused() -> None:
    """from_columns and with_declared_durations refuse zero, negative and infinite declarations."""
    whole = Workload.of([JobSpec("a", 0.0, 60.0, "batch", 1, 1)])
    with pytest.raises(SpecError, match="job 'a': declared_duration_s"):
        whole.with_declared_durations(np.array([0.0]))
    with pytest.raises(SpecError, match="shape"):
        whole.with_declared_durations(np.array([1.0, 2.0]))
    columns = {name: getattr(whole, name) for name in ("arrival_s", "duration_s", "workload_index", "cpu_cores",
                                                        "mem_gb", "gpu_count", "gpu_vram_gb", "priority",
                                                        "preemptible", "deadline_s")}
    with pytest.raises(SpecError, match="job 'a': bad declared_duration_s"):
        Workload.from_columns(whole.job_ids, **columns, declared_duration_s=np.array([math.inf]))


# ---------------------------------------------------------------- scenario files
@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"model": "guess"}, r"workload\.declared_durations\.model: must be one of"),
        ({"sigma": 0}, r"workload\.declared_durations\.sigma: must be a finite number > 0"),
        ({"median_accuracy": "low"}, r"workload\.declared_durations\.median_accuracy: expected a number"),
        ({"from_trace": "yes"}, r"workload\.declared_durations\.from_trace: expected true/false"),
        ({"modle": "exact"}, r"workload\.declared_durations: unknown key\(s\) \['modle'\]"),
        ("noisy", r"workload\.declared_durations: expected a mapping"),
    ],
)
def test_scenario_file__bad_declared_durations_name_the_file_and_key(
    declared: object, message: str, tmp_path: Path
) -> None:
    """Each bad ``workload.declared_durations`` is a ScenarioError naming the file and the key."""
    workload = {"source": "synthetic", "declared_durations": declared}
    with pytest.raises(ScenarioError, match=r"s\.yaml: " + message):
        _scenario(tmp_path, workload)


def test_scenario_file__default_model_is_noisy(tmp_path: Path) -> None:
    """Without the key a scenario uses noisy with the COARE median, sigma 1, from_trace true."""
    assert _scenario(tmp_path, {"source": "synthetic"}).declared_durations == DeclaredDurations()
    given = {"model": "class-median", "from_trace": False}
    scenario = _scenario(tmp_path, {"source": "synthetic", "declared_durations": given})
    assert scenario.declared_durations == DeclaredDurations(CLASS_MEDIAN, from_trace=False)
    assert pickle.loads(pickle.dumps(scenario)).declared_durations == scenario.declared_durations
