"""The Alibaba cluster-trace-v2017 ``batch_task`` source: one batch job per task instance.

No copy of the trace is shared, so every test writes its own small file to ``tmp_path`` from the
public schema (create, end, job id, task id, instance_num, status, plan_cpu, plan_mem), in the
shapes real exports take (with or without a header, padded, CRLF, unsorted, missing values).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

import scenarios
from digital_twin.errors import SpecError, TraceError
from digital_twin.jobs import BATCH, STREAM
from digital_twin.scenario import ScenarioError
from digital_twin.traces import TraceCleaning
from digital_twin.workloads import load_alibaba2017_batch_tasks

HEADER = "create_timestamp,end_timestamp,job_id,task_id,instance_num,status,plan_cpu,plan_mem"
ROWS = [
    "100,400,1,1,2,Terminated,50,0.01",  # 2 instances: 0.5 core, 1.28 GB, 300 s
    "50,170,1,2,1,Failed,100,0.02",  # failed tasks ran: 1 core, 2.56 GB, 120 s
    "-30,60,2,1,1,Terminated,200,0.05",  # created before the trace: arrives at 0, runs 60 s inside it
    "10,500,2,2,3,Waiting,100,0.01",  # never ran: dropped (status)
    "20,10,2,3,1,Terminated,100,0.01",  # end before create: dropped (reversed-times)
    "30,90,3,1,1,Terminated,,0.01",  # no cpu request: dropped (missing-value)
    "40,80,3,2,0,Terminated,100,0.01",  # no instances: dropped (no-size)
    "-90,-10,3,3,1,Terminated,100,0.01",  # wholly before the trace: dropped (left-censored)
]
# (job id, arrival s, duration s, cores, GB), worked out by hand from ROWS (first arrival shifted to 0).
EXPECTED = [
    ("a17-2-1-0", 0.0, 60.0, 2.0, 6.4),
    ("a17-1-2-0", 50.0, 120.0, 1.0, 2.56),
    ("a17-1-1-0", 100.0, 300.0, 0.5, 1.28),
    ("a17-1-1-1", 100.0, 300.0, 0.5, 1.28),
]
REPORT = {"missing-value": 1, "status": 1, "no-size": 1, "reversed-times": 1, "left-censored": 2}


def write(tmp_path: Path, lines: list[str], name: str = "batch_task.csv", newline: str = "\n") -> Path:
    path = tmp_path / name
    path.write_text("".join(line + newline for line in lines))
    return path


def summary(jobs: tuple) -> list[tuple]:
    return [(j.job_id, j.arrival_s, j.duration_s, j.cpu_cores, pytest.approx(j.mem_gb)) for j in jobs]


def cleanings(caplog: pytest.LogCaptureFixture) -> dict[str, int]:
    found = [r.cleaning for r in caplog.records if isinstance(getattr(r, "cleaning", None), TraceCleaning)]
    return {c.rule: c.count for c in found}


def test_alibaba2017__one_job_per_instance_as_worked_out_by_hand(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Headerless schema-order file: instances expanded, sizes and spans as computed by hand, drops counted."""
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        jobs = load_alibaba2017_batch_tasks(write(tmp_path, ROWS))
    assert summary(jobs) == EXPECTED
    assert {(j.workload, j.priority, j.preemptible) for j in jobs} == {(BATCH, 30, True)}
    assert cleanings(caplog) == REPORT
    assert any("2 of 8 tasks created before the trace start" in r.getMessage() and "1 dropped" in r.getMessage()
               for r in caplog.records)


def test_alibaba2017__header_padding_crlf_column_order_and_row_order_do_not_matter(tmp_path: Path) -> None:
    """A header (any order, spaced names), padded cells, CRLF, a BOM and reversed rows give the same jobs."""
    order = [5, 0, 1, 2, 3, 4, 6, 7]  # status first
    names = ["Status", "task create time", "END_TIMESTAMP", "job id", "task-id", "instance_num", "plan_cpu",
             "plan_mem"]
    rows = [", ".join(f" {r.split(',')[k]} " for k in order) for r in reversed(ROWS)]
    path = tmp_path / "exported.csv"
    path.write_text("\ufeff" + "\r\n".join([",".join(names), *rows]) + "\r\n")
    assert summary(load_alibaba2017_batch_tasks(path)) == EXPECTED


def test_alibaba2017__limit_counts_instances_window_and_options(tmp_path: Path) -> None:
    """limit cuts inside a task's instances; time_window selects by arrival; options change sizes and class."""
    path = write(tmp_path, ROWS)
    assert [j.job_id for j in load_alibaba2017_batch_tasks(path, limit=3)] == [
        "a17-2-1-0", "a17-1-2-0", "a17-1-1-0"]
    assert load_alibaba2017_batch_tasks(path, limit=0) == ()
    windowed = load_alibaba2017_batch_tasks(path, time_window=(40, 200), start_s=10)
    assert [(j.job_id, j.arrival_s) for j in windowed] == [("a17-1-2-0", 10), ("a17-1-1-0", 60), ("a17-1-1-1", 60)]
    other = load_alibaba2017_batch_tasks(
        path, cpu_per_core=1, machine_mem_gb=256, statuses=["Terminated"], left_censored="drop",
        policy={"workload": "stream", "priority": 60, "preemptible": False},
    )
    assert [(j.job_id, j.cpu_cores, j.mem_gb, j.workload) for j in other] == [
        ("a17-1-1-0", 50, 2.56, STREAM), ("a17-1-1-1", 50, 2.56, STREAM)]


