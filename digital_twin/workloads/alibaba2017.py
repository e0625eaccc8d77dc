"""Batch jobs from the Alibaba cluster-trace-v2017 task table (``batch_task.csv``).

Columns, per the public schema (``cluster-trace-v2017/schema.csv`` and ``trace_201708.md`` in
alibaba/clusterdata), in file order (:data:`BATCH_TASK_COLUMNS`): task create time, task end time
(the "latest state modification time"), job id, task id, number of instances, status (Ready,
Waiting, Running, Terminated, Failed, Cancelled), cpu requested per instance (100 = one core),
memory requested per instance (normalised to one machine's memory, so in [0, 1]). Times are
seconds from the trace start; 0 and negative times are events before the trace period.

**One job per task instance.** A task of ``instance_num`` instances becomes ``instance_num``
batch jobs ``"a17-<job_id>-<task_id>-<k>"`` (k = 0 .. instance_num - 1), the instance being the
smallest scheduling unit of the trace (all instances of a task run the same binary with the same
request). Each has:

* ``arrival_s`` = the task's create time (shifted so the first kept job arrives at ``start_s``);
* ``duration_s`` = end - create, at least ``min_duration_s`` (default 1 s, the trace's
  resolution). The task table has no per-instance times, so every instance gets the task's span,
  an upper bound of its own run (a task ends when its last instance does);
* ``cpu_cores`` = plan_cpu / ``cpu_per_core`` (default 100), ``mem_gb`` = plan_mem x
  ``machine_mem_gb`` (default 128 GB: the 2 GB per core of the SWF reader's default on the
  schema's 64-cpu machines; the trace does not publish the machines' memory, pass it if known);
* ``workload``, ``priority``, ``preemptible`` from ``policy`` (default batch, 30, preemptible: the
  Alibaba GPU reader's policy for best-effort pods);
* ``declared_duration_s``: ``None``; the trace declares no run time (the scenario's estimate
  model fills it, :mod:`digital_twin.declared_durations`).

``limit`` counts jobs (instances): the tasks are sorted by arrival, expanded, and cut after
``limit`` jobs, so the last task kept may keep only some of its instances.

**Tolerant reading.** Real exports differ from the schema in small ways, all accepted: a header
line or none (a first line whose first field is not a number is a header; its names are matched
ignoring case, spaces and ``-``/``_``, e.g. ``create_timestamp`` or ``task create time``, so
columns may come in any order; without a header the schema's order is assumed), values padded
with spaces, CRLF line endings, rows in any order, statuses in any case.

**Dropped rows, always counted.** A task that cannot form a job is dropped, and each rule logs
one ``WARNING`` record with its count (the load report; ``record.cleaning`` is a
:class:`~digital_twin.traces.TraceCleaning`):

* ``"missing-value"``: an empty create time, end time, id, instance count, status or size;
* ``"status"``: a status not in ``statuses`` (default Terminated and Failed: the tasks that ran
  and ended; Failed tasks held their resources until they failed). Ready, Waiting and Cancelled
  tasks never ran, and a Running task's "end" is only its last state change;
* ``"no-size"``: zero instances, or a zero cpu or memory request;
* ``"reversed-times"``: end before create;
* ``"left-censored"``: created before the trace (create time <= 0, the schema's marker): with
  ``left_censored="keep"`` (default) such a task arrives at the trace start (time 0) and runs for
  the part of its span inside the trace (``end``), and one that also ended at or before time 0
  (wholly before the trace) is dropped; with ``"drop"`` all are dropped. The record counts the
  tasks created before the trace, and says how many were dropped.

Text where a number belongs, a fractional id or instance count, a negative id, count or size, a
memory request above 1 (a whole machine), an unknown status and a duplicate (job, task) pair are
errors naming the file and line: they mean a corrupt file, not a task that did not run.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.jobs import BATCH, JobSpec
from digital_twin.workloads import _common as c
from digital_twin.workloads import _csv
from digital_twin.workloads.alibaba_gpu2023 import QosPolicy

BATCH_TASK_COLUMNS = (
    "create_timestamp", "end_timestamp", "job_id", "task_id", "instance_num", "status", "plan_cpu", "plan_mem",
)
"""The 8 columns of ``batch_task.csv`` in the schema's order (the names this reader uses)."""
TASK_STATUSES = ("Ready", "Waiting", "Running", "Terminated", "Failed", "Cancelled")
"""Task states of the v2017 schema."""
DEFAULT_STATUSES = ("Terminated", "Failed")
"""Tasks kept by default: those that ran and ended inside the trace."""
CPU_PER_CORE = 100.0
"""plan_cpu units per core (100 = one core)."""
MACHINE_MEM_GB = 128.0
"""Default GB that plan_mem = 1 stands for (see the module docstring)."""
BATCH_POLICY = QosPolicy(BATCH, 30, True)
"""Default job fields of every task: batch, priority 30, preemptible."""
HEADER_ALIASES: Mapping[str, tuple[str, ...]] = {
    "create_timestamp": ("create_timestamp", "create_time", "task_create_time", "create"),
    "end_timestamp": ("end_timestamp", "end_time", "task_end_time", "modify_timestamp", "modify_time", "end"),
    "job_id": ("job_id", "job"),
    "task_id": ("task_id", "task"),
    "instance_num": ("instance_num", "number_of_instances", "instances", "num_instances"),
    "status": ("status", "task_status", "state"),
    "plan_cpu": ("plan_cpu", "cpu", "cpu_requested", "number_of_cpus_requested_per_instance_in_the_task"),
    "plan_mem": (
        "plan_mem", "mem", "memory", "memory_requested", "normalized_memory_requested_per_instance_in_the_task",
    ),
}
"""Column -> header names it is found under (after lower-casing and turning spaces and ``-`` into ``_``)."""
CENSORED = ("keep", "drop")
_PADDING = " \t\r\n\ufeff"  # spaces around a value, and a byte-order mark before the first
_ID_COLUMNS = ("job_id", "task_id")
_NUMBER_COLUMNS = ("create_timestamp", "end_timestamp", "job_id", "task_id", "instance_num", "plan_cpu", "plan_mem")
logger = logging.getLogger(__name__)


