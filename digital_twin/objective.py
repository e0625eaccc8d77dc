"""The episode objective: its terms, their weights, the cost models and the breakdown (all in USD).

One scalar, lower is better, shared by the env's reward, the evaluator and the oracle:
``objective = cost + sum over PENALTIES of count x weight``. :data:`PENALTIES` is the one table
of penalty terms: the twin counts each, and the metrics, the leaderboard, the plots and the
TensorBoard keys all derive from it. A new term is a row here (and a field of
:class:`ObjectiveWeights`), the place in the twin where it is counted, and its model in the
oracle.

* ``cost``: compute cost under the cost model (:data:`PRORATED` or :data:`ACTIVE_NODES`);
* one term per :data:`PENALTIES` row (its ``rule`` says what is counted, its ``unit`` in what).

Most terms are sums over events, so their counts only grow during an episode. ``unfairness``
is an episode-level measure (:func:`digital_twin.sim.measures.unfairness`) of per-class tallies that change as jobs
arrive and end: its count, and so the objective accrued so far, can go down (a step's reward
can then be positive); the final value is what the episode scores. :attr:`PenaltyTerm.monotone`
tells the two kinds apart. Two settings of the episode (:class:`~digital_twin.spec.TwinSpec`) shape
terms: ``deadline_rule`` (:data:`DEADLINE_RULES`) and ``latency_slo_factor`` (the ``utility``
term's SLO, :func:`digital_twin.sim.measures.utility_loss`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

from digital_twin.errors import SpecError
from digital_twin.jobs import WORKLOAD_TYPES

PRORATED = "prorated"
"""A running job costs its node's price times its share of the node (GPU share for GPU jobs,
CPU share otherwise), for as long as it runs (also the part lost to an eviction)."""
ACTIVE_NODES = "active-nodes"
"""A node costs its full price whenever at least one of our jobs runs on it (scale to zero)."""
COST_MODELS = (PRORATED, ACTIVE_NODES)


def prorated_share(job_gpus: float, job_cores: float, node_gpus: float, node_cores: float) -> float:
    """The share of a node's price that :data:`PRORATED` charges a job.

    Its GPUs over the node's for a GPU job (``inf`` on a node without GPUs), its cpu cores over the
    node's otherwise. The twin charges the same rule in its own units and order of operations
    (:func:`digital_twin.sim.event_handlers.job_rate_usd_per_s`: whole millicores, price first),
    which fix its objective's bits; a change to the rule changes both.

    >>> prorated_share(1, 8, 4, 32), prorated_share(0, 8, 4, 32)
    (0.25, 0.25)
    """
    if job_gpus:
        return job_gpus / node_gpus if node_gpus else math.inf
    return job_cores / node_cores

DEADLINE_AT_FIRST_START = "first-start"
"""A job is late when it first starts after its deadline (the default)."""
DEADLINE_AT_COMPLETION = "completion"
"""A job is late when its run completes after its deadline, or it is still running at the horizon
and the horizon is past its deadline; failed and rejected jobs are never late (they pay their
own penalties)."""
DEADLINE_RULES = (DEADLINE_AT_FIRST_START, DEADLINE_AT_COMPLETION)
DEFAULT_LATENCY_SLO_FACTOR = 2.0
"""A latency-critical job's latency SLO is this times its nominal duration (default)."""


@dataclass(frozen=True, slots=True)
class PenaltyTerm:
    """One penalty term of the objective: what is counted, in what unit, at which weight.

    Attributes:
        name: Short name; the term's USD key is ``<name>_usd`` (e.g. ``sla_usd``).
        title: Human-readable name, for tables (``"SLA penalty"``).
        count_key: Key of the count in metrics and results (``"sla_violations"``).
        weight_key: The :class:`ObjectiveWeights` field with the USD per counted unit.
        unit: What one counted unit is (``"jobs"``).
        rule: What the twin counts, in one sentence.
        integral: Whether the count is a whole number (of jobs); ``False`` for a duration or a
            fraction.
        monotone: Whether the count only grows during an episode (a sum over events); ``False``
            for an episode-level measure, recomputed as jobs arrive and end, that can go down.
    """

    name: str
    title: str
    count_key: str
    weight_key: str
    unit: str
    rule: str
    integral: bool = True
    monotone: bool = True

    @property
    def usd_key(self) -> str:
        """Key of the term's USD amount in metrics and results (``"<name>_usd"``)."""
        return f"{self.name}_usd"


