"""Co-location interference: known answers, and work conservation re-derived from the event log.

The property test rebuilds every running job's progress rate from the event log alone (the
node's processor-sharing rate at the latest tick times ``1 / (1 + slowdowns)`` of the entries
whose victim selects the job while another job their aggressor selects runs on the node) and
integrates it over each run: a completed run must have done exactly its nominal work.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec
from digital_twin.episode_settings import PROCESSOR_SHARING
from digital_twin.placement.labels import job_labels
from digital_twin.placement.rules import PlacementRules
from digital_twin.sim.tables.contention import progress_rate
from tests.helpers import apply_action, first_fit, run_twin, seeded_random_policy
from tests.work_replay import Run, rebuilt_runs

NODE = NodeSpec("n0", "x86_64", "on-demand", 8, 32, 0.36)
LC_NEXT_TO_BATCH = {"interference": [{
    "victim": {"match_labels": {"workload": "latency-critical"}},
    "aggressor": {"match_labels": {"workload": "batch"}},
    "slowdown": 0.5,
}]}


def _twin(
    jobs: list[JobSpec], rules: dict, cpu_pct: float = 0.0, contention: bool = False, **settings_kw: object
) -> DigitalTwin:
    spec = TwinSpec(
        (NODE,), jobs, Telemetry.constant(1, cpu_pct, 10, 7200, 600),
        EpisodeSettings(7200.0, interference=PROCESSOR_SHARING if contention else "none", **settings_kw),
        rules=PlacementRules.parse(rules),
    )
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    while not twin.done:
        apply_action(twin, first_fit(twin))
    return twin


def _completion(twin: DigitalTwin, job_id: str) -> float:
    return next(t for t, event, job, _ in twin.event_log if event == "completion" and job == job_id)


def test_a_victim_runs_slower_while_its_aggressor_runs_and_at_full_speed_after() -> None:
    """600 s of service beside a 300 s batch job (slowdown 0.5): 200 s of work by t=300, 400 more at rate 1."""
    jobs = [JobSpec("svc", 0, 600, "latency-critical", 1, 1), JobSpec("b", 0, 300, "batch", 1, 1)]
    twin = _twin(jobs, LC_NEXT_TO_BATCH)
    assert _completion(twin, "b") == 300.0  # the aggressor is not slowed
    assert _completion(twin, "svc") == pytest.approx(700.0, rel=1e-12)
    assert twin.objective().cost_usd == pytest.approx(0.36 / 3600 * (700 + 300) / 8, rel=1e-12)


def test_presence_counts_not_numbers_and_an_aggressor_arriving_later_slows_from_then_on() -> None:
    jobs = [
        JobSpec("svc", 0, 600, "latency-critical", 1, 1),
        JobSpec("b1", 100, 3000, "batch", 1, 1),
        JobSpec("b2", 200, 3000, "batch", 1, 1),
    ]
    twin = _twin(jobs, LC_NEXT_TO_BATCH)
    # 100 s at rate 1, then 500 s of work at 1/1.5 (one or two batch jobs alike): 750 s
    assert _completion(twin, "svc") == pytest.approx(850.0, rel=1e-12)


def test_a_job_is_never_its_own_aggressor() -> None:
    """Batch slows batch: one replay buffer alone runs at full speed, two slow each other."""
    rules = {"interference": [{"victim": {"match_labels": {"workload": "batch"}},
                               "aggressor": {"match_labels": {"workload": "batch"}}, "slowdown": 1.0}]}
    alone = _twin([JobSpec("b1", 0, 600, "batch", 1, 1)], rules)
    assert _completion(alone, "b1") == 600.0
    pair = _twin([JobSpec("b1", 0, 600, "batch", 1, 1), JobSpec("b2", 0, 300, "batch", 1, 1)], rules)
    assert _completion(pair, "b2") == pytest.approx(600.0, rel=1e-12)  # both at 1/2 while together
    assert _completion(pair, "b1") == pytest.approx(900.0, rel=1e-12)  # 300 s of work by 600, then 300 at 1


def test_interference_multiplies_processor_sharing() -> None:
    """8 cores, 50 % background (4 cores) + 8 cores of our jobs: demand 12, base rate 2/3; the service 2/3 / 1.5."""
    jobs = [JobSpec("svc", 0, 400, "latency-critical", 4, 1), JobSpec("b", 0, 7000, "batch", 4, 1)]
    twin = _twin(jobs, LC_NEXT_TO_BATCH, cpu_pct=50.0, contention=True)
    assert _completion(twin, "svc") == pytest.approx(400 / (2 / 3 / 1.5), rel=1e-12)


def test_the_slower_run_costs_utility_and_sla_time() -> None:
    """A 600 s service slowed to 900 s: latency 900 / SLO 1200 keeps its utility; slowed to 1800 s it loses half."""
    weights = ObjectiveWeights(utility_loss_usd=1.0)
    heavy = {"interference": [{**LC_NEXT_TO_BATCH["interference"][0], "slowdown": 2.0}]}
    twin = _twin([JobSpec("svc", 0, 600, "latency-critical", 1, 1), JobSpec("b", 0, 7000, "batch", 1, 1)], heavy,
                 weights=weights)
    assert _completion(twin, "svc") == pytest.approx(1800.0, rel=1e-12)
    assert twin.objective()["utility_lost"] == pytest.approx(0.5, rel=1e-9)


def test_continued_in__with_interference_replays_bit_for_bit() -> None:
    """A twin continued mid-episode (the lookahead's path) plays on exactly as the original."""
    spec = dataclasses.replace(_random_spec(7), fixed_interruptions_s=((1500.0,), (), ()))
    twin = DigitalTwin(spec, record_events=True)
    run_twin(twin, first_fit, 7, check=False)
    expected = (twin.event_log, twin.objective())
    twin.reset(np.random.default_rng(7))
    for _ in range(5):
        apply_action(twin, first_fit(twin))
    continued = twin.continued_in(twin.spec)
    while not continued.done:
        apply_action(continued, first_fit(continued))
    assert (continued.event_log, continued.objective()) == expected


# ---------------------------------------------------------------------------- invariants
ENTRIES = [
    {"victim": {"match_labels": {"workload": "latency-critical"}}, "aggressor": {"match_labels": {"workload": "batch"}},
     "slowdown": 0.5},
    {"victim": {"match_labels": {"workload": "batch"}}, "aggressor": {"match_labels": {"workload": "batch"}},
     "slowdown": 0.25},
    {"victim": {"match_labels": {"workload": "stream"}},
     "aggressor": {"match_labels": {"workload": "latency-critical"}}, "slowdown": 1.5},
]


def _random_spec(seed: int, n_nodes: int = 3, n_jobs: int = 30, contention: bool = True) -> TwinSpec:
    rng = np.random.default_rng(seed)
    fleet = tuple(
        NodeSpec(f"n{i}", "x86_64", "spot" if i == 0 else "on-demand", 8, 32, 0.3,
                 interruption_prob_per_hour=0.4 if i == 0 else 0.0)
        for i in range(n_nodes)
    )
    jobs = sorted(
        (JobSpec(f"j{k}", float(rng.integers(0, 3000)), float(rng.integers(60, 2400)),
                 ("latency-critical", "batch", "stream")[int(rng.integers(3))], float(rng.choice((0.5, 1, 2, 4))), 2,
                 preemptible=bool(rng.random() < 0.5))
         for k in range(n_jobs)),
        key=lambda job: job.arrival_s,
    )
    background = np.zeros((24, n_nodes, 2))
    background[:, :, 0] = rng.uniform(0, 100, size=(24, n_nodes))
    return TwinSpec(
        fleet, jobs, Telemetry(background, 300.0),
        EpisodeSettings(7200.0, queue_ttl_s=600.0, interference=PROCESSOR_SHARING if contention else "none"),
        rules=PlacementRules.parse({"interference": ENTRIES}),
    )


def _rebuilt_runs(twin: DigitalTwin, slowdowns: bool = True) -> list[Run]:
    """``(job, work done, duration, completed)`` of every run, each job's rate rebuilt from the log.

    ``slowdowns=False`` leaves the interference out of the rebuilt rates (to show the test can fail).
    """
    spec = twin.spec
    assert spec.rules is not None
    entries = spec.rules.interference
    cores = [n.cpu_cores * 1000 for n in spec.fleet]
    labels = dict(zip((j.job_id for j in spec.jobs), job_labels(spec.rules, spec.jobs), strict=True))
    jobs = {job.job_id: job for job in spec.jobs}
    background = spec.telemetry.background_pct[:, :, 0]

    def rates(i: int, on_node: Collection[str], k: int) -> dict[str, float]:
        allocated = sum(round(jobs[j].cpu_cores * 1000) for j in on_node)
        base = 1.0
        if spec.settings.contention:
            base = progress_rate(background[k, i] * cores[i] / 100.0, allocated, cores[i])
        out = {}
        for j in on_node:
            slowdown = sum(
                e.slowdown for e in entries
                if e.victim.matches(labels[j]) and any(e.aggressor.matches(labels[o]) for o in on_node if o != j)
            )
            out[j] = base / (1.0 + slowdown) if slowdowns else base
        return out

    return rebuilt_runs(twin, rates)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 3), st.booleans())
