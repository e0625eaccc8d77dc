"""Jobs from the Azure Public Dataset VM table (``vmtable.csv``): one job per VM request.

Both public VM traces are read: **V1** (2017) and **V2** (2019), 30 days each. The file has no
header and 11 comma-separated columns (:data:`VMTABLE_COLUMNS`; CRLF line endings in the
published files): ``vmid, subscriptionid, deploymentid, vmcreated, vmdeleted, maxcpu, avgcpu,
p95maxcpu, vmcategory, vmcorecount, vmmemory``. Times are seconds from the trace start, on the
5-minute reading grid.

Each VM becomes one :class:`~digital_twin.jobs.JobSpec`:

* ``job_id`` = ``vmid`` (must be unique in the file); ``arrival_s`` = ``vmcreated``, shifted so
  the first kept VM arrives at ``start_s``.
* ``duration_s`` = ``vmdeleted - vmcreated``, at least ``min_duration_s`` (default 300 s, one
  reading: the AzurePublicDataset notebooks floor lifetimes the same way).
* Sizes: ``cpu_cores`` from the core column, ``mem_gb`` from the memory column (GB). V1 holds
  exact sizes (cores a whole number >= 1, memory > 0, e.g. 0.75). V2 holds **buckets**, read as
  their upper bound (bucket ``8`` = 4 to 8 cores -> 8): cores in :data:`V2_CORE_BUCKETS`, memory
  in :data:`V2_MEMORY_BUCKETS`; the open top buckets ``>24`` cores and ``>64`` GB become
  ``top_bucket_cores`` (default 30) and ``top_bucket_mem_gb`` (default 70), the values the
  AzurePublicDataset V2 analysis notebook uses.
* ``vmcategory`` -> workload type, priority and preemptible by ``category_policies``
  (:data:`AZURE_CATEGORY_POLICIES`: Interactive -> latency-critical 80 not preemptible,
  Delay-insensitive -> batch 30 preemptible, Unknown -> batch 50 not preemptible, since nothing
  says such a VM tolerates eviction). Spellings are matched ignoring case and surrounding spaces;
  V1's misspelt ``Unkown`` and V2's ``Unknown`` are the same category. Any other value is an error.
* ``declared_duration_s``: ``None``; the trace declares no lifetime (the scenario's estimate
  model fills it, :mod:`digital_twin.declared_durations`).

**Version.** ``version="auto"`` (default) reads the file as V2 when any core or memory cell is an
open top bucket (``>24``, ``>64``), else as V1. A V2 file without a top-bucket row reads the same
either way, since a bucket is read as the number written. ``"v1"`` refuses bucket strings,
``"v2"`` refuses sizes that are not buckets (each naming the file and line).

**Censoring.** The trace sees a VM only between its start and its end (``trace_end_s``, default
2,592,000 s = 30 days):

* *left-censored*: ``vmcreated == 0``, the VM was already running when the trace began; its real
  creation time and lifetime are unknown.
* *right-censored*: ``vmdeleted >= trace_end_s - 300``, the VM was still running at the last
  reading (V1 writes 2,591,700 s); its lifetime is a lower bound.

The rule: with ``left_censored="keep"`` / ``right_censored="keep"`` (the defaults) such VMs are
kept as observed, arriving at the trace start (time 0) and running for the part of their life
the trace saw (a lower bound of their real lifetime): they are load a placement policy must
cope with. ``"drop"`` drops them. Either way each rule logs one ``WARNING`` record counting the
VMs it concerned (the load report; ``record.cleaning`` is a
:class:`~digital_twin.traces.TraceCleaning` with rule ``"left-censored"`` or
``"right-censored"``). Nothing else is dropped: a negative ``vmcreated``, ``vmdeleted`` before
``vmcreated`` or after ``trace_end_s``, an empty or non-numeric time or size, a size <= 0 and an
unknown category are errors naming the file and line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.jobs import BATCH, LATENCY_CRITICAL, JobSpec
from digital_twin.workloads import _common as c
from digital_twin.workloads import _csv
from digital_twin.workloads.alibaba_gpu2023 import QosPolicy

VMTABLE_COLUMNS = (
    "vmid", "subscriptionid", "deploymentid", "vmcreated", "vmdeleted", "maxcpu", "avgcpu", "p95maxcpu",
    "vmcategory", "vmcorecount", "vmmemory",
)
"""The 11 columns of ``vmtable.csv`` in file order (V2 calls the last two ``vmcorecountbucket`` and
``vmmemorybucket``)."""
V2_CORE_BUCKETS = ("2", "4", "8", "12", "24", ">24")
"""V2 core-count buckets (0-2, 2-4, 4-8, 8-12, 12-24, more than 24 cores)."""
V2_MEMORY_BUCKETS = ("2", "4", "8", "32", "64", ">64")
"""V2 memory buckets in GB (0-2, 2-4, 4-8, 8-32, 32-64, more than 64 GB)."""
TRACE_END_S = 2_592_000.0
"""End of both Azure VM traces: 30 days after their start, seconds."""
READING_S = 300.0
"""The traces' reading interval, seconds: a VM deleted at or after ``trace_end_s - 300`` was still running."""
AZURE_CATEGORY_POLICIES: Mapping[str, QosPolicy] = MappingProxyType({
    "Interactive": QosPolicy(LATENCY_CRITICAL, 80, False),
    "Delay-insensitive": QosPolicy(BATCH, 30, True),
    "Unknown": QosPolicy(BATCH, 50, False),
})
"""Default ``vmcategory`` mapping (see the module docstring)."""
VERSIONS = ("auto", "v1", "v2")
CENSORED = ("keep", "drop")
_SPELLINGS = {"unkown": "Unknown"}  # V1's spelling -> the category's name
logger = logging.getLogger(__name__)


