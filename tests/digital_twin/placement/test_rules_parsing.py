"""The scenario's ``placement`` section: read into :class:`PlacementRules`; malformed rules refused, key named."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import yaml

import scenarios
from digital_twin import DigitalTwin
from digital_twin.placement.rules import PlacementRules
from digital_twin.placement.selectors import LabelSelector, Requirement
from digital_twin.scenario.schema import ScenarioError

BASE = {
    "schema_version": 2,
    "name": "rules-test",
    "horizon_s": 3600,
    "fleet": {"preset": "default-5"},
    "telemetry": {"reader": "constant", "cpu_pct": 20, "mem_pct": 30, "tick_s": 300},
    "workload": {"source": "synthetic", "options": {"base_rate_per_s": 0.004}},
}


def _load(tmp_path: Path, placement: object) -> scenarios.Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**BASE, "placement": placement}, sort_keys=False))
    return scenarios.load(path)


def test_placement_section__reaches_every_episode_and_pickles(tmp_path: Path) -> None:
    scenario = _load(tmp_path, {
        "topology": {"zones": ["a", "b"]},
        "rules": [{"match": {"match_labels": {"workload": "batch"}}, "node_selector": {"zone": "a"}}],
    })
    assert isinstance(scenario.placement, PlacementRules)
    spec = scenario.make_spec(np.random.default_rng(1))
    assert spec.rules is scenario.placement
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(1))
    while not twin.done:
        twin.place(twin.feasible_mask().index(True))
    batch = {j.job_id for j in spec.jobs if j.workload == "batch"}
    zone_a = {"node-cpu-01", "node-api-03", "node-gpu-05"}  # nodes 0, 2, 4
    starts = [(job, node) for _, event, job, node in twin.event_log if event == "start"]
    assert any(job in batch for job, _ in starts)
    assert all(node in zone_a for job, node in starts if job in batch)
    pickle.loads(pickle.dumps(scenario))


def _expression(**fields: object) -> dict:
    return {"rules": [{"node_affinity": {"required": [{"match_expressions": [fields]}]}}]}


MALFORMED = [
    ({"rule": []}, "placement: unknown key(s) ['rule']"),
    ({"rules": {"match": {}}}, "placement.rules: expected a list"),
    ({"rules": [{"node_affinity": {"requried": []}}]}, "placement.rules[0].node_affinity: unknown key(s) ['requried']"),
    (_expression(key="zone", operator="in", values=["a"]),
     "placement.rules[0].node_affinity.required[0].match_expressions[0]: operator 'in' is not one of"),
    (_expression(key="zone", operator="In"),
     "operator In needs at least one value"),
    (_expression(key="rack", operator="Gt", values=["x"]),
     "operator Gt needs exactly one integer value"),
    ({"rules": [{"node_affinity": {"preferred": [{"weight": 0, "preference": {}}]}}]},
     "placement.rules[0].node_affinity.preferred[0].weight: must be a finite number > 0"),
    ({"rules": [{"node_affinity": {"preferred": [{"weight": 1}]}}]},
     "placement.rules[0].node_affinity.preferred[0]: missing key 'preference'"),
    ({"rules": [{"pod_anti_affinity": {"required": [{"label_selector": {}}]}}]},
     "placement.rules[0].pod_anti_affinity.required[0]: missing key 'topology_key'"),
    ({"rules": [{"pod_anti_affinity": {"preferred": [{"weight": 2, "podAffinityTerm": {}}]}}]},
     "placement.rules[0].pod_anti_affinity.preferred[0]: unknown key(s) ['podAffinityTerm']"),
    ({"rules": [{"topology_spread_constraints": [{"topology_key": "zone"}]}]},
     "placement.rules[0].topology_spread_constraints[0]: give exactly one of max_skew and max_per_domain"),
    ({"rules": [{"topology_spread_constraints": [{"topology_key": "zone", "max_skew": 0}]}]},
     "topology_spread_constraints[0].max_skew: must be an integer >= 1, got 0"),
    ({"rules": [{"topology_spread_constraints": [
        {"topology_key": "zone", "max_skew": 1, "when_unsatisfiable": "Never"}
    ]}]},
     "when_unsatisfiable: 'Never' is not one of"),
    ({"rules": [{"tolerations": [{"operator": "Equal", "value": "x"}]}]},
     "placement.rules[0].tolerations[0]: a toleration without a key must use operator Exists"),
    ({"rules": [{"tolerations": [{"key": "k", "operator": "Exists", "value": "x"}]}]},
     "placement.rules[0].tolerations[0].value: operator Exists takes no value"),
    ({"nodes": [{"taints": [{"key": "k", "effect": "NoExecute"}]}]},
     "placement.nodes[0].taints[0].effect: NoExecute (evicting running jobs) is not modelled"),
    ({"nodes": [{"labels": {"zone": 1.5}}]},
     "placement.nodes[0].labels.zone: a label value must be a string or an integer"),
    ({"job_labels": [{"set": {"app": []}}]}, "placement.job_labels[0].set.app: the list of values is empty"),
    ({"topology": {"zones": ["a", "a"]}}, "placement.topology.zones: zone names repeat"),
    ({"topology": {"zones": ["a"], "racks_per_zone": 0}}, "placement.topology.racks_per_zone: must be an integer >= 1"),
    ({"rules": [{"match": {"match_labels": {"workload": ["batch"]}}}]},
     "placement.rules[0].match.match_labels.workload: a label value must be a string or an integer"),
]


@pytest.mark.parametrize(("placement", "message"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_malformed_rules__refused_naming_the_file_and_the_key(tmp_path: Path, placement: object, message: str) -> None:
    with pytest.raises(ScenarioError) as error:
        _load(tmp_path, placement)
    assert str(error.value).startswith(f"{tmp_path / 's.yaml'}: ")
    assert message in str(error.value)


def test_planted_workloads_take_no_rules() -> None:
    path = Path(scenarios.__file__).parent / "planted5.yaml"
    data = yaml.safe_load(path.read_text())
    data["placement"] = {"rules": []}
    with pytest.raises(ScenarioError, match="placement: a planted workload takes no placement rules"):
        from digital_twin.scenario.loader import parse_scenario

        parse_scenario(data, path, "x")


@pytest.mark.parametrize(
    ("requirement", "labels", "expected"),
    [
        (("zone", "In", ("a", "b")), {"zone": "b"}, True),
        (("zone", "NotIn", ("a",)), {}, True),
        (("zone", "NotIn", ("a",)), {"zone": "a"}, False),
        (("zone", "Exists", ()), {"zone": ""}, True),
        (("zone", "DoesNotExist", ()), {"zone": "a"}, False),
        (("rack", "Lt", ("3",)), {"rack": "2"}, True),
        (("rack", "Lt", ("3",)), {"rack": "3"}, False),
        (("rack", "Gt", ("3",)), {}, False),
    ],
)
def test_requirement_operators_follow_kubernetes(requirement: tuple, labels: dict, expected: bool) -> None:
    assert Requirement(*requirement).matches(labels) is expected


def test_match_label_keys_add_the_jobs_own_values() -> None:
    selector = LabelSelector.parse({"match_labels": {"tier": "web"}}, "s").with_labels({"app": "shop"})
    assert selector.matches({"tier": "web", "app": "shop"}) and not selector.matches({"tier": "web", "app": "blog"})


def test_a_job_no_node_can_take_is_named_with_the_scenario_file_at_reset(tmp_path: Path) -> None:
    """Rules that keep GPU jobs off every GPU node: the env's reset names the file, the rule and a job."""
    import gymnasium as gym

    from aco_env.registration import CLUSTER_SCHEDULING_ID

    placement = {
        "nodes": [
            {"match": {"match_labels": {"arch": "gpu-node"}}, "taints": [{"key": "gpu", "effect": "NoSchedule"}]}
        ],
        "rules": [{"match": {"match_expressions": [{"key": "gpus", "operator": "Gt", "values": [0]}]},
                   "tolerations": [{"key": "other", "operator": "Exists"}]}],
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**BASE, "workload": {"source": "synthetic", "options": {"base_rate_per_s": 0.02}},
                                    "placement": placement}, sort_keys=False))
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario=str(path))
    with pytest.raises(ScenarioError, match=rf"{path}: placement.rules\[0\]: job '.*' fits nodes .* allow none"):
        env.reset(seed=0)
