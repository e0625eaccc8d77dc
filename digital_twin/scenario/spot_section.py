"""The ``spot:`` section's model: Poisson draws (the default) or replayed availability traces.

::

    spot:
      recovery_s: 600             # Poisson: how long a node is down; trace: what a forecaster assumes
      model: trace                # or poisson (each spot node fails at its hourly probability)
      start_s: random             # or seconds into the traces (the same offset for every trace)
      traces:                     # every spot node in exactly one group
        - path: ${ACO_ENV_TRACES}/spot-traces-skypilot-2022-2023/preemption/1-node/aws-04-22-2023/us-west-2b_v100_1.json
          nodes: [node-gpu-05]    # the group replaying it (digital_twin.spot.replay says how)
          instances: 1            # optional: N, else from a `<N>-node` folder in the path, else 1
          convention: available   # optional: or preempted (1 = down, the simulators' convention)

Files are read when the scenario first builds an episode; an error names the scenario file
and the key (``spot.traces[1].nodes``) or the trace file and tick.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from digital_twin.errors import SpecError, short_repr
from digital_twin.fleet import NodeSpec
from digital_twin.scenario.paths import resolve_path
from digital_twin.scenario.schema import Section
from digital_twin.spot.replay import SpotGroup, SpotReplay
from digital_twin.traces.spot_availability import CONVENTIONS, identical_traces, read_spot_trace

SPOT_MODELS = ("poisson", "trace")


@dataclass(frozen=True)
class TraceMapping:
    """One ``spot.traces`` entry: a trace file and the node ids replaying it."""

    where: str
    path: Path
    nodes: tuple[str, ...]
    instances: int | None
    convention: str


@dataclass(frozen=True)
class SpotReplayLoader:
    """Builds the scenario's :class:`~digital_twin.spot.replay.SpotReplay` once its fleet is known."""

    mappings: tuple[TraceMapping, ...]
    start_s: float | None

    def __call__(self, fleet: Sequence[NodeSpec]) -> SpotReplay:
        """Read the traces and map them to ``fleet``'s nodes.

        Raises:
            SpecError: An unknown or on-demand node, a spot node in no group (the key named).
            TraceError: A trace file is missing or malformed (file and tick named).
        """
        index = {node.node_id: i for i, node in enumerate(fleet)}
        groups = []
        for mapping in self.mappings:
            unknown = [name for name in mapping.nodes if name not in index]
            if unknown:
                raise SpecError(f"{mapping.where}.nodes: unknown node(s) {short_repr(unknown)}")
            on_demand = [name for name in mapping.nodes if not fleet[index[name]].is_spot]
            if on_demand:
                shown = short_repr(on_demand)
                raise SpecError(f"{mapping.where}.nodes: {shown} are on-demand (only spot nodes replay)")
            trace = read_spot_trace(mapping.path, mapping.instances, mapping.convention)
            groups.append(SpotGroup(trace, tuple(index[name] for name in mapping.nodes)))
        mapped = {i for group in groups for i in group.nodes}
        unmapped = [node.node_id for i, node in enumerate(fleet) if node.is_spot and i not in mapped]
        if unmapped:
            raise SpecError(f"spot.traces: spot node(s) {short_repr(unmapped)} replay no trace (map each to one)")
        for first, second in identical_traces([group.trace for group in groups]):
            warnings.warn(
                f"{first.path} and {second.path} hold the same spot trace: they replay one sample, not two",
                stacklevel=2,
            )
        return SpotReplay(tuple(groups), len(fleet), self.start_s)


def spot_replay_loader(spot: Section, data_files: list[Path]) -> SpotReplayLoader | None:
    """The section's replay (``model: trace``), or ``None`` for Poisson draws (``model: poisson``)."""
    model = spot.get("model", str, "poisson")
    if model not in SPOT_MODELS:
        raise spot.error("model", f"unknown model {short_repr(model)}; known: {list(SPOT_MODELS)}")
    if model == "poisson":
        for key in ("traces", "start_s"):
            if spot.has(key):
                raise spot.error(key, "is read only with model: trace")
        return None
    for key, problem in (("fixed_interruptions_s", "gives the times itself"), ("interruptions", "turns them off")):
        if spot.has(key):
            raise spot.error(key, f"contradicts model: trace (which replays the interruptions); {key} {problem}")
    entries = spot.get("traces", list, required=True)
    if not entries:
        raise spot.error("traces", "must list at least one trace")
    mappings = tuple(_mapping(Section(entry, spot.file, f"{spot.path('traces')}[{k}]"), data_files)
                     for k, entry in enumerate(entries))
    return SpotReplayLoader(mappings, _start_s(spot))


def _mapping(entry: Section, data_files: list[Path]) -> TraceMapping:
    path = resolve_path(entry, "path", data_files)
    nodes = entry.get("nodes", list, required=True)
    if not nodes or any(not isinstance(name, str) or not name for name in nodes):
        raise entry.error("nodes", f"must be a non-empty list of node ids, got {short_repr(nodes)}")
    if len(set(nodes)) != len(nodes):
        raise entry.error("nodes", f"lists a node twice: {short_repr(nodes)}")
    instances = entry.get("instances", int, None)
    if instances is not None and instances < 1:
        raise entry.error("instances", f"must be >= 1, got {instances}")
    convention = entry.get("convention", str, "available")
    if convention not in CONVENTIONS:
        raise entry.error("convention", f"unknown convention {short_repr(convention)}; known: {list(CONVENTIONS)}")
    entry.finish()
    return TraceMapping(entry.where, path, tuple(nodes), instances, convention)


def _start_s(spot: Section) -> float | None:
    value = spot.get("start_s", (str, float), "random")
    if isinstance(value, str):
        if value != "random":
            raise spot.error("start_s", f"must be 'random' or a number of seconds >= 0, got {short_repr(value)}")
        return None
    if value < 0:
        raise spot.error("start_s", f"must be >= 0, got {value:g}")
    return float(value)