BAD_FILES = [
    # (name, lines, message after the file name)
    ("empty_file", [], r"batch_task.csv: the task table is empty \(0 bytes\)"),
    ("missing_column_in_a_row", [ROWS[0], "50,170,1,2,1,Failed,100"],
     r"batch_task.csv:2: the row has 7 fields, the task table has 8"),
    ("missing_column_in_the_header", [HEADER.removesuffix(",plan_mem"), "100,400,1,1,2,Terminated,50"],
     r"batch_task.csv: missing column\(s\) \['plan_mem'\] in the header \(line 1\)"),
    ("non_integer_instances", [ROWS[0], "50,170,1,2,2.5,Failed,100,0.02"],
     r"batch_task.csv:2: column 'instance_num': '2.5' is not an integer"),
    ("non_numeric_cpu", [ROWS[0], "50,170,1,2,1,Failed,lots,0.02"],
     r"batch_task.csv:2: column 'plan_cpu': 'lots' is not a finite number"),
    ("non_numeric_time_with_header", [HEADER, ROWS[0], "soon,170,1,2,1,Failed,100,0.02"],
     r"batch_task.csv:3: column 'create_timestamp': 'soon' is not a finite number"),
    ("negative_cpu", [ROWS[0], "50,170,1,2,1,Failed,-50,0.02"],
     r"batch_task.csv:2: column 'plan_cpu': -50 is negative"),
    ("negative_job_id", ["50,170,-1,2,1,Failed,100,0.02"], r"batch_task.csv:1: column 'job_id': -1 is negative"),
    ("memory_above_a_machine", [ROWS[0], "50,170,1,2,1,Failed,100,1.5"],
     r"batch_task.csv:2: column 'plan_mem': 1.5 is above 1"),
    ("unknown_status", [HEADER, ROWS[0], "50,170,1,2,1,Done,100,0.02"],
     r"batch_task.csv:3: column 'status': unknown status 'Done'; known: \['Ready'"),
    ("duplicate_task", [ROWS[0], ROWS[1], ROWS[0]],
     r"batch_task.csv:3: duplicate task \(job_id 1, task_id 1; first on line 1\)"),
    ("semicolons", ["100;400;1;1;2;Terminated;50;0.01"],
     r"batch_task.csv:1: the line has no comma \(it contains ';': wrong delimiter"),
]


@pytest.mark.parametrize(("name", "lines", "match"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_alibaba2017__corrupt_file_raises_trace_error_naming_file_and_line(
    tmp_path: Path, name: str, lines: list[str], match: str
) -> None:
    """A value that means a corrupt file (not a task that did not run) is a TraceError naming file and line."""
    del name
    with pytest.raises(TraceError, match=match):
        load_alibaba2017_batch_tasks(write(tmp_path, lines))


@pytest.mark.parametrize(
    ("line", "rule"),
    [("30,90,3,1,1,, 100,0.01", "missing-value"), ("10,500,2,2,3,Cancelled,100,0.01", "status"),
     ("10,500,2,2,3,Running,100,0.01", "status"), ("20,10,2,3,1,Terminated,100,0.01", "reversed-times"),
     ("30,90,3,1,1,Terminated,0,0.01", "no-size"), ("0,90,3,1,1,Terminated,100,0.01", "left-censored"),
     ("30,90,,1,1,Terminated,100,0.01", "missing-value"), ("30,   ,3,1,1,Terminated,100,0.01", "missing-value")],
)
def test_alibaba2017__unusable_row_is_dropped_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, line: str, rule: str
) -> None:
    """A row that cannot form a job is dropped, never silently: its rule's record counts it, naming the file."""
    path = write(tmp_path, [ROWS[1], line])
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        jobs = load_alibaba2017_batch_tasks(path, left_censored="drop")
    assert [j.job_id for j in jobs] == ["a17-1-2-0"]
    assert cleanings(caplog) == {rule: 1}
    assert str(path) in caplog.records[0].getMessage()


@pytest.mark.parametrize(
    ("options", "match"),
    [({"statuses": ["Done"]}, "statuses must be a list of"), ({"statuses": "Terminated"}, "statuses must be"),
     ({"cpu_per_core": 0}, "cpu_per_core must be"), ({"machine_mem_gb": -1}, "machine_mem_gb must be"),
     ({"left_censored": "clip"}, "left_censored must be one of"), ({"policy": {"workload": "web"}}, "policy")],
)
def test_alibaba2017__bad_options_raise_spec_error(tmp_path: Path, options: dict, match: str) -> None:
    """An invalid option is a SpecError naming it."""
    with pytest.raises(SpecError, match=match):
        load_alibaba2017_batch_tasks(write(tmp_path, ROWS), **options)


def test_alibaba2017__bundled_scenario_reads_the_file_under_aco_env_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fleet5-alibaba2017 reports its absent file clearly, and reads it once it is under ACO_ENV_TRACES."""
    monkeypatch.setenv("ACO_ENV_TRACES", str(tmp_path))
    scenario = scenarios.load("fleet5-alibaba2017")
    missing = tmp_path / "alibaba-cluster-trace-v2017" / "batch_task.csv"
    assert scenario.missing_data() == [missing]
    with pytest.raises(ScenarioError, match=r"needs data that is not present: .*batch_task.csv"):
        scenario.make_spec(np.random.default_rng(0))
    missing.parent.mkdir()
    write(missing.parent, ROWS)
    jobs = scenarios.load("fleet5-alibaba2017").make_spec(np.random.default_rng(0)).jobs
    assert [j.job_id for j in jobs] == [job_id for job_id, *_ in EXPECTED]