PENALTIES: tuple[PenaltyTerm, ...] = (
    PenaltyTerm(
        "sla", "SLA penalty", "sla_violations", "sla_violation_usd", "jobs",
        "latency-critical jobs whose node utilisation (background cpu % + our allocated cpu / node cpu "
        "x 100) exceeded the SLA threshold at a telemetry tick while they ran (once per job)",
    ),
    PenaltyTerm(
        "qos", "QoS penalty", "qos_violations", "qos_violation_usd", "jobs",
        "latency-critical jobs ever placed on a spot node (once per job)",
    ),
    PenaltyTerm(
        "eviction", "eviction penalty", "evictions", "eviction_usd", "jobs", "jobs failed by a spot interruption"
    ),
    PenaltyTerm(
        "deadline", "deadline penalty", "deadline_misses", "deadline_miss_usd", "jobs",
        "jobs late by the episode's deadline_rule: first-start (the default), first started after their "
        "deadline; completion, completed after their deadline or still running at the horizon when it is "
        "past their deadline (failed and rejected jobs are not late)",
    ),
    PenaltyTerm(
        "rejection", "rejection penalty", "rejections", "rejection_usd", "jobs",
        "jobs rejected (queue TTL expired, or fits on no node) and jobs still queued when the horizon "
        "ends the episode (unserved)",
    ),
    PenaltyTerm(
        "wait", "waiting cost", "wait_job_hours", "wait_usd_per_job_hour", "job-hours",
        "hours each job spent queued, over every queue spell: from its arrival, or from the eviction that "
        "requeued it, to its next start or until it left the queue (rejected, or the horizon)",
        integral=False,
    ),
    PenaltyTerm(
        "utility", "lost utility", "utility_lost", "utility_loss_usd", "jobs",
        "latency-critical jobs' lost SLO utility 1 - u(latency / SLO), SLO = latency_slo_factor x nominal "
        "duration, u = 1 up to 1, linear down to 0 at 2 (latency = completion - arrival); 1 for a job "
        "failed, rejected or queued at the horizon, 1 - u((horizon - arrival) / SLO) for one running then",
        integral=False,
    ),
    PenaltyTerm(
        "unfairness", "unfairness", "unfairness", "unfairness_usd", "(1 - Jain)",
        "1 - Jain's index over the workload classes with a submitted job of each class's mean normalised "
        "service: nominal work done / (end - arrival) at completion, or at the horizon for a running job; "
        "0 for a job rejected, failed or queued at the horizon",
        integral=False,
        monotone=False,
    ),
    PenaltyTerm(
        "energy", "energy", "energy_kwh", "energy_usd_per_kwh", "kWh",
        "energy our jobs add to their nodes' draw: the node's power with them minus without them "
        "(power curve of cpu utilisation, busy minus idle GPU power), over time "
        "(digital_twin/energy/model.py)",
        integral=False,
    ),
    PenaltyTerm(
        "carbon", "carbon", "carbon_kg", "carbon_usd_per_kg", "kg CO2eq",
        "emissions of that energy: its power times its node's grid carbon intensity, over time",
        integral=False,
    ),
    PenaltyTerm(
        "preferences", "broken preferences", "preference_violations", "preference_violation_usd", "weight",
        "soft placement rules a start breaks, each counting its weight (1 unless given): preferred node "
        "affinity and pod anti-affinity terms, ScheduleAnyway spread constraints, untolerated PreferNoSchedule "
        "taints (digital_twin/placement/rules.py)",
        integral=False,
    ),
    PenaltyTerm(
        "workflow", "workflow time", "workflow_hours", "workflow_usd_per_hour", "weighted hours",
        "each workflow's weight x hours from its submission (its first task's arrival) to its last task's "
        "completion; a workflow that fails (a task failed or rejected) or is unfinished at the horizon counts "
        "until the horizon (digital_twin/sim/tables/workflow_events.py)",
        integral=False,
    ),
    PenaltyTerm(
        "workflow_deadline", "late workflows", "late_workflows", "workflow_deadline_miss_usd", "workflows",
        "workflows that complete after their deadline, or fail or are unfinished at the horizon when their "
        "deadline is before it",
    ),
)
"""The penalty terms, in the order they are summed after the compute cost."""

PENALTY_INDEX: dict[str, int] = {term.name: k for k, term in enumerate(PENALTIES)}
"""Term name -> its index in :data:`PENALTIES` (and in the twin's counts)."""

COST_KEY = "cost_usd"
OBJECTIVE_KEY = "objective_usd"
USD_KEYS: tuple[str, ...] = (COST_KEY, *(term.usd_key for term in PENALTIES))
"""The USD terms of the objective, in summation order."""
COUNT_KEYS: tuple[str, ...] = tuple(term.count_key for term in PENALTIES)
BREAKDOWN_KEYS: tuple[str, ...] = (*USD_KEYS, *COUNT_KEYS, OBJECTIVE_KEY)
"""The keys of :meth:`ObjectiveBreakdown.as_dict`, in order."""


