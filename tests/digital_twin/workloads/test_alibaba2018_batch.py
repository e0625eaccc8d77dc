"""The Alibaba cluster-trace-v2018 ``batch_task`` source: one workflow per job, one job per task.

No copy of the trace is on this machine, so every test writes its own small headerless file to
``tmp_path`` from the public schema (task_name, instance_num, job_name, task_type, status,
start_time, end_time, plan_cpu, plan_mem).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from digital_twin.errors import SpecError, TraceError
from digital_twin.jobs import BATCH, JobSpec
from digital_twin.scenario.sources import JOB_FILE_SOURCES
from digital_twin.traces import TraceCleaning
from digital_twin.workload import Workload
from digital_twin.workloads import load_alibaba2018_batch_workflows as load


def row(
    task: str, job: str, start: object = 100, end: object = 200, *, status: str = "Terminated",
    instances: object = 1, cpu: object = 100, mem: object = 1.0,
) -> str:
    """One batch_task line in the schema's column order (task_type is always 1)."""
    return f"{task},{instances},{job},1,{status},{start},{end},{cpu},{mem}"


def write(tmp_path: Path, lines: list[str], newline: str = "\n") -> Path:
    path = tmp_path / "batch_task.csv"
    path.write_text("".join(line + newline for line in lines))
    return path


def graph(jobs: tuple[JobSpec, ...]) -> dict[str, tuple[str, ...]]:
    return {j.job_id: j.parents for j in jobs}


def cleanings(caplog: pytest.LogCaptureFixture) -> dict[str, int]:
    found = [c for r in caplog.records if isinstance(c := getattr(r, "cleaning", None), TraceCleaning)]
    return {c.rule: c.count for c in found}


def assert_workflow_invariants(jobs: tuple[JobSpec, ...], start_s: float = 0.0) -> None:
    """Sorted from start_s, a valid Workload, tasks of a workflow adjacent and sharing one arrival, parents first."""
    assert [j.arrival_s for j in jobs] == sorted(j.arrival_s for j in jobs)
    assert not jobs or jobs[0].arrival_s == start_s
    Workload.of(jobs)
    seen: set[str] = set()
    order = [j.workflow for j in jobs]
    for k, job in enumerate(jobs):
        assert job.workflow is not None and job.job_id.startswith(f"{job.workflow}/")
        assert set(job.parents) <= seen
        assert job.workflow not in order[:k] or order[k - 1] == job.workflow  # adjacent
        assert {j.arrival_s for j in jobs if j.workflow == job.workflow} == {job.arrival_s}
        seen.add(job.job_id)


def test_alibaba2018__names_encode_the_dag_and_sizes_are_per_instance(tmp_path: Path) -> None:
    """M1, R2_1, J4_2_3 give the parents they name; cpu, memory, span and submission as worked out by hand."""
    path = write(tmp_path, [
        row("J4_2_3", "j_1", 150, 400, instances=5, cpu=50, mem=1.5),
        row("M1", "j_1", 100, 200, instances=10),
        row("R2_1", "j_1", 210, 300),
        row("M3", "j_1", 105, 140),
        row("MR5_4", "j_1", 400, 400),  # a two-letter kind; a 0 s span becomes min_duration_s
    ])
    jobs = load(path)
    assert graph(jobs) == {
        "j_1/M1": (), "j_1/R2_1": ("j_1/M1",), "j_1/M3": (), "j_1/J4_2_3": ("j_1/R2_1", "j_1/M3"),
        "j_1/MR5_4": ("j_1/J4_2_3",),
    }
    j4 = jobs[3]
    assert (j4.cpu_cores, j4.mem_gb, j4.duration_s, j4.arrival_s) == (0.5, pytest.approx(1.44), 250.0, 0.0)
    assert [j.duration_s for j in jobs] == [100.0, 90.0, 35.0, 250.0, 1.0]
    assert {(j.workload, j.priority, j.preemptible, j.workflow) for j in jobs} == {(BATCH, 50, True, "j_1")}
    assert_workflow_invariants(jobs)


def test_alibaba2018__other_names_are_independent_tasks_of_their_job(tmp_path: Path) -> None:
    """task_<base64> and MergeTask have no parents, alongside encoded names of the same job; ids repeat across jobs."""
    path = write(tmp_path, [
        row("task_Nzg3ODAwNjgxMjgxOTEyODc3Ng==", "j_1", 10, 50),
        row("MergeTask", "j_2", 30, 90),
        row("M1", "j_2", 20, 40),
        row("M1", "j_3", 25, 40),
    ])
    jobs = load(path)
    assert graph(jobs) == {
        "j_1/task_Nzg3ODAwNjgxMjgxOTEyODc3Ng==": (), "j_2/MergeTask": (), "j_2/M1": (), "j_3/M1": ()}
    assert [(j.workflow, j.arrival_s) for j in jobs] == [("j_1", 0), ("j_2", 10), ("j_2", 10), ("j_3", 15)]
    assert_workflow_invariants(jobs)


