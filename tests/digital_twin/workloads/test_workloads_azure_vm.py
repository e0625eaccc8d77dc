"""The Azure VM-request source (``vmtable.csv``, V1 2017 and V2 2019): one job per VM.

Real data: the shared 10-row V1 sample through ``ACO_ENV_TRACES`` (skipped when absent), every row
checked against values worked out by hand from the file. Bad input: small files written to
``tmp_path``, each a TraceError naming the file and line, or a counted drop.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

import scenarios
from digital_twin.errors import SpecError, TraceError
from digital_twin.jobs import BATCH, LATENCY_CRITICAL
from digital_twin.traces import TraceCleaning
from digital_twin.workloads import load_azure_vm_requests
from tests.paths import TRACES

SAMPLE = "azure-vmtable-2017-sample/vmtable.csv"
END = 2_591_700  # the sample's "still running" vmdeleted (last 300 s reading of 30 days)

# By hand from the sample's 10 lines (vmid prefix: trace created s, duration s = deleted - created,
# workload, priority, preemptible, cores, GB). Unkown is V1's spelling of Unknown -> batch 50.
BY_HAND = {
    "x/XsOfHO4": (0, END, BATCH, 30, True, 1, 1.75),  # line 1, Delay-insensitive
    "H5CxmMoVc": (0, 1_539_300, LATENCY_CRITICAL, 80, False, 1, 0.75),  # line 2, Interactive
    "wR/G1YUjp": (2_188_800, END - 2_188_800, BATCH, 30, True, 1, 1.75),  # line 3
    "1XiU+KpvI": (0, END, BATCH, 30, True, 8, 56.0),  # line 4
    "z5i2HiSaz": (0, 2_188_500, BATCH, 30, True, 1, 1.75),  # line 5
    "n77nP00/U": (0, END, BATCH, 30, True, 8, 56.0),  # line 6
    "aTSXW3N1K": (2_290_500, 1_800, BATCH, 50, False, 1, 1.75),  # line 7, Unkown
    "uSkGH3DS6": (0, END, BATCH, 30, True, 8, 56.0),  # line 8
    "ztRY/Sk5m": (2_281_200, 18_900, BATCH, 50, False, 1, 1.75),  # line 9, Unkown
    "bJoIb8ras": (0, END, LATENCY_CRITICAL, 80, False, 8, 56.0),  # line 10, Interactive
}


def sample() -> Path:
    path = TRACES / SAMPLE
    if not path.is_file():
        pytest.skip(f"{SAMPLE} not present (set ACO_ENV_TRACES to the traces folder)")
    return path


def row(vmid: str = "vm", created: object = 0, deleted: object = 3600, category: str = "Interactive",
        cores: object = 2, mem: object = 4) -> str:
    """One vmtable line (11 fields, the cpu statistics fixed)."""
    return f"{vmid},sub,dep,{created},{deleted},99.5,10.25,80,{category},{cores},{mem}"


def table(tmp_path: Path, *rows: str, name: str = "vmtable.csv", newline: str = "\r\n") -> Path:
    path = tmp_path / name
    path.write_text("".join(r + newline for r in rows))
    return path


def cleanings(caplog: pytest.LogCaptureFixture) -> dict[str, int]:
    """rule -> count of the load report's records."""
    found = [r.cleaning for r in caplog.records if isinstance(getattr(r, "cleaning", None), TraceCleaning)]
    return {c.rule: c.count for c in found}


# --- the real V1 sample ----------------------------------------------------------------------


def test_azure_vm__sample_loads_all_10_rows_as_worked_out_by_hand(caplog: pytest.LogCaptureFixture) -> None:
    """Every row becomes a job whose arrival, duration, class and size are the hand-computed ones."""
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        jobs = load_azure_vm_requests(sample())
    assert len(jobs) == 10
    for job in jobs:
        created, duration, workload, priority, preemptible, cores, mem = BY_HAND[job.job_id[:9]]
        assert (job.arrival_s, job.duration_s) == (created, duration), job.job_id
        assert (job.workload, job.priority, job.preemptible) == (workload, priority, preemptible), job.job_id
        assert (job.cpu_cores, job.mem_gb) == (cores, mem), job.job_id
    # sorted by creation, ties in file order (lines 1, 2, 4, 5, 6, 8, 10 at 0; then 3, 9, 7)
    assert [j.job_id[:9] for j in jobs[-3:]] == ["wR/G1YUjp", "ztRY/Sk5m", "aTSXW3N1K"]
    assert cleanings(caplog) == {"left-censored": 7, "right-censored": 6}