def load_alibaba2017_batch_tasks(
    path: str | Path,
    *,
    statuses: Sequence[str] = DEFAULT_STATUSES,
    cpu_per_core: float = CPU_PER_CORE,
    machine_mem_gb: float = MACHINE_MEM_GB,
    policy: QosPolicy | Mapping[str, Any] = BATCH_POLICY,
    left_censored: str = "keep",
    min_duration_s: float = 1.0,
    limit: int | None = None,
    time_window: c.TimeWindow | None = None,
    start_s: float = 0.0,
) -> tuple[JobSpec, ...]:
    """Read an Alibaba v2017 ``batch_task.csv`` into one batch job per task instance.

    Args:
        path: The CSV file (header optional; rows in any order).
        statuses: Task statuses to keep (subset of :data:`TASK_STATUSES`).
        cpu_per_core: plan_cpu units per core (> 0; 100 in the trace).
        machine_mem_gb: GB of one machine, what plan_mem = 1 stands for (> 0).
        policy: Workload type, priority and preemptible of every job: a
            :class:`~digital_twin.workloads.QosPolicy` or a mapping of its fields.
        left_censored: ``"keep"`` or ``"drop"`` tasks created before the trace (see the module
            docstring).
        min_duration_s: Shortest duration, seconds (> 0); shorter spans are raised to it.
        limit: Keep at most this many jobs (instances), earliest first (``None`` = all).
        time_window: ``(t0, t1)`` in trace seconds; keep tasks whose arrival (create time, 0 for
            a left-censored task kept) is in ``[t0, t1)``.
        start_s: Arrival of the first kept job in episode seconds (>= 0).

    Returns:
        The jobs, sorted by arrival (ties in file order, a task's instances together).

    Raises:
        TraceError: Missing, empty or malformed file, or a corrupt value (see the module
            docstring); the message names the file and the line.
        SpecError: A bad argument.

    Example:
        >>> jobs = load_alibaba2017_batch_tasks("batch_task.csv", limit=500)  # doctest: +SKIP
    """
    c.check_selection(limit, time_window, start_s)
    if isinstance(statuses, str) or not set(statuses) <= set(TASK_STATUSES):
        raise SpecError(f"statuses must be a list of {TASK_STATUSES}, got {short_repr(statuses)}")
    c.check_positive("cpu_per_core", cpu_per_core)
    c.check_positive("machine_mem_gb", machine_mem_gb)
    c.check_positive("min_duration_s", min_duration_s)
    if left_censored not in CENSORED:
        raise SpecError(f"left_censored must be one of {CENSORED}, got {short_repr(left_censored)}")
    job_policy = c.coerce(QosPolicy, policy, "policy")
    path = Path(path)
    frame = _read_table(path)
    status = _statuses(path, frame)
    v = {name: c.numeric_column(frame, path, name, required=False, integer=name in (*_ID_COLUMNS, "instance_num"))
         for name in _NUMBER_COLUMNS}
    _check_values(path, frame, v)
    keep = _drop_unusable(path, frame, v, status, statuses, left_censored)
    create, end = v["create_timestamp"], v["end_timestamp"]
    arrival = np.maximum(create, 0.0)
    duration = np.maximum(end - arrival, min_duration_s)

    pos = c.select_positions(arrival, keep, time_window=time_window, limit=None)
    pos, counts = _instances(pos, v["instance_num"], limit)
    shifted = c.shift(arrival[pos], start_s)
    cpu = v["plan_cpu"] / cpu_per_core
    mem = v["plan_mem"] * machine_mem_gb
    jobs: list[JobSpec] = []
    for p, t, n in zip(pos.tolist(), shifted.tolist(), counts.tolist(), strict=True):
        stem = f"a17-{int(v['job_id'][p])}-{int(v['task_id'][p])}"
        try:
            jobs.extend(
                JobSpec(
                    job_id=f"{stem}-{k}", arrival_s=t, duration_s=float(duration[p]), workload=job_policy.workload,
                    cpu_cores=float(cpu[p]), mem_gb=float(mem[p]), priority=job_policy.priority,
                    preemptible=job_policy.preemptible,
                )
                for k in range(n)
            )
        except SpecError as exc:
            raise TraceError(f"{path}:{c.line_of(frame, p)}: {exc}") from None
    return c.finish(jobs, path)


