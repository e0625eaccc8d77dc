"""The observation's one source of truth: the docstring tables list the encoder's feature names,
and the encoder and the agents' cluster view (two encodings of one state) agree at every step."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import scenarios
from aco_env import ClusterSchedulingEnv, ClusterView, EnvConfig
from aco_env.hindsight import scenario_of
from aco_env.observation import CLOCK_FEATURES, COUNT_CAP, JOB_FEATURES, NODE_FEATURES, VRAM_CAP
from digital_twin import WORKLOAD_TYPES, JobSpec
from digital_twin.fleet import ARCHES
from tests.paths import DATA

PARITY_EPISODES = [
    *(("fleet5-synthetic", seed) for seed in range(6)),
    ("toy3", 0),
    (str(DATA / "overloaded5.yaml"), 1),  # long queues: the queue window is full
    ("hpc-swf", 2),
    ("gpu32-alibaba2023", 3),  # GPUs and 32 nodes (needs ACO_ENV_TRACES)
    ("fleet5-carbon-regions", 4),  # two grids' hourly intensity, energy and carbon priced (needs ACO_ENV_TRACES)
    ("fleet5-workflows", 5),  # DAGs of tasks: the workflow columns
]
MAX_STEPS = 250  # per episode: enough to cover every kind of event, cheap enough for 2 cores


def docstring_table(doc: str, heading: str) -> list[tuple[int, str]]:
    """``(column, name)`` rows of the markdown table that follows ``heading`` in ``doc``."""
    after = doc[doc.index(heading) :]
    table = after[: after.index("\n\n", after.index("|---"))]
    return [(int(col), name) for col, name in re.findall(r"^\s*\|\s*(\d+)\s*\|\s*(\w+)\s*\|", table, re.MULTILINE)]


@pytest.mark.parametrize(
    ("heading", "features"),
    [
        ("Columns of ``nodes``", NODE_FEATURES),
        ("Columns of ``job``", JOB_FEATURES),
        ("Entries of ``clock``", CLOCK_FEATURES),
    ],
)
def test_docstring__column_tables_list_the_encoders_feature_names_in_order(heading: str, features: tuple) -> None:
    """Each table of the env's spec names exactly the encoder's columns, at their indices."""
    assert docstring_table(ClusterSchedulingEnv.__doc__, heading) == list(enumerate(features))


def test_docstring__space_table_shapes_match_the_feature_counts() -> None:
    """The key table's widths of nodes, job, queue and clock are the feature counts."""
    doc = ClusterSchedulingEnv.__doc__
    assert f"| nodes | (N, {len(NODE_FEATURES)}) |" in doc
    assert f"| job | ({len(JOB_FEATURES)},) |" in doc
    assert f"| queue | (K, {len(JOB_FEATURES)}) |" in doc
    assert f"| clock | ({len(CLOCK_FEATURES)},) |" in doc


def test_feature_names__follow_the_twins_workload_types_and_arches() -> None:
    """One-hot and per-type columns derive from WORKLOAD_TYPES and ARCHES, in their order."""
    types = [w.replace("-", "_") for w in WORKLOAD_TYPES]
    assert [f for f in NODE_FEATURES if f.startswith("running_")] == [f"running_{t}" for t in types]
    assert [f for f in JOB_FEATURES if f.startswith("type_")] == [f"type_{t}" for t in types]
    assert [f for f in NODE_FEATURES if f.startswith("arch_")] == [f"arch_{a.replace('-', '_')}" for a in ARCHES]
    assert len(set(NODE_FEATURES)) == len(NODE_FEATURES) and len(set(JOB_FEATURES)) == len(JOB_FEATURES)


