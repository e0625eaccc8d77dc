"""The settings of an episode: one frozen :class:`EpisodeSettings`, checked once, on construction.

A scenario file states them (:mod:`digital_twin.scenario.loader`), the scenario and every twin
spec built from it hold the same object (:class:`~digital_twin.spec.TwinSpec`), the twin reads
its constants from it (:class:`~digital_twin.sim.constants.TwinConstants`), and online agents see it
in the env's views (``aco_env.ClusterView.settings``). Settings are what the episode is asked
to be; the data it runs on (fleet, jobs, telemetry and its tick) is the spec's.

Example:
    >>> settings = EpisodeSettings(3600.0, queue_ttl_s=None, cost_model="active-nodes")
    >>> settings.active_nodes, settings.tick_grid(300.0).n_ticks
    (True, 12)
    >>> EpisodeSettings(3600.0, sla_threshold_pct=0)
    Traceback (most recent call last):
    ...
    digital_twin.errors.SettingError: sla_threshold_pct must be a number in (0, 200], got 0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from digital_twin.errors import SettingError, positive_number, short_repr
from digital_twin.objective import (
    ACTIVE_NODES,
    COST_MODELS,
    DEADLINE_AT_COMPLETION,
    DEADLINE_AT_FIRST_START,
    DEADLINE_RULES,
    DEFAULT_LATENCY_SLO_FACTOR,
    PRORATED,
    ObjectiveWeights,
)
from digital_twin.tick_grid import TickGrid

NO_INTERFERENCE = "none"
"""Interference model: jobs always run at their nominal speed; the background only feeds the SLA."""
PROCESSOR_SHARING = "processor-sharing"
"""Interference model: jobs share a node's cores with their background load
(:mod:`digital_twin.sim.tables.contention`)."""
INTERFERENCE_MODELS = (NO_INTERFERENCE, PROCESSOR_SHARING)


@dataclass(frozen=True, slots=True)
class EpisodeSettings:
    """How an episode is posed: its horizon, queue, SLA, spot, cost, physics and objective rules.

    Every field but ``horizon_s`` has a default; each is checked on construction (a
    :class:`~digital_twin.errors.SettingError` names the field). Derived values are properties.

    Attributes:
        horizon_s: The episode covers simulated time ``[0, horizon_s)``, seconds (finite, > 0).
            Jobs arriving at or after it are never submitted.
        queue_ttl_s: A job waiting this long in the queue (since it last entered it) is
            rejected, seconds (> 0). ``None``: no TTL (the horizon still ends the wait).
        sla_threshold_pct: A running latency-critical job violates the SLA when its node's
            utilisation exceeds this at a telemetry tick, % in (0, 200].
        spot_recovery_s: How long an interrupted spot node stays down, seconds (> 0).
        spot_interruptions: False disables spot interruptions (for ablations).
        cost_model: ``"prorated"`` or ``"active-nodes"`` (:data:`~digital_twin.objective.COST_MODELS`).
        interference: How the background load slows our jobs: ``"none"`` or
            ``"processor-sharing"`` (:mod:`digital_twin.sim.tables.contention`).
        deadline_rule: When a job with a deadline is late: ``"first-start"`` (first started
            after its deadline) or ``"completion"`` (completed after it, or still running at a
            horizon past it); :data:`~digital_twin.objective.DEADLINE_RULES`.
        latency_slo_factor: A latency-critical job's latency SLO is this times its nominal
            duration (the ``utility`` term, :func:`~digital_twin.sim.measures.utility_loss`); > 0.
        weights: USD per counted unit of each penalty term.
        start_hour: Hour of day at simulated time 0 (the env's clock features; the twin does
            not read it), finite.
        energy_accounting: Whether the twin integrates power into energy and emissions
            (:mod:`digital_twin.sim.features.energy_accounting`; the ``energy`` and ``carbon`` terms and the
            ``node_energy_kwh`` / ``node_carbon_kg`` metrics). False skips it (the counts stay
            0; a weight on either term is then refused).
    """

    horizon_s: float
    queue_ttl_s: float | None = 1800.0
    sla_threshold_pct: float = 90.0
    spot_recovery_s: float = 600.0
    spot_interruptions: bool = True
    cost_model: str = PRORATED
    interference: str = NO_INTERFERENCE
    deadline_rule: str = DEADLINE_AT_FIRST_START
    latency_slo_factor: float = DEFAULT_LATENCY_SLO_FACTOR
    weights: ObjectiveWeights = field(default_factory=ObjectiveWeights)
    start_hour: float = 0.0
    energy_accounting: bool = True

    def __post_init__(self) -> None:
        positive_number(self.horizon_s, "horizon_s")
        if self.queue_ttl_s is not None:
            positive_number(self.queue_ttl_s, "queue_ttl_s")
        sla = self.sla_threshold_pct
        if isinstance(sla, bool) or not isinstance(sla, int | float) or not 0 < sla <= 200:
            raise SettingError("sla_threshold_pct", f"must be a number in (0, 200], got {short_repr(sla)}")
        positive_number(self.spot_recovery_s, "spot_recovery_s")
        interruptions = self.spot_interruptions
        if not isinstance(interruptions, bool):
            raise SettingError("spot_interruptions", f"must be true or false, got {short_repr(interruptions)}")
        _one_of("cost_model", self.cost_model, COST_MODELS)
        _one_of("interference", self.interference, INTERFERENCE_MODELS)
        _one_of("deadline_rule", self.deadline_rule, DEADLINE_RULES)
        positive_number(self.latency_slo_factor, "latency_slo_factor")
        if not isinstance(self.weights, ObjectiveWeights):
            raise SettingError("weights", f"must be an ObjectiveWeights, got {type(self.weights).__name__}")
        hour = self.start_hour
        if isinstance(hour, bool) or not isinstance(hour, int | float) or not math.isfinite(hour):
            raise SettingError("start_hour", f"must be a finite number, got {short_repr(hour)}")
        accounting = self.energy_accounting
        if not isinstance(accounting, bool):
            raise SettingError("energy_accounting", f"must be true or false, got {short_repr(accounting)}")
        if not accounting and (self.weights.energy_usd_per_kwh or self.weights.carbon_usd_per_kg):
            raise SettingError("energy_accounting", "is false, but the weights charge energy or carbon")

    @property
    def active_nodes(self) -> bool:
        """True under the active-nodes cost model, False under the prorated one."""
        return self.cost_model == ACTIVE_NODES

    @property
    def contention(self) -> bool:
        """True when jobs are slowed by cpu contention (processor sharing)."""
        return self.interference == PROCESSOR_SHARING

    @property
    def deadline_at_completion(self) -> bool:
        """True when lateness is judged at completion (or the horizon), False when at the first start."""
        return self.deadline_rule == DEADLINE_AT_COMPLETION

    @property
    def penalty_weights(self) -> tuple[float, ...]:
        """USD per counted unit of each penalty term, in :data:`~digital_twin.objective.PENALTIES` order."""
        return self.weights.per_term()

    def tick_grid(self, tick_s: float) -> TickGrid:
        """The episode's ticks under telemetry of ``tick_s`` seconds (:mod:`digital_twin.tick_grid`)."""
        return TickGrid(self.horizon_s, tick_s)


def _one_of(name: str, value: object, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise SettingError(name, f"must be one of {tuple(allowed)}, got {short_repr(value)}")