def load_azure_vm_requests(
    path: str | Path,
    *,
    version: str = "auto",
    category_policies: Mapping[str, QosPolicy | Mapping[str, Any]] = AZURE_CATEGORY_POLICIES,
    top_bucket_cores: float = 30.0,
    top_bucket_mem_gb: float = 70.0,
    left_censored: str = "keep",
    right_censored: str = "keep",
    trace_end_s: float = TRACE_END_S,
    min_duration_s: float = READING_S,
    limit: int | None = None,
    time_window: c.TimeWindow | None = None,
    start_s: float = 0.0,
) -> tuple[JobSpec, ...]:
    """Read an Azure ``vmtable.csv`` (V1 or V2) into one job per VM, sorted by creation time.

    Args:
        path: The ``vmtable.csv`` file (no header, 11 columns, rows in any order).
        version: ``"auto"``, ``"v1"`` (exact sizes) or ``"v2"`` (size buckets); see the module
            docstring.
        category_policies: Category -> :class:`~digital_twin.workloads.QosPolicy` (or a mapping
            of its fields), keyed by ``"Interactive"``, ``"Delay-insensitive"``, ``"Unknown"``.
        top_bucket_cores: Cores of a VM in V2's open ``>24`` bucket (> 24).
        top_bucket_mem_gb: GB of a VM in V2's open ``>64`` bucket (> 64).
        left_censored: ``"keep"`` or ``"drop"`` VMs created at the trace start (``vmcreated == 0``).
        right_censored: ``"keep"`` or ``"drop"`` VMs still running at the trace end.
        trace_end_s: The trace's end, seconds (> 0); a ``vmdeleted`` above it is an error.
        min_duration_s: Shortest duration, seconds (> 0); shorter lifetimes are raised to it.
        limit: Keep at most this many jobs, earliest first (``None`` = all).
        time_window: ``(t0, t1)`` in trace seconds; keep VMs with ``t0 <= vmcreated < t1``.
        start_s: Arrival of the first kept job in episode seconds (>= 0).

    Returns:
        The jobs, sorted by arrival (ties in file order). Empty when nothing is selected.

    Raises:
        TraceError: The file is missing, empty or malformed, or breaks a rule of the module
            docstring; the message names the file and the line (1-based; the file has no header).
        SpecError: A bad argument.

    Example:
        >>> jobs = load_azure_vm_requests("vmtable.csv", time_window=(86_400, 172_800))  # doctest: +SKIP
    """
    c.check_selection(limit, time_window, start_s)
    _check_choice("version", version, VERSIONS)
    _check_choice("left_censored", left_censored, CENSORED)
    _check_choice("right_censored", right_censored, CENSORED)
    c.check_positive("trace_end_s", trace_end_s)
    c.check_positive("min_duration_s", min_duration_s)
    c.check_positive("top_bucket_cores", top_bucket_cores)
    c.check_positive("top_bucket_mem_gb", top_bucket_mem_gb)
    if top_bucket_cores <= 24 or top_bucket_mem_gb <= 64:
        raise SpecError(
            f"top_bucket_cores must be > 24 and top_bucket_mem_gb > 64 (the open buckets are '>24' and '>64'), "
            f"got {top_bucket_cores:g} and {top_bucket_mem_gb:g}"
        )
    policies = _policies(category_policies)
    path = Path(path)
    frame = _csv.read_csv_strings(path, "VM table", names=VMTABLE_COLUMNS)
    ids = c.unique_names(frame, path, "vmid", "vmid")
    created, deleted = _times(path, frame, trace_end_s)
    cores, mem_gb = _sizes(path, frame, version, top_bucket_cores, top_bucket_mem_gb)
    category = _categories(path, frame, policies)

    keep = np.ones(len(frame), dtype=bool)
    for option, choice, censored, what in (
        ("left_censored", left_censored, created == 0,
         "created at the trace start (vmcreated = 0: already running)"),
        ("right_censored", right_censored, deleted >= trace_end_s - READING_S,
         "still running at the trace end (lifetime is a lower bound)"),
    ):
        if choice == "drop":
            keep &= ~censored
        done = "dropped" if choice == "drop" else "kept as observed"
        count = int(censored.sum())
        c.report_rule(
            logger, path, option.replace("_", "-"), count,
            f"{count} of {len(frame)} VMs {what}: {done} ({option}={choice!r})",
        )
    duration = np.maximum(deleted - created, min_duration_s)

    pos = c.select_positions(created, keep, time_window=time_window, limit=limit)
    arrival = c.shift(created[pos], start_s)
    jobs: list[JobSpec] = []
    rows = zip(pos.tolist(), arrival.tolist(), duration[pos].tolist(), strict=True)
    for p, t, run_s in rows:
        policy = policies[category[p]]
        try:
            job = JobSpec(
                job_id=ids[p], arrival_s=t, duration_s=run_s, workload=policy.workload,
                cpu_cores=float(cores[p]), mem_gb=float(mem_gb[p]), priority=policy.priority,
                preemptible=policy.preemptible,
            )
        except SpecError as exc:
            raise TraceError(f"{path}:{c.line_of(frame, p)}: {exc}") from None
        jobs.append(job)
    return c.finish(jobs, path)


