"""The oracle under placement rules and co-location interference, against the exhaustive optimum.

Tiny random instances (:func:`tests.agents.oracle.test_oracle_random.small_specs`) get random
rules: node-side ones (which cut the oracle's candidates as they cut the twin's), anti-affinity
and spread (which the programs relax away), preferences (charged 0) and interference (which
lengthens runs: the bound charges nominal runs and widens ``longest_run_s``, the plan reserves
the worst case). For each: the plan replays to exactly its objective through the twin (which
keeps every rule), and the bound is below four policies and the brute-force optimum over every
action sequence the twin allows.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec
from digital_twin.errors import SpecError
from digital_twin.placement.rules import PlacementRules
from tests.agents.oracle.test_oracle_random import _check_instance, brute_force_optimum, small_specs

LC = {"match_labels": {"workload": "latency-critical"}}
BATCH = {"match_labels": {"workload": "batch"}}
STREAM = {"match_labels": {"workload": "stream"}}


@st.composite
def ruled_specs(draw: st.DrawFn, exact_grid: bool) -> TwinSpec:
    """A small spec with a drawn mix of rules and interference, and a price on broken preferences."""
    spec = draw(small_specs(exact_grid=exact_grid))
    rules: list[dict] = []
    if draw(st.booleans()):
        anti = {"required": [{"label_selector": BATCH, "topology_key": "node"}]}
        rules.append({"match": LC, "pod_anti_affinity": anti})
    if draw(st.booleans()):
        cap = {"max_per_domain": 1, "topology_key": "node", "label_selector": BATCH}
        rules.append({"match": BATCH, "topology_spread_constraints": [cap]})
    if draw(st.booleans()):
        rules.append({"match": STREAM, "node_affinity": {"required": [{"match_labels": {"arch": "x86_64"}}]}})
    if draw(st.booleans()):
        on_demand = {"match_labels": {"instance": "on-demand"}}
        apart = {"weight": 1, "pod_affinity_term": {"topology_key": "node"}}
        rules.append({"node_affinity": {"preferred": [{"weight": 2, "preference": on_demand}]},
                      "pod_anti_affinity": {"preferred": [apart]}})
    interference = [
        {"victim": victim, "aggressor": aggressor, "slowdown": draw(st.sampled_from((0.5, 1.0, 3.0)))}
        for victim, aggressor in ((LC, BATCH), (BATCH, BATCH), (STREAM, LC))
        if draw(st.booleans())
    ]
    nodes = [{"match": {"match_labels": {"instance": "spot"}},
              "taints": [{"key": "spot", "effect": "PreferNoSchedule"}]}] if draw(st.booleans()) else []
    placement = PlacementRules.parse({"nodes": nodes, "rules": rules, "interference": interference})
    weights = dataclasses.replace(spec.settings.weights, preference_violation_usd=draw(st.sampled_from((0.0, 0.3))))
    ruled = dataclasses.replace(spec, settings=dataclasses.replace(spec.settings, weights=weights), rules=placement)
    try:
        DigitalTwin(ruled)
    except SpecError:  # the drawn node-side rules leave some job no node
        assume(False)
    return ruled


@pytest.mark.heavy  # seconds of CPU: the rest layer (make test), not make test-fast
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(ruled_specs(exact_grid=False))
def test_oracle__bound_below_the_exhaustive_optimum_under_rules_and_interference(spec: TwinSpec) -> None:
    """Random rules and interference, interruptions: bound <= optimum <= plan == replay, heuristics >= bound."""
    _check_instance(spec, exact_grid=False)


def test_rules_and_interference_raise_the_optimum_and_the_bound_stays_below() -> None:
    """A hand-made case where the rules bite: the service may not join the batch job on the cheap node.

    Two nodes (cheap n0, dear n1), a batch job and a service at t=0, waiting priced. Without
    rules both go to n0. With a required anti-affinity the service pays n1's price (or waits);
    with interference instead it may share n0 but runs 1 + 3 = 4 times slower there. The
    exhaustive optimum rises in both cases, and the oracle's bound stays at or below it while its plan replays exactly.
    """
    fleet = (NodeSpec("n0", "x86_64", "on-demand", 4, 8, 0.36), NodeSpec("n1", "x86_64", "on-demand", 4, 8, 3.6))
    jobs = (JobSpec("b", 0.0, 1200.0, "batch", 1, 1), JobSpec("svc", 0.0, 600.0, "latency-critical", 1, 1))
    settings_ = EpisodeSettings(3600.0, weights=ObjectiveWeights(wait_usd_per_job_hour=1.0))
    base = TwinSpec(fleet, jobs, Telemetry.constant(2, 10, 10, 3600, 600), settings_)
    anti = {"rules": [
        {"match": LC, "pod_anti_affinity": {"required": [{"label_selector": BATCH, "topology_key": "node"}]}}
    ]}
    slow = {"interference": [{"victim": LC, "aggressor": BATCH, "slowdown": 3.0}]}
    free = brute_force_optimum(base, 100.0)
    assert free is not None
    for rules in (anti, slow):
        spec = dataclasses.replace(base, rules=PlacementRules.parse(rules))
        optimum = brute_force_optimum(spec, 100.0)
        assert optimum is not None and optimum > free + 1e-6
        _check_instance(spec, exact_grid=False)


def test_a_per_node_cap_is_kept_by_the_programs_so_plan_and_bound_meet_the_optimum() -> None:
    """Two batch jobs, at most one per node: on the tick grid plan, bound and exhaustive optimum coincide.

    Without the cap in the programs both would go to the cheap node: the bound would sit below
    the optimum (and the plan's replay would wait or repair).
    """
    fleet = (NodeSpec("n0", "x86_64", "on-demand", 4, 8, 0.36), NodeSpec("n1", "x86_64", "on-demand", 4, 8, 3.6))
    jobs = (JobSpec("b1", 0.0, 1200.0, "batch", 1, 1), JobSpec("b2", 0.0, 1200.0, "batch", 1, 1))
    settings_ = EpisodeSettings(3600.0, queue_ttl_s=None, weights=ObjectiveWeights(wait_usd_per_job_hour=1.0))
    cap = {"max_per_domain": 1, "topology_key": "node", "label_selector": BATCH}
    rules = PlacementRules.parse({"rules": [{"match": BATCH, "topology_spread_constraints": [cap]}]})
    spec = TwinSpec(fleet, jobs, Telemetry.constant(2, 10, 10, 3600, 600), settings_, rules=rules)
    free = brute_force_optimum(dataclasses.replace(spec, rules=None), 100.0)
    optimum = brute_force_optimum(spec, 100.0)
    assert free is not None and optimum is not None and optimum > free + 1e-6
    _check_instance(spec, exact_grid=True)
