"""A workload's columns: their checks (:meth:`digital_twin.workload.Workload.from_columns`) and read-only arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.jobs import WORKLOAD_TYPES, check_unique_ids


def check_columns(job_ids: list[str], arrays: dict[str, Any]) -> None:
    """Check one array per field as :class:`~digital_twin.jobs.JobSpec` checks one job, all at once.

    Args:
        job_ids: ``(n,)`` job ids.
        arrays: ``(n,)`` arrays by field: ``arrival_s`` (sorted), ``duration_s``, ``workload_index``,
            ``cpu_cores``, ``mem_gb``, ``gpu_count``, ``gpu_vram_gb``, ``priority``, ``preemptible``,
            ``deadline_s`` and ``declared_duration_s`` (NaN for none).

    Raises:
        SpecError: Mismatched lengths, unsorted arrivals, a duplicate id or a bad value (naming
            the first bad job and field).
    """
    n = len(job_ids)
    arrival_s, duration_s, workload_index = arrays["arrival_s"], arrays["duration_s"], arrays["workload_index"]
    cpu_cores, mem_gb, gpu_vram_gb = arrays["cpu_cores"], arrays["mem_gb"], arrays["gpu_vram_gb"]
    deadline_s, declared_duration_s = arrays["deadline_s"], arrays["declared_duration_s"]
    for name, values in arrays.items():
        if getattr(values, "shape", None) != (n,):  # np.shape() would cost a microsecond each
            raise SpecError(f"workload column {name} has shape {np.shape(values)}, expected ({n},)")
    bad = {
        "arrival_s": ~(np.isfinite(arrival_s) & (arrival_s >= 0)),
        "duration_s": ~(np.isfinite(duration_s) & (duration_s > 0)),
        "workload": (workload_index < 0) | (workload_index >= len(WORKLOAD_TYPES)),
        "cpu_cores": ~(np.isfinite(cpu_cores) & (cpu_cores > 0)),
        "mem_gb": ~(np.isfinite(mem_gb) & (mem_gb > 0)),
        "gpu_count": arrays["gpu_count"] < 0,
        "gpu_vram_gb": ~(np.isfinite(gpu_vram_gb) & (gpu_vram_gb >= 0)),
        "priority": (arrays["priority"] < 1) | (arrays["priority"] > 100),
        "deadline_s": ~(np.isnan(deadline_s) | (np.isfinite(deadline_s) & (deadline_s >= 0))),
        "declared_duration_s": ~(
            np.isnan(declared_duration_s) | (np.isfinite(declared_duration_s) & (declared_duration_s > 0))
        ),
    }
    for name, mask in bad.items():
        if mask.any():
            j = int(np.argmax(mask))
            raise SpecError(f"job {job_ids[j]!r}: bad {name} in workload columns")
    if n > 1 and np.any(arrival_s[1:] < arrival_s[:-1]):
        raise SpecError("workload columns: arrival_s is not sorted")
    if len(set(job_ids)) < n:
        check_unique_ids(job_ids)


def frozen_copy(values: Any, dtype: type) -> np.ndarray:
    """A read-only copy of ``values`` as an array of ``dtype``."""
    array: np.ndarray = np.array(values, dtype=dtype)
    array.flags.writeable = False
    return array


def frozen_in_place(values: Any, dtype: type) -> np.ndarray:
    """``values`` as an array of ``dtype`` (itself when it is one), made read-only."""
    array: np.ndarray = np.asarray(values, dtype=dtype)
    array.flags.writeable = False
    return array

