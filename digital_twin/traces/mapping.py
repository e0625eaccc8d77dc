"""Map a :class:`TraceSeries` onto a fleet: the :class:`~digital_twin.telemetry.Telemetry`.

The mappings:

* :func:`telemetry_from_aggregate`: one aggregate series shared by all nodes, each node reading
  it at its own tick offset with its own scale and bias, like the reference system:
  ``cpu[k, n] = clip(raw_cpu[offset_n + k] * scale_n + bias_n, 0, 100)`` and
  ``mem[k, n] = clip(raw_mem[offset_n + k] * mem_scale, 0, 100)``.
* :func:`telemetry_from_machines`: one trace machine per node, values unchanged.
* :func:`telemetry_from_groups`: the mean of a group of trace machines per node (e.g. several
  PlanetLab VMs on one host); the groups are given by name, or drawn by :func:`sample_groups`
  (a seeded sample of the series' machines).

Each needs ``offset + n_ticks`` ticks of trace. A shorter trace is an error naming the file,
unless ``wrap=True`` is passed explicitly: then the index is taken modulo the trace length, as
the reference does (the series restarts, with a jump at the seam).

When more than :data:`MOSTLY_FILLED` of a node's ticks over the horizon were filled by the gap
policy rather than observed (see :attr:`TraceSeries.filled`), one ``WARNING`` record per call
says which nodes (rule ``"mostly-filled"``): such a node replays a flat line, not a trace.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.telemetry import Telemetry
from digital_twin.tick_grid import TickGrid
from digital_twin.traces._io import TraceCleaning, log_cleaning
from digital_twin.traces.series import TraceSeries

REFERENCE_MEM_SCALE = 0.5
MOSTLY_FILLED = 0.5
"""Share of a node's ticks over the horizon filled (not observed) above which a mapping logs it."""
logger = logging.getLogger(__name__)
"""The reference system's memory scale (``mem = clip(raw_mem x 0.5, 0, 100)``)."""


@dataclass(frozen=True)
class OffsetScaleBias:
    """How one node reads an aggregate series.

    Attributes:
        offset: Ticks into the series where the node's tick 0 reads (>= 0), so nodes are
            decorrelated by reading different days.
        scale: Multiplier of the raw cpu % (>= 0).
        bias_pct: Added to the scaled cpu %, in percentage points (may be negative).
    """

    offset: int
    scale: float = 1.0
    bias_pct: float = 0.0

    def __post_init__(self) -> None:
        integer = isinstance(self.offset, int | np.integer) and not isinstance(self.offset, bool)
        if not integer or self.offset < 0:
            raise SpecError(f"offset must be an integer >= 0 ticks, got {short_repr(self.offset)}")
        if not (math.isfinite(self.scale) and self.scale >= 0):
            raise SpecError(f"scale must be a finite number >= 0, got {short_repr(self.scale)}")
        if not math.isfinite(self.bias_pct):
            raise SpecError(f"bias_pct must be finite, got {short_repr(self.bias_pct)}")


ALIBABA_REFERENCE_MAPPING: Mapping[str, OffsetScaleBias] = MappingProxyType(
    {
        "node-cpu-01": OffsetScaleBias(0, 0.85, 0.0),
        "node-arm-02": OffsetScaleBias(448, 0.50, 0.0),
        "node-api-03": OffsetScaleBias(896, 1.00, 19.8),
        "node-gpu-04": OffsetScaleBias(1344, 1.00, 4.8),
        "node-gpu-05": OffsetScaleBias(1791, 0.70, 2.0),
    }
)
"""The reference system's per-node mapping of the Alibaba 2018 data-centre mean (300 s ticks),
keyed by the default fleet's node ids (use with :data:`REFERENCE_MEM_SCALE`)."""

BORG_REFERENCE_MAPPING: Mapping[str, OffsetScaleBias] = MappingProxyType(
    {
        "node-cpu-01": OffsetScaleBias(0, 1.13, 0.0),
        "node-arm-02": OffsetScaleBias(400, 0.65, 0.0),
        "node-api-03": OffsetScaleBias(800, 1.00, 27.6),
        "node-gpu-04": OffsetScaleBias(1200, 1.00, 12.0),
        "node-gpu-05": OffsetScaleBias(1600, 0.97, 0.0),
    }
)
"""The reference system's per-node mapping of its Borg series (after its P75 scaling; its
memory is not per-node scaled, i.e. ``mem_scale=1.0``)."""