def test_azure_vm__censored_vms_dropped_on_request_with_counts(caplog: pytest.LogCaptureFixture) -> None:
    """left_censored='drop' keeps the 3 VMs created inside the trace; right_censored='drop' the 4 that ended."""
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        inside = load_azure_vm_requests(sample(), left_censored="drop")
    assert [j.job_id[:9] for j in inside] == ["wR/G1YUjp", "ztRY/Sk5m", "aTSXW3N1K"]
    assert [j.arrival_s for j in inside] == [0.0, 92_400.0, 101_700.0]  # shifted: the first at start_s = 0
    assert any("7 of 10 VMs created at the trace start" in r.getMessage() and "dropped" in r.getMessage()
               for r in caplog.records)
    ended = load_azure_vm_requests(sample(), right_censored="drop")
    assert sorted(j.job_id[:9] for j in ended) == ["H5CxmMoVc", "aTSXW3N1K", "z5i2HiSaz", "ztRY/Sk5m"]


def test_azure_vm__bundled_scenario_places_the_vms_alive_at_the_trace_start() -> None:
    """vm5-azure2017 reads the trace's first day: the 7 VMs created at 0, all arriving at time 0."""
    sample()
    scenario = scenarios.load("vm5-azure2017")
    jobs = scenario.make_spec(np.random.default_rng(0)).jobs
    assert len(jobs) == 7 and {j.arrival_s for j in jobs} == {0.0}
    assert sorted(j.mem_gb for j in jobs) == [0.75, 1.75, 1.75, 56, 56, 56, 56]


# --- small files -----------------------------------------------------------------------------


def test_azure_vm__v2_buckets_and_spelling_detected(tmp_path: Path) -> None:
    """A '>24'/'>64' cell makes the file V2: buckets read as their upper bound, the open ones as stated."""
    path = table(
        tmp_path,
        row("a", 0, 3600, "Interactive", ">24", ">64"),
        row("b", 300, 900, " unknown ", 2, 4),  # V2 spelling, padded and lower case
        row("c", 600, 600, "Delay-insensitive", 12, 32),  # deleted == created: one 300 s reading
    )
    jobs = {j.job_id: j for j in load_azure_vm_requests(path)}
    assert (jobs["a"].cpu_cores, jobs["a"].mem_gb, jobs["a"].workload) == (30, 70, LATENCY_CRITICAL)
    assert (jobs["b"].cpu_cores, jobs["b"].mem_gb, jobs["b"].priority, jobs["b"].preemptible) == (2, 4, 50, False)
    assert (jobs["c"].cpu_cores, jobs["c"].mem_gb, jobs["c"].duration_s) == (12, 32, 300)
    stated = load_azure_vm_requests(path, version="v2", top_bucket_cores=32, top_bucket_mem_gb=128)
    assert (stated[0].cpu_cores, stated[0].mem_gb) == (32, 128)


def test_azure_vm__window_limit_and_start(tmp_path: Path) -> None:
    """time_window selects by vmcreated in trace seconds, limit keeps the earliest, start_s shifts."""
    path = table(tmp_path, *(row(f"v{k}", 1000 * k, 1000 * k + 600) for k in (3, 1, 2, 4)), newline="\n")
    jobs = load_azure_vm_requests(path, time_window=(1000, 4000), limit=2, start_s=50)
    assert [(j.job_id, j.arrival_s, j.duration_s) for j in jobs] == [("v1", 50, 600), ("v2", 1050, 600)]


