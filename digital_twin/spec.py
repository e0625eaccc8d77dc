"""The frozen inputs of one twin episode: :class:`TwinSpec`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from digital_twin.energy.model import EnergyModel, default_energy_model
from digital_twin.episode_settings import EpisodeSettings
from digital_twin.errors import SpecError
from digital_twin.fleet import NodeSpec, validate_fleet
from digital_twin.identity_cache import IdentityCache
from digital_twin.placement.rules import PlacementRules
from digital_twin.telemetry import Telemetry
from digital_twin.tick_grid import TickGrid
from digital_twin.workload import Workload

default_energy_model_of: IdentityCache[tuple[NodeSpec, ...], EnergyModel] = IdentityCache(default_energy_model)
"""The default energy model of a fleet, per fleet tuple (an env's episodes share the fleet)."""


@dataclass(frozen=True, eq=False)
class TwinSpec:
    """Everything fixed about one episode of the twin (the twin's parameters, not its state).

    Example:
        >>> from digital_twin import default_fleet
        >>> spec = TwinSpec(default_fleet(), (), Telemetry.constant(5, 30, 40, 3600, 300), EpisodeSettings(3600))
        >>> spec.grid.n_ticks, spec.settings.queue_ttl_s
        (12, 1800.0)

    Attributes:
        fleet: The nodes, in action order.
        jobs: The workload: any iterable of :class:`~digital_twin.jobs.JobSpec` (sorted by
            arrival and checked on construction) or a :class:`~digital_twin.workload.Workload`;
            held as a ``Workload``. Jobs arriving at or after the horizon are never submitted.
        telemetry: Background utilisation, one column per fleet node; must have a row for every
            tick of the horizon (:attr:`grid`).
        settings: The episode's settings (horizon, queue TTL, SLA threshold, spot recovery,
            cost model, interference, objective rules and weights).
        fixed_interruptions_s: Per node, given interruption times (seconds) used instead of
            random draws (for hand-worked instances); only spot nodes may have times.
            Times that fall while the node is down are dropped as for drawn ones.
        energy: Each node's power and its grid's carbon intensity
            (:class:`~digital_twin.energy.model.EnergyModel`); ``None``: the fleet's
            :func:`~digital_twin.energy.model.default_energy_model`.
        rules: Placement rules: node labels and taints, job labels, affinity, anti-affinity and
            spread (:mod:`digital_twin.placement.rules`); ``None``: none.
        fixed_recoveries_s: With ``fixed_interruptions_s``, the time each of its interruptions
            ends (same shape, each after its interruption; ``math.inf``: never, or not known
            to be), as replayed spot traces give them; ``None``: each ends
            ``settings.spot_recovery_s`` after it.
    """

    fleet: tuple[NodeSpec, ...]
    jobs: Workload
    telemetry: Telemetry
    settings: EpisodeSettings
    fixed_interruptions_s: tuple[tuple[float, ...], ...] | None = None
    energy: EnergyModel | None = None
    rules: PlacementRules | None = None
    fixed_recoveries_s: tuple[tuple[float, ...], ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "fleet", validate_fleet(self.fleet))
        object.__setattr__(self, "jobs", Workload.of(self.jobs))
        if not isinstance(self.settings, EpisodeSettings):
            raise SpecError(f"settings must be an EpisodeSettings, got {type(self.settings).__name__}")
        if self.telemetry.n_nodes != len(self.fleet):
            raise SpecError(
                f"telemetry has {self.telemetry.n_nodes} node columns but the fleet has "
                f"{len(self.fleet)} nodes"
            )
        if self.telemetry.n_ticks < self.grid.n_ticks:
            raise SpecError(
                f"telemetry ({self.telemetry.source}) covers {self.telemetry.span_s:g} s, "
                f"shorter than the horizon of {self.settings.horizon_s:g} s"
            )
        if self.fixed_interruptions_s is not None:
            self._check_fixed_interruptions(self.fixed_interruptions_s)
        if self.fixed_recoveries_s is not None:
            self._check_fixed_recoveries(self.fixed_interruptions_s, self.fixed_recoveries_s)
        if self.energy is not None:
            if not isinstance(self.energy, EnergyModel):
                raise SpecError(f"energy must be an EnergyModel, got {type(self.energy).__name__}")
            self.energy.check_fleet(self.fleet)
        if self.rules is not None and not isinstance(self.rules, PlacementRules):
            raise SpecError(f"rules must be a PlacementRules, got {type(self.rules).__name__}")

    @property
    def energy_model(self) -> EnergyModel:
        """``energy``, or the fleet's default model when it is ``None`` (built once per fleet)."""
        return self.energy if self.energy is not None else default_energy_model_of(self.fleet)

    def _check_fixed_interruptions(self, times: tuple[tuple[float, ...], ...]) -> None:
        if len(times) != len(self.fleet):
            raise SpecError(f"fixed_interruptions_s has {len(times)} entries for {len(self.fleet)} nodes")
        for node, node_times in zip(self.fleet, times, strict=True):
            if node_times and not node.is_spot:
                raise SpecError(f"fixed_interruptions_s: node {node.node_id!r} is on-demand")
            if any(not (isinstance(t, int | float) and t >= 0) for t in node_times):
                raise SpecError(f"fixed_interruptions_s: node {node.node_id!r} has a negative or bad time")

    def _check_fixed_recoveries(
        self, times: tuple[tuple[float, ...], ...] | None, ends: tuple[tuple[float, ...], ...]
    ) -> None:
        if times is None:
            raise SpecError("fixed_recoveries_s needs fixed_interruptions_s")
        for node, node_times, node_ends in zip(self.fleet, times, ends, strict=False):
            if len(node_ends) != len(node_times):
                raise SpecError(
                    f"fixed_recoveries_s: node {node.node_id!r} has {len(node_ends)} recoveries "
                    f"for {len(node_times)} interruptions"
                )
            pairs = zip(node_times, node_ends, strict=True)
            if any(not (isinstance(end, int | float) and end > t) for t, end in pairs):
                raise SpecError(f"fixed_recoveries_s: node {node.node_id!r} has a recovery not after its interruption")
        if len(ends) != len(times):
            raise SpecError(f"fixed_recoveries_s has {len(ends)} entries for {len(self.fleet)} nodes")

    def with_settings(self, **changes: Any) -> TwinSpec:
        """A copy whose settings have ``changes`` (:class:`EpisodeSettings` fields, checked again).

        >>> from digital_twin import default_fleet
        >>> spec = TwinSpec(default_fleet(), (), Telemetry.constant(5, 0, 0, 600, 300), EpisodeSettings(600))
        >>> spec.with_settings(interference="processor-sharing").settings.contention
        True
        """
        return dataclasses.replace(self, settings=dataclasses.replace(self.settings, **changes))

    @property
    def n_nodes(self) -> int:
        """Number of nodes in the fleet."""
        return len(self.fleet)

    @property
    def tick_s(self) -> float:
        """Telemetry tick length in seconds."""
        return self.telemetry.tick_s

    @cached_property
    def grid(self) -> TickGrid:
        """The episode's ticks: the settings' horizon on the telemetry's tick (:mod:`digital_twin.tick_grid`)."""
        return self.settings.tick_grid(self.telemetry.tick_s)
