"""Malformed job files give a TraceError naming the file and the line or column, never a traceback.

Each case writes a small file to ``tmp_path`` (never a copy of the real traces) and checks the
message with ``match=``: the file name, then ``:<line>`` (1-based, header = line 1) or the column.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from digital_twin.errors import SpecError, TraceError
from digital_twin.workloads import (
    load_alibaba_gpu_pods,
    load_azure_llm_requests,
    load_swf_jobs,
)

POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time"
)
POD_ROWS = [
    "p0,4000,8192,1,500,,LS,Running,0,100,10",
    "p1,8000,16384,0,0,,BE,Succeeded,5,50,6",
    "p2,2000,4096,2,1000,T4|V100M32,Burstable,Failed,7,70,8",
    "p3,1000,1024,0,0,,BE,Pending,9,30,",
]
SWF_ROWS = [
    "; MaxProcs: 128",
    "1 0 -1 100 4 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1",
    "2 10 -1 50 8 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1",
    "3 20 -1 70 2 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1",
]
LLM_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
LLM_ROWS = [
    "2023-11-16 18:15:46.6805900,374,44",
    "2023-11-16 18:15:50.9951690,396,109",
    "2023-11-16 18:15:51.2224670,879,125",
]


def pods(
    *,
    header: str = POD_HEADER,
    line: int | None = None,
    row: str | None = None,
    extra: list[str] | None = None,
) -> str:
    """The valid pod list with file line ``line`` (2 = first data row) replaced by ``row``."""
    rows = list(POD_ROWS)
    if line is not None and row is not None:
        rows[line - 2] = row
    return "\n".join([header, *rows, *(extra or [])]) + "\n"


def swf(*, line: int | None = None, row: str | None = None) -> str:
    """The valid SWF log with file line ``line`` (2 = first job) replaced by ``row``."""
    rows = list(SWF_ROWS)
    if line is not None and row is not None:
        rows[line - 1] = row
    return "\n".join(rows) + "\n"


def llm(*, header: str = LLM_HEADER, line: int | None = None, row: str | None = None) -> str:
    """The valid LLM trace with file line ``line`` (2 = first request) replaced by ``row``."""
    rows = list(LLM_ROWS)
    if line is not None and row is not None:
        rows[line - 2] = row
    return "\n".join([header, *rows]) + "\n"


Loader = Callable[..., Any]
# (id, file name, content (None = do not create the file), loader, pattern after the file name)
CASES: list[tuple[str, str, str | bytes | None, Loader, str]] = [
    # --- Alibaba GPU 2023 pod lists
    ("pods-missing-file", "pods.csv", None, load_alibaba_gpu_pods, r": cannot open .*no such file"),
    ("pods-empty-file", "pods.csv", "", load_alibaba_gpu_pods, r": the pod list is empty"),
    ("pods-header-only", "pods.csv", POD_HEADER + "\n", load_alibaba_gpu_pods, r": .*no data rows"),
    (
        "pods-renamed-column",
        "pods.csv",
        pods(header=POD_HEADER.replace("creation_time", "created")),
        load_alibaba_gpu_pods,
        r": missing column\(s\) \['creation_time'\]",
    ),
    (
        "pods-semicolons",
        "pods.csv",
        pods().replace(",", ";"),
        load_alibaba_gpu_pods,
        r": missing column\(s\) .*one column containing ';'",
    ),
    (
        "pods-empty-cpu",
        "pods.csv",
        pods(line=3, row="p1,,16384,0,0,,BE,Succeeded,5,50,6"),
        load_alibaba_gpu_pods,
        r":3: column 'cpu_milli' is empty",
    ),
    (
        "pods-text-memory",
        "pods.csv",
        pods(line=2, row="p0,4000,lots,1,500,,LS,Running,0,100,10"),
        load_alibaba_gpu_pods,
        r":2: column 'memory_mib': 'lots' is not a finite number",
    ),
    (
        "pods-nan-deletion",
        "pods.csv",
        pods(line=4, row="p2,2000,4096,2,1000,,BE,Failed,7,NaN,8"),
        load_alibaba_gpu_pods,
        r":4: column 'deletion_time': 'NaN' is not a finite number",
    ),
    (
        "pods-negative-cpu",
        "pods.csv",
        pods(line=5, row="p3,-1000,1024,0,0,,BE,Pending,9,30,"),
        load_alibaba_gpu_pods,
        r":5: column 'cpu_milli': '-1000' is negative",
    ),
    (
        "pods-fractional-gpus",
        "pods.csv",
        pods(line=2, row="p0,4000,8192,1.5,500,,LS,Running,0,100,10"),
        load_alibaba_gpu_pods,
        r":2: column 'num_gpu': '1.5' is not an integer",
    ),
    (
        "pods-deleted-before-created",
        "pods.csv",
        pods(line=3, row="p1,8000,16384,0,0,,BE,Failed,50,5,50"),
        load_alibaba_gpu_pods,
        r":3: deletion_time is before creation_time",
    ),
    (
        "pods-deleted-before-scheduled",
        "pods.csv",
        pods(line=3, row="p1,8000,16384,0,0,,BE,Failed,5,6,7"),
        load_alibaba_gpu_pods,
        r":3: deletion_time is before scheduled_time",
    ),
    (
        "pods-running-unscheduled",
        "pods.csv",
        pods(line=2, row="p0,4000,8192,1,500,,LS,Running,0,100,"),
        load_alibaba_gpu_pods,
        r":2: column 'scheduled_time' is empty",
    ),
    (
        "pods-unknown-qos",
        "pods.csv",
        pods(line=4, row="p2,2000,4096,2,1000,,Gold,Failed,7,70,8"),
        load_alibaba_gpu_pods,
        r":4: column 'qos': unknown QoS 'Gold'",
    ),
    (
        "pods-unknown-phase",
        "pods.csv",
        pods(line=4, row="p2,2000,4096,2,1000,,BE,Evicted,7,70,8"),
        load_alibaba_gpu_pods,
        r":4: column 'pod_phase': unknown phase 'Evicted'",
    ),
    (
        "pods-unknown-gpu-model",
        "pods.csv",
        pods(line=4, row="p2,2000,4096,2,1000,T4|H100,BE,Failed,7,70,8"),
        load_alibaba_gpu_pods,
        r":4: column 'gpu_spec': unknown GPU model\(s\) \['H100'\]",
    ),
    (
        "pods-gpu-milli-too-big",
        "pods.csv",
        pods(line=2, row="p0,4000,8192,1,1500,,LS,Running,0,100,10"),
        load_alibaba_gpu_pods,
        r":2: gpu_milli is above 1000",
    ),
    (
        "pods-extra-field",
        "pods.csv",
        pods(line=4, row="p2,2000,4096,2,1000,,BE,Failed,7,70,8,99"),
        load_alibaba_gpu_pods,
        r":4: the row has 12 fields, the header has 11",
    ),
    (
        "pods-extra-field-first-row",
        "pods.csv",
        pods(line=2, row="p0,4000,8192,1,500,,LS,Running,0,100,10,1"),
        load_alibaba_gpu_pods,
        r":2: the row has more fields than the header",
    ),
    (
        "pods-duplicate-name",
        "pods.csv",
        pods(line=3, row="p0,8000,16384,0,0,,BE,Succeeded,5,50,6"),
        load_alibaba_gpu_pods,
        r":3: duplicate pod name 'p0' \(first on line 2\)",
    ),
    (
        "pods-blank-lines-keep-numbering",
        "pods.csv",
        pods(extra=["", "p4,1000,1024,0,0,,BE,Running,1,2,x"]),
        load_alibaba_gpu_pods,
        r":7: column 'scheduled_time': 'x' is not a finite number",
    ),
    (
        "pods-five-columns",
        "pods.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,0,0\n",
        load_alibaba_gpu_pods,
        r": this pod list has only the columns",
    ),
    (
        "pods-not-utf8",
        "pods.csv",
        (POD_HEADER + "\np0,\xff\xfe\n").encode("latin-1"),
        load_alibaba_gpu_pods,
        r": not a UTF-8 text pod list",
    ),
    # --- SWF logs
    ("swf-missing-file", "log.swf", None, load_swf_jobs, r": cannot open SWF log"),
    (
        "swf-only-comments",
        "log.swf",
        "; MaxProcs: 8\n;\n",
        load_swf_jobs,
        r": the SWF log has no job lines",
    ),
    (
        "swf-17-fields",
        "log.swf",
        swf(line=3, row="2 10 -1 50 8 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1"),
        load_swf_jobs,
        r":3: expected 18 fields, found 17",
    ),
    (
        "swf-comma-separated",
        "log.swf",
        swf(line=2, row="1,0,-1,100,4,-1,-1,-1,-1,-1,1,1,1,-1,-1,-1,-1,-1"),
        load_swf_jobs,
        r":2: expected 18 fields, found 1 \(fields must be separated by spaces or tabs\)",
    ),
    (
        "swf-text-field",
        "log.swf",
        swf(line=4, row="3 20 -1 abc 2 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1"),
        load_swf_jobs,
        r":4: field 'run_time': 'abc' is not a finite number",
    ),
    (
        "swf-negative-procs",
        "log.swf",
        swf(line=3, row="2 10 -1 50 -8 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1"),
        load_swf_jobs,
        r":3: field 'allocated_procs' is -8 \(only -1 \(unknown\) may be negative\)",
    ),
    (
        "swf-unknown-submit",
        "log.swf",
        swf(line=2, row="1 -1 -1 100 4 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1"),
        load_swf_jobs,
        r":2: field 'submit_time' is -1 \(must be >= 0\)",
    ),
    (
        "swf-duplicate-id",
        "log.swf",
        swf(line=4, row="2 20 -1 70 2 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1"),
        load_swf_jobs,
        r":4: duplicate job_id 2 \(first on line 3\)",
    ),
    (
        "swf-jobspec-failure",
        "log.swf",
        swf(line=2, row="1 0 -1 100 128 -1 1e308 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1"),
        load_swf_jobs,
        r":2: job 'swf-1': mem_gb must be a finite number",
    ),
    # --- Azure LLM inference traces
    ("llm-empty-file", "llm.csv", "", load_azure_llm_requests, r": the LLM request trace is empty"),
    (
        "llm-renamed-column",
        "llm.csv",
        llm(header="Timestamp,ContextTokens,GeneratedTokens"),
        load_azure_llm_requests,
        r": missing column\(s\) \['TIMESTAMP'\]",
    ),
    (
        "llm-tab-separated",
        "llm.csv",
        llm().replace(",", "\t"),
        load_azure_llm_requests,
        r": missing column\(s\) .*one column containing tab",
    ),
    (
        "llm-bad-timestamp",
        "llm.csv",
        llm(line=3, row="2023-11-16 25:15:50.9951690,396,109"),
        load_azure_llm_requests,
        r":3: column 'TIMESTAMP': '2023-11-16 25:15:50.9951690' is not a time",
    ),
    (
        "llm-empty-timestamp",
        "llm.csv",
        llm(line=4, row=",879,125"),
        load_azure_llm_requests,
        r":4: column 'TIMESTAMP' is empty",
    ),
    (
        "llm-empty-tokens",
        "llm.csv",
        llm(line=2, row="2023-11-16 18:15:46.6805900,374,"),
        load_azure_llm_requests,
        r":2: column 'GeneratedTokens' is empty",
    ),
    (
        "llm-negative-tokens",
        "llm.csv",
        llm(line=3, row="2023-11-16 18:15:50.9951690,-396,109"),
        load_azure_llm_requests,
        r":3: column 'ContextTokens': '-396' is negative",
    ),
]


@pytest.mark.parametrize(
    ("name", "content", "loader", "pattern"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_workload_files__malformed_input_raises_trace_error_naming_file_and_place(
    tmp_path: Path, name: str, content: str | bytes | None, loader: Loader, pattern: str
) -> None:
    """Each malformed file raises TraceError whose message starts with the file and line/column."""
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(TraceError, match=re.escape(str(path)) + pattern):
        loader(path)


@pytest.mark.parametrize(
    ("loader", "content", "name"),
    [
        (load_alibaba_gpu_pods, pods(), "pods.csv"),
        (load_swf_jobs, swf(), "log.swf"),
        (load_azure_llm_requests, llm(), "llm.csv"),
    ],
    ids=["alibaba", "swf", "azure-llm"],
)
def test_workload_files__valid_fixtures_load(
    tmp_path: Path, loader: Loader, content: str, name: str
) -> None:
    """The unmodified fixtures load, so each bad-input case fails only by its own change."""
    path = tmp_path / name
    path.write_text(content)
    jobs = loader(path)
    assert len(jobs) == 3 and jobs[0].arrival_s == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"limit": -1}, "limit"),
        ({"limit": 2.5}, "limit"),
        ({"time_window": (10, 5)}, "time_window"),
        ({"time_window": "soon"}, "time_window"),
        ({"start_s": -1.0}, "start_s"),
        ({"phases": ("Running", "Exploded")}, "phases"),
        ({"phases": "Running"}, "phases"),
        ({"min_duration_s": 0}, "min_duration_s"),
        ({"row_order": {"interarrival_s": -1}}, r"RowOrderTiming\.interarrival_s"),
        ({"row_order": {"speed": 1}}, "row_order"),
        (
            {"qos_policies": {"LS": {"workload": "urgent", "priority": 1, "preemptible": False}}},
            "workload",
        ),
    ],
)
def test_alibaba_gpu_pods__bad_arguments_raise_spec_error(
    tmp_path: Path, kwargs: dict[str, Any], match: str
) -> None:
    """Bad selection or policy arguments raise SpecError naming the argument."""
    path = tmp_path / "pods.csv"
    path.write_text(pods())
    with pytest.raises(SpecError, match=match):
        load_alibaba_gpu_pods(path, **kwargs)


@pytest.mark.parametrize(
    ("loader", "kwargs", "match"),
    [
        (load_swf_jobs, {"cores_per_proc": 0}, "cores_per_proc"),
        (load_swf_jobs, {"queue_priority": {1: 101}}, r"queue_priority\[1\]"),
        (load_swf_jobs, {"zero_runtime_s": -1.0}, "zero_runtime_s"),
        (load_azure_llm_requests, {"gpu_count": 0}, "gpu_count"),
        (load_azure_llm_requests, {"sample_every": 0}, "sample_every"),
        (load_azure_llm_requests, {"rate_scale": 0.0}, "rate_scale"),
        (load_azure_llm_requests, {"service_time": {"overhead_s": 0.0}}, "overhead_s"),
    ],
)
def test_swf_and_azure_llm__bad_arguments_raise_spec_error(
    tmp_path: Path, loader: Loader, kwargs: dict[str, Any], match: str
) -> None:
    """Bad SWF and LLM arguments raise SpecError naming the argument (before reading)."""
    with pytest.raises(SpecError, match=match):
        loader(tmp_path / "never-read.csv", **kwargs)


# Cell values that have broken CSV readers before: empty, text, NaN, inf, huge, quotes...
NASTY = st.sampled_from(
    [
        "",
        "abc",
        "NaN",
        "nan",
        "inf",
        "-inf",
        "-1",
        "-0",
        "1e400",
        "1e308",
        "0",
        "0.5",
        " ",
        '"',
        "'",
        ";",
        "|",
        "T4|",
        "Pending",
        "LS",
        "2023-11-16",
        "\t",
        "1,2",
        "\\N",
        "null",
        "None",
    ]
)


def _mutated(lines: list[str], sep: str, line_index: int, cell: int, value: str) -> str:
    rows = [r.split(sep) if r and not r.startswith(";") else [r] for r in lines]
    target = rows[line_index % len(rows)]
    target[cell % len(target)] = value
    return "\n".join(sep.join(r) for r in rows) + "\n"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    source=st.sampled_from(["alibaba", "swf", "azure-llm"]),
    line_index=st.integers(0, 10),
    cell=st.integers(0, 20),
    value=NASTY,
)
def test_workload_files__any_single_bad_cell_gives_trace_error_or_jobs(
    tmp_path: Path, source: str, line_index: int, cell: int, value: str
) -> None:
    """Corrupting any one cell of a valid file yields jobs or a TraceError, nothing else."""
    lines, sep, loader = {
        "alibaba": ([POD_HEADER, *POD_ROWS], ",", load_alibaba_gpu_pods),
        "swf": (SWF_ROWS, " ", load_swf_jobs),
        "azure-llm": ([LLM_HEADER, *LLM_ROWS], ",", load_azure_llm_requests),
    }[source]
    path = tmp_path / f"fuzz-{source}.txt"
    path.write_text(_mutated(lines, sep, line_index, cell, value))
    try:
        jobs = loader(path)
    except TraceError as exc:
        assert str(path) in str(exc)
    else:
        assert all(j.duration_s > 0 and j.cpu_cores > 0 for j in jobs)
