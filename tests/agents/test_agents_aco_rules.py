"""The ACO cost engine's factors and gates, and the intent router's rules."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from agents.aco import cost_engine as ce
from agents.aco import router
from agents.aco.scheduler import FleetArrays, schedule
from digital_twin import JobSpec, default_fleet
from tests.helpers import make_job as job

FLEET5 = FleetArrays.from_fleet(default_fleet())
"""cpu-01 ($0.48), arm-02 (spot, $0.12), api-03 ($0.18), gpu-04 ($3.20), gpu-05 (spot, $1.10)."""
IDLE = np.zeros((5, 3), dtype=np.int64)


# ---------------------------------------------------------------------------------- cost engine
@pytest.mark.parametrize(("price", "expected"), [(0.12, 0.893), (0.50, 0.667), (3.20, 0.238)])
def test_cost_engine__cost_efficiency_matches_the_documented_examples(
    price: float, expected: float
) -> None:
    """c = 1 / (1 + price / 1.0): $0.12 -> 0.893, $0.50 -> 0.667, $3.20 -> 0.238."""
    assert ce.cost_efficiency(price) == pytest.approx(expected, abs=5e-4)


def test_cost_engine__reliability_gates_spot_nodes_for_latency_critical_jobs_only() -> None:
    """LC on spot: 1 - p, or 0 above the threshold; non-LC on spot: 1 - 0.3 p; on-demand: 1."""
    spot = [False, True, True]
    prob = [0.0, 0.15, 0.5]
    np.testing.assert_allclose(
        ce.reliability(spot, prob, True, spot_threshold=0.3), [1.0, 0.85, 0.0]
    )
    np.testing.assert_allclose(
        ce.reliability(spot, prob, False, spot_threshold=0.3), [1.0, 0.955, 0.85]
    )
    assert ce.reliability([True], [0.3], True, spot_threshold=0.3)[0] == pytest.approx(
        0.7
    )  # gate is ">"


def test_cost_engine__sla_headroom_gates_latency_critical_jobs_and_floors_others() -> None:
    """LC: headroom, or 0 below the threshold; others: max(headroom, 0.1); util may pass 100."""
    util = [50.0, 85.0, 95.0, 130.0]
    np.testing.assert_allclose(ce.sla_headroom(util, True, sla_threshold=0.2), [0.5, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(
        ce.sla_headroom(util, False, sla_threshold=0.2), [0.5, 0.15, 0.1, 0.1]
    )
    assert ce.sla_headroom([80.0], True, sla_threshold=0.2)[0] == pytest.approx(0.2)  # gate is "<"


def test_cost_engine__prediction_factor_is_floored_at_one_half() -> None:
    """p = max(0.5, 1 - spike * weight * confidence); 1 without a prediction or for NaN."""
    assert ce.prediction_factor(None, None, 0.5) == 1.0
    np.testing.assert_allclose(
        ce.prediction_factor([0.4, 1.0, 1.0, np.nan], [0.5, 1.0, 1.0, 1.0], 0.5),
        [0.9, 0.5, 0.5, 1.0],
    )
    assert ce.prediction_factor([1.0], [1.0], 1.0)[0] == 0.5


def test_cost_engine__eta_is_the_product_and_zero_under_a_hard_gate() -> None:
    """eta = r c s p, and 0 exactly where a gate fires."""
    parts = ce.score_breakdown(
        is_spot=[False, True, False],
        interruption_prob=[0.0, 0.5, 0.0],
        price_per_hour_usd=[0.5, 0.1, 0.5],
        utilization_pct=[40.0, 10.0, 90.0],
        latency_critical=True,
        spike_probability=[0.5, 0.5, 0.5],
        confidence=[1.0, 1.0, 1.0],
    )
    expected_first = 1.0 * (1 / 1.5) * 0.6 * (1 - 0.5 * 0.5 * 1.0)
    np.testing.assert_allclose(parts["eta"], [expected_first, 0.0, 0.0])


@pytest.mark.parametrize("workload", ["latency-critical", "batch", "stream"])
def test_schedule__eta_equals_the_cost_engine(workload: str) -> None:
    """The scheduler's precomputed eta path equals the cost engine's eta on the candidates."""
    rng = np.random.default_rng(3)
    util = rng.uniform(0, 120, 5)
    spike, conf = rng.uniform(0, 1, 5), rng.uniform(0.1, 1, 5)
    the_job = job(workload)
    decision = schedule(
        the_job, FLEET5, np.ones(5, bool), util, IDLE, rng, spike_probability=spike, confidence=conf
    )
    strategy, nodes = decision.strategy, decision.candidates
    expected = ce.eta(
        is_spot=FLEET5.is_spot[nodes],
        interruption_prob=FLEET5.interruption_prob[nodes],
        price_per_hour_usd=FLEET5.price_per_hour_usd[nodes],
        utilization_pct=util[nodes],
        latency_critical=the_job.is_latency_critical,
        spike_probability=spike[nodes],
        confidence=conf[nodes],
        sla_threshold=strategy.sla_threshold,
        spike_weight=strategy.spike_weight,
        spot_threshold=strategy.spot_threshold,
    )
    np.testing.assert_allclose(decision.eta, expected, rtol=1e-12)


# ---------------------------------------------------------------------------------- router
@pytest.mark.parametrize(
    ("the_job", "strategy"),
    [
        (job("latency-critical", gpus=1), router.GPU_INFERENCE),
        (
            job("latency-critical", gpus=1, preemptible=True),
            router.GPU_INFERENCE,
        ),  # rule 1 before rule 4
        (job("latency-critical"), router.CPU_SERVING),
        (job("latency-critical", preemptible=True), router.CPU_SERVING),
        (job("batch", gpus=1), router.GPU_TRAINING),
        (job("batch", gpus=1, preemptible=True), router.PREEMPTIBLE_ACTOR),
        (job("batch", preemptible=True), router.PREEMPTIBLE_ACTOR),
        (job("stream", preemptible=True), router.PREEMPTIBLE_ACTOR),
        (job("stream"), router.STATEFUL_STREAM),
        (job("stream", gpus=1), router.STATEFUL_STREAM),
        (job("batch"), router.GENERIC),
    ],
)
def test_router__rules_in_reference_order(the_job: JobSpec, strategy: router.Strategy) -> None:
    """Each of the six rules, tried in order, first match wins."""
    assert router.route(the_job, now_s=0.0) == strategy


def test_router__strategy_table_matches_the_reference() -> None:
    """Instance, fast-path, thresholds and avoid lists of the six strategies, as the reference."""
    table = {
        s.name: (
            s.required_instance,
            s.use_fast_path,
            s.sla_threshold,
            s.spike_weight,
            s.spot_threshold,
            s.avoid_workload_types,
        )
        for s in router.STRATEGIES
    }
    assert table == {
        "gpu-inference": (("on-demand",), True, 0.30, 1.00, 0.0, ("batch",)),
        "cpu-serving": (("on-demand",), True, 0.25, 0.80, 0.0, ()),
        "gpu-training": (None, False, 0.05, 0.20, 0.50, ()),
        "preemptible-actor": (None, False, 0.05, 0.10, 0.70, ()),
        "stateful-stream": (("on-demand",), False, 0.15, 0.40, 0.0, ()),
        "generic": (None, False, 0.20, 0.50, 0.30, ()),
    }


def test_router__deadline_override_fires_under_60_seconds_of_simulated_time() -> None:
    """deadline - now < 60 s: fast path, SLA threshold + 0.1, avoid batch and stream."""
    urgent = router.route(
        job("batch", preemptible=True, deadline_s=1000.0), now_s=941.0
    )  # 59 s left
    assert urgent.name == "preemptible-actor" and urgent.use_fast_path
    assert urgent.sla_threshold == pytest.approx(0.15)
    assert urgent.avoid_workload_types == ("batch", "stream")
    assert router.route(job("batch", deadline_s=100.0), now_s=500.0).use_fast_path  # already missed
    assert (
        router.route(job("batch", deadline_s=1000.0), now_s=940.0) == router.GENERIC
    )  # exactly 60 s
    assert router.route(job("batch"), now_s=1e9) == router.GENERIC  # no deadline
    gpu = router.route(job("latency-critical", gpus=1, deadline_s=10.0), now_s=0.0)
    assert gpu.avoid_workload_types == ("batch", "stream")  # batch not repeated


def test_router__deadline_override_caps_the_sla_threshold() -> None:
    """The boosted threshold is min(threshold + 0.10, 0.90)."""
    strict = dataclasses.replace(router.GENERIC, sla_threshold=0.85)
    assert router.with_deadline_override(strict).sla_threshold == 0.90
