"""What agents may see: the present and the past through ``cluster_view()``, never the future."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import aco_env  # noqa: F401  (registers the ids)
from aco_env import ClusterSchedulingEnv, PlacementEnv, TelemetryRecord
from aco_env.hindsight import hindsight_of, scenario_of
from aco_env.registration import FLEET5_ID
from aco_env.types import StepInfo
from aco_env.views import known_jobs
from digital_twin import EpisodeSettings, Telemetry


def _played(seed: int, steps: int) -> ClusterSchedulingEnv:
    """The default env after ``steps`` first-fit decisions from ``reset(seed)`` (fewer if the episode ends first)."""
    env = ClusterSchedulingEnv()
    obs, _ = env.reset(seed=seed)
    for _ in range(steps):
        obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        if terminated or truncated:
            break
    return env


@pytest.mark.parametrize("env_class", [ClusterSchedulingEnv, PlacementEnv])
def test_envs__offer_no_twin_spec_and_no_future_jobs(env_class: type) -> None:
    """twin_spec (all jobs, future arrivals included) is gone from both envs' public API."""
    env = env_class()
    env.reset(seed=0)
    assert not hasattr(env, "twin_spec")
    view = env.cluster_view()
    assert all(job.arrival_s <= view.time_s for job in [view.job, *view.queue])


def test_cluster_view__telemetry_holds_the_ticks_so_far_only() -> None:
    """view.telemetry returns ticks 0..k: the whole past, and not one tick after."""
    env = _played(seed=1, steps=40)
    view = env.cluster_view()
    k = view.tick_index
    assert k > 0 and view.telemetry.tick_index == k
    everything = hindsight_of(env).background_cpu_pct  # (T, N): only the test may read it
    np.testing.assert_array_equal(view.telemetry.cpu_pct(), everything[: k + 1])
    np.testing.assert_array_equal(view.telemetry.mem_pct(2), hindsight_of(env).background_mem_pct[k - 1 : k + 1])
    np.testing.assert_array_equal(view.background_cpu_pct, everything[k])
    np.testing.assert_array_equal(view.background_cpu_history_pct, view.telemetry.cpu_pct(env.config.history_ticks).T)


def test_telemetry_so_far__repeats_tick_0_before_the_start_and_returns_copies() -> None:
    """A window reaching before tick 0 repeats it; the arrays returned are the caller's own."""
    background = np.stack([np.arange(5.0)[:, None] * np.ones((5, 2)), np.zeros((5, 2))], axis=-1)
    so_far = TelemetryRecord(Telemetry(background, tick_s=60.0)).so_far(1)
    np.testing.assert_array_equal(so_far.cpu_pct(4)[:, 0], [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(so_far.cpu_pct()[:, 1], [0.0, 1.0])
    so_far.cpu_pct()[:] = 99.0
    assert so_far.cpu_pct().max() == 1.0 and so_far.cpu_pct().flags.writeable
    with pytest.raises(ValueError, match="window"):
        so_far.cpu_pct(0)
    with pytest.raises(IndexError):
        TelemetryRecord(Telemetry(background, tick_s=60.0)).so_far(5)


def test_telemetry_record__copies_each_tick_once_and_never_a_later_one() -> None:
    """Views of later ticks see the ticks recorded since; an earlier view's buffer holds no tick after its own."""
    background = np.random.default_rng(0).uniform(0, 100, size=(40, 3, 2))
    record = TelemetryRecord(Telemetry(background, tick_s=60.0))
    for k in (0, 3, 3, 17, 39):
        so_far = record.so_far(k)
        np.testing.assert_array_equal(so_far.cpu_pct(), background[: k + 1, :, 0])
        assert so_far.tick_index == k
        assert not np.shares_memory(so_far._past, background)
        recorded = so_far._past.base if so_far._past.base is not None else so_far._past
        assert np.isnan(recorded[k + 1 :]).all()  # at its making, nothing after tick k was in the buffer


def test_cluster_view__settings_are_the_scenarios() -> None:
    """The view holds the scenario's one settings object, and the tick grid the episode reaches."""
    env = _played(seed=0, steps=0)
    view, scenario = env.cluster_view(), scenario_of(env)
    assert view.settings is scenario.settings
    assert view.settings == EpisodeSettings(
        horizon_s=14_400.0,
        queue_ttl_s=1800.0,
        sla_threshold_pct=90.0,
        spot_recovery_s=600.0,
        cost_model="prorated",
        interference="processor-sharing",
        weights=scenario.settings.weights,
        start_hour=6.0,
    )
    assert (view.grid.tick_s, view.grid.n_ticks) == (300.0, 48)  # 14,400 s / 300 s
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.settings.horizon_s = 1.0  # type: ignore[misc]  # checking that it is frozen


def test_step_info__keys_are_those_documented_by_step_info() -> None:
    """reset, step and the final step return only StepInfo's keys, with its types."""
    env = gym.make(FLEET5_ID)
    obs, info = env.reset(seed=3)
    infos = [info]
    while True:
        obs, _, terminated, truncated, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        infos.append(info)
        if terminated or truncated:
            break
    documented = StepInfo.__annotations__
    for info in infos:
        assert set(info) <= set(documented)
        assert isinstance(info["objective"], dict) and isinstance(info["sim_time_s"], float)
    assert "episode_metrics" in infos[-1] and all("episode_metrics" not in i for i in infos[:-1])


@pytest.mark.parametrize("name", ["fleet5-synthetic", "fleet20-workflows", "fleet5-synthetic-varied"])
def test_known_jobs__copies_one_by_one_equal_a_workloads_copy(name: str) -> None:
    """A short queue copied job by job lists the jobs a Workload.take copy lists (durations declared, parents kept)."""
    env = ClusterSchedulingEnv(name)
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(2)
    checked = 0
    for _ in range(150):
        twin = env._twin
        assert twin is not None
        pending = twin.pending_jobs()[:16]
        if pending:
            jobs = twin.spec.jobs
            ascending = np.unique(pending)
            taken = jobs.take(ascending, duration_s=jobs.declared_or_true_s()[ascending])
            reference = [taken[int(np.searchsorted(ascending, j))] for j in pending]
            assert list(known_jobs(jobs, pending)) == reference
            checked += 1
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if terminated or truncated:
            break
    assert checked > 10