BAD_FILES = [
    # (name, lines, options, message after the file name)
    ("empty_file", [], {}, r"vmtable.csv: the VM table is empty"),
    ("missing_columns", [row(), "vm2,sub,dep,0,600,99,10,80,Interactive"], {},
     r"vmtable.csv:2: the row has 9 fields, the VM table has 11"),
    ("extra_column_on_line_1", [row() + ",extra", row("b")], {},
     r"vmtable.csv:1: the row has 12 fields, the VM table has 11"),
    ("non_integer_cores", [row(), row("b", cores=1.5)], {}, r"vmtable.csv:2: column 'vmcorecount': '1.5' is not an"),
    ("non_numeric_time", [row(created="soon")], {}, r"vmtable.csv:1: column 'vmcreated': 'soon' is not a finite"),
    ("header_line", ["vmid,subscriptionid,deploymentid,vmcreated,vmdeleted,maxcpu,avgcpu,p95maxcpu,vmcategory,"
                     "vmcorecount,vmmemory", row()], {}, r"vmtable.csv:1: column 'vmcreated': 'vmcreated' is not"),
    ("negative_time", [row(), row("b", created=-300)], {}, r"vmtable.csv:2: column 'vmcreated': '-300' is negative"),
    ("reversed_times", [row(), row("b", created=900, deleted=600)], {},
     r"vmtable.csv:2: vmdeleted is before vmcreated \(reversed times"),
    ("after_trace_end", [row(deleted=2_600_000)], {}, r"vmtable.csv:1: vmdeleted 2.6e\+06 s is after the trace end"),
    ("censored_past_a_stated_end", [row(deleted=7200)], {"trace_end_s": 3600}, r"vmtable.csv:1: vmdeleted 7200 s"),
    ("unknown_category", [row(), row("b", category="Batch")], {},
     r"vmtable.csv:2: column 'vmcategory': unknown category 'Batch'; known: \['Interactive'"),
    ("empty_category", [row(category="")], {}, r"vmtable.csv:1: column 'vmcategory' is empty"),
    ("zero_memory", [row(mem=0)], {}, r"vmtable.csv:1: column 'vmmemory' is 0 GB"),
    ("zero_cores", [row(cores=0)], {}, r"vmtable.csv:1: column 'vmcorecount': '0' is below the minimum 1"),
    ("bucket_in_v1", [row(), row("b", cores=">24")], {"version": "v1"},
     r"vmtable.csv:2: a size is a V2 bucket string such as '>24'.*pass version='v2'"),
    ("not_a_v2_bucket", [row(cores=">24"), row("b", mem=1.75)], {},
     r"vmtable.csv:2: column 'vmmemory': '1.75' is not a V2 bucket"),
    ("duplicate_vmid", [row("a"), row("b"), row("a")], {}, r"vmtable.csv:3: duplicate vmid 'a' \(first on line 1\)"),
    ("semicolons", ["vm;sub;dep;0;600;99;10;80;Interactive;2;4"], {}, r"vmtable.csv:1: the row has 1 fields"),
]


@pytest.mark.parametrize(("name", "lines", "options", "match"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_azure_vm__bad_file_raises_trace_error_naming_file_and_line(
    tmp_path: Path, name: str, lines: list[str], options: dict, match: str
) -> None:
    """Each malformed VM table gives a TraceError naming the file and (where there is one) the line."""
    del name
    path = table(tmp_path, *lines)
    with pytest.raises(TraceError, match=match):
        load_azure_vm_requests(path, **options)


def test_azure_vm__censored_times_are_counted_in_the_load_report(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Censored VMs are never dropped silently: each rule logs its count, kept or dropped."""
    path = table(tmp_path, row("a", 0, 600), row("b", 600, 2_592_000), row("c", 300, 900), row("d", 0, 2_591_700))
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        jobs = load_azure_vm_requests(path, left_censored="drop", right_censored="drop")
    assert [j.job_id for j in jobs] == ["c"]
    assert cleanings(caplog) == {"left-censored": 2, "right-censored": 2}
    assert all(str(path) in r.getMessage() and "dropped" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("options", "match"),
    [({"version": "v3"}, "version must be one of"), ({"left_censored": "clip"}, "left_censored must be one of"),
     ({"top_bucket_cores": 20}, "top_bucket_cores must be > 24"), ({"trace_end_s": 0}, "trace_end_s must be"),
     ({"category_policies": {"Interactive": {"workload": "batch", "priority": 5, "preemptible": True}}},
      r"missing \['Delay-insensitive', 'Unknown'\]"),
     ({"limit": -1}, "limit must be")],
)
def test_azure_vm__bad_options_raise_spec_error(tmp_path: Path, options: dict, match: str) -> None:
    """An invalid option is a SpecError naming it."""
    with pytest.raises(SpecError, match=match):
        load_azure_vm_requests(table(tmp_path, row()), **options)
