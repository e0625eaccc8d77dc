"""The twin's mutable state: the core (:class:`~digital_twin.sim.core.CoreState`) and the episode's features.

Only the simulator (:mod:`digital_twin.sim.twin`, :mod:`digital_twin.sim.event_loop`,
:mod:`digital_twin.sim.event_handlers` and the features' hooks) changes a :class:`TwinState`;
the fixed inputs it is read against are in :class:`~digital_twin.sim.constants.TwinConstants`.
Everything is kept in plain Python lists indexed by node or job (the event loop reads them at
every event), and resources are in whole units (millicores, MiB, GPUs) so that allocation and
release are exact.

A feature is switched on by its entry in :data:`FEATURES` (docs/architecture.md, "Layout").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

from digital_twin.objective import N_CLASSES, PENALTIES
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import CoreState, Feature, Runs
from digital_twin.sim.features.energy_accounting import EnergyState
from digital_twin.sim.features.gpus import GpuTally
from digital_twin.sim.features.outages import Outages
from digital_twin.sim.features.rule_events import RuleState
from digital_twin.sim.features.work_clocks import WorkClocks
from digital_twin.sim.features.workflow_handlers import WorkflowState
from digital_twin.sim.job_queue import JobQueue
from digital_twin.sim.job_states import JobStates
from digital_twin.sim.nodes import NodeState

FeatureFactory = Callable[[TwinConstants], Feature | None]
"""Builds a feature's state at time 0 for an episode, or ``None`` when the episode does without it."""

FEATURES: list[FeatureFactory] = [GpuTally.of, RuleState.of, EnergyState.of, WorkflowState.of]
"""The features, in the order their hooks run: each factory switches its feature on (or not) for an
episode from its constants. A new feature adds its factory here."""