def telemetry_from_aggregate(
    series: TraceSeries,
    nodes: Sequence[OffsetScaleBias] | Mapping[str, OffsetScaleBias],
    horizon_s: float,
    *,
    machine: str | None = None,
    mem_scale: float = REFERENCE_MEM_SCALE,
    wrap: bool = False,
) -> Telemetry:
    """Per-node background from one aggregate series by (offset, scale, bias).

    Args:
        series: The trace; its tick becomes the telemetry tick.
        nodes: One :class:`OffsetScaleBias` per node, in fleet order (a mapping's values are
            taken in its order, e.g. ``ALIBABA_REFERENCE_MAPPING`` for the default fleet).
        horizon_s: Simulated seconds to cover: ``n_ticks`` ticks, those that start before it
            (:class:`~digital_twin.tick_grid.TickGrid`).
        machine: Which column of ``series`` to use; ``None`` requires a single-machine series.
        mem_scale: Multiplier of the raw mem % for every node (the reference uses 0.5).
        wrap: Index the series modulo its length when a node needs more ticks than it has.

    Returns:
        A :class:`Telemetry` of shape ``(n_ticks, len(nodes), 2)``.

    Raises:
        TraceError: The trace is shorter than ``offset + n_ticks`` for some node and ``wrap``
            is false (names the file), or ``machine`` is ambiguous/unknown.
        SpecError: Empty ``nodes``, bad ``horizon_s`` or ``mem_scale``.

    Example:
        >>> import numpy as np
        >>> raw = TraceSeries(np.full((4, 1, 2), 50.0), 300.0, ("dc",), "example")
        >>> tel = telemetry_from_aggregate(raw, [OffsetScaleBias(1, 0.5, 10.0)], 600.0)
        >>> tel.background_pct[:, 0].tolist()
        [[35.0, 25.0], [35.0, 25.0]]
    """
    params = list(nodes.values()) if isinstance(nodes, Mapping) else list(nodes)
    if not params or not all(isinstance(p, OffsetScaleBias) for p in params):
        raise SpecError("nodes must be a non-empty sequence (or mapping) of OffsetScaleBias")
    if not (math.isfinite(mem_scale) and mem_scale >= 0):
        raise SpecError(f"mem_scale must be a finite number >= 0, got {short_repr(mem_scale)}")
    raw = _column(series, machine)  # (n_trace_ticks, 2)
    n_ticks = TickGrid(horizon_s, series.tick_s).n_ticks
    offsets = np.array([p.offset for p in params])
    index = _indices(series, offsets, n_ticks, wrap)  # (n_ticks, n_nodes)
    scale = np.array([p.scale for p in params])
    bias = np.array([p.bias_pct for p in params])
    out = np.empty((n_ticks, len(params), 2))
    out[..., 0] = np.clip(raw[index, 0] * scale + bias, 0.0, 100.0)
    out[..., 1] = np.clip(raw[index, 1] * mem_scale, 0.0, 100.0)
    if series.filled is not None:
        column = 0 if machine is None else series.machine_ids.index(machine)
        filled = np.asarray(series.filled[:, column].any(axis=-1))[index]  # (n_ticks, n_nodes)
        _report_filled(series.source, filled, [f"offset {p.offset}" for p in params])
    summary = ", ".join(f"({p.offset}, {p.scale:g}, {p.bias_pct:g})" for p in params)
    return Telemetry(
        out,
        series.tick_s,
        source=f"{series.source}; offset/scale/bias {summary}, mem x{mem_scale:g}"
        + (", wrapped" if wrap else ""),
    )