def _read_table(path: Path) -> pd.DataFrame:
    """The table with the columns of :data:`BATCH_TASK_COLUMNS`, header or not, cells stripped."""
    _csv.require_file(path, "task table")
    if _has_header(path):
        frame = _csv.read_csv_strings(path, "task table")
        frame = frame.rename(columns=_header_names(path, list(frame.columns)))
    else:
        frame = _csv.read_csv_strings(path, "task table", names=BATCH_TASK_COLUMNS)
    stripped = frame[list(BATCH_TASK_COLUMNS)].apply(lambda column: column.str.strip(_PADDING))
    stripped.attrs = dict(frame.attrs)
    return stripped.mask(stripped == "")  # a cell of spaces only is missing too


def _has_header(path: Path) -> bool:
    """Whether the first non-blank line is a header: its first field is not a number (nor empty).

    Raises:
        TraceError: The line has no comma (another delimiter, or not a table).
    """
    try:
        with path.open(encoding="utf-8-sig", errors="replace") as handle:
            number, first = next(((k, line) for k, line in enumerate(handle, start=1) if line.strip()), (1, ""))
    except OSError as exc:
        raise TraceError(f"{path}: cannot open task table ({exc.strerror or exc})") from None
    if first.strip() and "," not in first:
        found = next((name for sep, name in ((";", "';'"), ("\t", "tab"), ("|", "'|'")) if sep in first), None)
        hint = f" (it contains {found}: wrong delimiter?)" if found else ""
        raise TraceError(f"{path}:{number}: the line has no comma{hint}; the task table has 8 comma-separated columns")
    field = first.split(",", 1)[0].strip(_PADDING)
    if not field:
        return False
    try:
        float(field)
    except ValueError:
        return True
    return False


def _header_names(path: Path, found: list[str]) -> dict[str, str]:
    """Header name -> column, by :data:`HEADER_ALIASES`; every column must be found once."""
    rename: dict[str, str] = {}
    for name in found:
        key = re.sub(r"[\s\-]+", "_", name.strip(_PADDING).lower())
        column = next((col for col, aliases in HEADER_ALIASES.items() if key in aliases), None)
        if column is not None and column not in rename.values():
            rename[name] = column
    missing = [col for col in BATCH_TASK_COLUMNS if col not in rename.values()]
    if missing:
        raise TraceError(
            f"{path}: missing column(s) {missing} in the header (line 1); found {found}; expected the 8 columns "
            f"{','.join(BATCH_TASK_COLUMNS)} (any order, or no header for the schema's order)"
        )
    return rename