def test_alibaba2018__children_listed_first_still_come_after_their_parents(tmp_path: Path) -> None:
    """Rows in reverse order, padded cells and CRLF give the same DAG, parents first in the result."""
    lines = [row("J3_2", "j_9", 300, 400), row("R2_1", "j_9", 200, 300), row("M1", "j_9", 100, 200)]
    padded = [", ".join(f" {cell} " for cell in line.split(",")) for line in lines]
    jobs = load(write(tmp_path, padded, newline="\r\n"))
    assert [j.job_id for j in jobs] == ["j_9/M1", "j_9/R2_1", "j_9/J3_2"]
    assert_workflow_invariants(jobs)


BAD_NAMES = ["M1_x", "M_2", "R2__1", "M0", "R2_0", "J4_2_2", "3_1", "M1_", "M12345678901234567890"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_alibaba2018__malformed_dependency_name_is_refused_at_its_line(tmp_path: Path, name: str) -> None:
    """A name claiming the encoding (a digit after the letters) that breaks it is a TraceError at its line."""
    path = write(tmp_path, [row("M1", "j_1"), row(name, "j_1")])
    with pytest.raises(TraceError, match=rf"batch_task.csv:2: column 'task_name': '{name}' "):
        load(path)


STRUCTURE_ERRORS = [
    # (name, lines, message after the file name)
    ("repeated_id", [row("M1", "j_1"), row("R2_1", "j_1"), row("R1", "j_1")],
     r":3: job 'j_1': task 'R1' repeats task id 1 of 'M1' \(line 1\)"),
    ("repeated_name", [row("M1", "j_1"), row("M1", "j_1")], r":2: job 'j_1': task 'M1' repeats task id 1"),
    ("repeated_independent_name", [row("MergeTask", "j_1"), row("MergeTask", "j_1")],
     r":2: job 'j_1': task 'MergeTask' repeats its name \(line 1\)"),
    ("missing_parent", [row("M1", "j_1"), row("R2_1", "j_2"), row("M1", "j_2"), row("J3_1_7", "j_2")],
     r":4: job 'j_2': task 'J3_1_7' depends on task 7, which is not in the job"),
    ("cycle", [row("M4", "j_1"), row("J3_2", "j_1"), row("R1_3_4", "j_1"), row("M2_1", "j_1")],
     r":2: job 'j_1': dependency cycle 'J3_2' -> 'R1_3_4' -> 'M2_1' -> 'J3_2'"),
    ("self_dependency", [row("M1", "j_1"), row("R2_2", "j_1")], r":2: job 'j_1': dependency cycle 'R2_2' -> 'R2_2'"),
    ("wrong_field_count", [row("M1", "j_1"), row("M2", "j_1") + ",x"], r":2: the row has 10 fields"),
    ("non_numeric", [row("M1", "j_1"), row("M2", "j_1", cpu="lots")], r":2: column 'plan_cpu': 'lots' is not a"),
    ("nan", [row("M1", "j_1", end="NaN")], r":1: column 'end_time': 'NaN' is not a finite number"),
    ("fractional_instances", [row("M1", "j_1", instances=2.5)], r":1: column 'instance_num': '2.5' is not an integ"),
    ("negative_memory", [row("M1", "j_1"), row("M2", "j_1", mem=-1)], r":2: column 'plan_mem': -1 is negative"),
    ("memory_above_a_machine", [row("M2", "j_1", mem=150)], r":1: column 'plan_mem': 150 is above 100"),
    ("empty_job_name", [row("M1", "j_1"), row("M2", " ")], r":2: column 'job_name' is empty"),
    ("cpu_beyond_any_job", [row("M1", "j_1", cpu="1e15")], r":1: job 'j_1/M1': cpu_cores is 1e\+13, above"),
]


@pytest.mark.parametrize(("name", "lines", "match"), STRUCTURE_ERRORS, ids=[e[0] for e in STRUCTURE_ERRORS])
def test_alibaba2018__corrupt_file_is_refused_naming_file_and_line(
    tmp_path: Path, name: str, lines: list[str], match: str
) -> None:
    """Repeated ids, missing parents, cycles and bad values are TraceErrors at the file and line, kept rows or not."""
    del name
    with pytest.raises(TraceError, match=re.escape(str(tmp_path / "batch_task.csv")) + match):
        load(write(tmp_path, lines))


def test_alibaba2018__structure_is_checked_in_workflows_that_are_dropped(tmp_path: Path) -> None:
    """A missing parent in a Failed job is still an error: it means a corrupt file, not a task that did not run."""
    path = write(tmp_path, [row("M1", "j_1"), row("R2_5", "j_2", status="Failed")])
    with pytest.raises(TraceError, match=r"batch_task.csv:2: job 'j_2': task 'R2_5' depends on task 5"):
        load(path)


@pytest.mark.parametrize(
    ("bad", "rule"),
    [({"status": "Failed"}, "status"), ({"status": "Running"}, "status"), ({"status": ""}, "status"),
     ({"start": 0}, "unknown-time"), ({"end": ""}, "unknown-time"), ({"start": 300, "end": 250}, "reversed-times"),
     ({"instances": 0}, "no-size"), ({"cpu": ""}, "no-size"), ({"mem": 0}, "no-size")],
)
def test_alibaba2018__a_bad_task_drops_its_whole_workflow_and_is_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, bad: dict, rule: str
) -> None:
    """One unusable task drops every task of its workflow (never a DAG with holes); one record counts it."""
    path = write(tmp_path, [
        row("M1", "j_1", 100, 200), row("R2_1", "j_1", **{"start": 200, "end": 300, **bad}), row("M1", "j_2", 150, 160),
    ])
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        jobs = load(path)
    assert [j.job_id for j in jobs] == ["j_2/M1"]
    assert cleanings(caplog) == {rule: 1}
    assert f"{path}: dropped 1 of 2 workflows (2 tasks)" in caplog.records[0].getMessage()


