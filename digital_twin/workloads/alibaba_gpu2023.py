"""Jobs from Alibaba GPU cluster trace v2023 pod lists (``openb_pod_list_*.csv``, ATC'23).

Columns (11-column files): ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,
pod_phase,creation_time,deletion_time,scheduled_time``; times are integer seconds from the
trace start. Each pod becomes one :class:`~digital_twin.jobs.JobSpec`:

* ``job_id`` = ``name`` (must be unique in the file).
* ``arrival_s`` = ``creation_time``, shifted so the first kept pod arrives at ``start_s``.
* ``duration_s`` = ``deletion_time - scheduled_time``: the pod's observed **run time**. For
  pods still ``Running`` at the end of the trace ``deletion_time`` is the trace end, so their
  run time is censored (a lower bound). ``Pending`` pods never ran and have no
  ``scheduled_time``; when selected through ``phases`` their duration is their lifetime
  ``deletion_time - creation_time``. A duration below ``min_duration_s`` (e.g. the pod with
  ``creation_time == deletion_time``) is raised to ``min_duration_s`` (default 1 s).
* ``phases`` (default Running, Succeeded, Failed) selects pods by ``pod_phase``. ``Failed``
  pods are kept by default with their observed run time: they held their resources until
  they failed, which is the load a placement policy must cope with. ``Pending`` pods are
  skipped by default (the real scheduler never placed them; their demand is not a run).
* ``qos`` -> workload type, priority, preemptible by :data:`ALIBABA_QOS_POLICIES`
  (LS -> latency-critical 80 not preemptible, BE -> batch 30 preemptible, as the reference's
  T4.1; Burstable -> stream 60 not preemptible; Guaranteed -> batch 70 not preemptible,
  because Kubernetes evicts Guaranteed pods last). :data:`REFERENCE_QOS_POLICIES` is the
  reference's exact mapping (every non-LS class -> batch 30 preemptible).
* ``cpu_cores = max(0.5, cpu_milli / 1000)``, ``mem_gb = max(0.5, memory_mib / 1024)``
  (the reference's floors; one pod in the default file asks for 0 MiB).
* GPUs: the twin allocates whole GPUs, so ``gpu_count = num_gpu`` and ``gpu_milli`` is only
  checked (0..1000): a shared-GPU pod (``num_gpu == 1``, ``gpu_milli < 1000``) takes one
  whole GPU. ``gpu_spec`` ``"A|B"`` -> ``allowed_gpu_models = ("A", "B")`` (duplicates
  dropped) and ``gpu_vram_gb`` = the smallest VRAM of those models in
  :data:`~digital_twin.fleet.ALIBABA_GPU_MODELS`; an empty ``gpu_spec`` means any model and
  ``gpu_vram_gb = 0``. ``gpu_spec`` is ignored for pods without GPUs.
* ``declared_duration_s``: ``None``; the trace declares no run time (the scenario's estimate
  model fills it, :mod:`digital_twin.declared_durations`).

The upstream ``multigpu*`` files have only ``name,cpu_milli,memory_mib,num_gpu,gpu_milli``.
They are rejected with a :class:`~digital_twin.errors.TraceError` unless ``row_order`` is
given: then pod ``k`` (0-based data row) arrives at ``k * row_order.interarrival_s``, runs
``row_order.duration_s`` and has QoS ``row_order.qos``; ``phases`` does not apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.fleet import ALIBABA_GPU_MODELS
from digital_twin.jobs import BATCH, LATENCY_CRITICAL, STREAM, WORKLOAD_TYPES, JobSpec
from digital_twin.workloads import _common as c
from digital_twin.workloads import _csv

BASE_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
"""The five columns every pod list has (all that the ``multigpu*`` files have)."""
TIMED_COLUMNS = ("gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
"""The six columns the ``multigpu*`` files lack."""
POD_COLUMNS = (*BASE_COLUMNS, *TIMED_COLUMNS)
"""The eleven columns of a full pod list, in file order."""
POD_PHASES = ("Running", "Succeeded", "Failed", "Pending")
DEFAULT_PHASES = ("Running", "Succeeded", "Failed")
MIN_CPU_CORES = 0.5
"""Smallest CPU request in cores (reference T4.1: ``max(0.5, milli / 1000)``)."""
MIN_MEM_GB = 0.5
"""Smallest memory request in GB (reference T4.1: ``max(0.5, MiB / 1024)``)."""
DEFAULT_MIN_DURATION_S = 1.0
"""Durations below this (the trace's 1 s resolution) are raised to it."""


@dataclass(frozen=True, slots=True)
class QosPolicy:
    """How one Alibaba ``qos`` value maps to job fields.

    Attributes:
        workload: ``"latency-critical"``, ``"batch"`` or ``"stream"``.
        priority: 1..100.
        preemptible: Whether a spot interruption requeues (True) or fails (False) the job.
    """

    workload: str
    priority: int
    preemptible: bool

    def __post_init__(self) -> None:
        if self.workload not in WORKLOAD_TYPES:
            raise SpecError(f"QosPolicy: workload {short_repr(self.workload)} is not one of {WORKLOAD_TYPES}")
        c.check_int("QosPolicy.priority", self.priority, 1, 100)


ALIBABA_QOS_POLICIES: Mapping[str, QosPolicy] = MappingProxyType({
    "LS": QosPolicy(LATENCY_CRITICAL, 80, False),
    "BE": QosPolicy(BATCH, 30, True),
    "Burstable": QosPolicy(STREAM, 60, False),
    "Guaranteed": QosPolicy(BATCH, 70, False),
})
"""Default ``qos`` mapping (see the module docstring for the reasons)."""

REFERENCE_QOS_POLICIES: Mapping[str, QosPolicy] = MappingProxyType({
    "LS": QosPolicy(LATENCY_CRITICAL, 80, False),
    "BE": QosPolicy(BATCH, 30, True),
    "Burstable": QosPolicy(BATCH, 30, True),
    "Guaranteed": QosPolicy(BATCH, 30, True),
})
"""The reference system's T4.1 mapping: LS -> latency-critical 80, all else batch 30 preemptible."""


@dataclass(frozen=True, slots=True)
class RowOrderTiming:
    """Defaults for pod lists without times, QoS or phase (the ``multigpu*`` files).

    Attributes:
        interarrival_s: Seconds between consecutive rows' arrivals (> 0).
        duration_s: Run time of every pod in seconds (> 0).
        qos: The ``qos`` value given to every pod (a key of the ``qos_policies`` used).
    """

    interarrival_s: float = 60.0
    duration_s: float = 3600.0
    qos: str = "BE"

    def __post_init__(self) -> None:
        c.check_positive("RowOrderTiming.interarrival_s", self.interarrival_s)
        c.check_positive("RowOrderTiming.duration_s", self.duration_s)


def load_alibaba_gpu_pods(
    path: str | Path,
    *,
    phases: Sequence[str] = DEFAULT_PHASES,
    qos_policies: Mapping[str, QosPolicy | Mapping[str, Any]] = ALIBABA_QOS_POLICIES,
    min_duration_s: float = DEFAULT_MIN_DURATION_S,
    limit: int | None = None,
    time_window: c.TimeWindow | None = None,
    start_s: float = 0.0,
    row_order: RowOrderTiming | Mapping[str, Any] | None = None,
) -> tuple[JobSpec, ...]:
    """Read an Alibaba GPU 2023 pod list into jobs sorted by arrival.

    Args:
        path: A pod-list CSV (header required; rows need not be sorted).
        phases: ``pod_phase`` values to keep (subset of :data:`POD_PHASES`).
        qos_policies: ``qos`` value -> :class:`QosPolicy` (or a mapping of its fields); a
            ``qos`` not in it is an error.
        min_duration_s: Smallest duration in seconds (> 0); shorter run times are raised to it.
        limit: Keep at most this many jobs, earliest first (``None`` = all).
        time_window: ``(t0, t1)`` in trace seconds; keep pods with
            ``t0 <= creation_time < t1``.
        start_s: Arrival of the first kept job in episode seconds (>= 0).
        row_order: Timing for 5-column files, a :class:`RowOrderTiming` or a mapping of its
            fields (see the module docstring); ``None`` rejects such files.

    Returns:
        The jobs, sorted by arrival (ties in file order). Empty when nothing is selected.

    Raises:
        TraceError: The file is missing, empty or malformed; the message names the file and
            the line (1-based, header = line 1) or the column.
        SpecError: A bad argument (unknown phase, ``limit < 0``, ...).

    Example:
        >>> jobs = load_alibaba_gpu_pods("openb_pod_list_default.csv", limit=50)  # doctest: +SKIP
    """
    c.check_selection(limit, time_window, start_s)
    c.check_positive("min_duration_s", min_duration_s)
    unknown = sorted(set(phases) - set(POD_PHASES))
    if unknown or isinstance(phases, str):
        raise SpecError(f"phases must be a sequence of {POD_PHASES}, got {short_repr(phases)}")
    policies = {
        str(k): c.coerce(QosPolicy, v, f"qos_policies[{short_repr(k)}]") for k, v in qos_policies.items()
    }
    if row_order is not None:
        row_order = c.coerce(RowOrderTiming, row_order, "row_order")
    if row_order is not None and row_order.qos not in policies:
        known = sorted(policies)
        raise SpecError(f"RowOrderTiming.qos {short_repr(row_order.qos)} is not in qos_policies {known}")
    path = Path(path)
    frame = _csv.read_csv_strings(path, "pod list")
    c.require_columns(frame, path, BASE_COLUMNS, "pod list")
    if not any(col in frame.columns for col in TIMED_COLUMNS):
        if row_order is None:
            raise TraceError(
                f"{path}: this pod list has only the columns {list(BASE_COLUMNS)} (like the "
                "upstream multigpu* files): no creation/deletion/scheduled times, qos or "
                "pod_phase; pass row_order=RowOrderTiming(...) to load it with arrivals from "
                "row order"
            )
        cols = _row_order_columns(frame, row_order)
    else:
        c.require_columns(frame, path, POD_COLUMNS, "pod list")
        cols = _timed_columns(path, frame, min_duration_s, phases)
    return _build(path, frame, cols, policies, start_s, limit, time_window)


def _row_order_columns(frame: pd.DataFrame, timing: RowOrderTiming) -> dict[str, np.ndarray]:
    n = len(frame)
    return {
        "arrival": np.arange(n, dtype=np.float64) * timing.interarrival_s,
        "duration": np.full(n, timing.duration_s),
        "qos": np.full(n, timing.qos, dtype=object),
        "gpu_spec": np.full(n, None, dtype=object),
        "keep": np.ones(n, dtype=bool),
    }


def _timed_columns(
    path: Path, frame: pd.DataFrame, min_duration_s: float, phases: Sequence[str]
) -> dict[str, np.ndarray]:
    """Check the phase and time columns; return arrival, duration, qos, gpu_spec, keep."""
    for column in ("qos", "pod_phase"):
        c.require_values(frame, path, column)
    phase = frame["pod_phase"].str.strip().to_numpy(dtype=object)
    bad_phase = ~np.isin(phase, POD_PHASES)
    if bad_phase.any():
        pos = int(np.argmax(bad_phase))
        raise TraceError(
            f"{path}:{c.line_of(frame, pos)}: column 'pod_phase': unknown phase "
            f"{short_repr(phase[pos])}; known: {list(POD_PHASES)}"
        )
    created = c.numeric_column(frame, path, "creation_time", min_value=0)
    deleted = c.numeric_column(frame, path, "deletion_time", min_value=0)
    scheduled = c.numeric_column(frame, path, "scheduled_time", required=False, min_value=0)
    pending = phase == "Pending"
    unscheduled = np.isnan(scheduled) & ~pending
    c.fail_at(
        frame, path, unscheduled,
        "column 'scheduled_time' is empty for a pod that is not Pending (only Pending pods "
        "may lack it)",
    )
    start = np.where(pending, created, scheduled)
    c.fail_at(frame, path, deleted < created, "deletion_time is before creation_time")
    early = ~pending & (scheduled < created)
    c.fail_at(frame, path, early, "scheduled_time is before creation_time")
    c.fail_at(frame, path, deleted < start, "deletion_time is before scheduled_time")
    gpu_spec = frame["gpu_spec"].to_numpy(dtype=object)
    return {
        "arrival": created,
        "duration": np.maximum(deleted - start, min_duration_s),
        "qos": frame["qos"].str.strip().to_numpy(dtype=object),
        "gpu_spec": np.where(pd.isna(gpu_spec), None, gpu_spec),
        "keep": np.isin(phase, list(phases)),
    }


_Constraint = tuple[tuple[str, ...] | None, float]  # (allowed GPU models or None, min VRAM GB)


def _gpu_constraints(
    path: Path, frame: pd.DataFrame, spec: np.ndarray
) -> dict[object, _Constraint]:
    """Map each distinct ``gpu_spec`` to ``(allowed_models or None, min VRAM GB)``."""
    out: dict[object, _Constraint] = {None: (None, 0.0)}
    for value in pd.unique(spec):
        if value in out:
            continue
        models = tuple(dict.fromkeys(m.strip() for m in str(value).split("|") if m.strip()))
        unknown = [m for m in models if m not in ALIBABA_GPU_MODELS]
        if unknown:
            pos = int(np.argmax(spec == value))
            raise TraceError(
                f"{path}:{c.line_of(frame, pos)}: column 'gpu_spec': unknown GPU model(s) "
                f"{unknown}; known: {sorted(ALIBABA_GPU_MODELS)}"
            )
        vram = min((ALIBABA_GPU_MODELS[m][2] for m in models), default=0.0)
        out[value] = (models or None, vram)
    return out


def _build(
    path: Path,
    frame: pd.DataFrame,
    cols: dict[str, np.ndarray],
    qos_policies: Mapping[str, QosPolicy],
    start_s: float,
    limit: int | None,
    time_window: c.TimeWindow | None,
) -> tuple[JobSpec, ...]:
    """Check sizes, names and QoS over the whole file; select; construct the jobs."""
    names = c.unique_names(frame, path, "name", "pod name")
    cpu_milli = c.numeric_column(frame, path, "cpu_milli", min_value=0)
    memory_mib = c.numeric_column(frame, path, "memory_mib", min_value=0)
    cpu = np.maximum(cpu_milli / 1000.0, MIN_CPU_CORES)
    mem = np.maximum(memory_mib / 1024.0, MIN_MEM_GB)
    gpus = c.numeric_column(frame, path, "num_gpu", integer=True, min_value=0)
    gpu_milli = c.numeric_column(frame, path, "gpu_milli", min_value=0)
    c.fail_at(frame, path, gpu_milli > 1000, "gpu_milli is above 1000 (one whole GPU)")
    c.fail_at(frame, path, (gpus == 0) & (gpu_milli > 0), "gpu_milli > 0 but num_gpu is 0")
    qos = cols["qos"]
    unknown_qos = ~np.isin(qos, list(qos_policies))
    if unknown_qos.any():
        bad = int(np.argmax(unknown_qos))
        raise TraceError(
            f"{path}:{c.line_of(frame, bad)}: column 'qos': unknown QoS {short_repr(qos[bad])}; "
            f"known: {sorted(qos_policies)}"
        )
    constraints = _gpu_constraints(path, frame, cols["gpu_spec"])

    pos = c.select_positions(cols["arrival"], cols["keep"], time_window=time_window, limit=limit)
    arrival = c.shift(cols["arrival"][pos], start_s)
    jobs: list[JobSpec] = []
    rows = zip(
        pos.tolist(), arrival.tolist(), cols["duration"][pos].tolist(), cpu[pos].tolist(),
        mem[pos].tolist(), gpus[pos].astype(int).tolist(), strict=True,
    )
    for p, t, duration, cores, gb, n_gpu in rows:
        policy = qos_policies[qos[p]]
        allowed, vram = constraints[cols["gpu_spec"][p]] if n_gpu else (None, 0.0)
        try:
            job = JobSpec(
                job_id=names[p], arrival_s=t, duration_s=duration, workload=policy.workload,
                cpu_cores=cores, mem_gb=gb, gpu_count=n_gpu, gpu_vram_gb=vram,
                allowed_gpu_models=allowed, priority=policy.priority,
                preemptible=policy.preemptible,
            )
        except SpecError as exc:
            raise TraceError(f"{path}:{c.line_of(frame, p)}: {exc}") from None
        jobs.append(job)
    return c.finish(jobs, path)
