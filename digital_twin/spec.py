"""The frozen inputs of one twin episode: :class:`TwinSpec`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from digital_twin.contention import INTERFERENCE_MODELS, NO_INTERFERENCE
from digital_twin.errors import SpecError
from digital_twin.fleet import NodeSpec, validate_fleet
from digital_twin.objective import (
    COST_MODELS,
    DEADLINE_AT_FIRST_START,
    DEADLINE_RULES,
    DEFAULT_LATENCY_SLO_FACTOR,
    PRORATED,
    ObjectiveWeights,
)
from digital_twin.telemetry import Telemetry
from digital_twin.workload import Workload


@dataclass(frozen=True, eq=False)
class TwinSpec:
    """Everything fixed about one episode of the twin (the twin's parameters, not its state).

    Attributes:
        fleet: The nodes, in action order.
        jobs: The workload: any iterable of :class:`~digital_twin.jobs.JobSpec` (sorted by
            arrival and checked on construction) or a :class:`~digital_twin.workload.Workload`;
            held as a ``Workload``. Jobs arriving at or after ``horizon_s`` are never submitted.
        telemetry: Background utilisation, one column per fleet node; must cover the horizon.
        horizon_s: The episode covers simulated time ``[0, horizon_s)``.
        queue_ttl_s: A job waiting this long in the queue (since it last entered it) is
            rejected. ``None`` = no TTL (the horizon still ends the wait).
        sla_threshold_pct: A latency-critical job violates the SLA when its node's
            utilisation exceeds this at a telemetry tick while it runs.
        spot_recovery_s: How long an interrupted spot node stays down.
        cost_model: ``"prorated"`` or ``"active-nodes"`` (see :mod:`digital_twin.objective`).
        weights: Penalties per event in USD.
        spot_interruptions: False disables interruptions (for ablations).
        fixed_interruptions_s: Per node, given interruption times (seconds) used instead of
            random draws (for hand-worked instances); only spot nodes may have times.
            Times that fall while the node is down are dropped as for drawn ones.
        interference: How the background load slows our jobs: ``"none"`` or
            ``"processor-sharing"`` (:mod:`digital_twin.contention`).
        deadline_rule: When a job with a deadline is late (the ``deadline`` term):
            ``"first-start"`` (first started after ``deadline_s``, the default) or
            ``"completion"`` (completed after it, or still running at the horizon when that is
            past it; :data:`~digital_twin.objective.DEADLINE_RULES`).
        latency_slo_factor: A latency-critical job's latency SLO is this times its nominal
            duration (the ``utility`` term, :func:`~digital_twin.objective.utility_loss`);
            finite and > 0, default 2.0.
    """

    fleet: tuple[NodeSpec, ...]
    jobs: Workload
    telemetry: Telemetry
    horizon_s: float
    queue_ttl_s: float | None = 1800.0
    sla_threshold_pct: float = 90.0
    spot_recovery_s: float = 600.0
    cost_model: str = PRORATED
    weights: ObjectiveWeights = field(default_factory=ObjectiveWeights)
    spot_interruptions: bool = True
    fixed_interruptions_s: tuple[tuple[float, ...], ...] | None = None
    interference: str = NO_INTERFERENCE
    deadline_rule: str = DEADLINE_AT_FIRST_START
    latency_slo_factor: float = DEFAULT_LATENCY_SLO_FACTOR

    def __post_init__(self) -> None:
        object.__setattr__(self, "fleet", validate_fleet(self.fleet))
        object.__setattr__(self, "jobs", Workload.of(self.jobs))
        if not _positive(self.horizon_s):
            raise SpecError(f"horizon_s must be a positive finite number, got {self.horizon_s!r}")
        if self.queue_ttl_s is not None and not _positive(self.queue_ttl_s):
            raise SpecError(f"queue_ttl_s must be > 0 or None, got {self.queue_ttl_s!r}")
        if not (isinstance(self.sla_threshold_pct, int | float) and 0 < self.sla_threshold_pct <= 200):
            raise SpecError(f"sla_threshold_pct must be in (0, 200], got {self.sla_threshold_pct!r}")
        if not _positive(self.spot_recovery_s):
            raise SpecError(f"spot_recovery_s must be > 0, got {self.spot_recovery_s!r}")
        if self.cost_model not in COST_MODELS:
            raise SpecError(f"cost_model {self.cost_model!r} is not one of {COST_MODELS}")
        if self.interference not in INTERFERENCE_MODELS:
            raise SpecError(f"interference {self.interference!r} is not one of {INTERFERENCE_MODELS}")
        if self.deadline_rule not in DEADLINE_RULES:
            raise SpecError(f"deadline_rule {self.deadline_rule!r} is not one of {DEADLINE_RULES}")
        if not _positive(self.latency_slo_factor):
            raise SpecError(f"latency_slo_factor must be a positive finite number, got {self.latency_slo_factor!r}")
        if self.telemetry.n_nodes != len(self.fleet):
            raise SpecError(
                f"telemetry has {self.telemetry.n_nodes} node columns but the fleet has "
                f"{len(self.fleet)} nodes"
            )
        if self.telemetry.span_s < self.horizon_s:
            raise SpecError(
                f"telemetry ({self.telemetry.source}) covers {self.telemetry.span_s:g} s, "
                f"shorter than the horizon of {self.horizon_s:g} s"
            )

        if self.fixed_interruptions_s is not None:
            self._check_fixed_interruptions(self.fixed_interruptions_s)

    def _check_fixed_interruptions(self, times: tuple[tuple[float, ...], ...]) -> None:
        if len(times) != len(self.fleet):
            raise SpecError(f"fixed_interruptions_s has {len(times)} entries for {len(self.fleet)} nodes")
        for node, node_times in zip(self.fleet, times, strict=True):
            if node_times and not node.is_spot:
                raise SpecError(f"fixed_interruptions_s: node {node.node_id!r} is on-demand")
            if any(not (isinstance(t, int | float) and t >= 0) for t in node_times):
                raise SpecError(f"fixed_interruptions_s: node {node.node_id!r} has a negative or bad time")

    @property
    def n_nodes(self) -> int:
        """Number of nodes in the fleet."""
        return len(self.fleet)

    @property
    def tick_s(self) -> float:
        """Telemetry tick length in seconds."""
        return self.telemetry.tick_s


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
