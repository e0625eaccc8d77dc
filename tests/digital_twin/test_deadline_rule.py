"""The deadline rule: late at the first start (default) or at completion; scenario keys checked (known answers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import scenarios
from agents.oracle import solve_oracle
from digital_twin import DigitalTwin, ObjectiveWeights, SpecError
from digital_twin.scenario import ScenarioError, load_scenario
from tests.small_twins import ONE_CORE, SPOT_TWO_CORES, TWO_CORES, batch, play, spec_of

WEIGHTS = ObjectiveWeights(deadline_miss_usd=3.0)


@pytest.mark.parametrize(
    ("deadline_s", "first_start", "completion"),
    [
        (700.0, 0, 1),  # starts at 300 s (in time), completes at 900 s (late)
        (200.0, 1, 1),  # starts late, completes late
        (900.0, 0, 0),  # completes exactly at the deadline: in time
        (250.0, 1, 1),
    ],
)
def test_deadline__first_start_and_completion_rules(deadline_s: float, first_start: int, completion: int) -> None:
    """A 600 s job arriving at 0 s, started at 300 s (the first tick), completes at 900 s."""
    for rule, late in (("first-start", first_start), ("completion", completion)):
        spec = spec_of((batch("j", 0.0, 600.0, deadline_s=deadline_s),), weights=WEIGHTS, deadline_rule=rule)
        twin, _ = play(spec, {"j": (0, 300.0)})
        assert twin.job_counts()["completed"] == 1
        assert twin.objective()["deadline_misses"] == late, rule
        assert twin.objective()["deadline_usd"] == 3.0 * late


def test_deadline__the_default_rule_is_first_start() -> None:
    """Without a deadline_rule a spec judges at the first start (as before the setting existed)."""
    spec = spec_of((batch("j", 0.0, 600.0, deadline_s=700.0),), weights=WEIGHTS)
    assert spec.settings.deadline_rule == "first-start"
    twin, _ = play(spec, {"j": (0, 300.0)})
    assert twin.objective()["deadline_misses"] == 0


@pytest.mark.parametrize(("deadline_s", "late"), [(3000.0, 1), (3599.0, 1), (3600.0, 0), (4000.0, 0)])
def test_deadline__a_job_running_at_the_horizon_is_late_when_the_horizon_is_past_its_deadline(
    deadline_s: float, late: int
) -> None:
    """A 3000 s job started at 1200 s still runs at the 3600 s horizon: late iff 3600 > deadline."""
    spec = spec_of((batch("j", 0.0, 3000.0, deadline_s=deadline_s),), queue_ttl_s=None, weights=WEIGHTS,
                   deadline_rule="completion")
    twin, _ = play(spec, {"j": (0, 1200.0)})
    assert twin.job_counts()["running"] == 1
    assert twin.objective()["deadline_misses"] == late


def test_deadline__failed_and_rejected_jobs_are_never_late_at_completion() -> None:
    """A job started late (200 s > 100 s) that fails at 500 s; a job rejected by its TTL (deadline 0).

    First-start: the failed job was late at its start (1 miss). Completion: neither is late; the
    eviction and the rejection are charged instead.
    """
    jobs = (batch("fails", 200.0, 600.0, deadline_s=100.0), batch("ttl", 0.0, 60.0, cores=2, deadline_s=0.0))
    for rule, misses in (("first-start", 1), ("completion", 0)):
        spec = spec_of(jobs, fleet=(SPOT_TWO_CORES,), queue_ttl_s=250.0, weights=WEIGHTS, deadline_rule=rule,
                       fixed_interruptions_s=((500.0,),))
        twin, _ = play(spec, {"fails": (0, 200.0)})
        objective = twin.objective()
        assert (objective["evictions"], objective["rejections"]) == (1, 1), rule
        assert objective["deadline_misses"] == misses, rule


def test_deadline__a_requeued_job_is_judged_by_its_last_run() -> None:
    """A preemptible job (deadline 1000 s) starts on spot at 0 s, is evicted at 300 s and requeued.

    Restarted at once on the on-demand node it completes at 900 s (in time); restarted at the
    600 s tick it completes at 1200 s (late). Its first start (0 s) was in time either way.
    """
    job = batch("p", 0.0, 600.0, deadline_s=1000.0, preemptible=True)
    for restart_s, late in ((300.0, 1 - 1), (600.0, 1)):
        for rule, misses in (("first-start", 0), ("completion", late)):
            spec = spec_of((job,), fleet=(SPOT_TWO_CORES, TWO_CORES), queue_ttl_s=None, weights=WEIGHTS,
                           deadline_rule=rule, fixed_interruptions_s=((300.0,), ()))
            twin = DigitalTwin(spec)
            twin.reset(np.random.default_rng(0))
            twin.place(0)  # at 0 s, on spot
            while twin.time_s < restart_s:
                twin.defer()
            assert twin.time_s == restart_s
            twin.place(1)
            assert twin.done and twin.job_counts()["completed"] == 1
            assert twin.objective()["deadline_misses"] == misses, (restart_s, rule)


def test_oracle__charges_completion_deadlines_and_its_bound_meets_the_plan() -> None:
    """One 1-core slot, two 600 s jobs at 0 s with deadline 1000 s, completion rule, TTL 900 s.

    One of them completes at 1200 s (late, 3 USD) unless rejected (1 USD): the plan rejects it;
    under the first-start rule the second starts at 600 s, in time, and both run.
    """
    jobs = (batch("a", 0.0, 600.0, deadline_s=1000.0), batch("b", 0.0, 600.0, deadline_s=1000.0))
    for rule, expected in (("completion", 0.06 + 1.0), ("first-start", 0.12)):
        spec = spec_of(jobs, fleet=(ONE_CORE,), queue_ttl_s=900.0, weights=WEIGHTS, deadline_rule=rule)
        twin = DigitalTwin(spec)
        twin.reset(np.random.default_rng(0))
        result = solve_oracle(twin.hindsight(), time_limit_s=30.0)
        assert result.plan_objective_usd == pytest.approx(expected, abs=1e-12), rule
        assert result.lower_bound_usd == pytest.approx(expected, abs=1e-9), rule


def test_oracle__a_run_contention_may_stretch_into_a_failure_is_not_charged_late() -> None:
    """Processor sharing at half speed: a 600 s non-preemptible job that must start before its
    100 s TTL on a spot node would end by 700 s nominally (late for a 300 s deadline) but really
    reaches the 900 s interruption and fails: the twin counts an eviction (0.01 USD), no miss (5
    USD). The bound must not charge the miss (it would be 5.12 USD, not 0.12)."""
    job = batch("j", 0.0, 600.0, cores=2, deadline_s=300.0)
    spec = spec_of((job,), fleet=(SPOT_TWO_CORES,), cpu_pct=100.0, interference="processor-sharing",
                   queue_ttl_s=100.0, deadline_rule="completion", fixed_interruptions_s=((900.0,),),
                   weights=ObjectiveWeights(deadline_miss_usd=5.0, eviction_usd=0.01, rejection_usd=10.0))
    twin, _ = play(spec, {"j": (0, 0.0)})
    objective = twin.objective()
    assert (objective["evictions"], objective["deadline_misses"]) == (1, 0)
    actual = objective.total_usd
    assert actual == pytest.approx(0.0002 * 900 + 0.01, abs=1e-12)
    fresh = DigitalTwin(spec)
    fresh.reset(np.random.default_rng(0))
    assert solve_oracle(fresh.hindsight(), time_limit_s=30.0).lower_bound_usd <= actual + 1e-9


# ---------------------------------------------------------------------------- settings
def test_twin_spec__rejects_an_unknown_rule_and_a_non_positive_slo_factor() -> None:
    """deadline_rule must be one of the two rules; latency_slo_factor a finite number > 0."""
    jobs = (batch("j", 0.0, 60.0),)
    with pytest.raises(SpecError, match=r"deadline_rule must be one of \(.*\), got 'at-start'"):
        spec_of(jobs, deadline_rule="at-start")
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(SpecError, match="latency_slo_factor must be a finite number > 0"):
            spec_of(jobs, latency_slo_factor=bad)


TOY = yaml.safe_load((scenarios.CATALOGUE_DIR / "toy3.yaml").read_text())


def _scenario_with(tmp_path: Path, **keys: object) -> Path:
    data = {**TOY, **keys}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"deadline_rule": "at-start"}, r"bad.yaml: deadline_rule: must be one of \('first-start', 'completion'\)"),
        ({"deadline_rule": 1}, r"bad.yaml: deadline_rule: expected a string"),
        ({"latency_slo_factor": -2.0}, r"bad.yaml: latency_slo_factor: must be a finite number > 0, got -2"),
        ({"latency_slo_factor": 0}, r"bad.yaml: latency_slo_factor: must be a finite number > 0, got 0"),
        ({"latency_slo_factor": "fast"}, r"bad.yaml: latency_slo_factor: expected a number, got str"),
        ({"weights": {"utility_loss_usd": -1.0}}, r"bad.yaml: weights: objective weight utility_loss_usd must be"),
        ({"weights": {"unfairness": 1.0}}, r"weights: unknown key\(s\) \['unfairness'\]"),
    ],
)
def test_scenario__bad_objective_settings_name_the_file_and_key(tmp_path: Path, keys: dict, message: str) -> None:
    """An unknown rule, a non-positive or non-numeric factor, a bad weight: one error naming file and key."""
    with pytest.raises(ScenarioError, match=message):
        load_scenario(_scenario_with(tmp_path, **keys))


def test_scenario__objective_settings_default_off_and_reach_the_spec(tmp_path: Path) -> None:
    """Absent: first-start, 2.0 and zero weights; given: they reach the episode's spec; changeable in code."""
    toy = scenarios.load("toy3")
    assert (toy.settings.deadline_rule, toy.settings.latency_slo_factor) == ("first-start", 2.0)
    assert (toy.settings.weights.utility_loss_usd, toy.settings.weights.unfairness_usd) == (0.0, 0.0)
    custom = load_scenario(_scenario_with(tmp_path, deadline_rule="completion", latency_slo_factor=3))
    spec = custom.make_spec(np.random.default_rng(0))
    assert (spec.settings.deadline_rule, spec.settings.latency_slo_factor) == ("completion", 3.0)
    changed = toy.with_settings(deadline_rule="completion", latency_slo_factor=1.5)
    changed_spec = changed.make_spec(np.random.default_rng(0))
    assert (changed_spec.settings.deadline_rule, changed.settings.latency_slo_factor) == ("completion", 1.5)


def test_fleet5_utility__turns_the_new_terms_on_over_the_default_scenario() -> None:
    """The bundled fleet5-utility: completion deadlines, SLO factor 2, utility and fairness weighed, contention."""
    utility, default = scenarios.load("fleet5-utility"), scenarios.load("fleet5-synthetic")
    settings = utility.settings
    assert (settings.deadline_rule, settings.latency_slo_factor, settings.interference) == (
        "completion", 2.0, "processor-sharing")
    assert settings.weights.utility_loss_usd > 0 and settings.weights.unfairness_usd > 0
    assert utility.fleet == default.fleet and settings.horizon_s == default.settings.horizon_s
