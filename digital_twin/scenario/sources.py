"""The named sources a scenario file can use: fleets, telemetry readers, workload sources.

Each table maps the name used in YAML to a function. Adding a source is adding an entry; the
scenario loader validates options against the function's keyword parameters.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from digital_twin.errors import SpecError, short_repr
from digital_twin.planted.config import PlantedConfig
from digital_twin.planted.market_config import MarketConfig
from digital_twin.telemetry import Telemetry
from digital_twin.tick_grid import check_tick_s, count_ticks
from digital_twin.traces import (
    read_alibaba_dc_mean,
    read_alibaba_machine_usage,
    read_azure_vm_aggregate,
    read_borg_cell_mean,
    read_borg_instance_usage,
    read_generic,
    read_planetlab,
)
from digital_twin.traces.mapping import OffsetScaleBias
from digital_twin.traces.series import TraceSeries
from digital_twin.workloads import (
    generate_jobs,
    jobs_from_dicts,
    load_alibaba2017_batch_tasks,
    load_alibaba2018_batch_workflows,
    load_alibaba_gpu_pods,
    load_azure_llm_requests,
    load_azure_vm_requests,
    load_swf_jobs,
)
from digital_twin.workloads.workflows import generate_workflows

TRACE_READERS: Mapping[str, Callable[..., TraceSeries]] = {
    "alibaba2018-machines": read_alibaba_machine_usage,
    "alibaba2018-mean": read_alibaba_dc_mean,
    "borg2019-instances": read_borg_instance_usage,
    "borg2019-cell": read_borg_cell_mean,
    "azure2019-aggregate": read_azure_vm_aggregate,
    "planetlab": read_planetlab,
    "generic": read_generic,
}
"""``telemetry.reader`` -> function(path, **options) returning a :class:`TraceSeries`."""

JOB_FILE_SOURCES: Mapping[str, Callable[..., tuple[Any, ...]]] = {
    "alibaba-gpu-2023": load_alibaba_gpu_pods,
    "swf": load_swf_jobs,
    "azure-llm": load_azure_llm_requests,
    "azure-vm": load_azure_vm_requests,
    "alibaba2017-batch": load_alibaba2017_batch_tasks,
    "alibaba2018-batch": load_alibaba2018_batch_workflows,
}
"""``workload.source`` -> function(path, **options) returning jobs (``limit`` = the job budget)."""
WHOLE_WORKFLOW_SOURCES = frozenset({"alibaba2018-batch"})
"""Job sources whose ``limit`` keeps whole workflows (so a file over the job budget can fit under it):
the loader caps them with ``max_tasks = limits.max_jobs`` instead."""


def constant_telemetry(
    n_nodes: int,
    horizon_s: float,
    *,
    cpu_pct: float | Sequence[float],
    mem_pct: float | Sequence[float],
    tick_s: float = 300.0,
) -> Telemetry:
    """A flat background: one cpu % and mem % for all nodes, or one per node.

    ``telemetry.reader: constant``: the ticks of the horizon
    (:func:`~digital_twin.tick_grid.count_ticks`). The scenario loader checks the tick count
    against its limits before calling this.

    Raises:
        SpecError: ``tick_s`` is not a finite number > 0, or a value is neither one number nor
            one per node.
    """
    n_ticks = count_ticks(horizon_s, check_tick_s(tick_s))
    background = np.empty((n_ticks, n_nodes, 2))
    for column, (name, value) in enumerate((("cpu_pct", cpu_pct), ("mem_pct", mem_pct))):
        per_node = isinstance(value, list | tuple)
        items: Sequence[object] = value if isinstance(value, list | tuple) else [value]
        if (per_node and len(items) != n_nodes) or not all(_is_number(item) for item in items):
            raise SpecError(f"{name} must be one number or a list of {n_nodes} (one per node), got {short_repr(value)}")
        background[:, :, column] = np.asarray(value, dtype=np.float64)
    return Telemetry(background, tick_s, source=f"constant cpu={cpu_pct} mem={mem_pct}")


def describe_sources() -> dict[str, list[tuple[str, str]]]:
    """Every reader and source a scenario can name, with one line on each (for ``aco-env scenarios``).

    The line is the first line of the function's docstring, without reST markup, so the listing
    cannot drift from the registries or the code.

    Returns:
        ``{"telemetry.reader": [(name, line), ...], "workload.source": [(name, line), ...]}``,
        the file readers first (in registry order), then the built-in ``constant``, ``synthetic``,
        ``workflows``, ``planted``, ``planted-priced`` and ``jobs``.

    Example:
        >>> dict(describe_sources()["workload.source"])["swf"]
        'Read an SWF job log into batch jobs sorted by arrival.'
    """
    readers: dict[str, Callable[..., Any]] = {**TRACE_READERS, "constant": constant_telemetry}
    sources: dict[str, Callable[..., Any]] = {
        **JOB_FILE_SOURCES,
        "synthetic": generate_jobs,
        "workflows": generate_workflows,
        "planted": PlantedConfig,
        "planted-priced": MarketConfig,
        "jobs": jobs_from_dicts,
    }
    return {
        "telemetry.reader": [(name, _summary(function)) for name, function in readers.items()],
        "workload.source": [(name, _summary(function)) for name, function in sources.items()],
    }


def _summary(function: Callable[..., Any]) -> str:
    """The first line of ``function``'s docstring as plain text (``x`` for ````x```` and :role:`~a.b.x`)."""
    doc = inspect.getdoc(function) or ""
    line = doc.splitlines()[0] if doc else ""
    line = re.sub(r":[a-z]+:`~?(?:[\w.]+\.)?([\w]+)`", r"\1", line)
    return line.replace("``", "")


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


def _is_number(value: object) -> bool:
    """A real number as YAML gives it (``int`` or ``float``, not ``bool``; numpy scalars too)."""
    return not isinstance(value, bool) and isinstance(value, int | float | np.integer | np.floating)