@dataclass(slots=True, eq=False)
class TwinState(CoreState):
    """Everything that changes during an episode: the core, and the features it switches on.

    The features it holds are in ``features`` (in :data:`FEATURES` order, their hooks' order);
    the built-in ones are also named, for the views that read them (``None`` when off).
    """

    runs: Runs
    """When runs complete: nominal (:class:`~digital_twin.sim.core.Runs`), or on work clocks
    (:class:`~digital_twin.sim.features.work_clocks.WorkClocks`) when ``TwinConstants.clocked``."""
    outages: Outages
    """The episode's spot outages (drawn or given at reset, never changed)."""
    gpus: GpuTally
    """GPUs allocated, fragmented and free, now and integrated (:mod:`digital_twin.sim.features.gpus`)."""
    energy: EnergyState | None
    """The nodes' power, energy and emissions; ``None`` without energy accounting."""
    rules: RuleState | None
    """The placement rules' tallies; ``None`` without rules."""
    workflows: WorkflowState | None
    """The workflows' progress; ``None`` when every job is independent."""
    features: list[Feature]
    """Every feature on in this episode, in hook order."""

    @classmethod
    def initial(cls, constants: TwinConstants, outages: Outages, record_events: bool) -> TwinState:
        """The state at time 0: empty nodes, all up, every job in the future, nothing scheduled.

        No decision is asked yet (``current`` -1, ``done`` True) until the simulation is run.
        """
        c = constants
        features = [feature for make in FEATURES if (feature := make(c)) is not None]
        gpus, energy, rules, workflows = _built_in(features)
        return cls(
            time_s=0.0,
            current=-1,
            done=True,
            nodes=NodeState.initial(c),
            jobs=JobStates.initial(c.n_jobs),
            queue=JobQueue(c.n_jobs),
            gained_nodes=[],
            heap=[],
            seq=0,
            next_arrival=0,
            next_tick=0,
            events=[] if record_events else None,
            cost_usd=0.0,
            cost_rate_usd_per_s=0.0,
            alloc_cpu_m=0,
            alloc_cpu_m_s=0.0,
            counts=[0.0] * len(PENALTIES),
            wait_sum_s=0.0,
            started_jobs=0,
            class_jobs=[0] * N_CLASSES,
            class_service=[0.0] * N_CLASSES,
            unfairness_stale=False,
            decisions=[],
            runs=WorkClocks.of(c) if c.clocked else Runs(),
            outages=outages,
            gpus=gpus,
            energy=energy,
            rules=rules,
            workflows=workflows,
            features=features,
        )

    def copy(self) -> TwinState:
        """An independent copy, O(nodes + jobs).

        Every list is copied (the lists of lists too), the queue and each feature; the outages,
        the items of the other lists and the tables the features read are immutable and shared.
        """
        features = [feature.copy() for feature in self.features]
        gpus, energy, rules, workflows = _built_in(features)
        return TwinState(
            time_s=self.time_s,
            current=self.current,
            done=self.done,
            nodes=self.nodes.copy(),
            jobs=self.jobs.copy(),
            queue=self.queue.copy(),
            gained_nodes=self.gained_nodes.copy(),
            heap=self.heap.copy(),
            seq=self.seq,
            next_arrival=self.next_arrival,
            next_tick=self.next_tick,
            events=None if self.events is None else self.events.copy(),
            cost_usd=self.cost_usd,
            cost_rate_usd_per_s=self.cost_rate_usd_per_s,
            alloc_cpu_m=self.alloc_cpu_m,
            alloc_cpu_m_s=self.alloc_cpu_m_s,
            counts=self.counts.copy(),
            wait_sum_s=self.wait_sum_s,
            started_jobs=self.started_jobs,
            class_jobs=self.class_jobs.copy(),
            class_service=self.class_service.copy(),
            unfairness_stale=self.unfairness_stale,
            decisions=self.decisions.copy(),
            runs=self.runs.copy(),
            outages=self.outages,
            gpus=gpus,
            energy=energy,
            rules=rules,
            workflows=workflows,
            features=features,
        )

    def __reduce__(self) -> tuple[type[TwinState], tuple[object, ...]]:
        """Pickle field by field: compiled (:mod:`digital_twin.native`), the class has no default pickling."""
        return TwinState, tuple(getattr(self, field.name) for field in fields(TwinState))

    def penalty_counts(self) -> list[float]:
        """``counts`` with the terms kept lazily brought up to date (the list itself: do not change it).

        ``unfairness`` is a function of the per-class tallies, not a sum over events, and the
        tallies change at every arrival and completion: it is recomputed here, when read and
        only if they changed, rather than at each of those events (the twin's hot path). The
        features write theirs here for the same reason (``energy`` and ``carbon``: our jobs' kWh
        and kg so far).
        """
        counts = self.counts
        for feature in self.features:
            feature.count(counts)
        self.refresh_unfairness()
        return counts


def ordered_features(s: TwinState) -> list[Feature]:
    """``s``'s features once its built-in ones were replaced (a continued state).

    The built-in ones in :data:`FEATURES`' default order, then the others of ``s.features``.
    """
    built_in = [feature for feature in (s.gpus, s.rules, s.energy, s.workflows) if feature is not None]
    others = [
        feature for feature in s.features
        if not isinstance(feature, GpuTally | RuleState | EnergyState | WorkflowState)
    ]  # fmt: skip
    return built_in + others


def _built_in(
    features: list[Feature],
) -> tuple[GpuTally, EnergyState | None, RuleState | None, WorkflowState | None]:
    """The built-in features among ``features``: the GPU tallies (always on), energy, rules, workflows."""
    gpus: GpuTally | None = None
    energy: EnergyState | None = None
    rules: RuleState | None = None
    workflows: WorkflowState | None = None
    for feature in features:
        if isinstance(feature, GpuTally):
            gpus = feature
        elif isinstance(feature, EnergyState):
            energy = feature
        elif isinstance(feature, RuleState):
            rules = feature
        elif isinstance(feature, WorkflowState):
            workflows = feature
    if gpus is None:
        raise ValueError("FEATURES must keep the GPU tallies (every episode's metrics read them)")
    return gpus, energy, rules, workflows