@dataclass(frozen=True, slots=True)
class ObjectiveWeights:
    """USD per counted unit of each penalty term (one field per :data:`PENALTIES` ``weight_key``).

    Each must be finite and >= 0.
    """

    sla_violation_usd: float = 0.25
    qos_violation_usd: float = 0.25
    eviction_usd: float = 0.50
    deadline_miss_usd: float = 0.25
    rejection_usd: float = 1.00
    wait_usd_per_job_hour: float = 0.0
    utility_loss_usd: float = 0.0
    unfairness_usd: float = 0.0
    energy_usd_per_kwh: float = 0.0
    carbon_usd_per_kg: float = 0.0
    preference_violation_usd: float = 0.0
    workflow_usd_per_hour: float = 0.0
    workflow_deadline_miss_usd: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise SpecError(f"objective weight {f.name} must be a finite number >= 0, got {value!r}")

    def per_term(self) -> tuple[float, ...]:
        """The weights in :data:`PENALTIES` order."""
        return tuple(getattr(self, term.weight_key) for term in PENALTIES)


@dataclass(frozen=True, slots=True)
class ObjectiveBreakdown:
    """The objective split by term: the compute cost and, per :data:`PENALTIES` term, its count.

    Attributes:
        cost_usd: Compute cost in USD.
        counts: ``(len(PENALTIES),)`` counted units per penalty term, in table order (whole
            jobs for most terms; floats for ``wait`` (job-hours), ``utility`` (jobs' utility)
            and ``unfairness`` (in [0, 1), the current value of an episode-level measure: during
            an episode it may be lower than at an earlier time, see :attr:`PenaltyTerm.monotone`).
        weights: ``(len(PENALTIES),)`` USD per unit, in table order.

    Read a term by key (``breakdown["sla_usd"]``, ``breakdown["rejections"]``; any of
    :data:`BREAKDOWN_KEYS`) or all at once with :meth:`as_dict`.
    """

    cost_usd: float
    counts: tuple[int | float, ...]
    weights: tuple[float, ...]

    @classmethod
    def of(cls, cost_usd: float, weights: ObjectiveWeights, counts: Sequence[int | float]) -> ObjectiveBreakdown:
        """The breakdown of a compute cost and the penalty counts (in :data:`PENALTIES` order)."""
        if len(counts) != len(PENALTIES):
            raise ValueError(f"expected {len(PENALTIES)} penalty counts ({', '.join(COUNT_KEYS)}), got {len(counts)}")
        return cls(cost_usd, tuple(counts), weights.per_term())

    @property
    def penalties_usd(self) -> tuple[float, ...]:
        """USD per penalty term, in :data:`PENALTIES` order."""
        return tuple(count * weight for count, weight in zip(self.counts, self.weights, strict=True))

    @property
    def total_usd(self) -> float:
        """The objective: the compute cost plus the penalty terms, summed in table order."""
        total = self.cost_usd
        for usd in self.penalties_usd:
            total += usd
        return total

    def __getitem__(self, key: str) -> float:
        """One value by its :data:`BREAKDOWN_KEYS` key (e.g. ``"sla_usd"``, ``"evictions"``)."""
        try:
            return self.as_dict()[key]
        except KeyError:
            raise KeyError(f"{key!r} is not an objective key; known: {', '.join(BREAKDOWN_KEYS)}") from None

    def as_dict(self) -> dict[str, float]:
        """Every :data:`BREAKDOWN_KEYS` key: USD terms, counts and ``objective_usd`` (JSON-ready)."""
        out: dict[str, float] = {COST_KEY: self.cost_usd}
        out.update(zip(USD_KEYS[1:], self.penalties_usd, strict=True))
        out.update(zip(COUNT_KEYS, self.counts, strict=True))
        out[OBJECTIVE_KEY] = self.total_usd
        return out

    def format_table(self) -> str:
        """A small human-readable table of the terms."""
        rows = [("compute cost", self.cost_usd, "")]
        rows += [
            (term.title, usd, f"{count:g} {term.unit}")
            for term, usd, count in zip(PENALTIES, self.penalties_usd, self.counts, strict=True)
        ]
        lines = [f"  {name:<18} {usd:>10.4f} USD  {note}".rstrip() for name, usd, note in rows]
        lines.append(f"  {'objective':<18} {self.total_usd:>10.4f} USD")
        return "\n".join(lines)


N_CLASSES = len(WORKLOAD_TYPES)
"""The workload classes the ``unfairness`` term compares (``WORKLOAD_TYPES`` order)."""
