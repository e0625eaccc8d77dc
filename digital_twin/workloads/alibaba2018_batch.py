"""Workflows from the Alibaba cluster-trace-v2018 task table (``batch_task.csv``).

No copy of the trace is on this machine: this reader follows the public schema
(``cluster-trace-v2018/schema.txt`` in alibaba/clusterdata) and has been run only on small files
written from it. The file has no header line; its 9 comma-separated columns
(:data:`BATCH_TASK_COLUMNS`) are task_name, instance_num, job_name, task_type (not used), status,
start_time and end_time (seconds from the trace start; 0 or empty = unknown), plan_cpu (per
instance, 100 = one core) and plan_mem (per instance, normalised to [0, 100]: percent of one
machine's memory). Cells may be padded with spaces, and lines may end in CRLF.

**One Alibaba job = one workflow; one task = one job.** Each row becomes a batch
:class:`~digital_twin.jobs.JobSpec`:

* ``job_id`` = ``"<job_name>/<task_name>"``, ``workflow`` = job_name, ``parents`` = the job ids of
  the tasks its name depends on (below);
* ``arrival_s``: the trace has no submission time, so a workflow is submitted at the earliest
  start_time of its tasks and every task of it arrives then (the twin submits a task once its
  parents have completed); arrivals are shifted so the first kept workflow arrives at ``start_s``;
* ``duration_s`` = end_time - start_time, at least ``min_duration_s`` (default 1 s, the trace's
  resolution): the task's wall time, over all its instances;
* ``cpu_cores`` = plan_cpu / 100, ``mem_gb`` = plan_mem / 100 x ``machine_mem_gb``: the request of
  *one* instance. A task of instance_num instances is one job holding one instance's request for
  the span of all of them, an approximation: it understates a wide task's resources (its
  instances ran side by side) and overstates one instance's run. ``machine_mem_gb`` (default
  96 GB) is an assumption, 1 GB per core of the trace's 96-core machines: the trace publishes
  memory only normalised, so pass the real size if known;
* ``workload`` ``"batch"``, ``priority`` the :class:`JobSpec` default (50), ``preemptible`` an
  option (default True); no deadline, no declared run time.

**Task names.** A letter prefix (the task kind: ``M``, ``R``, ``J``...; any number of letters)
and a task id, then ``_<parent id>`` per dependency, place a task in its job's DAG: ``M1`` is task
1, ``R2_1`` task 2 after task 1, ``J4_2_3`` task 4 after tasks 2 and 3. Ids are decimal integers
>= 1 of at most 18 digits, compared by value. A name that starts with a digit, or whose letters
are followed by a digit (possibly after underscores), claims this encoding and must follow it;
any other name (``task_Nzg3ODAwNjgxMjgxOTEyODc3Ng==``, ``MergeTask``) is a task of its job with
no dependencies, which no task can name as a parent.

**Whole workflows or none.** A workflow is never kept with holes in its DAG: it is dropped when
one of its tasks has a status other than Terminated (any case; Failed, Running, Waiting,
Cancelled, Interrupted... or empty), an unknown time (start or end empty or <= 0), an end before
its start, or no size (instance_num, plan_cpu or plan_mem empty or 0). Drops are never silent:
one ``WARNING`` record per rule (``"status"``, ``"unknown-time"``, ``"reversed-times"``,
``"no-size"``; a workflow counts under the first rule its first bad row in the file breaks)
carries a :class:`~digital_twin.traces.TraceCleaning` counting workflows, as ``record.cleaning``.

**Selection.** ``time_window=(t0, t1)`` keeps the workflows submitted in ``[t0, t1)`` trace
seconds. Workflows are taken in submission order (ties: the order of their first row), and
``limit`` counts tasks: whole workflows are kept until the next one would take the total above
``limit``, which ends the selection (a first workflow larger than ``limit`` gives no job).

**Order.** The jobs are sorted by arrival; a workflow's tasks are adjacent, parents before
children (ties in file order), so every job comes after its parents.

**Refused** with a :class:`~digital_twin.errors.TraceError` naming the file and line, on every
row whether its workflow is kept or not (they mean a corrupt file, not a task that did not run):
a row without 9 fields, an empty job_name or task_name, text, NaN or infinity where a number
belongs, a fractional instance_num, a negative instance_num, plan_cpu or plan_mem, plan_mem above
100, a name claiming the encoding that breaks it (``M1_x``, ``M_2``, ``R2__1``, ``M0``, a parent
named twice as in ``J4_2_2``), a task id or name repeated in a job (the line of the second), a
parent id that is no task of the job, and a dependency cycle (the line of the cycle's first task
in the file, and the cycle).
"""

