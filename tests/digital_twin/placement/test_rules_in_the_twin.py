"""Placement rules in the twin: required rules never broken, preferences counted, both judged independently.

Every episode's event log is replayed by :mod:`tests.digital_twin.placement.reference`, which
recomputes from the jobs running at each start whether a required rule is broken and what the
preferences count.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec
from digital_twin.errors import SpecError
from digital_twin.placement.rules import PlacementRules
from tests.digital_twin.placement.reference import judge_log
from tests.helpers import apply_action, first_fit, run_twin, seeded_random_policy

HORIZON_S = 4 * 3600.0

RULES = yaml.safe_load("""
topology: {zones: [a, b, c], racks_per_zone: 2}
nodes:
  - {match: {match_labels: {arch: arm64}}, taints: [{key: arm, effect: NoSchedule}]}
  - {match: {match_labels: {instance: spot}}, taints: [{key: spot, value: "yes", effect: PreferNoSchedule}]}
job_labels:
  - {match: {match_labels: {workload: latency-critical}}, set: {app: [web, api, db]}}
  - {match: {match_labels: {workload: batch}}, set: {team: [x, y]}}
rules:
  - match: {match_labels: {workload: latency-critical}}
    node_affinity:
      preferred: [{weight: 3, preference: {match_labels: {instance: on-demand}}}]
    pod_anti_affinity:
      required:
        - {match_label_keys: [app], topology_key: node}
        - {label_selector: {match_labels: {team: x}}, topology_key: rack}
      preferred: [{weight: 2, pod_affinity_term: {match_label_keys: [app], topology_key: zone}}]
    topology_spread_constraints: [{max_skew: 1, topology_key: zone, match_label_keys: [app]}]
  - match: {match_labels: {workload: batch}}
    node_affinity:
      required:
        - {match_expressions: [{key: zone, operator: In, values: [a, b]}]}
        - {match_labels: {rack: c-r1}}
    topology_spread_constraints:
      - {max_per_domain: 2, topology_key: node, label_selector: {match_labels: {workload: batch}}}
      - {max_skew: 1, topology_key: zone, when_unsatisfiable: ScheduleAnyway, match_label_keys: [team]}
  - {match: {match_labels: {workload: stream}}, tolerations: [{key: arm, operator: Exists}]}