def test_alibaba2018__limit_keeps_whole_workflows_in_arrival_order(tmp_path: Path) -> None:
    """Workflows of 2, 3 and 1 tasks: limit 4 keeps the first only (the second does not fit, and ends the cut)."""
    path = write(tmp_path, [
        row("M1", "a", 10, 20), row("R2_1", "a", 20, 30),
        row("M1", "b", 30, 40), row("M2", "b", 30, 40), row("J3_1_2", "b", 40, 50),
        row("M1", "c", 50, 60),
    ])
    workflows = {k: [j.workflow for j in load(path, limit=k)] for k in (0, 1, 2, 4, 5, 6, 100)}
    assert workflows == {
        0: [], 1: [], 2: ["a", "a"], 4: ["a", "a"], 5: ["a", "a", "b", "b", "b"],
        6: ["a", "a", "b", "b", "b", "c"], 100: ["a", "a", "b", "b", "b", "c"],
    }


def test_alibaba2018__start_s_and_time_window_shift_and_select_workflows(tmp_path: Path) -> None:
    """Arrivals keep the submission gaps from start_s; time_window selects by submission in trace seconds."""
    path = write(tmp_path, [
        row("M1", "a", 1000, 1100), row("R2_1", "a", 1100, 1200),
        row("M1", "b", 1030, 1100), row("M1", "c", 1500, 1600),
    ])
    jobs = load(path, start_s=60)
    assert [(j.job_id, j.arrival_s) for j in jobs] == [("a/M1", 60), ("a/R2_1", 60), ("b/M1", 90), ("c/M1", 560)]
    assert_workflow_invariants(jobs, start_s=60)
    windowed = load(path, time_window=(1010, 1500), start_s=5)
    assert [(j.job_id, j.arrival_s) for j in windowed] == [("b/M1", 5)]


def test_alibaba2018__options_set_memory_duration_floor_and_preemptible(tmp_path: Path) -> None:
    """machine_mem_gb scales plan_mem, min_duration_s floors short spans, preemptible is passed on."""
    path = write(tmp_path, [row("M1", "a", 100, 101, mem=25)])
    (job,) = load(path, machine_mem_gb=256, min_duration_s=5, preemptible=False)
    assert (job.mem_gb, job.duration_s, job.preemptible) == (64.0, 5.0, False)


@pytest.mark.parametrize(
    ("options", "match"),
    [({"machine_mem_gb": 0}, "machine_mem_gb must be"), ({"min_duration_s": -1}, "min_duration_s must be"),
     ({"preemptible": "yes"}, "preemptible must be"), ({"limit": -1}, "limit must be"),
     ({"start_s": -5}, "start_s must be")],
)
def test_alibaba2018__bad_options_raise_spec_error(tmp_path: Path, options: dict, match: str) -> None:
    """An invalid option is a SpecError naming it."""
    with pytest.raises(SpecError, match=match):
        load(write(tmp_path, [row("M1", "a")]), **options)


def test_alibaba2018__is_a_scenario_job_source() -> None:
    """Scenario files can name the reader as workload.source alibaba2018-batch."""
    assert JOB_FILE_SOURCES["alibaba2018-batch"] is load
