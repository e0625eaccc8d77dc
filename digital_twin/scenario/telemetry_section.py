"""The ``telemetry`` section of a scenario: a flat background or a trace mapped onto the fleet.

:func:`telemetry_loader` validates the section now and returns a picklable loader (a frozen
dataclass) called with the fleet's node count on first use. The tick is checked now (a finite
number > 0, and ``horizon_s / tick_s <= limits.max_ticks``, from the ``tick_s`` option or the
reader's default), and again with the trace's own tick when it is read, together with
``ticks x nodes <= limits.max_telemetry_cells``, before any array is built (the ticks of the
horizon: :mod:`digital_twin.tick_grid`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from digital_twin.errors import SettingError, SpecError, short_repr
from digital_twin.limits import Limits, count
from digital_twin.scenario.paths import resolve_path
from digital_twin.scenario.schema import (
    ScenarioError,
    Section,
    call_with_options,
    check_limit,
    check_options,
    checked,
    section_options,
)
from digital_twin.scenario.sources import TRACE_READERS, constant_telemetry, evenly_spread_offsets
from digital_twin.telemetry import Telemetry
from digital_twin.tick_grid import check_tick_s, count_ticks
from digital_twin.traces.mapping import (
    ALIBABA_REFERENCE_MAPPING,
    OffsetScaleBias,
    sample_groups,
    telemetry_from_aggregate,
    telemetry_from_groups,
    telemetry_from_machines,
)
from digital_twin.traces.series import TraceSeries

MAPPING_KINDS = ("offset-scale-bias", "per-machine", "group-mean", "sample")
"""``telemetry.mapping.kind``: how a trace's machines become the fleet's nodes (see :class:`TraceTelemetry`)."""


class TelemetryLoader(Protocol):
    """Where a scenario's background load comes from: called once, on first use."""

    def __call__(self, n_nodes: int) -> Telemetry:
        """The background of ``n_nodes`` nodes (the fleet's size) over the horizon.

        Raises:
            SpecError: The trace is invalid, or larger than the limits allow (the scenario adds the file).
            TraceError: The trace file cannot be read.
        """
        ...


@dataclass(frozen=True)
class ConstantTelemetry:
    """``telemetry.reader: constant``: a flat background built on first use."""

    options: Mapping[str, Any]
    file: Path | str
    where: str
    horizon_s: float
    limits: Limits

    def __call__(self, n_nodes: int) -> Telemetry:
        """The flat background of ``n_nodes`` nodes over the horizon."""
        n_ticks = count_ticks(self.horizon_s, self.options.get("tick_s", _default(constant_telemetry, "tick_s")))
        try:
            _check_cells(self.limits, n_ticks, n_nodes)
        except SpecError as exc:
            raise ScenarioError(f"{self.file}: {self.where}: {exc}") from None
        telemetry: Telemetry = call_with_options(
            constant_telemetry, self.options, self.file, self.where, n_nodes, self.horizon_s
        )
        return telemetry


