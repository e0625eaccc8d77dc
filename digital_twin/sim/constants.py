"""The twin's per-episode constants: one frozen :class:`TwinConstants`, derived from a :class:`TwinSpec`.

The simulator (:mod:`digital_twin.sim.event_loop`, :mod:`digital_twin.sim.event_handlers`) and the views
(:mod:`digital_twin.sim.twin_views`) share one instance; only :class:`~digital_twin.sim.state.TwinState`
changes during an episode. Resources are in whole units (millicores, MiB, GPUs) so that
allocation and release are exact, and every per-node or per-job sequence is a plain list or
tuple indexed by node or job (the event loop reads them at every event: list indexing is what
is fast in CPython). Nothing changes them. Those the event loop reads at every event are typed
``list`` (the compiled core then indexes them directly, not through the sequence protocol); the
others are typed read-only (``Sequence``).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

import numpy as np

from digital_twin.energy.model import EnergyModel
from digital_twin.episode_settings import EpisodeSettings
from digital_twin.fleet import NodeSpec
from digital_twin.identity_cache import IdentityCache
from digital_twin.jobs import WORKLOAD_TYPES
from digital_twin.sim.tables.background import BackgroundRows
from digital_twin.sim.tables.energy_constants import EnergyConstants
from digital_twin.sim.tables.gpu_fragmentation import GpuJobMix, gpu_job_mix
from digital_twin.sim.tables.interference import InterferenceTables
from digital_twin.sim.tables.rule_checks import RuleTables
from digital_twin.sim.tables.rule_tables import compile_rules
from digital_twin.sim.tables.workflow_events import WorkflowTables
from digital_twin.spec import TwinSpec
from digital_twin.telemetry import CPU, Telemetry

LATENCY_CRITICAL: Final = WORKLOAD_TYPES.index("latency-critical")
"""Index of the latency-critical workload type (in ``TwinConstants.type_index`` and the running counts)."""

Shape = tuple[int, int, int, float, tuple[str, ...] | None, str | None]
"""What decides the nodes a job can ever run on (jobs of one shape share candidates): millicores,
MiB, GPUs, VRAM per GPU in GB, allowed GPU models (``None``: any), required arch (``None``: any)."""


@dataclass(frozen=True, slots=True, eq=False)
class TwinConstants:
    """Everything the simulator reads but never changes during an episode (build with :meth:`of`).

    ``N`` is the number of nodes, ``M`` the number of jobs, ``T`` the number of telemetry ticks.
    Job indices are indices into ``spec.jobs`` (sorted by arrival), node indices into ``spec.fleet``.

    Attributes:
        n_nodes: ``N``.
        n_jobs: ``M``.
        node_ids: ``(N,)`` node names, for the event log.
        job_ids: ``(M,)`` job names, for the event log.
        cpu_m: ``(N,)`` allocatable millicores per node.
        mem_mib: ``(N,)`` allocatable MiB per node.
        gpus: ``(N,)`` GPUs per node.
        price_per_s: ``(N,)`` node price in USD per second.
        is_spot: ``(N,)`` whether the node is a spot node.
        arrival_s: ``(M,)`` arrival times, seconds, non-decreasing.
        duration_s: ``(M,)`` run times, seconds.
        deadline_s: ``(M,)`` deadlines, seconds (``None``: no deadline): the latest first start,
            or the latest completion when ``deadline_at_completion``.
        deadline_at_completion: ``settings.deadline_at_completion``: lateness is judged at
            completion (or the horizon), not at the first start.
        slo_s: ``(M,)`` latency SLO, seconds: ``latency_slo_factor x duration_s`` (read for
            latency-critical jobs only, by the ``utility`` term).
        preemptible: ``(M,)`` whether a spot interruption requeues the job (else it fails).
        req_cpu_m: ``(M,)`` requested millicores.
        req_mem_mib: ``(M,)`` requested MiB.
        req_gpus: ``(M,)`` requested GPUs.
        type_index: ``(M,)`` workload type, an index into ``WORKLOAD_TYPES``.
        is_lc: ``(M,)`` whether the job is latency-critical.
        shape: ``(M,)`` shape id: jobs with one id have the same :data:`Shape` (ids from 0, in
            order of first appearance).
        candidates: ``(M,)`` per job, the nodes it could ever run on (empty and up), increasing;
            empty when it fits no node of the fleet (it is rejected on arrival).
        candidate_mask: ``(M,)`` per job, ``candidates`` as an ``(N,)`` bool mask (jobs with equal
            candidates share one mask object).
        gpu_job_mix: ``(N,)`` per node, the GPU jobs that can ever run there, by request
            (:mod:`digital_twin.sim.tables.gpu_fragmentation`).
        no_fit: ``(N,)`` all False: the fit remembered for a parked job that fits nowhere.
        background_cpu_pct: ``(T, N)`` background CPU utilisation per tick and node, percent
            (read a tick's row at a time: :class:`~digital_twin.sim.tables.background.BackgroundRows`).
        background_cpu_m: ``(T, N)`` the same as a cpu demand, millicores (``pct x cpu_m / 100``).
        settings: The episode's settings (``spec.settings``). The hot loop reads the scalars
            below, each derived from them here and nowhere else.
        contention: ``settings.contention``: jobs are slowed by cpu contention (processor
            sharing, :mod:`digital_twin.sim.tables.contention`); False: no cpu contention.
        clocked: Jobs progress on work clocks (under contention, or with co-location
            interference, :mod:`digital_twin.sim.tables.interference`): a run completes when its clock has
            done its nominal work, not after its duration.
        lanes: ``spec.rules``' interference entries resolved per job
            (:class:`~digital_twin.sim.tables.interference.InterferenceTables`); ``None`` without them.
        n_lanes: ``L``, the number of lanes (1 without interference): each node keeps a work
            clock per lane, clock ``q = lane * N + node``.
        lane_of: ``(M,)`` each job's lane (all 0 without interference).
        queue_ttl_s: ``settings.queue_ttl_s``: time a job may wait in the queue before it is
            rejected (``None``: no TTL).
        horizon_s: ``settings.horizon_s`` as a float: the episode covers ``[0, horizon_s)``.
        tick_s: Telemetry tick length, seconds (tick ``k`` is at ``k * tick_s``).
        n_ticks: The ticks of the episode (``spec.grid.n_ticks``): the twin fires ticks
            ``k < n_ticks`` only.
        last_tick: ``T - 1``.
        active_nodes: ``settings.active_nodes``: the active-nodes cost model, not the prorated one.
        penalty_weights: ``settings.penalty_weights``: USD per counted unit of each penalty
            term, in ``PENALTIES`` order.
        sla_threshold_pct: ``settings.sla_threshold_pct``: utilisation above which
            latency-critical jobs violate the SLA, percent.
        spot_recovery_s: ``settings.spot_recovery_s``: how long an interrupted spot node stays
            down, seconds.
        energy: ``spec.energy_model`` as lists (:mod:`digital_twin.sim.features.energy_accounting`);
            ``None`` when ``settings.energy_accounting`` is off.
        rules: ``spec.rules`` as tables (:mod:`digital_twin.sim.tables.rule_checks`); ``None`` without
            rules. Their node-side part is already in ``candidates`` and ``shape``.
        dag: The workload's workflows as tables (:mod:`digital_twin.sim.tables.workflow_events`); ``None``
            when every job is independent.
    """

    n_nodes: int
    n_jobs: int
    node_ids: Sequence[str]
    job_ids: Sequence[str]
    cpu_m: list[int]
    mem_mib: list[int]
    gpus: list[int]
    price_per_s: list[float]
    is_spot: list[bool]
    arrival_s: list[float]
    duration_s: list[float]
    deadline_s: Sequence[float | None]
    deadline_at_completion: bool
    slo_s: list[float]
    preemptible: list[bool]
    req_cpu_m: list[int]
    req_mem_mib: list[int]
    req_gpus: list[int]
    type_index: list[int]
    is_lc: list[bool]
    shape: Sequence[int]
    candidates: Sequence[tuple[int, ...]]
    candidate_mask: Sequence[Sequence[bool]]
    gpu_job_mix: GpuJobMix
    no_fit: Sequence[bool]
    background_cpu_pct: BackgroundRows
    background_cpu_m: BackgroundRows
    settings: EpisodeSettings
    contention: bool
    clocked: bool
    lanes: InterferenceTables | None
    n_lanes: int
    lane_of: list[int]
    queue_ttl_s: float | None
    horizon_s: float
    tick_s: float
    n_ticks: int
    last_tick: int
    active_nodes: bool
    penalty_weights: tuple[float, ...]
    sla_threshold_pct: float
    spot_recovery_s: float
    energy: EnergyConstants | None
    rules: RuleTables | None
    dag: WorkflowTables | None

    @classmethod
    def of(cls, spec: TwinSpec) -> TwinConstants:
        """The constants of ``spec``.

        Cost: O(distinct job shapes x nodes + jobs); the per-node and per-tick lists are built
        once per fleet and telemetry (env episodes share them; nothing changes them).
        """
        jobs, settings = spec.jobs, spec.settings
        fleet = _fleet_columns(spec.fleet)
        req_cpu_m = whole_units(jobs.cpu_cores, 1000)
        req_mem_mib = whole_units(jobs.mem_gb, 1024)
        req_gpus = jobs.gpu_count.tolist()
        shapes = zip(
            req_cpu_m,
            req_mem_mib,
            req_gpus,
            jobs.gpu_vram_gb.tolist(),
            jobs.allowed_gpu_models,
            jobs.required_arch,
            strict=True,
        )
        shape, candidates, candidate_mask = _shapes_and_candidates(spec.fleet, fleet, shapes)
        rules, lanes = None, None
        if spec.rules is not None and spec.rules.judges:
            compiled = compile_rules(spec.rules, spec.fleet, spec.jobs)
            shape, candidates = compiled.restrict(shape, candidates, jobs.job_ids, fleet.node_ids)
            candidate_mask = _masks_of_candidates(candidates, len(spec.fleet))
            rules, lanes = compiled.tables, compiled.interference
        background_cpu_pct, background_cpu_m = _background_columns(spec.telemetry, tuple(fleet.cpu_m))
        graph = jobs.graph()
        arrival_s = jobs.arrival_s.tolist()
        return cls(
            n_nodes=len(spec.fleet),
            n_jobs=len(jobs),
            node_ids=fleet.node_ids,
            job_ids=jobs.job_ids,
            cpu_m=fleet.cpu_m,
            mem_mib=fleet.mem_mib,
            gpus=fleet.gpus,
            price_per_s=fleet.price_per_s,
            is_spot=fleet.is_spot,
            arrival_s=arrival_s,
            duration_s=jobs.duration_s.tolist(),
            deadline_s=jobs.deadlines(),
            deadline_at_completion=settings.deadline_at_completion,
            slo_s=(jobs.duration_s * float(settings.latency_slo_factor)).tolist(),
            preemptible=jobs.preemptible.tolist(),
            req_cpu_m=req_cpu_m,
            req_mem_mib=req_mem_mib,
            req_gpus=req_gpus,
            type_index=jobs.workload_index.tolist(),
            is_lc=(jobs.workload_index == LATENCY_CRITICAL).tolist(),
            shape=shape,
            candidates=candidates,
            candidate_mask=candidate_mask,
            gpu_job_mix=gpu_job_mix(shape, candidates, req_gpus, req_cpu_m, len(spec.fleet)),
            no_fit=fleet.no_fit,
            background_cpu_pct=background_cpu_pct,
            background_cpu_m=background_cpu_m,
            settings=settings,
            contention=settings.contention,
            clocked=settings.contention or lanes is not None,
            lanes=lanes,
            n_lanes=1 if lanes is None else lanes.n_lanes,
            lane_of=[0] * len(jobs) if lanes is None else lanes.lane_of,
            queue_ttl_s=settings.queue_ttl_s,
            horizon_s=float(settings.horizon_s),
            tick_s=float(spec.telemetry.tick_s),
            n_ticks=spec.grid.n_ticks,
            last_tick=spec.telemetry.n_ticks - 1,
            active_nodes=settings.active_nodes,
            penalty_weights=settings.penalty_weights,
            sla_threshold_pct=settings.sla_threshold_pct,
            spot_recovery_s=settings.spot_recovery_s,
            energy=_energy_constants(spec.energy_model, fleet.gpus) if settings.energy_accounting else None,
            rules=rules,
            dag=None if graph is None else WorkflowTables.of(graph, arrival_s),
        )


class _FleetColumns(NamedTuple):
    """The per-node constants of a fleet, shared by every episode on it (nothing changes them)."""

    node_ids: tuple[str, ...]
    cpu_m: list[int]
    mem_mib: list[int]
    gpus: list[int]
    price_per_s: list[float]
    is_spot: list[bool]
    no_fit: tuple[bool, ...]
    candidates: dict[Shape, tuple[int, ...]]
    """The static candidates of the job shapes seen so far (a memo of :func:`_static_candidates`)."""


@functools.lru_cache(maxsize=16)
def _fleet_columns_of(fleet: tuple[NodeSpec, ...]) -> _FleetColumns:
    """The per-node constants of ``fleet``, cached by value (equal fleets share them)."""
    return _FleetColumns(
        node_ids=tuple(n.node_id for n in fleet),
        cpu_m=whole_units([n.cpu_cores for n in fleet], 1000),
        mem_mib=whole_units([n.mem_gb for n in fleet], 1024),
        gpus=[n.gpu_count for n in fleet],
        price_per_s=[n.price_per_hour_usd / 3600.0 for n in fleet],
        is_spot=[n.is_spot for n in fleet],
        no_fit=(False,) * len(fleet),
        candidates={},
    )


BackgroundColumns = tuple[BackgroundRows, BackgroundRows]
"""``(background_cpu_pct, background_cpu_m)`` of :class:`TwinConstants`, each ``(T, N)``."""
_BACKGROUND: weakref.WeakKeyDictionary[Telemetry, dict[tuple[int, ...], BackgroundColumns]] = (
    weakref.WeakKeyDictionary()
)


def _background_columns(telemetry: Telemetry, cpu_m: tuple[int, ...]) -> BackgroundColumns:
    """The background cpu per tick and node in % and in millicores of nodes of ``cpu_m`` millicores.

    Cached per telemetry (while it lives) and node sizes: an env's episodes share its
    scenario's telemetry. Nothing changes them.
    """
    by_fleet = _BACKGROUND.setdefault(telemetry, {})
    columns = by_fleet.get(cpu_m)
    if columns is None:
        background_pct = telemetry.background_pct[:, :, CPU]
        capacity_m = np.asarray(cpu_m, dtype=np.float64)
        columns = by_fleet[cpu_m] = (BackgroundRows(background_pct), BackgroundRows(background_pct, capacity_m, 100.0))
    return columns


_fleet_columns: IdentityCache[tuple[NodeSpec, ...], _FleetColumns] = IdentityCache(_fleet_columns_of)
_ENERGY_CONSTANTS: IdentityCache[EnergyModel, dict[tuple[int, ...], EnergyConstants]] = IdentityCache(lambda _: {})


def _energy_constants(model: EnergyModel, gpus: Sequence[int]) -> EnergyConstants:
    """The energy lists of ``model`` on a fleet of ``gpus`` per node, per model object (an env's episodes share it)."""
    by_fleet = _ENERGY_CONSTANTS(model)
    key = tuple(gpus)
    if key not in by_fleet:
        by_fleet[key] = EnergyConstants.of(model, key)
    return by_fleet[key]
"""The per-node constants of a fleet, looked up by identity first (an env builds a twin on its
scenario's one fleet tuple at every reset), then by value."""


def whole_units(amounts: Sequence[float] | np.ndarray, units_per_amount: int) -> list[int]:
    """Amounts (cores, GB) in whole units (millicores, MiB), rounded half to even as ``round()``.

    >>> whole_units([0.5, 1.25, 2.0], 1000), whole_units([1.25, 1.75], 2)  # 2.5 -> 2, 3.5 -> 4
    ([500, 1250, 2000], [2, 4])
    """
    units: list[int] = np.rint(np.asarray(amounts, dtype=np.float64) * units_per_amount).astype(np.int64).tolist()
    return units


_MAX_MEMO_SHAPES = 65_536
"""At most this many shapes' candidates are remembered per fleet (trace workloads can have many)."""


def _shapes_and_candidates(
    nodes: tuple[NodeSpec, ...], fleet: _FleetColumns, shapes: Iterable[Shape]
) -> tuple[list[int], list[tuple[int, ...]], list[list[bool]]]:
    """Per job, its shape id, static candidates and their mask (computed once per distinct shape).

    Jobs whose candidates are equal share one mask object.
    """
    ids: dict[Shape, int] = {}
    shape_of = [ids.setdefault(shape, len(ids)) for shape in shapes]  # ids in order of first appearance
    memo = fleet.candidates
    candidates_of: list[tuple[int, ...]] = []
    for shape in ids:
        candidates = memo.get(shape)
        if candidates is None:
            candidates = _static_candidates(nodes, fleet.cpu_m, fleet.mem_mib, shape)
            if len(memo) < _MAX_MEMO_SHAPES:
                memo[shape] = candidates
        candidates_of.append(candidates)
    masks_of = _masks_of_candidates(candidates_of, len(nodes))
    return shape_of, [candidates_of[k] for k in shape_of], [masks_of[k] for k in shape_of]


def _static_candidates(
    fleet: tuple[NodeSpec, ...], cpu_m: Sequence[int], mem_mib: Sequence[int], shape: Shape
) -> tuple[int, ...]:
    """Nodes a job of ``shape`` could ever run on (an empty node that is up), in fleet order.

    The indices are the fleet's one set of int objects (:func:`_node_indices`): the candidates
    of a large fleet's many shapes then cost a pointer per node, not an int each.
    """
    req_cpu_m, req_mem_mib, gpus, vram_gb, models, arch = shape
    out = []
    for i, node in zip(_node_indices(len(fleet)), fleet, strict=True):
        if arch is not None and node.arch != arch:
            continue
        if gpus > 0 and (
            node.gpu_count < gpus or node.gpu_vram_gb < vram_gb or (models is not None and node.gpu_model not in models)
        ):
            continue
        if req_cpu_m <= cpu_m[i] and req_mem_mib <= mem_mib[i]:
            out.append(i)
    return tuple(out)


@functools.lru_cache(maxsize=4)
def _node_indices(n: int) -> tuple[int, ...]:
    """``0 .. n - 1``, one tuple (one set of int objects) per fleet size."""
    return tuple(range(n))


def _masks_of_candidates(candidates: list[tuple[int, ...]], n_nodes: int) -> list[list[bool]]:
    """Per job, ``(N,)`` bool: its candidates as a mask (one list per distinct tuple of nodes)."""
    by_nodes: dict[tuple[int, ...], list[bool]] = {}
    out = []
    for nodes in candidates:
        mask = by_nodes.get(nodes)
        if mask is None:
            mask = by_nodes[nodes] = [False] * n_nodes
            for i in nodes:
                mask[i] = True
        out.append(mask)
    return out
