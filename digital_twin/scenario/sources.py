"""The named sources a scenario file can use: fleets, telemetry readers, workload sources.

Each table maps the name used in YAML to a function. Adding a source is adding an entry; the
scenario loader validates options against the function's keyword parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from digital_twin.errors import SpecError, short_repr
from digital_twin.telemetry import Telemetry
from digital_twin.traces import (
    read_alibaba_dc_mean,
    read_alibaba_machine_usage,
    read_azure_vm_aggregate,
    read_borg_cell_mean,
    read_borg_instance_usage,
    read_generic,
)
from digital_twin.traces.mapping import OffsetScaleBias
from digital_twin.traces.series import TraceSeries
from digital_twin.workloads import (
    load_alibaba_gpu_pods,
    load_azure_llm_requests,
    load_swf_jobs,
)

TRACE_READERS: Mapping[str, Callable[..., TraceSeries]] = {
    "alibaba2018-machines": read_alibaba_machine_usage,
    "alibaba2018-mean": read_alibaba_dc_mean,
    "borg2019-instances": read_borg_instance_usage,
    "borg2019-cell": read_borg_cell_mean,
    "azure2019-aggregate": read_azure_vm_aggregate,
    "generic": read_generic,
}
"""``telemetry.reader`` -> function(path, **options) returning a :class:`TraceSeries`."""

JOB_FILE_SOURCES: Mapping[str, Callable[..., tuple[Any, ...]]] = {
    "alibaba-gpu-2023": load_alibaba_gpu_pods,
    "swf": load_swf_jobs,
    "azure-llm": load_azure_llm_requests,
}
"""``workload.source`` -> function(path, **options) returning jobs (``limit`` = the job budget)."""


def constant_telemetry(
    n_nodes: int,
    horizon_s: float,
    *,
    cpu_pct: float | Sequence[float],
    mem_pct: float | Sequence[float],
    tick_s: float = 300.0,
) -> Telemetry:
    """``telemetry.reader: constant``: a flat background, one value for all nodes or one per node.

    ``ceil(horizon_s / tick_s)`` ticks (at least 1). The scenario loader checks the tick count
    against its limits before calling this.

    Raises:
        SpecError: ``tick_s`` is not a finite number > 0, or a value is neither one number nor
            one per node.
    """
    if isinstance(tick_s, bool) or not isinstance(tick_s, int | float) or not (math.isfinite(tick_s) and tick_s > 0):
        raise SpecError(f"tick_s must be a finite number > 0, got {short_repr(tick_s)}")
    n_ticks = max(1, math.ceil(horizon_s / tick_s))
    background = np.empty((n_ticks, n_nodes, 2))
    for column, (name, value) in enumerate((("cpu_pct", cpu_pct), ("mem_pct", mem_pct))):
        values = np.asarray(value, dtype=np.float64)
        if values.ndim > 1 or (values.ndim == 1 and values.size != n_nodes):
            raise SpecError(f"{name} must be one number or a list of {n_nodes} (one per node), got {short_repr(value)}")
        background[:, :, column] = values
    return Telemetry(background, tick_s, source=f"constant cpu={cpu_pct} mem={mem_pct}")


def sample_per_group(keys: list[str], per_group: int, seed: int) -> list[int]:
    """Indices of up to ``per_group`` items per key, drawn with ``default_rng(seed)``, in file order."""
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for key in sorted(set(keys)):
        members = [i for i, k in enumerate(keys) if k == key]
        take = min(per_group, len(members))
        chosen.extend(int(i) for i in rng.choice(members, size=take, replace=False))
    return sorted(chosen)


def evenly_spread_offsets(series_ticks: int, needed_ticks: int, n_nodes: int) -> list[OffsetScaleBias]:
    """``mapping.nodes: evenly-spread``: node k reads from offset ``k * (spare // n_nodes)``, scale 1.

    ``spare = series_ticks - needed_ticks`` (0 when the series is just long enough).
    """
    step = max(series_ticks - needed_ticks, 0) // max(n_nodes, 1)
    return [OffsetScaleBias(k * step) for k in range(n_nodes)]
