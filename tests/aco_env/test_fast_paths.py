"""The env's hot-path shortcuts give what the general code gives.

Each shortcut (unchecked synthetic workload columns, per-fleet and per-telemetry tables shared by
episodes, the cached objective dict, the queue's fast paths, the observation encoder's buffers)
is checked against the general path it replaces, or against the contract it must keep.
"""

from __future__ import annotations

import numpy as np
import pytest

import scenarios
from aco_env import ClusterSchedulingEnv
from digital_twin import DigitalTwin
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.job_queue import JobQueue
from digital_twin.workload import Workload
from digital_twin.workloads.job_mix import AZURE_JOB_SIZES, CpuSizeDistribution
from digital_twin.workloads.synthetic import SyntheticWorkloadConfig, _cannot_overflow, generate_jobs

_COLUMNS = (
    "arrival_s", "duration_s", "workload_index", "cpu_cores", "mem_gb", "gpu_count", "gpu_vram_gb", "priority",
    "preemptible", "deadline_s",
)  # fmt: skip

CONFIGS = {
    "default": SyntheticWorkloadConfig(),
    "sizes-and-deadlines": SyntheticWorkloadConfig(cpu_sizes=AZURE_JOB_SIZES, lc_deadline_slack_s=300.0),
    "gpu-vram": SyntheticWorkloadConfig(gpu_vram_gb=40.0, duration_sigma=0.0),
    "may-overflow": SyntheticWorkloadConfig(
        cpu_sizes=CpuSizeDistribution(sizes=(2.0, 1e300), weights=(1.0, 0.0), mem_gb_per_core=1e10)
    ),
}


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generate_jobs__unchecked_columns_pass_from_columns_checks(name: str, seed: int) -> None:
    """The synthetic columns, built without checks, are accepted by ``from_columns`` and give equal jobs."""
    jobs = generate_jobs(CONFIGS[name], np.random.default_rng(seed), 6 * 3600.0, limit=60)
    checked = Workload.from_columns(jobs.job_ids, **{key: getattr(jobs, key) for key in _COLUMNS})
    assert checked == jobs
    for key in _COLUMNS:
        assert np.array_equal(getattr(checked, key), getattr(jobs, key), equal_nan=True)


def test_generate_jobs__checks_the_columns_when_a_product_could_overflow() -> None:
    """A config whose memory per redrawn size could be infinite goes through the checked path."""
    assert _cannot_overflow(CONFIGS["default"], 3600.0)
    assert not _cannot_overflow(CONFIGS["may-overflow"], 3600.0)
    assert not _cannot_overflow(SyntheticWorkloadConfig(lc_deadline_slack_s=1.7e308), 1e308)


def test_twin_constants__shared_tables_equal_a_fresh_build() -> None:
    """Two episodes of a scenario share the per-telemetry lists, equal to the telemetry's own values."""
    scenario = scenarios.load("fleet5-synthetic")
    first = TwinConstants.of(scenario.make_spec(np.random.default_rng(0)))
    second = TwinConstants.of(scenario.make_spec(np.random.default_rng(1)))
    assert second.background_cpu_pct is first.background_cpu_pct
    background = scenario.telemetry.background_pct[:, :, 0]
    rows = range(first.background_cpu_pct.n_ticks)
    assert [first.background_cpu_pct.row(k) for k in rows] == background.tolist()
    cpu_m = np.asarray(first.cpu_m, dtype=np.float64)
    assert [first.background_cpu_m.row(k) for k in rows] == (background * cpu_m / 100.0).tolist()
    assert first.cpu_m == [round(n.cpu_cores * 1000) for n in scenario.fleet]


def test_objective_dict__is_a_fresh_dict_equal_to_the_breakdown() -> None:
    """Changing one step's objective dict changes neither the twin nor the next dict."""
    scenario = scenarios.load("fleet5-synthetic")
    twin = DigitalTwin(scenario.make_spec(np.random.default_rng(0)))
    twin.reset(np.random.default_rng(0))
    while not twin.done:
        first = twin.objective_dict()
        first["objective_usd"] = -1.0
        first["rejections"] = -1
        assert twin.objective_dict() == twin.objective().as_dict()
        twin.place(twin.feasible_mask().index(True))
    assert list(twin.objective_dict()) == list(twin.objective().as_dict())  # same keys, same order


def test_job_queue__fast_paths_keep_the_fifo_order() -> None:
    """Asking order and leaving the queue agree with the general (bisect) path at the head and elsewhere."""
    queue = JobQueue(5)
    for j in (3, 1, 4, 0):
        queue.enqueue(j)
    assert queue.asking_order(3) == [3, 1, 4, 0]  # the head: the fast path
    assert queue.asking_order(4) == [4, 0, 3, 1]
    queue.cursor = 0
    queue.take_current()  # job 3, the head
    assert queue.fifo == [1, 4, 0]
    queue.remove(4, shape=0)  # not the head
    assert queue.fifo == [1, 0]
    assert queue.asking_order(-1) == [1, 0]


def test_observation__arrays_are_fresh_and_never_change_later() -> None:
    """No array of an observation is shared with another step's, and a kept observation stays as it was."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    observation, _ = env.reset(seed=0)
    kept = [observation]
    copies = [{key: value.copy() for key, value in observation.items()}]
    rng = np.random.default_rng(0)
    for _ in range(200):
        valid = np.flatnonzero(observation["action_mask"])
        observation, _, terminated, truncated, _ = env.step(int(valid[int(rng.integers(len(valid)))]))
        assert all(value.flags.writeable for value in observation.values())
        for key, value in observation.items():
            assert not np.shares_memory(value, kept[-1][key])
        kept.append(observation)
        copies.append({key: value.copy() for key, value in observation.items()})
        if terminated or truncated:
            observation, _ = env.reset()
            kept.append(observation)
            copies.append({key: value.copy() for key, value in observation.items()})
    for observation, copy in zip(kept, copies, strict=True):
        for key, value in observation.items():
            assert np.array_equal(value, copy[key])