from __future__ import annotations

import heapq
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.jobs import BATCH, JobSpec
from digital_twin.workloads import _common as c
from digital_twin.workloads import _csv

BATCH_TASK_COLUMNS = (
    "task_name", "instance_num", "job_name", "task_type", "status", "start_time", "end_time", "plan_cpu", "plan_mem",
)
"""The 9 columns of ``batch_task.csv`` in the schema's order."""
CPU_PER_CORE = 100.0
"""plan_cpu units per core."""
MACHINE_MEM_GB = 96.0
"""Default GB that plan_mem = 100 stands for (an assumption: see the module docstring)."""
DROP_RULES: Mapping[str, str] = {
    "status": "whose status is not Terminated",
    "unknown-time": "whose start or end time is unknown (empty or <= 0)",
    "reversed-times": "whose end time is before its start time",
    "no-size": "with no instance, or an empty or zero cpu or memory request",
}
"""Rule name -> the task that makes a workflow unusable, in the order the rules are tried."""
NAME_FORMAT = "<letters><id>[_<parent id>...] with ids >= 1 (e.g. M1, R2_1, J4_2_3)"
_CLAIMS = re.compile(r"[A-Za-z]*_*[0-9]")  # matched at the start of a name
_ENCODED = re.compile(r"[A-Za-z]+([0-9]{1,18})((?:_[0-9]{1,18})*)")  # the whole name
_PADDING = " \t\r\n\ufeff"  # spaces around a value, and a byte-order mark before the first
_NUMBER_COLUMNS = ("instance_num", "start_time", "end_time", "plan_cpu", "plan_mem")
_TaskKey = tuple[int, tuple[int, ...]] | None
"""A parsed task name: (task id, parent ids), or ``None`` for a name outside the encoding."""
logger = logging.getLogger(__name__)


def load_alibaba2018_batch_workflows(
    path: str | Path,
    *,
    limit: int | None = None,
    max_tasks: int | None = None,
    time_window: c.TimeWindow | None = None,
    start_s: float = 0.0,
    machine_mem_gb: float = MACHINE_MEM_GB,
    min_duration_s: float = 1.0,
    preemptible: bool = True,
) -> tuple[JobSpec, ...]:
    """Read an Alibaba v2018 ``batch_task.csv`` into workflows of batch jobs, one job per task.

    Args:
        path: The CSV file (no header; rows in any order).
        limit: Keep whole workflows, earliest first, while their tasks number at most this
            (``None`` = all).
        max_tasks: Refuse a selection of more tasks than this (after ``limit`` and
            ``time_window``), naming the file, before any job is built (``None``: no cap).
            The scenario loader sets it to ``limits.max_jobs``: ``limit`` keeps whole workflows,
            so it cannot tell a file too large from one that fits.
        time_window: ``(t0, t1)`` in trace seconds; keep the workflows submitted (earliest task
            start) in ``[t0, t1)``.
        start_s: Arrival of the first kept workflow in episode seconds (>= 0).
        machine_mem_gb: GB of one machine, what plan_mem = 100 stands for (> 0).
        min_duration_s: Shortest duration, seconds (> 0); shorter spans are raised to it.
        preemptible: Whether every job returns to the queue when its spot node is interrupted.

    Returns:
        The jobs, sorted by arrival, each workflow's tasks adjacent with parents first.

    Raises:
        TraceError: A missing, empty or corrupt file (see the module docstring); the message
            names the file and the line.
        SpecError: A bad argument.

    Example:
        >>> jobs = load_alibaba2018_batch_workflows("batch_task.csv", limit=500)  # doctest: +SKIP
    """
    c.check_selection(limit, time_window, start_s)
    c.check_positive("machine_mem_gb", machine_mem_gb)
    c.check_positive("min_duration_s", min_duration_s)
    if not isinstance(preemptible, bool):
        raise SpecError(f"preemptible must be true or false, got {short_repr(preemptible)}")
    path = Path(path)
    frame = _read_table(path)
    v = _numbers(path, frame)
    codes, uniques = pd.factorize(frame["job_name"], sort=False)  # workflows in order of first row
    workflow_ids = [str(w) for w in uniques]
    names: list[str] = frame["task_name"].tolist()
    orders, parent_rows = _workflow_dags(path, frame, codes, workflow_ids, names)
    usable = _usable_workflows(path, frame, v, codes, len(workflow_ids))

    start, end = v["start_time"], v["end_time"]
    submission = np.full(len(workflow_ids), np.inf)
    np.minimum.at(submission, codes, start)
    chosen = c.select_positions(submission, usable, time_window=time_window, limit=None)
    if limit is not None:
        tasks = np.array([len(orders[w]) for w in chosen.tolist()], dtype=np.int64)
        chosen = chosen[: int(np.searchsorted(np.cumsum(tasks), limit, side="right"))]
    n_tasks = sum(len(orders[w]) for w in chosen.tolist())
    if max_tasks is not None and n_tasks > max_tasks:
        raise SpecError(f"{path}: the selection holds {n_tasks:,} tasks, more than {max_tasks:,}; set options.limit "
                        "or options.time_window")
    arrival = c.shift(submission[chosen], start_s)
    duration = np.maximum(end - start, min_duration_s)
    cpu = v["plan_cpu"] / CPU_PER_CORE
    mem = v["plan_mem"] / 100.0 * machine_mem_gb

    jobs: list[JobSpec] = []
    for w, t in zip(chosen.tolist(), arrival.tolist(), strict=True):
        workflow = workflow_ids[w]
        for pos in orders[w]:
            try:
                jobs.append(JobSpec(
                    job_id=f"{workflow}/{names[pos]}", arrival_s=t, duration_s=float(duration[pos]), workload=BATCH,
                    cpu_cores=float(cpu[pos]), mem_gb=float(mem[pos]), preemptible=preemptible, workflow=workflow,
                    parents=tuple(f"{workflow}/{names[p]}" for p in parent_rows[pos]),
                ))
            except SpecError as exc:
                raise TraceError(f"{path}:{c.line_of(frame, pos)}: {exc}") from None
    return c.finish(jobs, path)


