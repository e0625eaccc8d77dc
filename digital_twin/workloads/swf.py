"""Jobs from Standard Workload Format (SWF) logs of the Parallel Workloads Archive.

An SWF file has header comment lines starting with ``;`` (``; MaxProcs: 128``) and one job
per line of 18 whitespace-separated numbers (spaces or tabs; ``-1`` = unknown):

 1 job_id, 2 submit_time (s), 3 wait_time (s), 4 run_time (s), 5 allocated_procs,
 6 avg_cpu_time (s), 7 used_memory (KB per processor), 8 requested_procs,
 9 requested_time (s), 10 requested_memory (KB per processor), 11 status, 12 user_id,
 13 group_id, 14 executable_id, 15 queue_id, 16 partition_id, 17 preceding_job_id,
 18 think_time (s).

Each job line becomes one batch :class:`~digital_twin.jobs.JobSpec`:

* ``job_id`` = ``"swf-<job_id>"``; ``arrival_s`` = ``submit_time`` shifted so the first kept
  job arrives at ``start_s``. ``submit_time`` must be known (>= 0).
* ``duration_s`` = ``run_time``. ``run_time == -1`` (unknown; typically a job cancelled
  before it started) is skipped. ``run_time == 0`` (ran for under the log's 1 s resolution)
  becomes ``zero_runtime_s`` (default 1 s); pass ``zero_runtime_s=None`` to skip those jobs.
* ``declared_duration_s`` = ``requested_time`` (the user's wall-time request, known at
  submission) when it is > 0; ``-1`` or ``0`` means none was declared (``None``; the scenario's
  estimate model fills it, :mod:`digital_twin.declared_durations`). A job whose ``run_time``
  exceeds its ``requested_time`` (schedulers let some jobs overrun their request) keeps both
  as logged: the twin runs it for ``run_time``, and the declaration is an underestimate.
* ``cpu_cores`` = processors x ``cores_per_proc``, with processors = ``allocated_procs``, or
  ``requested_procs`` when allocated is unknown (``-1``) or 0. A job with neither is skipped.
* ``mem_gb`` = ``used_memory`` (else ``requested_memory``) x processors, converted from KiB to
  GiB (SWF memory is per processor); when both are unknown, ``mem_gb_per_core x cpu_cores``.
* ``priority`` = ``queue_priority[queue_id]`` when the queue is known and in the mapping,
  else ``default_priority`` (50). ``preemptible`` is a parameter (default True).

Any other negative value than ``-1`` in a used field, a line without exactly 18 fields, or
non-numeric text raises :class:`~digital_twin.errors.TraceError` naming the file and line.
Header comments are available through :func:`read_swf_header`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.jobs import BATCH, JobSpec
from digital_twin.workloads import _common as c
from digital_twin.workloads import _csv

SWF_FIELDS = (
    "job_id", "submit_time", "wait_time", "run_time", "allocated_procs", "avg_cpu_time",
    "used_memory", "requested_procs", "requested_time", "requested_memory", "status",
    "user_id", "group_id", "executable_id", "queue_id", "partition_id", "preceding_job_id",
    "think_time",
)
"""The 18 SWF fields in file order (field ``k`` in the SWF spec is ``SWF_FIELDS[k - 1]``)."""
_F = {name: k for k, name in enumerate(SWF_FIELDS)}
_KIB_PER_GIB = 1024.0 * 1024.0
_NON_NEGATIVE = ("job_id", "submit_time")
_UNKNOWN_ALLOWED = (
    "run_time", "allocated_procs", "used_memory", "requested_procs", "requested_time", "requested_memory",
    "queue_id",
)
# "; Key: value" with at most one blank after ';' (continuation lines are indented further).
_HEADER_KEY = re.compile(r"^;\s?([A-Za-z][\w-]*):\s*(.*?)\s*$")


@dataclass(frozen=True, slots=True)
class SwfHeader:
    """The ``; Key: value`` header comments of an SWF file.

    Attributes:
        entries: ``(key, value)`` pairs in file order. Repeated keys (``Note``, ``Queue``)
            appear once per occurrence; indented continuation lines are joined to the
            previous value with a space.
    """

    entries: tuple[tuple[str, str], ...]

    def get(self, key: str) -> str | None:
        """The first value of ``key`` (case-sensitive), or ``None``."""
        return next((v for k, v in self.entries if k == key), None)

    def get_all(self, key: str) -> tuple[str, ...]:
        """Every value of ``key`` in file order."""
        return tuple(v for k, v in self.entries if k == key)

    def get_int(self, key: str) -> int | None:
        """The first value of ``key`` as an integer, ``None`` when absent or not an integer."""
        value = self.get(key)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    @property
    def max_procs(self) -> int | None:
        """``MaxProcs``: processors of the logged machine."""
        return self.get_int("MaxProcs")

    @property
    def max_nodes(self) -> int | None:
        """``MaxNodes``: nodes of the logged machine."""
        return self.get_int("MaxNodes")

    @property
    def unix_start_time(self) -> int | None:
        """``UnixStartTime``: the wall-clock epoch second of ``submit_time == 0``."""
        return self.get_int("UnixStartTime")

    @property
    def queues(self) -> dict[int, str]:
        """``Queue: <id> <name>`` lines as ``{id: name}`` (lines that do not parse are skipped)."""
        out: dict[int, str] = {}
        for value in self.get_all("Queue"):
            parts = value.split(None, 1)
            if parts and parts[0].lstrip("-").isdigit():
                out[int(parts[0])] = parts[1].strip() if len(parts) > 1 else ""
        return out


def _parse_header(lines: list[str]) -> SwfHeader:
    entries: list[tuple[str, str]] = []
    for line in lines:
        found = _HEADER_KEY.match(line)
        if found:
            entries.append((found.group(1), found.group(2)))
        elif entries and line[1:].strip():
            key, value = entries[-1]
            entries[-1] = (key, f"{value} {line[1:].strip()}".strip())
    return SwfHeader(tuple(entries))


def read_swf_header(path: str | Path) -> SwfHeader:
    r"""Read the ``;`` comment lines of an SWF file into a :class:`SwfHeader`.

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "x.swf"
    >>> _ = f.write_text("; MaxProcs: 128\n; Queue: 1 batch\n")
    >>> h = read_swf_header(f)
    >>> h.max_procs, h.queues
    (128, {1: 'batch'})
    """
    path = Path(path)
    text = _csv.open_text(path, "SWF log")
    return _parse_header([ln.strip() for ln in text.split("\n") if ln.lstrip().startswith(";")])


def _parse_table(path: Path, text: str) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(values (n, 18) float64, line numbers (n,))`` of the job lines."""
    rows: list[list[str]] = []
    lines: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):  # as editors number lines
        stripped = line.strip()
        if not stripped or stripped.startswith(";"):
            continue
        fields = stripped.split()
        if len(fields) != len(SWF_FIELDS):
            hint = ""
            if len(fields) < len(SWF_FIELDS) and ("," in line or ";" in line):
                hint = " (fields must be separated by spaces or tabs)"
            raise TraceError(
                f"{path}:{number}: expected {len(SWF_FIELDS)} fields, found {len(fields)}{hint}"
            )
        rows.append(fields)
        lines.append(number)
    if not rows:
        raise TraceError(f"{path}: the SWF log has no job lines")
    try:
        values = np.array(rows, dtype=np.float64)
    except ValueError:
        _raise_first_bad_token(path, rows, lines)
    if not np.isfinite(values).all():
        _raise_first_bad_token(path, rows, lines)
    return values, np.asarray(lines)


