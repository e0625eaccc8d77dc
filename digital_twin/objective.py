"""The episode objective: weights, cost models and the per-term breakdown (all in USD).

One scalar, lower is better, shared by the env's reward, the evaluator and the oracle:

``objective = cost + sla + qos + eviction + deadline + rejection`` where

* ``cost``: compute cost under the cost model (:data:`PRORATED` or :data:`ACTIVE_NODES`);
* ``sla``: ``sla_violation_usd`` per latency-critical job whose node utilisation
  (background cpu % + our allocated cpu / node cpu x 100) exceeded the SLA threshold at any
  telemetry tick while it ran;
* ``qos``: ``qos_violation_usd`` per latency-critical job ever placed on a spot node;
* ``eviction``: ``eviction_usd`` per job failed by a spot interruption;
* ``deadline``: ``deadline_miss_usd`` per job first started after its deadline;
* ``rejection``: ``rejection_usd`` per job rejected (queue TTL expired, or fits nowhere) and
  per job still queued when the horizon ends the episode (unserved).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from digital_twin.errors import SpecError

PRORATED = "prorated"
"""A running job costs its node's price times its share of the node (GPU share for GPU jobs,
CPU share otherwise), for as long as it runs (also the part lost to an eviction)."""
ACTIVE_NODES = "active-nodes"
"""A node costs its full price whenever at least one of our jobs runs on it (scale to zero)."""
COST_MODELS = (PRORATED, ACTIVE_NODES)


@dataclass(frozen=True, slots=True)
class ObjectiveWeights:
    """Penalty per event, in USD. Each must be finite and >= 0."""

    sla_violation_usd: float = 0.25
    qos_violation_usd: float = 0.25
    eviction_usd: float = 0.50
    deadline_miss_usd: float = 0.25
    rejection_usd: float = 1.00

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise SpecError(f"objective weight {f.name} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class ObjectiveBreakdown:
    """The objective split by term, in USD, plus the event counts behind the penalties."""

    cost_usd: float
    sla_usd: float
    qos_usd: float
    eviction_usd: float
    deadline_usd: float
    rejection_usd: float
    sla_violations: int
    qos_violations: int
    evictions: int
    deadline_misses: int
    rejections: int

    @classmethod
    def from_counts(
        cls,
        cost_usd: float,
        weights: ObjectiveWeights,
        *,
        sla_violations: int,
        qos_violations: int,
        evictions: int,
        deadline_misses: int,
        rejections: int,
    ) -> ObjectiveBreakdown:
        """The breakdown of a compute cost and the penalty event counts under ``weights``."""
        return cls(
            cost_usd=cost_usd,
            sla_usd=sla_violations * weights.sla_violation_usd,
            qos_usd=qos_violations * weights.qos_violation_usd,
            eviction_usd=evictions * weights.eviction_usd,
            deadline_usd=deadline_misses * weights.deadline_miss_usd,
            rejection_usd=rejections * weights.rejection_usd,
            sla_violations=sla_violations,
            qos_violations=qos_violations,
            evictions=evictions,
            deadline_misses=deadline_misses,
            rejections=rejections,
        )

    @property
    def total_usd(self) -> float:
        """The objective: the sum of the six USD terms."""
        return (
            self.cost_usd + self.sla_usd + self.qos_usd
            + self.eviction_usd + self.deadline_usd + self.rejection_usd
        )

    def as_dict(self) -> dict[str, float]:
        """All fields plus ``objective_usd``, as plain floats/ints (JSON-ready)."""
        out: dict[str, float] = {f.name: getattr(self, f.name) for f in _FIELDS}
        out["objective_usd"] = self.total_usd
        return out

    def format_table(self) -> str:
        """A small human-readable table of the terms."""
        rows = [
            ("compute cost", self.cost_usd, ""),
            ("SLA penalty", self.sla_usd, f"{self.sla_violations} jobs"),
            ("QoS penalty", self.qos_usd, f"{self.qos_violations} jobs"),
            ("eviction penalty", self.eviction_usd, f"{self.evictions} jobs"),
            ("deadline penalty", self.deadline_usd, f"{self.deadline_misses} jobs"),
            ("rejection penalty", self.rejection_usd, f"{self.rejections} jobs"),
        ]
        lines = [f"  {name:<18} {usd:>10.4f} USD  {note}".rstrip() for name, usd, note in rows]
        lines.append(f"  {'objective':<18} {self.total_usd:>10.4f} USD")
        return "\n".join(lines)


_FIELDS = fields(ObjectiveBreakdown)