def _read_table(path: Path) -> pd.DataFrame:
    """The 9 columns as stripped strings (``NaN`` for empty cells); names present on every row."""
    frame = _csv.read_csv_strings(path, "task table", names=BATCH_TASK_COLUMNS)
    stripped = frame.apply(lambda column: column.str.strip(_PADDING))
    stripped.attrs = dict(frame.attrs)
    stripped = stripped.mask(stripped == "")  # a cell of spaces only is missing too
    for column in ("job_name", "task_name"):
        c.require_values(stripped, path, column)
    return stripped


def _numbers(path: Path, frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """``(n,)`` float64 per numeric column (``NaN`` when empty), with the corrupt values refused."""
    v = {
        name: c.numeric_column(frame, path, name, required=False, integer=name == "instance_num")
        for name in _NUMBER_COLUMNS
    }
    for name in ("instance_num", "plan_cpu", "plan_mem"):
        c.fail_at(frame, path, v[name] < 0, f"column {name!r}: {v[name][np.argmax(v[name] < 0)]:g} is negative")
    above = v["plan_mem"] > 100
    c.fail_at(
        frame, path, above,
        f"column 'plan_mem': {v['plan_mem'][np.argmax(above)]:g} is above 100 (plan_mem is a percent of one "
        "machine's memory)",
    )
    return v


def _usable_workflows(
    path: Path, frame: pd.DataFrame, v: Mapping[str, np.ndarray], codes: np.ndarray, n_workflows: int
) -> np.ndarray:
    """``(n_workflows,)`` bool: the workflows whose every task is usable; the others are reported."""
    start, end = v["start_time"], v["end_time"]
    broken = [
        frame["status"].str.lower().ne("terminated").to_numpy(dtype=bool),
        ~((start > 0) & (end > 0)),  # NaN compares False: an empty time is unknown
        end < start,
        ~((v["instance_num"] > 0) & (v["plan_cpu"] > 0) & (v["plan_mem"] > 0)),
    ]
    rule = np.select(broken, list(range(1, len(broken) + 1)), default=0)
    bad_rows = np.flatnonzero(rule)
    dropped, first = np.unique(codes[bad_rows], return_index=True)  # first bad row of each workflow
    dropped_rule = rule[bad_rows[first]]
    tasks = np.bincount(codes, minlength=n_workflows)
    for k, (name, why) in enumerate(DROP_RULES.items(), start=1):
        mine = dropped[dropped_rule == k]
        c.report_rule(
            logger, path, name, mine.size,
            f"dropped {mine.size} of {n_workflows} workflows ({int(tasks[mine].sum())} tasks) with a task {why}",
        )
    usable = np.ones(n_workflows, dtype=bool)
    usable[dropped] = False
    return usable


def _workflow_dags(
    path: Path, frame: pd.DataFrame, codes: np.ndarray, workflow_ids: Sequence[str], names: Sequence[str]
) -> tuple[list[list[int]], list[tuple[int, ...]]]:
    """Each workflow's rows in topological order, and each row's parent rows.

    Returns:
        ``(n_workflows,)`` lists of row positions (parents first, ties in file order) and
        ``(n_rows,)`` tuples of parent row positions.
    """
    keys = [_parse_name(path, frame, pos, name) for pos, name in enumerate(names)]
    by_workflow = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes))[:-1]
    parent_rows: list[tuple[int, ...]] = [()] * len(names)
    orders = []
    for job, rows in zip(workflow_ids, np.split(by_workflow, bounds), strict=True):
        orders.append(_job_dag(path, frame, job, rows.tolist(), names, keys, parent_rows))
    return orders, parent_rows