""")


def _fleet() -> tuple[NodeSpec, ...]:
    nodes = [NodeSpec(f"od-{k}", "x86_64", "on-demand", 8, 32, 0.40) for k in range(6)]
    nodes += [NodeSpec(f"spot-{k}", "x86_64", "spot", 8, 32, 0.12, interruption_prob_per_hour=0.3) for k in range(3)]
    nodes += [NodeSpec(f"arm-{k}", "arm64", "spot", 8, 32, 0.08, interruption_prob_per_hour=0.2) for k in range(3)]
    return tuple(nodes)


def _jobs(seed: int, n: int = 120) -> list[JobSpec]:
    rng = np.random.default_rng(seed)
    kinds = ("latency-critical", "batch", "stream")
    return [
        JobSpec(
            f"j{k}",
            float(rng.uniform(0, HORIZON_S * 0.8)),
            float(rng.uniform(300, 3600)),
            kinds[int(rng.integers(3))],
            float(rng.integers(1, 5)),
            float(rng.integers(1, 9)),
            preemptible=bool(rng.random() < 0.5),
        )
        for k in range(n)
    ]


def _spec(seed: int, rules: dict | None = RULES, contention: bool = False) -> TwinSpec:
    fleet = _fleet()
    settings = EpisodeSettings(
        HORIZON_S,
        interference="processor-sharing" if contention else "none",
        weights=ObjectiveWeights(preference_violation_usd=0.1),
    )
    telemetry = Telemetry.constant(len(fleet), 20, 30, HORIZON_S, 300)
    placement = None if rules is None else PlacementRules.parse(rules)
    return TwinSpec(fleet, _jobs(seed), telemetry, settings, rules=placement)


def _small_spec(fleet: tuple[NodeSpec, ...], jobs: list[JobSpec], rules: dict) -> TwinSpec:
    telemetry = Telemetry.constant(len(fleet), 0, 0, 3600, 300)
    return TwinSpec(fleet, jobs, telemetry, EpisodeSettings(3600), rules=PlacementRules.parse(rules))


def _play(spec: TwinSpec, policy, seed: int) -> DigitalTwin:
    twin = DigitalTwin(spec, record_events=True)
    run_twin(twin, policy, seed)
    return twin


@pytest.mark.parametrize("seed", range(30))
def test_random_play__never_breaks_a_required_rule_and_counts_every_preference(seed: int) -> None:
    spec = _spec(seed, contention=seed % 2 == 1)
    twin = _play(spec, seeded_random_policy(seed, defer_prob=0.2), seed)
    broken, weight, starts = judge_log(spec, twin.event_log)
    assert broken == []
    assert starts > 40  # the rules leave room: most jobs run
    assert twin.objective()["preference_violations"] == pytest.approx(weight, abs=1e-9)
    assert weight > 0  # random play breaks preferences


@pytest.mark.parametrize("seed", range(5))
def test_first_fit__never_breaks_a_required_rule_and_the_rules_bite(seed: int) -> None:
    spec = _spec(seed)
    twin = _play(spec, first_fit, seed)
    broken, weight, _ = judge_log(spec, twin.event_log)
    assert broken == []
    assert twin.objective()["preference_violations"] == pytest.approx(weight, abs=1e-9)
    free = _play(_spec(seed, rules=None), first_fit, seed)
    assert judge_log(spec, free.event_log)[0] != []  # without rules, first-fit would break them
    assert free.objective()["preference_violations"] == 0.0


def test_the_referee_catches_a_broken_rule() -> None:
    """The independent judge is not vacuous: a log placing two replicas of one app on one node is refused."""
    spec = _spec(0)
    web = [j.job_id for j in spec.jobs if j.workload == "latency-critical"][::3][:2]
    log = [(0.0, "start", web[0], "od-0"), (1.0, "start", web[1], "od-0")]
    assert any("anti-affinity" in b for b in judge_log(spec, log)[0])


def test_symmetric_anti_affinity__a_job_without_rules_is_kept_off_a_guarded_node() -> None:
    rules = {
        "rules": [
            {
                "match": {"match_labels": {"workload": "latency-critical"}},
                "pod_anti_affinity": {
                    "required": [{"label_selector": {"match_labels": {"workload": "batch"}}, "topology_key": "node"}]
                },
            }
        ]
    }
    fleet = _fleet()[:2]
    jobs = [JobSpec("lc", 0.0, 600.0, "latency-critical", 1, 1), JobSpec("b", 10.0, 600.0, "batch", 1, 1)]
    spec = _small_spec(fleet, jobs, rules)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    apply_action(twin, 0)
    assert twin.current_job.job_id == "b"
    assert twin.feasible_mask() == [False, True]


def test_max_skew__a_job_waits_for_the_lagging_zone_and_is_asked_again_when_it_frees() -> None:
    """Two zones, max_skew 1: a second replica must go to the other zone; when that zone's node is full, it waits."""
    rules = {
        "topology": {"zones": ["a", "b"]},
        "rules": [{"topology_spread_constraints": [{"max_skew": 1, "topology_key": "zone"}]}],
    }
    fleet = (NodeSpec("n0", "x86_64", "on-demand", 4, 8, 0.1), NodeSpec("n1", "x86_64", "on-demand", 4, 8, 0.1))
    jobs = [
        JobSpec("fill-b", 0.0, 100.0, "batch", 4, 1),  # fills n1 (zone b) until t=100
        JobSpec("x", 1.0, 500.0, "batch", 1, 1),
        JobSpec("y", 2.0, 500.0, "batch", 1, 1),
    ]
    spec = _small_spec(fleet, jobs, rules)
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    apply_action(twin, 1)  # fill-b on n1: zones a=0, b=1
    assert twin.current_job.job_id == "x" and twin.feasible_mask() == [True, False]
    apply_action(twin, 0)  # x on n0: a=1, b=1
    assert twin.current_job.job_id == "y" and twin.feasible_mask() == [True, False]
    apply_action(twin, 0)  # y on n0: a=2, b=1: skew 1
    assert twin.done or twin.time_s >= 100.0
    starts = [(t, j, n) for t, e, j, n in twin.event_log if e == "start"]
    assert starts == [(0.0, "fill-b", "n1"), (1.0, "x", "n0"), (2.0, "y", "n0")]