def expected_nodes(env: ClusterSchedulingEnv, view: ClusterView) -> np.ndarray:
    """``obs["nodes"]`` as the docstring defines it, from the cluster view (float64)."""
    fleet = view.fleet
    cpu = np.array([n.cpu_cores for n in fleet], dtype=float)
    mem = np.array([n.mem_gb for n in fleet], dtype=float)
    gpus = np.array([n.gpu_count for n in fleet], dtype=float)
    price = np.array([n.price_per_hour_usd for n in fleet])
    columns = {
        "free_cpu_frac": view.free_cpu_cores / cpu,
        "free_mem_frac": view.free_mem_gb / mem,
        "free_gpu_frac": np.divide(view.free_gpus, gpus, out=np.zeros(len(fleet)), where=gpus > 0),
        "up": view.up.astype(float),
        "background_cpu": view.background_cpu_pct / 100.0,
        "background_mem": view.background_mem_pct / 100.0,
        "utilization": view.utilization_pct / 100.0,
        "qos_risk": np.array([n.is_spot and view.job is not None and view.job.is_latency_critical for n in fleet],
                             dtype=float),
        "price_rel": price / price.max(),
        "is_spot": np.array([n.is_spot for n in fleet], dtype=float),
        "interruption_prob": np.array([n.interruption_prob_per_hour for n in fleet]),
        "cpu_rel": cpu / cpu.max(),
        "gpu_rel": gpus / gpus.max() if gpus.max() else np.zeros(len(fleet)),
    }
    columns.update(expected_grid_columns(view))
    for t, workload in enumerate(WORKLOAD_TYPES):
        columns[f"running_{workload.replace('-', '_')}"] = np.minimum(view.running_by_type[:, t], COUNT_CAP)
    for arch in ARCHES:
        columns[f"arch_{arch.replace('-', '_')}"] = np.array([n.arch == arch for n in fleet], dtype=float)
    return np.stack([columns[name] for name in NODE_FEATURES], axis=1)


def expected_grid_columns(view: ClusterView) -> dict[str, np.ndarray]:
    """The grid columns as the docstring defines them, from the view's known energy model, node by node."""
    t = view.time_s
    weights = view.settings.weights
    max_price = max(n.price_per_hour_usd for n in view.fleet)
    now, low, cost = [], [], []
    for node, power in zip(view.fleet, view.energy.nodes, strict=True):
        series = view.energy.carbon[power.region]
        intensity = float(series.at(t))
        t0, t1 = t - 86_400.0, t - 43_200.0  # yesterday's coming 12 hours: its value at t0 and at each step in it
        first = math.ceil((t0 - series.start_s) / series.tick_s)
        steps = series.start_s + series.tick_s * np.arange(first, math.floor((t1 - series.start_s) / series.tick_s) + 1)
        low.append(min(float(series.at(t0)), *(float(v) for v in series.at(steps))) / 1000.0)
        gpu_w = node.gpu_count * (power.gpu.busy_w - power.gpu.idle_w) if power.gpu is not None else 0.0
        dynamic_kw = (float(power.curve.watts[-1] - power.curve.watts[0]) + gpu_w) / 1000.0
        usd_per_h = dynamic_kw * (weights.energy_usd_per_kwh + weights.carbon_usd_per_kg * intensity / 1000.0)
        now.append(intensity / 1000.0)
        cost.append(usd_per_h / max_price)
    return {
        "carbon_now": np.minimum(now, 2.0),
        "carbon_forecast_min": np.minimum(low, 2.0),
        "energy_cost_rel": np.minimum(cost, 10.0),
    }


def expected_job(env: ClusterSchedulingEnv, view: ClusterView, job: JobSpec, row: int) -> np.ndarray:
    """One row of ``obs["job"]`` or ``obs["queue"]`` as documented (float64); ``row``: its ``view.tasks`` row."""
    fleet = view.fleet
    max_gpus = max(n.gpu_count for n in fleet)
    ttl = view.settings.queue_ttl_s
    columns = {
        "cpu_rel": min(job.cpu_cores / max(n.cpu_cores for n in fleet), 1.0),
        "mem_rel": min(job.mem_gb / max(n.mem_gb for n in fleet), 1.0),
        "gpu_rel": min(job.gpu_count / max_gpus, 1.0) if max_gpus else 0.0,
        "vram_per_gpu_100gb": min(job.gpu_vram_gb / 100.0, VRAM_CAP),
        "priority": job.priority / 100.0,
        "preemptible": float(job.preemptible),
        "has_deadline": float(job.deadline_s is not None),
        "deadline_slack_h": 0.0
        if job.deadline_s is None
        else float(np.clip((job.deadline_s - view.time_s) / 3600, -24, 24)),
        "duration_h": min(job.duration_s / 3600.0, COUNT_CAP),
        "wait_frac": 0.0 if ttl is None else float(np.clip((view.time_s - job.arrival_s) / ttl, 0, 1)),
        **expected_workflow_columns(view, job, row),
    }
    for workload in WORKLOAD_TYPES:
        columns[f"type_{workload.replace('-', '_')}"] = float(job.workload == workload)
    return np.array([columns[name] for name in JOB_FEATURES])


