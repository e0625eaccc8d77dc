"""Trace load times: the real files under ``ACO_ENV_TRACES`` (skipped when absent) and the bundled one.

The readers are called exactly as the reader tests call them (``tests/digital_twin/traces/`` and
``tests/digital_twin/workloads/`` check what they read); their speed is measured only here,
target: well under a second per file. Documented cleaning notes (logged on the
``digital_twin`` loggers) are silenced while timing: they would print once per repeat.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import scenarios
from digital_twin.traces import (
    read_alibaba_dc_mean,
    read_alibaba_machine_usage,
    read_azure_vm_aggregate,
    read_planetlab,
)
from digital_twin.workloads import (
    POD_PHASES,
    load_alibaba2017_batch_tasks,
    load_alibaba_gpu_pods,
    load_azure_vm_requests,
    load_swf_jobs,
)

TRACE_FILES: dict[str, tuple[str, Callable[[Path], object]]] = {
    "alibaba2018_dc_mean_8_days": (
        "alibaba-2018-machine-usage-dcavg-300s/machine_usage_days_1_to_8_grouped_300_seconds.csv",
        read_alibaba_dc_mean,
    ),
    "alibaba2018_machine_usage_51k_rows": (
        "alibaba-2018-machine-usage-sample/machine_usage_sample.csv",
        read_alibaba_machine_usage,
    ),
    "azure2019_vm_aggregate_month": (
        "azure-v2-vm-aggregated-300s/vm_cpu_readings_month_aggregated_cpu_mem.csv",
        read_azure_vm_aggregate,
    ),
    "alibaba_gpu2023_default_pod_list_all_phases": (
        "alibaba-gpu-2023/openb_pod_list_default.csv",
        lambda p: load_alibaba_gpu_pods(p, phases=POD_PHASES),
    ),
    "swf_nasa_ipsc_1993": ("swf-nasa-ipsc-1993/NASA-iPSC-1993-3.1-cln.swf", load_swf_jobs),
    "planetlab_20110306_200_vm_files": ("planetlab-20110306/cpu", read_planetlab),
    "azure_vmtable_2017_sample_10_rows": ("azure-vmtable-2017-sample/vmtable.csv", load_azure_vm_requests),
    "alibaba2017_batch_task": ("alibaba-cluster-trace-v2017/batch_task.csv", load_alibaba2017_batch_tasks),
}
"""Key -> (path under ``ACO_ENV_TRACES``: a file, or the folder of a folder reader; the call timed).
A file or folder that is not present is reported as ``None`` (shown as not present)."""


@contextmanager
def _quiet_library_logs() -> Iterator[None]:
    """Raise the ``digital_twin`` loggers' level to ERROR for the duration (cleaning notes off)."""
    logger = logging.getLogger("digital_twin")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _best_of(load: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        load()
        best = min(best, time.perf_counter() - started)
    return best * 1e3


def bench_traces(repeats: int = 5) -> dict[str, Any]:
    """Best-of-``repeats`` load time in ms per file; ``None`` for files that are not present."""
    root = os.environ.get(scenarios.TRACES_ENV)
    with _quiet_library_logs():
        out: dict[str, Any] = {
            "bundled_synthetic_dc_mean_ms": _best_of(
                lambda: read_alibaba_dc_mean(scenarios.CATALOGUE_DIR / "data" / "synthetic_dc_mean_300s.csv"), repeats
            )
        }
        for name, (relative, loader) in TRACE_FILES.items():
            path = Path(root) / relative if root else None
            if path is None or not path.exists():
                out[f"{name}_ms"] = None
                continue
            out[f"{name}_ms"] = _best_of(lambda path=path, loader=loader: loader(path), repeats)
    return out