def _skew_twin(extra_jobs: list[JobSpec]) -> tuple[TwinSpec, DigitalTwin]:
    """Zones a (n0), b (n1), c (n2, n3; n3 has 1 GB), max_skew 1 over the jobs labelled app=s.

    ``big`` fills n2; ``a1`` and ``b1`` start on n0 and n1, so zone c lags.
    """
    rules = {
        "nodes": [
            {"match": {"match_labels": {"node": name}}, "labels": {"zone": zone}}
            for name, zone in (("n0", "a"), ("n1", "b"), ("n2", "c"), ("n3", "c"))
        ],
        "job_labels": [
            {"match": {"match_expressions": [{"key": "job", "operator": "NotIn", "values": ["big", "tiny"]}]},
             "set": {"app": "s"}}
        ],
        "rules": [{"topology_spread_constraints": [
            {"max_skew": 1, "topology_key": "zone", "label_selector": {"match_labels": {"app": "s"}}}
        ]}],
    }
    fleet = tuple(NodeSpec(f"n{k}", "x86_64", "on-demand", 4, 8 if k < 3 else 1, 0.1) for k in range(4))
    jobs = [
        JobSpec("big", 0.0, 5000.0, "batch", 4, 1),
        JobSpec("a1", 1.0, 1000.0, "batch", 1, 1),
        JobSpec("b1", 2.0, 1000.0, "batch", 1, 1),
        *extra_jobs,
    ]
    spec = _small_spec(fleet, jobs, rules)
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    for node in (2, 0, 1):
        apply_action(twin, node)
    return spec, twin


def test_max_skew__a_parked_job_later_in_the_queue_is_asked_right_after_the_start_that_lets_it_in() -> None:
    """c1 and a2 fit nowhere and are parked; n3 frees at t=20, c1 starts there (zone c reaches 1), and
    a2, after c1 in the queue, is asked in the same pass, as it would be had it never been parked."""
    spec, twin = _skew_twin([
        JobSpec("tiny", 3.0, 17.0, "batch", 4, 1),   # holds n3 from t=3 to t=20
        JobSpec("c1", 5.0, 1000.0, "batch", 1, 1),   # skew keeps it off n0, n1; n2, n3 full
        JobSpec("a2", 10.0, 1000.0, "batch", 1, 2),  # 2 GB: never on n3
    ])
    apply_action(twin, 3)  # tiny on n3
    assert twin.current_job.job_id == "c1" and twin.time_s == 20.0
    assert twin.feasible_mask() == [False, False, False, True]
    apply_action(twin, 3)
    assert twin.current_job.job_id == "a2" and twin.time_s == 20.0
    assert twin.feasible_mask() == [True, True, False, False]
    apply_action(twin, 0)
    assert judge_log(spec, twin.event_log)[0] == []


def test_max_skew__a_parked_job_earlier_in_the_queue_is_asked_at_the_next_event() -> None:
    """a2 is parked before c1 arrives; c1's start lets a2 in, and a2 is asked at the next event (the tick at
    300 s), as a job examined earlier in the same pass is."""
    spec, twin = _skew_twin(
        [JobSpec("a2", 10.0, 1000.0, "batch", 1, 2), JobSpec("c1", 20.0, 1000.0, "batch", 1, 1)]
    )
    assert twin.current_job.job_id == "c1" and twin.feasible_mask() == [False, False, False, True]
    apply_action(twin, 3)
    assert twin.current_job.job_id == "a2" and twin.time_s == 300.0
    apply_action(twin, 0)
    assert judge_log(spec, twin.event_log)[0] == []


def test_a_job_the_rules_keep_off_every_node_is_named() -> None:
    rules = {"rules": [{
        "match": {"match_labels": {"job": "j3"}},
        "node_selector": {"arch": "arm64"},
        "node_affinity": {"required": [{"match_labels": {"instance": "on-demand"}}]},
    }]}
    with pytest.raises(SpecError, match=r"placement.rules\[0\]: job 'j3' fits nodes .* placement rules allow none"):
        DigitalTwin(_spec(0, rules=rules))


def test_a_label_key_no_node_has_is_named() -> None:
    rules = {"rules": [{"node_affinity": {"required": [{"match_labels": {"zon": "a"}}]}}]}
    with pytest.raises(SpecError, match=r"rules\[0\].node_affinity.required\[0\]: label key 'zon' is on no node"):
        DigitalTwin(_spec(0, rules=rules))


def test_max_per_domain_zero_on_itself_is_unsatisfiable() -> None:
    rules = {"rules": [{"topology_spread_constraints": [{"max_per_domain": 0, "topology_key": "node"}]}]}
    with pytest.raises(SpecError, match="allow none of them"):
        DigitalTwin(_spec(0, rules=rules))