def telemetry_from_machines(
    series: TraceSeries,
    horizon_s: float,
    *,
    machines: Sequence[str] | None = None,
    offset: int = 0,
    wrap: bool = False,
) -> Telemetry:
    """Per-node background with one trace machine per node (values unchanged).

    Args:
        series: A per-machine trace.
        horizon_s: Simulated seconds to cover: ``n_ticks`` ticks, those that start before it
            (:class:`~digital_twin.tick_grid.TickGrid`).
        machines: Machine id for each node, in fleet order (repeats allowed); ``None`` = every
            machine of the series, in its order.
        offset: Ticks into the series where tick 0 reads (same for every node).
        wrap: Index the series modulo its length when it is shorter than ``offset + n_ticks``.

    Returns:
        A :class:`Telemetry` of shape ``(n_ticks, len(machines), 2)``.

    Raises:
        TraceError: Unknown machine, or a trace shorter than the horizon without ``wrap``.
    """
    selected = series if machines is None else series.select(machines)
    n_ticks = TickGrid(horizon_s, series.tick_s).n_ticks
    OffsetScaleBias(offset)  # validates the offset
    index = _indices(selected, np.array([offset]), n_ticks, wrap)[:, 0]
    if selected.filled is not None:
        filled = np.asarray(selected.filled.any(axis=-1))[index]  # (n_ticks, n_nodes)
        _report_filled(series.source, filled, [f"machine {m!r}" for m in selected.machine_ids])
    return Telemetry(
        selected.values_pct[index],
        series.tick_s,
        source=f"{series.source}; machines {', '.join(selected.machine_ids)}, offset {offset}"
        + (", wrapped" if wrap else ""),
    )


def telemetry_from_groups(
    series: TraceSeries,
    groups: Sequence[Sequence[str]],
    horizon_s: float,
    *,
    offset: int = 0,
    wrap: bool = False,
) -> Telemetry:
    """Per-node background = the mean of a group of trace machines, per tick and channel.

    A group of one machine gives that machine's values exactly. A node's tick counts as filled
    (for the ``"mostly-filled"`` note) when any machine of its group was filled at that tick.

    Args:
        series: A per-machine trace.
        groups: One non-empty list of machine ids per node, in fleet order (a machine may appear
            in several groups).
        horizon_s: Simulated seconds to cover: ``n_ticks`` ticks, those that start before it
            (:class:`~digital_twin.tick_grid.TickGrid`).
        offset: Ticks into the series where tick 0 reads (same for every node).
        wrap: Index the series modulo its length when it is shorter than ``offset + n_ticks``.

    Returns:
        A :class:`Telemetry` of shape ``(n_ticks, len(groups), 2)``.

    Raises:
        TraceError: Unknown machine, or a trace shorter than the horizon without ``wrap``.
        SpecError: No groups, or an empty group.

    Example:
        >>> raw = TraceSeries(np.array([[[10.0, 0.0], [30.0, 4.0], [50.0, 8.0]]]), 300.0, ("a", "b", "c"), "x")
        >>> telemetry_from_groups(raw, [["a", "b"], ["c"]], 300.0).background_pct[0].tolist()
        [[20.0, 2.0], [50.0, 8.0]]
    """
    if isinstance(groups, str) or not groups or any(isinstance(g, str) or not g for g in groups):
        raise SpecError(f"groups must be a non-empty list of non-empty lists of machine ids, got {short_repr(groups)}")
    n_ticks = TickGrid(horizon_s, series.tick_s).n_ticks
    OffsetScaleBias(offset)  # validates the offset
    index = _indices(series, np.array([offset]), n_ticks, wrap)[:, 0]
    for group in groups:
        series.select(group)  # raises for an unknown machine, naming the file
    position = {m: i for i, m in enumerate(series.machine_ids)}
    columns = [[position[m] for m in group] for group in groups]
    values = series.values_pct[index]  # (n_ticks, n_machines, 2)
    out = np.stack([values[:, cols].mean(axis=1) for cols in columns], axis=1)
    if series.filled is not None:
        filled = np.asarray(series.filled.any(axis=-1))[index]  # (n_ticks, n_machines)
        by_node = np.stack([filled[:, cols].any(axis=1) for cols in columns], axis=1)
        _report_filled(series.source, by_node, [f"group {short_repr(list(g))}" for g in groups])
    summary = "; ".join(" + ".join(group) for group in groups[:8]) + ("; ..." if len(groups) > 8 else "")
    return Telemetry(
        out,
        series.tick_s,
        source=f"{series.source}; group means {summary}, offset {offset}" + (", wrapped" if wrap else ""),
    )