def _check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise SpecError(f"{name} must be one of {choices}, got {short_repr(value)}")


def _policies(given: Mapping[str, QosPolicy | Mapping[str, Any]]) -> dict[str, QosPolicy]:
    """The policies keyed by the canonical category names; all three must be given."""
    policies = {
        _canonical(str(k)): c.coerce(QosPolicy, v, f"category_policies[{short_repr(k)}]") for k, v in given.items()
    }
    missing = sorted(set(AZURE_CATEGORY_POLICIES) - set(policies))
    unknown = sorted(set(policies) - set(AZURE_CATEGORY_POLICIES))
    if missing or unknown:
        raise SpecError(
            f"category_policies must map exactly the categories {list(AZURE_CATEGORY_POLICIES)}; "
            f"missing {missing}, unknown {unknown}"
        )
    return policies


def _canonical(category: str) -> str:
    """The category's name in :data:`AZURE_CATEGORY_POLICIES`, matched ignoring case and spaces."""
    key = category.strip().lower()
    names = {name.lower(): name for name in AZURE_CATEGORY_POLICIES}
    return names.get(key) or _SPELLINGS.get(key) or category.strip()


def _times(path: Path, frame: pd.DataFrame, trace_end_s: float) -> tuple[np.ndarray, np.ndarray]:
    """``vmcreated`` and ``vmdeleted`` in seconds, checked against each other and the trace's span."""
    created = c.numeric_column(frame, path, "vmcreated", min_value=0)
    deleted = c.numeric_column(frame, path, "vmdeleted", min_value=0)
    c.fail_at(
        frame, path, deleted < created,
        "vmdeleted is before vmcreated (reversed times: a VM cannot end before it starts)",
    )
    late = deleted > trace_end_s
    if late.any():
        pos = int(np.argmax(late))
        raise TraceError(
            f"{path}:{c.line_of(frame, pos)}: vmdeleted {deleted[pos]:g} s is after the trace end "
            f"trace_end_s={trace_end_s:g} s (30 days in V1 and V2): pass the trace's own end"
        )
    return created, deleted