def test_no_rules__no_tables_and_the_same_episode_as_empty_rules() -> None:
    """Rules absent cost nothing (no tables); an empty rules section plays the same episode."""
    plain = DigitalTwin(_spec(3, rules=None), record_events=True)
    empty = DigitalTwin(_spec(3, rules={}), record_events=True)
    assert plain._c.rules is None
    run_twin(plain, seeded_random_policy(3), 3)
    run_twin(empty, seeded_random_policy(3), 3)
    assert plain.event_log == empty.event_log and plain.objective() == empty.objective()


def test_snapshot_restore_with_rules_replays_identically() -> None:
    spec = _spec(4)
    twin = DigitalTwin(spec, record_events=True)
    run_twin(twin, first_fit, 4)
    expected = (twin.event_log, twin.objective())
    twin.reset(np.random.default_rng(4))
    for _ in range(30):
        apply_action(twin, first_fit(twin))
    snapshot = twin.snapshot()
    for _ in range(3):
        apply_action(twin, first_fit(twin))
    twin.restore(snapshot)
    while not twin.done:
        apply_action(twin, first_fit(twin))
    assert (twin.event_log, twin.objective()) == expected


def test_a_taint_keeps_off_every_job_that_does_not_tolerate_it_whether_or_not_a_rule_selects_it() -> None:
    rules = {
        "nodes": [{"match": {"match_labels": {"node": "n0"}}, "taints": [{"key": "gpu", "effect": "NoSchedule"}]}],
        "rules": [
            {"match": {"match_labels": {"job": "tolerant"}}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}
        ],
    }
    fleet = (NodeSpec("n0", "x86_64", "on-demand", 4, 8, 0.1), NodeSpec("n1", "x86_64", "on-demand", 4, 8, 0.1))
    jobs = [JobSpec("plain", 0.0, 100.0, "batch", 1, 1), JobSpec("tolerant", 1.0, 100.0, "batch", 1, 1)]
    twin = DigitalTwin(_small_spec(fleet, jobs, rules))
    twin.reset(np.random.default_rng(0))
    assert twin.current_job.job_id == "plain" and twin.feasible_mask() == [False, True]
    apply_action(twin, 1)
    assert twin.current_job.job_id == "tolerant" and twin.feasible_mask() == [True, True]


def test_labels_alone_build_no_tables_and_change_nothing() -> None:
    """A placement section of labels only (topology, job labels) names things for rules: the twin ignores it."""
    labels_only = {"topology": {"zones": ["a", "b"], "racks_per_zone": 2}, "job_labels": RULES["job_labels"]}
    plain = DigitalTwin(_spec(6, rules=None), record_events=True)
    labelled = DigitalTwin(_spec(6, rules=labels_only), record_events=True)
    assert labelled._c.rules is None and labelled._c.lanes is None
    run_twin(plain, seeded_random_policy(6), 6)
    run_twin(labelled, seeded_random_policy(6), 6)
    assert plain.event_log == labelled.event_log and plain.objective() == labelled.objective()


def test_the_500_node_fleet_has_zones_and_racks() -> None:
    import scenarios
    from digital_twin.placement.labels import node_labels

    scenario = scenarios.load("fleet500-synthetic")
    assert scenario.placement is not None
    labels = node_labels(scenario.placement, scenario.fleet)
    assert len({n["zone"] for n in labels}) == 5 and len({n["rack"] for n in labels}) == 50


def test_placing_against_a_required_rule_is_refused_saying_so() -> None:
    from digital_twin.errors import InvalidPlacementError

    rules = {"rules": [{"pod_anti_affinity": {"required": [{"topology_key": "node"}]}}]}  # one job per node
    fleet = (NodeSpec("n0", "x86_64", "on-demand", 4, 8, 0.1), NodeSpec("n1", "x86_64", "on-demand", 4, 8, 0.1))
    jobs = [JobSpec("a", 0.0, 100.0, "batch", 1, 1), JobSpec("b", 1.0, 100.0, "batch", 1, 1)]
    twin = DigitalTwin(_small_spec(fleet, jobs, rules))
    twin.reset(np.random.default_rng(0))
    twin.place(0)
    with pytest.raises(InvalidPlacementError, match="cannot go on n0 now: a required placement rule"):
        twin.place(0)
    twin.place(1)
