"""Replayed spot traces: nodes go down and come back exactly at the traces' transitions; hindsight sees them whole."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from digital_twin import DigitalTwin, TwinSpec
from digital_twin.errors import PastMismatchError
from digital_twin.scenario import ScenarioError, load_scenario
from digital_twin.spot.replay import SpotGroup, SpotReplay
from digital_twin.traces.spot_availability import read_spot_trace
from tests.digital_twin.spot_scenarios import expected_transitions, replayed_default, write_trace
from tests.paths import ROOT, TRACES

rng_counts = np.random.default_rng(11)
GPU_COUNTS = [int(v) for v in (rng_counts.random(600) < 0.8)]  # 0/1 ticks of 30 s
CPU_COUNTS = [int(v) for v in rng_counts.integers(0, 5, size=120)]  # 0..4 instances, 195 s ticks


def _first_fit(twin: DigitalTwin, until_s: float = math.inf) -> DigitalTwin:
    """``twin`` played by first fit (deferring when nothing fits) until its episode ends or ``until_s``."""
    while not twin.done and twin.time_s < until_s:
        mask = twin.feasible_mask()
        twin.place(mask.index(True)) if any(mask) else twin.defer()
    return twin


def _played(spec: TwinSpec) -> DigitalTwin:
    """``spec`` played to its end by first fit, recording events."""
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    return _first_fit(twin)


def _node_events(twin: DigitalTwin, node_id: str) -> list[tuple[str, float]]:
    """The node's interruptions and recoveries before the episode's end (the twin stops with its last job)."""
    return [(kind, time_s) for time_s, kind, _, node in twin.event_log if node == node_id
            and kind in ("interruption", "recovery") and time_s < twin.time_s]  # fmt: skip


def test_group_rule__node_r_up_while_count_times_k_exceeds_r_times_n(tmp_path: Path) -> None:
    trace = read_spot_trace(write_trace(tmp_path / "4-node" / "t.json", [0, 1, 2, 3, 4], 300))
    assert SpotGroup(trace, (0, 1, 2, 3)).up_ticks(0, 5).astype(int).tolist() == [
        [0, 1, 1, 1, 1], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1], [0, 0, 0, 0, 1],
    ]  # k == N: node r up while more than r instances are
    assert SpotGroup(trace, (0,)).up_ticks(0, 5).astype(int).tolist() == [[0, 1, 1, 1, 1]]  # any instance
    single = read_spot_trace(write_trace(tmp_path / "one.json", [1, 0, 1], 30))
    assert SpotGroup(single, (0, 1, 2)).up_ticks(0, 3).all(axis=0).tolist() == [True, False, True]  # together


@pytest.mark.parametrize("start_s", [0.0, 1234.5, 3000.0])
def test_interruptions_and_recoveries__exactly_at_the_traces_transitions(tmp_path: Path, start_s: float) -> None:
    gpu = write_trace(tmp_path / "gpu.json", GPU_COUNTS, 30)
    cpu = write_trace(tmp_path / "cpu.json", CPU_COUNTS, 195)
    traces = [{"path": str(gpu), "nodes": ["node-gpu-05"]},
              {"path": str(cpu), "nodes": ["node-arm-02"], "instances": 4}]  # fmt: skip
    scenario = replayed_default(tmp_path, traces, start_s=start_s)
    twin = _played(scenario.make_spec(np.random.default_rng(5)))
    horizon = twin.time_s  # the episode's end (its horizon, 4 hours, is inside both traces from every start)
    assert _node_events(twin, "node-gpu-05") == expected_transitions(GPU_COUNTS, 30, start_s, horizon, 1, 1, 0)
    assert _node_events(twin, "node-arm-02") == expected_transitions(CPU_COUNTS, 195, start_s, horizon, 4, 1, 0)
    assert _node_events(twin, "node-gpu-05"), "the written trace has transitions in the episode"
    for node in ("node-cpu-01", "node-api-03", "node-gpu-04"):
        assert _node_events(twin, node) == []


SHARED = TRACES / "spot-traces-skypilot-2022-2023" / "preemption" / "1-node"


@pytest.mark.skipif(not SHARED.is_dir(), reason="the SkyPilot spot traces are not present")
@pytest.mark.parametrize("start_s", [0.0, 86_400.0, 300_000.0])
def test_bundled_scenario__replays_the_shared_traces_exactly(tmp_path: Path, start_s: float) -> None:
    bundled = load_scenario(ROOT / "scenarios" / "fleet5-spot-replayed.yaml")
    assert bundled.spot_replay is not None
    paths = {bundled.fleet[g.nodes[0]].node_id: g.trace.path for g in bundled.spot_replay.groups}
    traces = [{"path": str(path), "nodes": [node]} for node, path in paths.items()]
    scenario = replayed_default(tmp_path, traces, start_s=start_s)
    twin = _played(scenario.make_spec(np.random.default_rng(0)))
    horizon = twin.time_s
    for node, path in paths.items():
        document = json.loads(path.read_text())
        gap = document["metadata"]["gap_seconds"]
        assert _node_events(twin, node) == expected_transitions(document["data"], gap, start_s, horizon, 1, 1, 0)


@pytest.mark.skipif(not SHARED.is_dir(), reason="the SkyPilot spot traces are not present")
def test_random_start__per_seed_inside_the_traces__jobs_those_of_the_poisson_scenario() -> None:
    replayed = load_scenario(ROOT / "scenarios" / "fleet5-spot-replayed.yaml")
    poisson = load_scenario(ROOT / "scenarios" / "fleet5-synthetic.yaml")
    specs = [replayed.make_spec(np.random.default_rng(seed)) for seed in (0, 0, 1)]
    assert specs[0].fixed_interruptions_s == specs[1].fixed_interruptions_s
    assert specs[0].fixed_recoveries_s == specs[1].fixed_recoveries_s
    assert specs[0].fixed_interruptions_s != specs[2].fixed_interruptions_s
    for seed, spec in ((0, specs[0]), (1, specs[2])):
        assert spec.jobs == poisson.make_spec(np.random.default_rng(seed)).jobs


def test_hindsight_sees_every_outage__the_known_spec_only_ends_that_came(tmp_path: Path) -> None:
    counts = [1] * 40 + [0] * 200 + [1] * 400  # down from 1200 s to 7200 s
    scenario = replayed_default(tmp_path, [{"path": str(write_trace(tmp_path / "g.json", counts, 30)),
                                            "nodes": ["node-gpu-05", "node-arm-02"]}], start_s=0.0)  # fmt: skip
    spec = scenario.make_spec(np.random.default_rng(2))
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    assert twin.hindsight().down_windows_s[4] == ((1200.0, 7200.0),)
    _first_fit(twin, 1200.0)  # to a decision inside the outage
    assert not twin.done and 1200.0 <= twin.time_s < 7200.0
    known = twin.known_spec()
    assert known.fixed_interruptions_s is not None and known.fixed_recoveries_s is not None
    assert known.fixed_interruptions_s[4] == (1200.0,) and math.isinf(known.fixed_recoveries_s[4][0])
    on_known, on_truth = twin.continued_in(known), twin.continued_in(twin.hindsight().replayable_spec())
    for follower in (on_known, on_truth):
        _first_fit(follower)
    assert on_truth.objective() == _first_fit(twin).objective()  # the truth continued is the episode itself
    assert on_known.objective() != on_truth.objective()  # without the recovery, the GPU node never returns


def test_a_spec_with_another_past_recovery__does_not_continue_the_episode(tmp_path: Path) -> None:
    counts = [1] * 10 + [0] * 20 + [1] * 600  # down from 300 s to 900 s
    scenario = replayed_default(tmp_path, [{"path": str(write_trace(tmp_path / "g.json", counts, 30)),
                                            "nodes": ["node-gpu-05", "node-arm-02"]}], start_s=0.0)  # fmt: skip
    spec = scenario.make_spec(np.random.default_rng(2))
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    _first_fit(twin, 1000.0)
    assert spec.fixed_recoveries_s is not None
    moved = tuple(tuple(end + 60.0 for end in ends) for ends in spec.fixed_recoveries_s)
    with pytest.raises(PastMismatchError, match="recoveries up to now differ"):
        twin.continued_in(dataclasses.replace(spec, fixed_recoveries_s=moved))


BAD_SPOT = [
    ({"model": "markov"}, "spot.model: unknown model"),
    ({"model": "poisson", "traces": []}, "spot.traces: is read only with model: trace"),
    ({"model": "trace"}, "spot.traces: is required"),
    ({"model": "trace", "traces": []}, "at least one trace"),
    ({"model": "trace", "interruptions": False, "traces": [{"path": "x", "nodes": ["n"]}]}, "contradicts"),
    ({"model": "trace", "start_s": "later", "traces": [{"path": "x", "nodes": ["n"]}]}, "spot.start_s"),
    ({"model": "trace", "traces": [{"path": "x", "nodes": []}]}, r"spot.traces\[0\].nodes"),
    ({"model": "trace", "traces": [{"path": "x", "nodes": ["n"], "sign": 1}]}, r"spot.traces\[0\]: unknown key"),
]


@pytest.mark.parametrize(("spot", "named"), BAD_SPOT)
def test_malformed_spot_section__refused_naming_the_key(tmp_path: Path, spot: dict, named: str) -> None:
    import yaml

    from tests.digital_twin.spot_scenarios import DEFAULT

    document = yaml.safe_load(DEFAULT.read_text())
    document["spot"] = spot
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(ScenarioError, match=named):
        load_scenario(path)


def test_nodes_that_cannot_replay__refused_when_the_episode_is_built(tmp_path: Path) -> None:
    trace = str(write_trace(tmp_path / "t.json", [1] * 1000, 30))
    for nodes, named in ((["node-gpu-05", "node-x"], "unknown node"), (["node-gpu-04"], "on-demand"),
                         (["node-gpu-05"], r"\['node-arm-02'\] replay no trace")):  # fmt: skip
        scenario = replayed_default(tmp_path, [{"path": trace, "nodes": nodes}])
        with pytest.raises(ScenarioError, match=named):
            scenario.make_spec(np.random.default_rng(0))


def test_identical_trace_files__warned_as_one_sample(tmp_path: Path) -> None:
    first = write_trace(tmp_path / "a.json", [1] * 1000, 30)
    second = write_trace(tmp_path / "b.json", [1] * 1000, 30)
    scenario = replayed_default(tmp_path, [{"path": str(first), "nodes": ["node-gpu-05"]},
                                           {"path": str(second), "nodes": ["node-arm-02"]}])  # fmt: skip
    with pytest.warns(UserWarning, match=r"a\.json and .*b\.json hold the same spot trace"):
        assert isinstance(scenario.spot_replay, SpotReplay)


def test_interruptions_off__replays_nothing__fixed_times_refused(tmp_path: Path) -> None:
    trace = str(write_trace(tmp_path / "t.json", [0] * 1000, 30))  # down throughout
    scenario = replayed_default(tmp_path, [{"path": trace, "nodes": ["node-gpu-05", "node-arm-02"]}])
    assert scenario.make_spec(np.random.default_rng(0)).fixed_interruptions_s[4] == (0.0,)
    off = scenario.with_settings(spot_interruptions=False)
    twin = DigitalTwin(off.make_spec(np.random.default_rng(0)))
    twin.reset(np.random.default_rng(0))
    assert twin.hindsight().interruptions_s == ((),) * 5
    with pytest.raises(ValueError, match="replays spot traces"):
        scenario.with_settings(fixed_interruptions_s=((),) * 5)