def _sizes(
    path: Path, frame: pd.DataFrame, version: str, top_cores: float, top_mem_gb: float
) -> tuple[np.ndarray, np.ndarray]:
    """Cores and GB per VM, exact (V1) or from buckets (V2)."""
    for column in ("vmcorecount", "vmmemory"):
        c.require_values(frame, path, column)
    core_text = frame["vmcorecount"].str.strip()
    mem_text = frame["vmmemory"].str.strip()
    open_bucket = (core_text.str.startswith(">") | mem_text.str.startswith(">")).to_numpy()
    if version == "auto":
        version = "v2" if open_bucket.any() else "v1"
    if version == "v1":
        c.fail_at(
            frame, path, open_bucket,
            "a size is a V2 bucket string such as '>24', but the file is read as V1 (exact sizes): "
            "pass version='v2'",
        )
        cores = c.numeric_column(frame, path, "vmcorecount", integer=True, min_value=1)
        mem_gb = c.numeric_column(frame, path, "vmmemory", min_value=0)
        c.fail_at(frame, path, mem_gb == 0, "column 'vmmemory' is 0 GB (a VM has memory)")
        return cores, mem_gb
    cores = _buckets(path, frame, "vmcorecount", core_text, V2_CORE_BUCKETS, top_cores)
    mem_gb = _buckets(path, frame, "vmmemory", mem_text, V2_MEMORY_BUCKETS, top_mem_gb)
    return cores, mem_gb


def _buckets(
    path: Path, frame: pd.DataFrame, column: str, text: pd.Series, buckets: tuple[str, ...], top: float
) -> np.ndarray:
    """A V2 bucket column as numbers: each bucket's upper bound, the open top bucket as ``top``."""
    known = text.isin(buckets).to_numpy()
    if not known.all():
        pos = int(np.argmax(~known))
        raise TraceError(
            f"{path}:{c.line_of(frame, pos)}: column {column!r}: {short_repr(text.iloc[pos])} is not a V2 bucket "
            f"(one of {list(buckets)}); for a V1 file of exact sizes pass version='v1'"
        )
    values = {bucket: float(bucket) for bucket in buckets[:-1]} | {buckets[-1]: float(top)}
    return text.map(values).to_numpy(dtype=np.float64)


def _categories(path: Path, frame: pd.DataFrame, policies: Mapping[str, QosPolicy]) -> np.ndarray:
    """The canonical category of every row; an unknown one is an error naming the line."""
    c.require_values(frame, path, "vmcategory")
    raw = frame["vmcategory"]
    canonical = raw.map({value: _canonical(value) for value in pd.unique(raw)}).to_numpy(dtype=object)
    unknown = ~np.isin(canonical, list(policies))
    if unknown.any():
        pos = int(np.argmax(unknown))
        raise TraceError(
            f"{path}:{c.line_of(frame, pos)}: column 'vmcategory': unknown category {short_repr(raw.iloc[pos])}; "
            f"known: {list(policies)} (also 'Unkown', V1's spelling)"
        )
    return canonical