def expected_workflow_columns(view: ClusterView, job: JobSpec, row: int) -> dict[str, float]:
    """The workflow columns: 0 for an independent job; a task's from its view row (declared at submission)."""
    tasks = view.tasks
    if job.workflow is None:
        assert tasks is None or not tasks.is_task[row]
        return dict.fromkeys(("task", "critical_path_h", "children", "descendants_work_core_h", "workflow_weight"), 0.0)
    assert tasks is not None and tasks.is_task[row]
    return {
        "task": 1.0,
        "critical_path_h": min(float(tasks.critical_path_s[row]) / 3600.0, COUNT_CAP),
        "children": min(float(tasks.children[row]), COUNT_CAP),
        "descendants_work_core_h": min(float(tasks.descendants_work_core_s[row]) / 3600.0, COUNT_CAP),
        "workflow_weight": min(float(tasks.weight[row]), COUNT_CAP),
    }


def assert_observation_matches_view(env: ClusterSchedulingEnv, obs: dict[str, np.ndarray], view: ClusterView) -> None:
    """Every entry of ``obs`` is what the cluster view implies (float32 rounding allowed)."""
    close = {"rtol": 1e-6, "atol": 1e-6}
    np.testing.assert_allclose(obs["nodes"], expected_nodes(env, view), **close)
    np.testing.assert_allclose(obs["history"], view.background_cpu_history_pct / 100.0, **close)
    np.testing.assert_array_equal(obs["action_mask"].astype(bool), view.action_mask)
    job = np.zeros(len(JOB_FEATURES)) if view.job is None else expected_job(env, view, view.job, 0)
    np.testing.assert_allclose(obs["job"], job, **close)
    window = list(view.queue[: env.config.queue_window])
    queue = np.zeros((env.config.queue_window, len(JOB_FEATURES)))
    first = 0 if view.job is None else 1  # view.tasks rows: the job, then the queue
    for row, queued in enumerate(window):
        queue[row] = expected_job(env, view, queued, first + row)
    np.testing.assert_allclose(obs["queue"], queue, **close)
    np.testing.assert_array_equal(obs["queue_mask"], [1.0] * len(window) + [0.0] * (len(queue) - len(window)))
    hour = 2 * math.pi * ((scenario_of(env).settings.start_hour * 3600 + view.time_s) % 86_400) / 86_400
    clock = [math.sin(hour), math.cos(hour), min(view.time_s / view.settings.horizon_s, 1.0)]
    np.testing.assert_allclose(obs["clock"], [*clock, min(len(view.queue), COUNT_CAP)], **close)


@pytest.mark.parametrize(("scenario", "seed"), PARITY_EPISODES, ids=lambda x: Path(str(x)).stem)
def test_observation__agrees_with_the_cluster_view_at_every_step(scenario: str, seed: int) -> None:
    """Random valid actions (a fifth of them defers): the encoder and cluster_view() agree."""
    try:
        missing = scenarios.load(scenario).missing_data()
    except ValueError as exc:  # e.g. ACO_ENV_TRACES unset
        pytest.skip(str(exc))
    if missing:
        pytest.skip(f"data not present: {missing[0]}")
    env = ClusterSchedulingEnv(scenario, EnvConfig(queue_window=3, history_ticks=4))
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(MAX_STEPS):
        assert_observation_matches_view(env, obs, env.cluster_view())
        nodes = np.flatnonzero(obs["action_mask"][:-1])
        action = env.n_nodes if rng.random() < 0.2 or not nodes.size else int(rng.choice(nodes))
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    assert_observation_matches_view(env, obs, env.cluster_view())
