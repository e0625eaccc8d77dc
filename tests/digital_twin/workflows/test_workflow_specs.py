"""Workflow specs and the DAG check: every malformed graph is refused naming the job or the cycle."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from digital_twin.errors import SpecError
from digital_twin.jobs import JobSpec, job_from_dict
from digital_twin.workflows import WorkflowGraph, WorkflowSpec
from digital_twin.workload import Workload


def task(job_id: str, *parents: str, arrival_s: float = 0.0, duration_s: float = 60.0, workflow: str = "w") -> JobSpec:
    return JobSpec(job_id, arrival_s, duration_s, "batch", 1, 1, workflow=workflow, parents=parents)


def test_a_cycle_is_refused_naming_it() -> None:
    cycle = r"(a -> b -> c -> a|b -> c -> a -> b|c -> a -> b -> c)"
    with pytest.raises(SpecError, match=f"workflow 'w' has a cycle: {cycle}"):
        Workload.of([task("a", "c"), task("b", "a"), task("c", "b")])


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        ([task("a"), task("b", "x")], "job 'b': parent 'x' is not in the workload"),
        ([task("a", workflow="v"), task("b", "a")], "job 'b' \\(workflow 'w'\\): parent 'a' is a task of workflow 'v'"),
    ],
)
def test_a_parent_outside_the_workflow_is_refused(jobs: list[JobSpec], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        Workload.of(jobs)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"parents": ["a"]}, "parents \\['a'\\] need a workflow"),
        ({"workflow": "w", "parents": ["j"]}, "a job cannot be its own parent"),
        ({"workflow": "w", "parents": ["a", "a"]}, "parents .* repeat a job id"),
        ({"workflow": "", "parents": []}, "workflow must be a non-empty string"),
        ({"workflow": "w", "parents": [""]}, "parents must be a tuple of job ids"),
    ],
)
def test_bad_task_fields_are_refused_naming_the_job(fields: dict[str, object], message: str) -> None:
    data = {"job_id": "j", "arrival_s": 0, "duration_s": 1, "workload": "batch", "cpu_cores": 1, "mem_gb": 1, **fields}
    with pytest.raises(SpecError, match=f"jobs\\[3\\]: job 'j': {message}"):
        job_from_dict(data, "jobs[3]")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"workflow_id": "w", "weight": 0}, "weight must be a finite number > 0"),
        ({"workflow_id": "w", "weight": float("nan")}, "weight must be a finite number > 0"),
        ({"workflow_id": "w", "deadline_s": -1}, "deadline_s must be a finite number >= 0"),
        ({"workflow_id": ""}, "workflow_id must be a non-empty string"),
    ],
)
def test_bad_workflow_specs_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        WorkflowSpec(**fields)  # type: ignore[arg-type]


def test_a_workflow_described_twice_is_refused() -> None:
    with pytest.raises(SpecError, match="duplicate workflow_id 'w'"):
        Workload.of([task("a")], [WorkflowSpec("w"), WorkflowSpec("w", weight=2.0)])


def test_tasks_round_trip_through_the_columns() -> None:
    jobs = [task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c")]
    workload = Workload.of(jobs, [WorkflowSpec("w", weight=2.0, deadline_s=600.0)])
    assert list(workload) == jobs
    fresh = workload.with_declared_durations(workload.duration_s.copy())
    assert [j.parents for j in fresh] == [(), ("a",), ("a",), ("b", "c")]
    assert fresh.workflows == {"w": WorkflowSpec("w", 2.0, 600.0)}
    graph = workload.graph()
    assert graph is not None and graph.weight == [2.0] and graph.deadline_s == [600.0]


def test_a_task_arriving_before_its_parent_is_refused() -> None:
    with pytest.raises(SpecError, match="job 'b' arrives at 5 s, before its parent 'a' \\(10 s\\)"):
        Workload.of([task("a", arrival_s=10.0), task("b", "a", arrival_s=5.0)])


def test_head_drops_the_tasks_whose_parents_are_cut_off() -> None:
    # All arrive at 0 and keep list order, so "child" and "grandchild" come before their parent
    # "late": head(3) cuts "late", and its descendants go with it.
    jobs = [task("root"), task("child", "late"), task("grandchild", "child"), task("late")]
    head = Workload.of(jobs).head(3)
    assert head.job_ids == ["root"]
    taken = Workload.of(jobs).take([0, 1])  # a subset's tasks keep the parents taken with them only
    assert [job.parents for job in taken] == [(), ()]


def test_then_joins_the_workflows() -> None:
    first = Workload.of([task("a"), task("b", "a")], [WorkflowSpec("w", weight=2.0)])
    joined = first.then(Workload.of([task("c", arrival_s=1.0, workflow="v")]))
    graph = joined.graph()
    assert graph is not None
    assert joined.workflows == {"w": WorkflowSpec("w", 2.0)}
    assert (graph.workflow_ids, graph.weight, graph.parents) == (["w", "v"], [2.0, 1.0], [(), (0,), ()])


def test_critical_path_and_descendants_agree_with_networkx() -> None:
    # a fork-join: a -> (b, c) -> d, and an independent job e
    jobs = [task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c"), JobSpec("e", 0.0, 5.0, "batch", 1, 1)]
    durations = [10.0, 20.0, 30.0, 40.0, 5.0]
    graph = WorkflowGraph.build(jobs, {})
    dag = nx.DiGraph([(p, j) for j, mine in enumerate(graph.parents) for p in mine])
    for j in range(4):
        longest = max(
            sum(durations[k] for k in path)
            for exit_ in (k for k in range(4) if not graph.children[k])
            for path in ([[j]] if j == exit_ else nx.all_simple_paths(dag, j, exit_))
        )
        assert graph.critical_path_s(durations)[j] == longest
        assert graph.descendants()[j] == nx.descendants(dag, j)
    assert graph.critical_path_s(durations)[4] == 5.0 and graph.workflow_of == [0, 0, 0, 0, -1]


def test_with_declared_durations__derives_from_its_own_declarations_and_leaves_the_original() -> None:
    """What the declarations give (task features, jobs) is the new workload's; the original keeps its own."""
    workload = Workload.of([task("a"), task("b", "a"), task("c", "b")])
    before = workload.task_features().critical_path_s.tolist()
    assert [job.declared_duration_s for job in workload] == [None, None, None]
    declared = workload.with_declared_durations(np.array([600.0, 1200.0, 60.0]))
    assert declared.task_features().critical_path_s.tolist() == [1860.0, 1260.0, 60.0]
    assert [job.declared_duration_s for job in declared] == [600.0, 1200.0, 60.0]
    assert not declared.declared_duration_s.flags.writeable
    assert workload.task_features().critical_path_s.tolist() == before == [180.0, 120.0, 60.0]
    assert [job.declared_duration_s for job in workload] == [None, None, None]