def test_work_is_conserved_under_interference(seed: int, policy_seed: int, contention: bool) -> None:
    """Every completed run did exactly its nominal work at the rates rebuilt from the log; none did more."""
    spec = _random_spec(seed, contention=contention)
    twin = DigitalTwin(spec, record_events=True)
    policy = first_fit if policy_seed == 0 else seeded_random_policy(policy_seed)
    run_twin(twin, policy, seed=policy_seed)
    runs = _rebuilt_runs(twin)
    assert sum(completed for *_, completed in runs) > 5
    for job_id, done, duration, completed in runs:
        if completed:
            assert done == pytest.approx(duration, rel=1e-9, abs=1e-6), job_id
        else:
            assert done <= duration * (1 + 1e-9) + 1e-6, job_id


def test_the_rebuilt_rates_are_not_vacuous() -> None:
    """Rebuilt without the slowdowns, completed runs do more than their work: the property test can fail."""
    twin = DigitalTwin(_random_spec(3, contention=False), record_events=True)
    run_twin(twin, first_fit, seed=0)
    over = [job for job, done, duration, completed in _rebuilt_runs(twin, slowdowns=False) if done > duration * 1.01]
    assert over
    assert all(
        done == pytest.approx(duration, rel=1e-9, abs=1e-6)
        for _, done, duration, completed in _rebuilt_runs(twin) if completed
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_the_bundled_rules_scenario__work_is_conserved_and_no_rule_broken(seed: int) -> None:
    """fleet30-rules under first-fit: every rate rebuilt from the log, every rule and preference judged."""
    import scenarios
    from tests.digital_twin.placement.reference import judge_log

    spec = scenarios.load("fleet30-rules").make_spec(np.random.default_rng(seed))
    twin = DigitalTwin(spec, record_events=True)
    run_twin(twin, first_fit, seed=seed, check_every=50)
    runs = _rebuilt_runs(twin)
    assert sum(completed for *_, completed in runs) > 150
    for job_id, done, duration, completed in runs:
        assert done == pytest.approx(duration, rel=1e-9, abs=1e-6) if completed else done <= duration + 1e-6, job_id
    broken, weight, _ = judge_log(spec, twin.event_log)
    assert broken == [] and twin.objective()["preference_violations"] == pytest.approx(weight, abs=1e-9)