def _raise_first_bad_token(path: Path, rows: list[list[str]], lines: list[int]) -> NoReturn:
    """Find the first token that is not a finite number and raise a located TraceError."""
    for fields, number in zip(rows, lines, strict=True):
        for name, token in zip(SWF_FIELDS, fields, strict=True):
            try:
                ok = math.isfinite(float(token))
            except ValueError:
                ok = False
            if not ok:
                problem = f"field {name!r}: {short_repr(token)} is not a finite number"
                raise TraceError(f"{path}:{number}: {problem}")
    raise TraceError(f"{path}: a field is not a finite number")  # unreachable in practice


def _check_fields(path: Path, values: np.ndarray, lines: np.ndarray) -> None:
    """Ids are whole numbers >= 0, submit times >= 0, other used fields >= 0 or -1 (unknown)."""
    ids = values[:, _F["job_id"]]
    checks = [
        ("job_id", ids != np.floor(ids), "not an integer"),
        ("job_id", ids >= c.MAX_EXACT_INT, "too large"),
    ]
    checks += [(name, values[:, _F[name]] < 0, "must be >= 0") for name in _NON_NEGATIVE]
    checks += [
        (name, (values[:, _F[name]] < 0) & (values[:, _F[name]] != -1),
         "only -1 (unknown) may be negative")
        for name in _UNKNOWN_ALLOWED
    ]
    for name, bad, rule in checks:
        if bad.any():
            pos = int(np.argmax(bad))
            value = values[pos, _F[name]]
            raise TraceError(f"{path}:{lines[pos]}: field {name!r} is {value:g} ({rule})")


def swf_columns(path: str | Path) -> dict[str, np.ndarray]:
    """Every job line's 18 fields, checked as :func:`load_swf_jobs` checks them, by name.

    Returns:
        ``{name: (n,) float64}`` for each name of :data:`SWF_FIELDS`, in file order (``-1`` = unknown).

    Raises:
        TraceError: As :func:`load_swf_jobs` (missing file, a bad line or value).
    """
    path = Path(path)
    values, lines = _parse_table(path, _csv.open_text(path, "SWF log"))
    _check_fields(path, values, lines)
    return {name: values[:, k] for name, k in _F.items()}


