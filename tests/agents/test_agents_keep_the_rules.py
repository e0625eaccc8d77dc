"""Every agent, on a small scenario with placement rules and interference, never breaks a required rule.

Each plays one episode through the env; its decisions are replayed in a recording twin (the same
spot interruptions) and the log is judged by the independent referee
(:mod:`tests.digital_twin.placement.reference`), which also recounts the preferences.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest
import yaml

import scenarios
from aco_env.registration import CLUSTER_SCHEDULING_ID
from tests.digital_twin.placement.reference import judge_log
from tests.helpers import agent_params, make_quick_agent, replayed_with_log, run_episode

PLACEMENT = yaml.safe_load("""
topology: {zones: [a, b]}
nodes: [{match: {match_labels: {instance: spot}}, taints: [{key: spot, effect: PreferNoSchedule}]}]
job_labels: [{match: {match_labels: {workload: latency-critical}}, set: {app: [web, api]}}]
rules:
  - match: {match_labels: {workload: latency-critical}}
    pod_anti_affinity:
      required: [{match_label_keys: [app], topology_key: node}]
      preferred:
        - {weight: 2, pod_affinity_term: {label_selector: {match_labels: {workload: batch}}, topology_key: node}}
  - match: {match_labels: {workload: batch}}
    topology_spread_constraints:
      - {max_per_domain: 2, topology_key: node, label_selector: {match_labels: {workload: batch}}}
  - match: {match_labels: {workload: stream}}
    node_affinity: {preferred: [{weight: 1, preference: {match_labels: {instance: on-demand}}}]}
interference:
  - {victim: {match_labels: {workload: latency-critical}}, aggressor: {match_labels: {workload: batch}}, slowdown: 0.5}
""")


@pytest.fixture(scope="module")
def ruled_scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default scenario with :data:`PLACEMENT` and a price on broken preferences, as a file."""
    source = Path(scenarios.__file__).parent / "fleet5-synthetic.yaml"
    data = yaml.safe_load(source.read_text())
    data["name"] = "fleet5-rules-test"
    data["telemetry"]["path"] = str(source.parent / data["telemetry"]["path"])
    data["weights"]["preference_violation_usd"] = 0.1
    data["placement"] = PLACEMENT
    path = tmp_path_factory.mktemp("rules") / "fleet5-rules.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("name", [p for p in agent_params() if p.values[0] != "planted"])
def test_agent__keeps_every_required_rule(name: str, ruled_scenario: Path) -> None:
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario=str(ruled_scenario))
    metrics = run_episode(env, make_quick_agent(name, env), seed=0)
    twin = replayed_with_log(env)
    broken, weight, starts = judge_log(twin.spec, twin.event_log)
    assert starts > 10 and broken == []
    assert metrics["preference_violations"] == pytest.approx(weight, abs=1e-9)