@dataclass(frozen=True)
class TraceTelemetry:
    """``telemetry.reader: <trace reader>``: a trace read and mapped onto the fleet on first use.

    Attributes:
        reader: The :data:`TRACE_READERS` name.
        path: The trace file.
        options: The reader's keyword options.
        file: The scenario file (for messages).
        where: Key path of the telemetry section (for messages).
        kind: One of :data:`MAPPING_KINDS`:

            * ``"offset-scale-bias"``: one aggregate series read by every node at its own
              offset, scale and bias (``nodes``: ``"evenly-spread"``, ``"reference-alibaba"`` or
              a list of ``{offset, scale, bias_pct}``; ``mem_scale``);
            * ``"per-machine"``: one trace machine per node, by name (``machines``; ``None`` =
              every machine of the series, in its order);
            * ``"group-mean"``: the mean of a named group of machines per node (``groups``: one
              list of names per node);
            * ``"sample"``: a seeded sample of ``n_nodes x per_node`` distinct machines, node
              ``k`` getting the mean of its ``per_node`` (``seed``, ``per_node`` default 1; see
              :func:`~digital_twin.traces.sample_groups`).

            All but the first take ``offset`` (ticks into the series, default 0); all take
            ``wrap`` (default false).
        horizon_s: Seconds to cover.
        limits: Size limits.
        mapping: The mapping's parameters named above, checked when the section is read.
    """

    reader: str
    path: Path
    options: Mapping[str, Any]
    file: Path | str
    where: str
    kind: str
    horizon_s: float
    limits: Limits
    mapping: Mapping[str, Any]

    def __call__(self, n_nodes: int) -> Telemetry:
        """Read the trace, check the sizes, map it onto ``n_nodes`` nodes."""
        series: TraceSeries = call_with_options(
            TRACE_READERS[self.reader], self.options, self.file, f"{self.where}.options", self.path
        )
        ticks = self.horizon_s / series.tick_s
        try:
            self.limits.check("max_ticks", ticks, f"horizon_s / tick_s = {count(ticks)} ticks")
        except SpecError as exc:
            raise ScenarioError(f"{self.file}: {self.where}.options.tick_s: {exc}") from None
        n_ticks = count_ticks(self.horizon_s, series.tick_s)
        try:
            _check_cells(self.limits, n_ticks, n_nodes)
        except SpecError as exc:
            raise ScenarioError(f"{self.file}: {self.where}: {exc}") from None
        mapping, wrap = self.mapping, self.mapping["wrap"]
        if self.kind == "offset-scale-bias":
            nodes = mapping["nodes"]
            offsets = evenly_spread_offsets(series.n_ticks, n_ticks, n_nodes) if nodes == "evenly-spread" else nodes
            if len(offsets) != n_nodes:
                raise self._error("nodes", f"has {len(offsets)} entries for a fleet of {n_nodes} nodes")
            return telemetry_from_aggregate(series, offsets, self.horizon_s, mem_scale=mapping["mem_scale"], wrap=wrap)
        if self.kind == "per-machine":
            machines = mapping["machines"]
            if machines is not None and len(machines) != n_nodes:
                raise self._error("machines", f"has {len(machines)} entries for a fleet of {n_nodes} nodes")
            offset = mapping["offset"]
            return telemetry_from_machines(series, self.horizon_s, machines=machines, offset=offset, wrap=wrap)
        return telemetry_from_groups(
            series, self._groups(series, n_nodes), self.horizon_s, offset=mapping["offset"], wrap=wrap
        )

    def _groups(self, series: TraceSeries, n_nodes: int) -> list[list[str]]:
        """The machines of each node for the ``group-mean`` and ``sample`` mappings."""
        if self.kind == "group-mean":
            groups: list[list[str]] = [list(group) for group in self.mapping["groups"]]
            if len(groups) != n_nodes:
                raise self._error("groups", f"has {len(groups)} groups for a fleet of {n_nodes} nodes")
            return groups
        try:
            return sample_groups(series, n_nodes, self.mapping["per_node"], self.mapping["seed"])
        except SpecError as exc:
            raise ScenarioError(f"{self.file}: {self.where}.mapping: {exc}") from None

    def _error(self, key: str, problem: str) -> ScenarioError:
        return ScenarioError(f"{self.file}: {self.where}.mapping.{key}: {problem}")


def telemetry_loader(section: Section, horizon_s: float, data_files: list[Path], limits: Limits) -> TelemetryLoader:
    """The loader of the ``telemetry`` section; checks the tick and the tick count now."""
    reader = section.get("reader", str, required=True)
    if reader == "constant":
        options = section.rest()
        check_options(constant_telemetry, options, section.file, section.where, skip=2)
        _check_ticks(section, options, constant_telemetry, horizon_s, limits)
        return ConstantTelemetry(options, section.file, section.where, horizon_s, limits)
    if reader not in TRACE_READERS:
        raise section.error(
            "reader", f"unknown reader {short_repr(reader)}; known: {[*sorted(TRACE_READERS), 'constant']}"
        )
    path = resolve_path(section, "path", data_files)
    options, options_section = section_options(section, TRACE_READERS[reader])
    _check_ticks(options_section or section, options, TRACE_READERS[reader], horizon_s, limits)
    mapping = section.section("mapping")
    kind = mapping.get("kind", str, required=True)
    params = _mapping_params(mapping, kind, limits)
    mapping.finish()
    section.finish()
    return TraceTelemetry(reader, path, options, section.file, section.where, kind, horizon_s, limits, params)


