"""Agents on workflows: every agent keeps the DAG's order, and the DAG heuristics rank ready tasks as stated."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest
import yaml

from aco_env import ClusterSchedulingEnv
from aco_env.registration import CLUSTER_SCHEDULING_ID
from agents import make_agent
from tests.digital_twin.workflows.referee import check_episode
from tests.helpers import agent_params, replayed_with_log, run_episode

DAG_AGENTS = ("critical-path", "max-children", "wscpt", "mc-wscpt")


@pytest.mark.parametrize("name", [p for p in agent_params() if p.values[0] not in ("planted", "oracle")])
def test_agent__keeps_the_workflows_order(name: str) -> None:
    """One episode of ``fleet5-workflows`` per agent: the referee finds every release rule kept and the terms."""
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario="fleet5-workflows")
    metrics = run_episode(env, make_agent(name, env), seed=5000)
    hours, late = check_episode(replayed_with_log(env))
    assert metrics["workflow_hours"] == pytest.approx(hours, rel=1e-12)
    assert metrics["late_workflows"] == late


def _two_ready_tasks(tmp_path: Path) -> ClusterSchedulingEnv:
    """One 4-core node; two 4-core tasks ready at 0: "short" (queued first, a 60 s leaf) and "long"
    (a 600 s task with a 600 s child), so only one runs at a time."""
    def task(job_id: str, duration: float, *parents: str, workflow: str = "w") -> dict:
        return {"job_id": job_id, "arrival_s": 0, "duration_s": duration, "workload": "batch", "cpu_cores": 4,
                "mem_gb": 1, "workflow": workflow, "parents": list(parents), "declared_duration_s": duration}
    data = {
        "schema_version": 2, "name": "two-ready", "horizon_s": 7200, "queue_ttl_s": None,
        "fleet": {"nodes": [{"node_id": "n", "arch": "x86_64", "instance": "on-demand", "cpu_cores": 4,
                             "mem_gb": 8, "price_per_hour_usd": 1.0}]},
        "telemetry": {"reader": "constant", "cpu_pct": 0, "mem_pct": 0, "tick_s": 300},
        "workload": {"source": "jobs", "jobs": [
            task("short", 60.0, workflow="v"), task("long", 600.0), task("after", 600.0, "long"),
        ]},
    }  # fmt: skip
    path = tmp_path / "two-ready.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return ClusterSchedulingEnv(str(path))


@pytest.mark.parametrize(("name", "first"), [("first-fit", "short"), ("critical-path", "long"),
                                              ("max-children", "long"), ("wscpt", "short")])
def test_dag_heuristic__runs_first_the_ready_task_it_ranks_highest(tmp_path: Path, name: str, first: str) -> None:
    """critical-path and max-children put "long" (path 1200 s, one child) before "short" (60 s, a leaf);
    wscpt ranks by weight per second of path (1/60 > 1/1200): "short", as FIFO does."""
    env = _two_ready_tasks(tmp_path)
    run_episode(env, make_agent(name, env), seed=0)
    starts = [job for _, event, job, _ in replayed_with_log(env).event_log if event == "start"]
    assert starts[0] == first and sorted(starts) == ["after", "long", "short"]