def _parse_name(path: Path, frame: pd.DataFrame, pos: int, name: str) -> _TaskKey:
    """The task id and parent ids a name encodes, or ``None`` for a name outside the encoding."""
    if not _CLAIMS.match(name):
        return None
    found = _ENCODED.fullmatch(name)
    ids = [int(found.group(1)), *(int(part) for part in found.group(2).split("_")[1:])] if found else []
    problem = ""
    if not found:
        problem = "does not follow the dependency encoding"
    elif min(ids) < 1:
        problem = "has an id below 1"
    elif len(set(ids[1:])) < len(ids) - 1:
        problem = "names a parent twice"
    if problem:
        raise TraceError(
            f"{path}:{c.line_of(frame, pos)}: column 'task_name': {short_repr(name)} {problem}; a name that starts "
            f"with a digit, or whose letters are followed by a digit, must be {NAME_FORMAT}"
        )
    return ids[0], tuple(ids[1:])


def _job_dag(
    path: Path,
    frame: pd.DataFrame,
    job: str,
    rows: list[int],
    names: Sequence[str],
    keys: Sequence[_TaskKey],
    parent_rows: list[tuple[int, ...]],
) -> list[int]:
    """The rows of job ``job`` (ascending) in topological order; fills ``parent_rows`` for them.

    Raises:
        TraceError: A repeated task id or name, a parent not in the job, or a cycle.
    """
    by_id: dict[int, int] = {}
    by_name: dict[str, int] = {}
    for pos in rows:
        key = keys[pos]
        other = by_name.setdefault(names[pos], pos) if key is None else by_id.setdefault(key[0], pos)
        if other != pos:
            what = "its name" if key is None else f"task id {key[0]} of {short_repr(names[other])}"
            raise TraceError(
                f"{path}:{c.line_of(frame, pos)}: job {short_repr(job)}: task {short_repr(names[pos])} repeats {what} "
                f"(line {c.line_of(frame, other)})"
            )
    for pos in rows:
        key = keys[pos]
        missing = [p for p in key[1] if p not in by_id] if key is not None else []
        if missing:
            raise TraceError(
                f"{path}:{c.line_of(frame, pos)}: job {short_repr(job)}: task {short_repr(names[pos])} depends on task "
                f"{missing[0]}, which is not in the job"
            )
        parent_rows[pos] = tuple(by_id[p] for p in key[1]) if key is not None else ()
    order = _topological(rows, parent_rows)
    if len(order) < len(rows):
        raise _cycle_error(path, frame, job, sorted(set(rows) - set(order)), names, parent_rows)
    return order


def _topological(rows: list[int], parent_rows: Sequence[tuple[int, ...]]) -> list[int]:
    """Kahn's order of ``rows`` (ascending), smallest ready row first; rows on or after a cycle are left out."""
    waiting = {pos: len(parent_rows[pos]) for pos in rows}
    children: dict[int, list[int]] = {}
    for pos in rows:
        for parent in parent_rows[pos]:
            children.setdefault(parent, []).append(pos)
    ready = [pos for pos in rows if waiting[pos] == 0]  # ascending: already a heap
    order = []
    while ready:
        pos = heapq.heappop(ready)
        order.append(pos)
        for child in children.get(pos, ()):
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, child)
    return order


def _cycle_error(
    path: Path, frame: pd.DataFrame, job: str, stuck: list[int], names: Sequence[str],
    parent_rows: Sequence[tuple[int, ...]],
) -> TraceError:
    """The error naming a cycle among ``stuck`` (rows Kahn's order could not reach) and its first line."""
    inside = set(stuck)
    graph = nx.DiGraph([(parent, pos) for pos in stuck for parent in parent_rows[pos] if parent in inside])
    cycle = [edge[0] for edge in nx.find_cycle(graph)]
    first = cycle.index(min(cycle))
    cycle = cycle[first:] + cycle[:first]
    text = " -> ".join(short_repr(names[pos]) for pos in [*cycle, cycle[0]])
    return TraceError(
        f"{path}:{c.line_of(frame, cycle[0])}: job {short_repr(job)}: dependency cycle {text} "
        "(each task a parent of the next)"
    )