def sample_groups(series: TraceSeries, n_nodes: int, per_node: int, seed: int) -> list[list[str]]:
    """``n_nodes`` groups of ``per_node`` distinct machines drawn without replacement, seeded.

    The draw is ``numpy.random.default_rng(seed).choice(n_machines, n_nodes * per_node,
    replace=False)`` over the series' machine order; node ``k`` gets draws ``k * per_node`` to
    ``(k + 1) * per_node - 1``. The same series (same machines in the same order) and seed give
    the same groups.

    Raises:
        SpecError: ``n_nodes`` or ``per_node`` is not an integer >= 1, ``seed`` is not an integer
            >= 0, or the series has fewer than ``n_nodes * per_node`` machines.

    Example:
        >>> raw = TraceSeries(np.zeros((1, 4, 2)), 300.0, ("a", "b", "c", "d"), "x")
        >>> [len(g) for g in sample_groups(raw, 2, 2, seed=0)]
        [2, 2]
    """
    for name, value, low in (("n_nodes", n_nodes, 1), ("per_node", per_node, 1), ("seed", seed, 0)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < low:
            raise SpecError(f"{name} must be an integer >= {low}, got {short_repr(value)}")
    wanted = n_nodes * per_node
    if wanted > series.n_machines:
        raise SpecError(
            f"{series.source}: a sample of {n_nodes} node(s) x {per_node} machine(s) needs {wanted} machines, "
            f"the series has {series.n_machines}"
        )
    drawn = np.random.default_rng(seed).choice(series.n_machines, size=wanted, replace=False)
    ids = [series.machine_ids[int(i)] for i in drawn]
    return [ids[k * per_node : (k + 1) * per_node] for k in range(n_nodes)]


def _report_filled(source: str, filled: np.ndarray, labels: Sequence[str]) -> None:
    """Log once which nodes replay mostly filled ticks (``filled``: ``(n_ticks, n_nodes)`` bool)."""
    share = filled.mean(axis=0)
    nodes = np.flatnonzero(share > MOSTLY_FILLED)
    if nodes.size == 0:
        return
    shown = ", ".join(f"node {k} ({labels[k]}) {share[k]:.0%}" for k in nodes[:8])
    more = ", ..." if nodes.size > 8 else ""
    log_cleaning(
        logger,
        TraceCleaning(source, "mostly-filled", int(nodes.size)),
        f"{source}: {nodes.size} of {share.size} node(s) replay mostly filled ticks, not "
        f"observed ones, over the {filled.shape[0]} ticks of the horizon: {shown}{more} (gaps "
        "filled by sample-and-hold); pick other machines, offsets or another trace window",
    )


def _column(series: TraceSeries, machine: str | None) -> np.ndarray:
    if machine is None:
        if series.n_machines != 1:
            raise TraceError(
                f"{series.source}: the series has {series.n_machines} machines; pass machine= "
                "to pick the aggregate column, or use telemetry_from_machines"
            )
        return series.values_pct[:, 0]
    return series.select([machine]).values_pct[:, 0]


def _indices(series: TraceSeries, offsets: np.ndarray, n_ticks: int, wrap: bool) -> np.ndarray:
    """``(n_ticks, n_nodes)`` trace tick read by each node at each tick."""
    needed = int(offsets.max()) + n_ticks
    if needed > series.n_ticks and not wrap:
        node = int(offsets.argmax())
        raise TraceError(
            f"{series.source}: trace shorter than the horizon: it has {series.n_ticks} ticks of "
            f"{series.tick_s:g} s, but node {node} (offset {int(offsets[node])}) needs {needed} "
            f"({n_ticks} ticks of horizon). Shorten the horizon or offsets, or pass wrap=True "
            "to repeat the trace"
        )
    return (offsets[None, :] + np.arange(n_ticks)[:, None]) % series.n_ticks