def _statuses(path: Path, frame: pd.DataFrame) -> np.ndarray:
    """Each row's status in :data:`TASK_STATUSES` spelling (``None`` when empty); unknown text is an error."""
    raw = frame["status"]
    names = {s.lower(): s for s in TASK_STATUSES}
    status = raw.str.lower().map(names).to_numpy(dtype=object)
    unknown = raw.notna().to_numpy() & pd.isna(status)
    if unknown.any():
        pos = int(np.argmax(unknown))
        raise TraceError(
            f"{path}:{c.line_of(frame, pos)}: column 'status': unknown status {short_repr(raw.iloc[pos])}; "
            f"known: {list(TASK_STATUSES)}"
        )
    status[pd.isna(status)] = None
    return status


def _check_values(path: Path, frame: pd.DataFrame, v: Mapping[str, np.ndarray]) -> None:
    """Ids, counts and sizes are >= 0 and plan_mem <= 1; a (job, task) pair appears once."""
    for name in ("job_id", "task_id", "instance_num", "plan_cpu", "plan_mem"):
        c.fail_at(frame, path, v[name] < 0, f"column {name!r}: {v[name][np.argmax(v[name] < 0)]:g} is negative")
    c.fail_at(
        frame, path, v["plan_mem"] > 1,
        f"column 'plan_mem': {v['plan_mem'][np.argmax(v['plan_mem'] > 1)]:g} is above 1 (plan_mem is normalised "
        "to one machine's memory; a file in other units needs converting)",
    )
    both = ~np.isnan(v["job_id"]) & ~np.isnan(v["task_id"])
    rows = np.flatnonzero(both)
    pairs = list(zip(v["job_id"][rows].tolist(), v["task_id"][rows].tolist(), strict=True))
    duplicate = c.first_duplicate([f"{j:.0f}-{t:.0f}" for j, t in pairs])
    if duplicate:
        first, second = (int(rows[i]) for i in duplicate)
        raise TraceError(
            f"{path}:{c.line_of(frame, second)}: duplicate task (job_id {v['job_id'][second]:.0f}, task_id "
            f"{v['task_id'][second]:.0f}; first on line {c.line_of(frame, first)})"
        )


def _drop_unusable(
    path: Path,
    frame: pd.DataFrame,
    v: Mapping[str, np.ndarray],
    status: np.ndarray,
    statuses: Sequence[str],
    left_censored: str,
) -> np.ndarray:
    """``(n,)`` bool: the rows that form jobs; every other row is counted under its first rule."""
    n = len(frame)
    missing = np.column_stack([np.isnan(v[name]) for name in _NUMBER_COLUMNS]).any(axis=1)
    missing |= np.array([s is None for s in status], dtype=bool)
    keep = ~missing
    _report(path, "missing-value", missing, n, "with an empty field (time, id, instance count, status or size)")
    other = keep & ~np.isin(status, list(statuses))
    keep &= ~other
    _report(path, "status", other, n, f"whose status is not one of {list(statuses)} (never ran or never ended)")
    no_size = keep & ((v["instance_num"] == 0) | (v["plan_cpu"] == 0) | (v["plan_mem"] == 0))
    keep &= ~no_size
    _report(path, "no-size", no_size, n, "with no instance, or a zero cpu or memory request")
    create, end = v["create_timestamp"], v["end_timestamp"]
    reversed_times = keep & (end < create)
    keep &= ~reversed_times
    _report(path, "reversed-times", reversed_times, n, "whose end time is before their create time")
    early = keep & (create <= 0)
    dropped = early if left_censored == "drop" else early & (end <= 0)
    keep &= ~dropped
    c.report_rule(
        logger, path, "left-censored", int(early.sum()),
        f"{int(early.sum())} of {n} tasks created before the trace start (create time <= 0): "
        f"{int(dropped.sum())} dropped, the others arrive at time 0 with the part of their run inside the trace "
        f"(left_censored={left_censored!r})",
    )
    return keep


def _report(path: Path, rule: str, rows: np.ndarray, n: int, why: str) -> None:
    c.report_rule(logger, path, rule, int(rows.sum()), f"dropped {int(rows.sum())} of {n} tasks {why}")


def _instances(pos: np.ndarray, instance_num: np.ndarray, limit: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The tasks and how many instances of each to make, cut after ``limit`` jobs in arrival order."""
    counts = instance_num[pos].astype(np.int64)
    if limit is None or counts.size == 0:
        return pos, counts
    total = np.cumsum(counts)
    n = min(int(np.searchsorted(total, limit, side="left")) + 1, counts.size)
    pos, counts = pos[:n], counts[:n].copy()
    counts[-1] -= max(0, int(total[n - 1]) - limit)
    return pos, counts