def _mapping_params(mapping: Section, kind: str, limits: Limits) -> dict[str, Any]:
    """The parameters of one of :data:`MAPPING_KINDS` (see :class:`TraceTelemetry`), checked now."""
    if kind not in MAPPING_KINDS:
        raise mapping.error("kind", f"unknown mapping {short_repr(kind)}; known: {list(MAPPING_KINDS)}")
    wrap = mapping.get("wrap", bool, False)
    if kind == "offset-scale-bias":
        return {"nodes": _offsets(mapping, limits), "mem_scale": mapping.get("mem_scale", float, 0.5), "wrap": wrap}
    offset = mapping.get("offset", int, 0)
    if offset < 0:
        raise mapping.error("offset", f"must be an integer >= 0 ticks, got {offset}")
    if kind == "per-machine":
        machines = mapping.get("machines", list, None)
        if machines is not None:
            check_limit(mapping, "machines", limits, "max_nodes", len(machines), f"{len(machines):,} machines")
            bad = [i for i, machine in enumerate(machines) if not isinstance(machine, str)]
            if bad:
                problem = f"must be a machine id (a string), got {short_repr(machines[bad[0]])}"
                raise mapping.error(f"machines[{bad[0]}]", problem)
        return {"machines": machines, "offset": offset, "wrap": wrap}
    if kind == "group-mean":
        return {"groups": _groups(mapping, limits), "offset": offset, "wrap": wrap}
    seed = mapping.get("seed", int, required=True)
    per_node = mapping.get("per_node", int, 1)
    if seed < 0:
        raise mapping.error("seed", f"must be an integer >= 0, got {seed}")
    if per_node < 1:
        raise mapping.error("per_node", f"must be an integer >= 1, got {per_node}")
    return {"seed": seed, "per_node": per_node, "offset": offset, "wrap": wrap}


def _groups(mapping: Section, limits: Limits) -> tuple[tuple[str, ...], ...]:
    """``mapping.groups``: one non-empty list of machine ids (strings) per node."""
    groups = mapping.get("groups", list, required=True)
    if not groups:
        raise mapping.error("groups", "must list one group of machine ids per node, got an empty list")
    check_limit(mapping, "groups", limits, "max_nodes", len(groups), f"the list has {len(groups):,} groups, which")
    for i, group in enumerate(groups):
        if not isinstance(group, list) or not group or not all(isinstance(m, str) for m in group):
            raise mapping.error(
                f"groups[{i}]", f"must be a non-empty list of machine ids (strings), got {short_repr(group)}"
            )
    return tuple(tuple(group) for group in groups)


def _offsets(mapping: Section, limits: Limits) -> str | tuple[OffsetScaleBias, ...]:
    """``mapping.nodes``: ``"evenly-spread"`` (computed when loaded) or the per-node parameters."""
    nodes = mapping.get("nodes", (str, list), required=True)
    if nodes == "reference-alibaba":
        return tuple(ALIBABA_REFERENCE_MAPPING.values())
    if nodes == "evenly-spread":
        return "evenly-spread"
    if isinstance(nodes, str):
        raise mapping.error(
            "nodes",
            f"unknown named mapping {short_repr(nodes)}; use 'reference-alibaba', "
            "'evenly-spread' or a list of {offset, scale, bias_pct}",
        )
    check_limit(mapping, "nodes", limits, "max_nodes", len(nodes), f"the list has {len(nodes):,} nodes, which")
    return tuple(checked(mapping, f"nodes[{i}]", partial(_offset_scale_bias, d)) for i, d in enumerate(nodes))


def _offset_scale_bias(params: Any) -> OffsetScaleBias:
    """One node's ``{offset, scale, bias_pct}`` (a TypeError when ``params`` is not a mapping of those)."""
    return OffsetScaleBias(**params)


def _check_ticks(
    section: Section, options: Mapping[str, Any], function: Callable[..., Any], horizon_s: float, limits: Limits
) -> None:
    """The tick (``options`` or ``function``'s default) is a number > 0 giving at most ``max_ticks`` ticks.

    The ratio ``horizon_s / tick_s`` is held to ``max_ticks``: for a whole-number limit that bounds
    the tick count, and it is defined for a ratio too large to count.

    Errors name ``tick_s`` in ``section`` when the file sets it, else ``horizon_s``.
    """
    given = "tick_s" in options
    tick_s = options["tick_s"] if given else _default(function, "tick_s")
    if tick_s is None:
        return
    try:
        ticks = horizon_s / check_tick_s(tick_s)
    except SettingError as exc:
        raise section.error("tick_s", exc.problem) from None
    try:
        limits.check("max_ticks", ticks, f"horizon_s / tick_s = {count(ticks)} ticks")
    except SpecError as exc:
        if given:
            raise section.error("tick_s", str(exc)) from None
        raise ScenarioError(f"{section.file}: horizon_s: {exc}") from None


def _default(function: Callable[..., Any], name: str) -> Any:
    parameter = inspect.signature(function).parameters.get(name)
    return None if parameter is None or parameter.default is inspect.Parameter.empty else parameter.default


def _check_cells(limits: Limits, n_ticks: int, n_nodes: int) -> None:
    limits.check("max_nodes", n_nodes, f"a fleet of {n_nodes:,} nodes")
    limits.check("max_telemetry_cells", n_ticks * n_nodes, f"{n_ticks:,} telemetry ticks x {n_nodes:,} nodes")
