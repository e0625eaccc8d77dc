"""Workflows in scenario files: hand-written DAGs with their workflows, the generator, and clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import scenarios
from digital_twin.errors import SpecError
from digital_twin.limits import Limits
from digital_twin.scenario.schema import ScenarioError
from digital_twin.workflows import WorkflowSpec
from tests.digital_twin.workloads.test_alibaba2018_batch import row, write

BASE = {
    "schema_version": 2,
    "name": "workflows-test",
    "horizon_s": 3600,
    "fleet": {"preset": "default-5"},
    "telemetry": {"reader": "constant", "cpu_pct": 20, "mem_pct": 30, "tick_s": 300},
}


def _task(job_id: str, *parents: str, arrival_s: float = 0.0) -> dict:
    return {"job_id": job_id, "arrival_s": arrival_s, "duration_s": 60, "workload": "batch", "cpu_cores": 1,
            "mem_gb": 1, "workflow": "etl", "parents": list(parents)}  # fmt: skip


def _load(tmp_path: Path, workload: dict) -> scenarios.Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**BASE, "workload": workload}, sort_keys=False))
    return scenarios.load(path)


def test_a_hand_written_dag_loads_with_its_workflow(tmp_path: Path) -> None:
    scenario = _load(tmp_path, {
        "source": "jobs",
        "jobs": [_task("extract"), _task("clean", "extract"), _task("load", "clean", arrival_s=10.0)],
        "workflows": [{"workflow_id": "etl", "weight": 3, "deadline_s": 900}],
    })
    jobs = scenario.make_spec(np.random.default_rng(0)).jobs
    assert [job.parents for job in jobs] == [(), ("extract",), ("clean",)]
    assert jobs.workflows == {"etl": WorkflowSpec("etl", 3.0, 900.0)}


def test_the_workflow_generator_draws_per_episode(tmp_path: Path) -> None:
    scenario = _load(tmp_path, {"source": "workflows", "options": {"rate_per_s": 0.002, "deadline_slack": 2}})
    first, second = (scenario.make_spec(np.random.default_rng(seed)).jobs for seed in (0, 1))
    assert first.has_workflows and first.workflows and first.job_ids != second.job_ids[: len(first)]


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ({"source": "jobs", "jobs": [_task("a", "b"), _task("b", "a")]}, "workload.jobs: workflow 'etl' has a cycle"),
        ({"source": "jobs", "jobs": [_task("a", "ghost")]}, "workload.jobs: job 'a': parent 'ghost' is not in"),
        ({"source": "jobs", "jobs": [_task("a")], "workflows": [{"workflow_id": "etl", "weight": -1}]},
         "workload.workflows\\[0\\]: workflow 'etl': weight must be a finite number > 0"),
        ({"source": "jobs", "jobs": [_task("a")], "workflows": [{"workflow_id": "etl", "colour": "red"}]},
         "workload.workflows\\[0\\]: unknown key\\(s\\) \\['colour'\\]"),
        ({"source": "workflows", "options": {"width_range": [3, 1]}}, "workload.options: .*width_range"),
        ({"source": "workflows", "options": {"rate_per_s": 50}}, "workload.options: .*limits.max_jobs"),
    ],
)
def test_bad_workflows_are_refused_naming_the_file_and_key(tmp_path: Path, workload: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=f"s.yaml: {message}"):
        _load(tmp_path, workload)


def test_a_batch_task_file_over_the_job_budget_is_refused_not_cut(tmp_path: Path) -> None:
    """The batch_task reader keeps whole workflows, so the loader caps its tasks instead of cutting silently.

    Workflows of 2, 3 and 1 tasks under limits.max_jobs = 3: cutting at max_jobs + 1 would keep
    the first workflow alone (2 tasks, under the limit) and drop the rest unseen.
    """
    lines = [row("M1", "a", 10, 20), row("R2_1", "a", 20, 30), row("M1", "b", 30, 40), row("M2", "b", 30, 40),
             row("J3_1_2", "b", 40, 50), row("M1", "c", 50, 60)]
    trace = write(tmp_path, lines)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**BASE, "workload": {"source": "alibaba2018-batch", "path": str(trace)}}))
    scenario = scenarios.load(path, limits=Limits(max_jobs=3))
    with pytest.raises(SpecError, match=r"batch_task.csv: the selection holds 6 tasks, more than 3"):
        scenario.make_spec(np.random.default_rng(0))
    assert len(scenarios.load(path, limits=Limits(max_jobs=6)).make_spec(np.random.default_rng(0)).jobs) == 6
