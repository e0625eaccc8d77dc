"""GPU allocation and FGD fragmentation as episode metrics, recomputed apart: at decisions from the definition,
over the episode from the event log."""

from __future__ import annotations

import numpy as np
import pytest

import scenarios
from digital_twin import DigitalTwin, JobSpec, TwinSpec
from digital_twin.scenario import load_scenario
from tests.paths import ROOT, TRACES
from tests.small_twins import spec_of


def _fragmented_now(twin: DigitalTwin) -> tuple[int, int]:
    """(fragmented job-GPUs, free GPUs of up nodes) from FGD's definition, node by node and job by job."""
    s, c, jobs = twin._s.nodes, twin._c, twin.spec.jobs
    fragmented = free_up = 0
    for i, node in enumerate(twin.spec.fleet):
        free = s.free_gpus[i] if s.up[i] else 0
        free_up += free
        usable = sum(
            1 for j in range(len(jobs))
            if jobs.gpu_count[j] > 0 and i in c.candidates[j] and jobs.gpu_count[j] <= free
            and c.req_cpu_m[j] <= s.free_cpu_m[i]
        )  # fmt: skip
        fragmented += free * (len(jobs) - usable) if node.gpu_count else 0
    return fragmented, free_up


def _integrals_from_the_log(twin: DigitalTwin) -> tuple[float, float, float]:
    """(allocated GPU-s, fragmented job-GPU-s, free up GPU-s) over [0, now], replaying the event log."""
    spec, c = twin.spec, twin._c
    index = {job_id: j for j, job_id in enumerate(spec.jobs.job_ids)}
    nodes = {node.node_id: i for i, node in enumerate(spec.fleet)}
    free_gpus, free_cpu = list(c.gpus), list(c.cpu_m)
    up = [True] * len(spec.fleet)
    totals = [0.0, 0.0, 0.0]
    last = 0.0

    def now_values() -> tuple[int, int, int]:
        allocated = sum(c.gpus) - sum(free_gpus)
        fragmented = free_up = 0
        for i in range(len(spec.fleet)):
            free = free_gpus[i] if up[i] else 0
            usable = sum(n for g, m, n in c.gpu_job_mix[i] if g <= free and m <= free_cpu[i])
            fragmented += free * (c.n_jobs - usable)
            free_up += free
        return allocated, fragmented, free_up

    for time_s, kind, job_id, node_id in twin.event_log:
        for k, value in enumerate(now_values()):
            totals[k] += value * (time_s - last)
        last = time_s
        i = nodes.get(node_id, -1)
        if kind in ("start", "completion", "evicted-requeued", "evicted-failed"):
            sign = -1 if kind == "start" else 1
            free_gpus[i] += sign * c.req_gpus[index[job_id]]
            free_cpu[i] += sign * c.req_cpu_m[index[job_id]]
        elif kind in ("interruption", "recovery"):
            up[i] = kind == "recovery"
    for k, value in enumerate(now_values()):
        totals[k] += value * (twin.time_s - last)
    return totals[0], totals[1], totals[2]


def _played_with_checks(spec: TwinSpec, seed: int) -> DigitalTwin:
    """``spec`` played by a seeded random policy, the tally checked against the definition at every decision."""
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1)
    while not twin.done:
        assert (twin._s.gpus.fragmented, twin._s.gpus.free_up) == _fragmented_now(twin)
        fits = np.flatnonzero(twin.feasible_mask())
        twin.place(int(rng.choice(fits))) if len(fits) and rng.random() < 0.8 else twin.defer()
    return twin


def _check_metrics(twin: DigitalTwin) -> None:
    allocated, fragmented, free_up = _integrals_from_the_log(twin)
    metrics = twin.metrics()
    fleet_gpus = sum(node.gpu_count for node in twin.spec.fleet)
    assert metrics["gpu_allocation_ratio"] == pytest.approx(allocated / (fleet_gpus * twin.time_s), rel=1e-9)
    assert metrics["gpu_fragmentation_rate"] == pytest.approx(fragmented / (free_up * len(twin.spec.jobs)), rel=1e-9)
    assert twin._s.gpus.jobs == len(twin.spec.jobs)
    assert 0.0 < metrics["gpu_allocation_ratio"] < 1.0 and 0.0 <= metrics["gpu_fragmentation_rate"] <= 1.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_fleet__gpu_metrics_equal_the_definition_and_the_event_log(seed: int) -> None:
    scenario = scenarios.load("fleet5-synthetic")
    _check_metrics(_played_with_checks(scenario.make_spec(np.random.default_rng(seed)), seed))


@pytest.mark.skipif(not (TRACES / "alibaba-gpu-2023").is_dir(), reason="the Alibaba GPU 2023 trace is not present")
def test_gpu_fleet__gpu_metrics_equal_the_definition_and_the_event_log() -> None:
    scenario = load_scenario(ROOT / "scenarios" / "gpu32-alibaba2023.yaml")
    _check_metrics(_played_with_checks(scenario.make_spec(np.random.default_rng(0)), 0))


def test_a_fleet_without_gpus__zero() -> None:
    twin = DigitalTwin(spec_of((JobSpec("a", 0.0, 600.0, "batch", 1, 2),)))
    twin.reset(np.random.default_rng(0))
    while not twin.done:
        twin.place(0)
    metrics = twin.metrics()
    assert metrics["gpu_allocation_ratio"] == 0.0 and metrics["gpu_fragmentation_rate"] == 0.0
