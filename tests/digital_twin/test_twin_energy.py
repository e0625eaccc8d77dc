"""Energy and emissions: the twin's exact sums against an independent recomputation from the event log.

The recomputation rebuilds, from the event log alone, which jobs ran on which node when and
which nodes were down, cuts time at every event, tick and carbon-tick boundary, and integrates
each node's power (``PowerCurve.watts_at``, ``GpuPower``) times the interval and times the exact
carbon integral (``CarbonIntensity.g_per_kwh_integral``): none of the twin's accounting code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scenarios
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec
from digital_twin.energy import CarbonIntensity, GpuPower, PowerCurve, specpower_curve
from digital_twin.energy.model import EnergyModel, NodePower, default_energy_model
from digital_twin.episode_settings import NO_INTERFERENCE, PROCESSOR_SHARING
from digital_twin.errors import PastMismatchError, SettingError
from digital_twin.objective import ObjectiveWeights
from tests.helpers import drawn_background, run_twin, seeded_random_policy

J_PER_KWH = 3.6e6


@st.composite
def energy_specs(draw: st.DrawFn) -> TwinSpec:
    """1-3 nodes (some spot, some with GPUs) in 1-2 regions with hourly carbon series, 2-8 jobs over 2 h."""
    n_nodes = draw(st.integers(1, 3))
    fleet, powers = [], []
    regions = {"a": CarbonIntensity(np.array(draw(st.lists(st.sampled_from((50.0, 200.0, 450.0)), min_size=1,
                                                           max_size=4))), tick_s=1800.0, start_s=-600.0, name="a"),
               "b": CarbonIntensity.constant(300.0, "b")}
    for i in range(n_nodes):
        spot, gpus = draw(st.booleans()), draw(st.sampled_from((0, 0, 2)))
        fleet.append(NodeSpec(f"n{i}", "gpu-node" if gpus else "x86_64", "spot" if spot else "on-demand",
                              draw(st.sampled_from((2, 4, 8))), 16, 0.36, gpu_count=gpus,
                              gpu_model="T4" if gpus else None, interruption_prob_per_hour=0.6 if spot else 0.0))
        curve = draw(st.sampled_from((specpower_curve("ibm-x3550-x5675"), specpower_curve("hp-ml110-g4"),
                                      PowerCurve.linear(30.0, 90.0))))
        powers.append(NodePower(curve, GpuPower(10.0, 70.0, "T4") if gpus else None, draw(st.sampled_from("ab"))))
    horizon = 7200.0
    jobs = tuple(
        JobSpec(f"j{k}", float(draw(st.integers(0, 6000))), float(draw(st.integers(30, 3000))),
                draw(st.sampled_from(("latency-critical", "batch", "stream"))),
                draw(st.sampled_from((0.5, 1, 2))), 2, gpu_count=draw(st.sampled_from((0, 0, 1))),
                preemptible=draw(st.booleans()))
        for k in range(draw(st.integers(2, 8)))
    )
    telemetry = drawn_background(draw, int(horizon // 300), n_nodes)
    interference = draw(st.sampled_from((NO_INTERFERENCE, PROCESSOR_SHARING)))
    return TwinSpec(
        tuple(fleet),
        sorted(jobs, key=lambda j: j.arrival_s),
        telemetry,
        EpisodeSettings(horizon, queue_ttl_s=draw(st.sampled_from((None, 900.0))), interference=interference),
        energy=EnergyModel(tuple(powers), regions),
    )


def recomputed_energy(twin: DigitalTwin) -> dict[str, float]:
    """Node and attributed kWh and kg over the episode, from the event log (module docstring)."""
    spec, model = twin.spec, twin.spec.energy_model
    nodes = {n.node_id: i for i, n in enumerate(spec.fleet)}
    jobs = {job.job_id: job for job in spec.jobs}
    cpu_m = [round(n.cpu_cores * 1000) for n in spec.fleet]
    background = spec.telemetry.background_pct[:, :, 0]
    running: list[set[str]] = [set() for _ in spec.fleet]
    up = [True] * len(spec.fleet)
    totals = dict.fromkeys(("node_kwh", "attributed_kwh", "node_kg", "attributed_kg"), 0.0)

    def integrate(t0: float, t1: float) -> None:
        k = min(int(t0 // spec.tick_s), spec.telemetry.n_ticks - 1)
        for i, node in enumerate(spec.fleet):
            if not up[i] or t1 <= t0:
                continue
            power = model.nodes[i]
            background_m = background[k, i] * cpu_m[i] / 100.0
            used_m = sum(round(jobs[j].cpu_cores * 1000) for j in running[i])
            busy = sum(jobs[j].gpu_count for j in running[i])
            assert used_m <= cpu_m[i] and busy <= node.gpu_count
            host = power.curve.watts_at((background_m + used_m) / cpu_m[i])
            gpu = power.gpu.node_watts(node.gpu_count, busy) if power.gpu is not None else 0.0
            ours = host - power.curve.watts_at(background_m / cpu_m[i])
            if power.gpu is not None:
                ours += busy * (power.gpu.busy_w - power.gpu.idle_w)
            intensity_s = model.carbon[power.region].g_per_kwh_integral(t0, t1)
            totals["node_kwh"] += (host + gpu) * (t1 - t0) / J_PER_KWH
            totals["attributed_kwh"] += ours * (t1 - t0) / J_PER_KWH
            totals["node_kg"] += (host + gpu) * intensity_s / J_PER_KWH / 1000.0
            totals["attributed_kg"] += ours * intensity_s / J_PER_KWH / 1000.0

    cuts = {k * spec.tick_s for k in range(spec.grid.n_ticks)}
    for ci in model.carbon.values():
        cuts.update(ci.start_s + k * ci.tick_s for k in range(-2, int(spec.settings.horizon_s // ci.tick_s) + 2))
    last = 0.0
    for t, event, job_id, node_id in [*twin.event_log, (twin.time_s, "end", "", "")]:
        for cut in sorted(c for c in cuts if last < c < t):
            integrate(last, cut)
            last = cut
        integrate(last, t)
        last = t
        if event == "start":
            running[nodes[node_id]].add(job_id)
        elif event in ("completion", "evicted-requeued", "evicted-failed"):
            running[nodes[node_id]].discard(job_id)
        elif event == "interruption":
            up[nodes[node_id]] = False
        elif event == "recovery":
            up[nodes[node_id]] = True
    return totals


def _assert_close(twin: DigitalTwin) -> None:
    metrics, expected = twin.metrics(), recomputed_energy(twin)
    for key, value in (("node_energy_kwh", expected["node_kwh"]), ("energy_kwh", expected["attributed_kwh"]),
                       ("node_carbon_kg", expected["node_kg"]), ("carbon_kg", expected["attributed_kg"])):
        assert metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


@pytest.mark.heavy  # seconds of CPU: the rest layer (make test), not make test-fast
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(energy_specs(), st.integers(0, 3))
def test_energy__the_twins_sums_equal_a_recomputation_from_the_event_log(spec: TwinSpec, seed: int) -> None:
    twin = DigitalTwin(spec, record_events=True)
    run_twin(twin, seeded_random_policy(seed), seed)
    _assert_close(twin)
    metrics = twin.metrics()
    assert 0.0 <= metrics["energy_kwh"] <= metrics["node_energy_kwh"]


@pytest.mark.parametrize("scenario", ["fleet5-synthetic", "toy3", "gpu32-alibaba2023"])
def test_energy__bundled_scenarios_with_their_evictions_and_contention(scenario: str) -> None:
    loaded = scenarios.load(scenario)
    if loaded.missing_data():
        pytest.skip(f"data not present: {loaded.missing_data()[0]}")
    spec = loaded.make_spec(np.random.default_rng(3))
    twin = DigitalTwin(spec, record_events=True)
    run_twin(twin, seeded_random_policy(3, defer_prob=0.1), 3, check_every=50)
    _assert_close(twin)
    assert twin.metrics()["node_energy_kwh"] > 0.0


def test_energy__a_node_draws_idle_and_background_power_until_the_episode_ends() -> None:
    fleet = (NodeSpec("a", "x86_64", "on-demand", 12, 32, 1.0), NodeSpec("b", "x86_64", "on-demand", 12, 32, 1.0))
    telemetry = Telemetry.constant(2, 50.0, 40.0, 7200.0, 300.0)
    job = JobSpec("j", 0.0, 3600.0, "batch", 6, 4)  # half of node b: the episode ends when it completes
    twin = DigitalTwin(TwinSpec(fleet, (job,), telemetry, EpisodeSettings(7200.0)))
    twin.reset(np.random.default_rng(0))
    twin.place(1)
    curve = specpower_curve("ibm-x3550-x5675")  # the default curve, for 12 cores as is
    metrics = twin.metrics()
    assert twin.done and twin.time_s == 3600.0
    assert metrics["node_energy_kwh"] == pytest.approx((curve.watts_at(0.5) + curve.watts_at(1.0)) / 1000.0)
    assert metrics["energy_kwh"] == pytest.approx((curve.watts_at(1.0) - curve.watts_at(0.5)) / 1000.0)
    assert metrics["node_carbon_kg"] == pytest.approx(metrics["node_energy_kwh"] * 0.4)


def test_energy__weights_charge_the_attributed_kwh_and_kg() -> None:
    fleet = (NodeSpec("a", "x86_64", "on-demand", 12, 32, 0.0),)
    weights = ObjectiveWeights(energy_usd_per_kwh=0.2, carbon_usd_per_kg=0.05)
    spec = TwinSpec(fleet, (JobSpec("j", 0.0, 3600.0, "batch", 6, 4),), Telemetry.constant(1, 0.0, 0.0, 3600.0, 300.0),
                    EpisodeSettings(3600.0, weights=weights))
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    twin.place(0)
    while not twin.done:
        twin.defer()
    curve = specpower_curve("ibm-x3550-x5675")
    kwh = (curve.watts_at(0.5) - curve.watts_at(0.0)) / 1000.0
    objective = twin.objective()
    assert objective.as_dict()["energy_kwh"] == pytest.approx(kwh)
    assert objective.total_usd == pytest.approx(0.2 * kwh + 0.05 * kwh * 0.4)


def test_energy__off_reports_nan_and_refuses_weights() -> None:
    fleet = (NodeSpec("a", "x86_64", "on-demand", 4, 8, 0.1),)
    twin = DigitalTwin(TwinSpec(fleet, (), Telemetry.constant(1, 10.0, 10.0, 600.0, 300.0),
                                EpisodeSettings(600.0, energy_accounting=False)))
    twin.reset(np.random.default_rng(0))
    assert math.isnan(twin.metrics()["node_energy_kwh"]) and twin.metrics()["energy_kwh"] == 0.0
    with pytest.raises(SettingError, match="energy_accounting is false, but the weights charge energy or carbon"):
        EpisodeSettings(600.0, energy_accounting=False, weights=ObjectiveWeights(carbon_usd_per_kg=1.0))


def test_energy_model__refuses_a_region_without_carbon_and_a_gpu_node_without_gpu_power() -> None:
    curve = PowerCurve.linear(10.0, 20.0)
    with pytest.raises(Exception, match="region 'west', which has no carbon intensity"):
        EnergyModel((NodePower(curve, None, "west"),))
    fleet = (NodeSpec("g", "gpu-node", "on-demand", 8, 32, 1.0, gpu_count=1, gpu_model="T4"),)
    with pytest.raises(Exception, match="node 'g' has GPUs but no GPU power"):
        TwinSpec(fleet, (), Telemetry.constant(1, 0.0, 0.0, 600.0, 300.0), EpisodeSettings(600.0),
                 energy=EnergyModel((NodePower(curve),)))
    assert default_energy_model(fleet).nodes[0].gpu is not None


def _carbon_spec(series: CarbonIntensity) -> TwinSpec:
    fleet = (NodeSpec("a", "x86_64", "on-demand", 8, 32, 1.0),)
    jobs = tuple(JobSpec(f"j{k}", 600.0 * k, 900.0, "batch", 2, 4) for k in range(8))
    model = EnergyModel((NodePower(specpower_curve("hp-ml110-g5"), None, "grid"),), {"grid": series})
    return TwinSpec(fleet, jobs, Telemetry.constant(1, 10.0, 10.0, 7200.0, 300.0), EpisodeSettings(7200.0),
                    energy=model)


def _at_decision(twin: DigitalTwin, time_s: float) -> None:
    twin.reset(np.random.default_rng(0))
    while not twin.done and twin.time_s < time_s:
        twin.place(0)


def test_known_spec__the_carbon_intensity_is_known_up_to_now_then_held() -> None:
    series = CarbonIntensity(np.array([100.0, 400.0, 50.0, 300.0]), tick_s=1800.0)
    twin = DigitalTwin(_carbon_spec(series))
    _at_decision(twin, 2400.0)
    assert twin.time_s == 2400.0
    known = twin.known_spec().energy
    assert known is not None
    times = np.arange(0.0, 7200.0, 60.0)
    past = times <= twin.time_s
    np.testing.assert_array_equal(known.carbon["grid"].at(times[past]), series.at(times[past]))
    np.testing.assert_array_equal(known.carbon["grid"].at(times[~past]), 400.0)  # the tick holding now, held
    continued = twin.continued_in(twin.known_spec())
    assert continued.metrics()["node_carbon_kg"] == twin.metrics()["node_carbon_kg"]


def test_continued_in__refuses_a_carbon_intensity_that_differs_before_now() -> None:
    series = CarbonIntensity(np.array([100.0, 400.0, 50.0, 300.0]), tick_s=1800.0)
    twin = DigitalTwin(_carbon_spec(series))
    _at_decision(twin, 2400.0)
    later = CarbonIntensity(np.array([100.0, 400.0, 999.0, 999.0]), tick_s=1800.0)  # differs after now only
    twin.continued_in(_carbon_spec(later))
    earlier = CarbonIntensity(np.array([100.0, 401.0, 50.0, 300.0]), tick_s=1800.0)
    with pytest.raises(PastMismatchError, match="the carbon intensity of region 'grid' differs before now"):
        twin.continued_in(_carbon_spec(earlier))