def load_swf_jobs(
    path: str | Path,
    *,
    cores_per_proc: float = 1.0,
    mem_gb_per_core: float = 2.0,
    zero_runtime_s: float | None = 1.0,
    queue_priority: Mapping[int, int] | None = None,
    default_priority: int = 50,
    preemptible: bool = True,
    limit: int | None = None,
    time_window: c.TimeWindow | None = None,
    start_s: float = 0.0,
) -> tuple[JobSpec, ...]:
    """Read an SWF job log into batch jobs sorted by arrival.

    Args:
        path: The ``.swf`` file (uncompressed text).
        cores_per_proc: CPU cores per SWF processor (> 0).
        mem_gb_per_core: Memory in GB per core when the log has no memory (> 0).
        zero_runtime_s: Duration in seconds given to ``run_time == 0`` jobs (> 0), or
            ``None`` to skip them.
        queue_priority: ``queue_id -> priority`` (1..100); ``None`` = every job gets
            ``default_priority``.
        default_priority: Priority of jobs whose queue is unknown or not in the mapping.
        preemptible: Whether the jobs may be requeued by a spot interruption.
        limit: Keep at most this many jobs, earliest first (``None`` = all).
        time_window: ``(t0, t1)`` in log seconds; keep jobs with ``t0 <= submit_time < t1``.
        start_s: Arrival of the first kept job in episode seconds (>= 0).

    Returns:
        The jobs, sorted by arrival (ties in file order). Empty when nothing is selected.

    Raises:
        TraceError: Missing file, no job lines, a line without 18 numeric fields, a bad
            value, a duplicate job id; the message names the file and line.
        SpecError: A bad argument.
    """
    c.check_selection(limit, time_window, start_s)
    c.check_positive("cores_per_proc", cores_per_proc)
    c.check_positive("mem_gb_per_core", mem_gb_per_core)
    if zero_runtime_s is not None:
        c.check_positive("zero_runtime_s", zero_runtime_s)
    c.check_int("default_priority", default_priority, 1, 100)
    if not isinstance(preemptible, bool):
        raise SpecError(f"preemptible must be True or False, got {short_repr(preemptible)}")
    for queue, prio in (queue_priority or {}).items():
        c.check_int(f"queue_priority[{short_repr(queue)}]", prio, 1, 100)
    path = Path(path)
    values, lines = _parse_table(path, _csv.open_text(path, "SWF log"))
    _check_fields(path, values, lines)
    v = {name: values[:, k] for name, k in _F.items()}
    ids = v["job_id"].astype(np.int64)
    duplicate = c.first_duplicate(ids.tolist())
    if duplicate:
        first, second = duplicate
        raise TraceError(
            f"{path}:{lines[second]}: duplicate job_id {ids[second]} (first on line {lines[first]})"
        )

    procs = np.where(v["allocated_procs"] > 0, v["allocated_procs"], v["requested_procs"])
    run_time = v["run_time"]
    keep = (procs > 0) & (run_time >= 0)
    if zero_runtime_s is None:
        keep &= run_time > 0
    duration = np.where(run_time > 0, run_time, zero_runtime_s or 1.0)
    mem_kib = np.where(v["used_memory"] > 0, v["used_memory"], v["requested_memory"])
    with np.errstate(over="ignore"):  # an absurd size overflows to inf; JobSpec rejects it
        cores = procs * cores_per_proc
        mem_gb = np.where(mem_kib > 0, mem_kib * procs / _KIB_PER_GIB, cores * mem_gb_per_core)
    priority = _priorities(v["queue_id"], queue_priority, default_priority)
    requested = v["requested_time"]
    declared = np.where(requested > 0, requested, np.nan)  # -1 (unknown) or 0: nothing declared

    pos = c.select_positions(v["submit_time"], keep, time_window=time_window, limit=limit)
    arrival = c.shift(v["submit_time"][pos], start_s)
    jobs: list[JobSpec] = []
    rows = zip(
        pos.tolist(), arrival.tolist(), duration[pos].tolist(), cores[pos].tolist(),
        mem_gb[pos].tolist(), priority[pos].tolist(), declared[pos].tolist(), strict=True,
    )
    for p, t, run_s, n_cores, gb, prio, asked_s in rows:
        try:
            job = JobSpec(
                job_id=f"swf-{ids[p]}", arrival_s=t, duration_s=run_s, workload=BATCH,
                cpu_cores=n_cores, mem_gb=gb, priority=prio, preemptible=preemptible,
                declared_duration_s=None if asked_s != asked_s else asked_s,  # asked_s != asked_s: NaN
            )
        except SpecError as exc:
            raise TraceError(f"{path}:{lines[p]}: {exc}") from None
        jobs.append(job)
    return c.finish(jobs, path)


def _priorities(queue: np.ndarray, mapping: Mapping[int, int] | None, default: int) -> np.ndarray:
    out = np.full(queue.shape, default, dtype=np.int64)
    for q, prio in (mapping or {}).items():
        out[queue == q] = prio
    return out
