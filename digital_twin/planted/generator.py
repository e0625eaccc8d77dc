"""Planted episodes: jobs cut from the cheap capacity of a fleet, with the schedule that is optimal by construction.

:func:`plant` cuts each *home* node's room into runs (:mod:`digital_twin.planted.tiling`) and
makes each run a job that arrives when the run starts. A home node is one where its jobs'
cheapest fate lies: the cheapest per core among the nodes of its arch (cpu jobs, which require
that arch), or per GPU among the GPU nodes (GPU jobs); the other nodes are left empty by the
plan, for other policies to fall back on at their price. Latency-critical jobs are planted on
on-demand nodes only, below the SLA threshold; no planted run over-subscribes a node (peak
background included), so every planted run lasts its nominal time; planted runs on spot nodes
avoid the episode's interruptions and the node's recovery after them.

The planted schedule (each job on its planted node from its arrival) therefore pays each job's
cheapest fate and nothing else, and :func:`~digital_twin.planted.certificate.certify` proves no
policy pays less (docs/model.md, "Planted optima"). What makes it hard: many jobs arrive at
once and fill the home nodes exactly, so a job put on the wrong home node leaves a hole that a
later job must pay for, on a dearer node or by waiting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from digital_twin.energy.model import EnergyModel
from digital_twin.episode_settings import EpisodeSettings
from digital_twin.errors import SpecError
from digital_twin.fleet import NodeSpec
from digital_twin.jobs import BATCH, LATENCY_CRITICAL, STREAM, JobSpec
from digital_twin.limits import Limits
from digital_twin.planted.certificate import RELATIVE_SLACK, Certificate, certify
from digital_twin.planted.config import PlantedConfig
from digital_twin.planted.energy_floor import NodeRates, energy_floor, fleet_rates, inexact_reason
from digital_twin.planted.prices import LagrangianCertificate
from digital_twin.planted.tiling import Piece, tile
from digital_twin.sim.constants import TwinConstants
from digital_twin.spec import TwinSpec, default_energy_model_of
from digital_twin.telemetry import CPU, Telemetry
from digital_twin.workload import Workload

INTERRUPTION_MARGIN_S = 0.001
"""Planted runs on a spot node end at least this long before its next interruption, seconds."""
MEMORY_SHARE = 0.95
"""A planted job asks for this share of its node's memory per core (or GPU) it takes."""


@dataclass(frozen=True, eq=False)
class PlantedEpisode:
    """One planted episode: its spec, the optimal schedule and the certificate.

    Attributes:
        spec: The episode (its ``fixed_interruptions_s`` are the drawn interruptions).
        planted_nodes: ``(M,)`` per job (in ``spec.jobs`` order), the node the optimal schedule
            starts it on.
        certificate: The bound; ``certificate.bound_usd`` is the optimum (the cut-capacity
            family's per-job :class:`Certificate`, or a priced family's Lagrangian one).
        planted_starts_s: ``(M,)`` per job, when the optimal schedule starts it (a job waits in
            the queue until then, deferred); ``None``: every job at its arrival.
    """

    spec: TwinSpec
    planted_nodes: tuple[int, ...]
    certificate: Certificate | LagrangianCertificate
    planted_starts_s: tuple[float, ...] | None = None

    @property
    def optimum_usd(self) -> float:
        """The proven optimum: no policy's objective on this episode is lower."""
        return self.certificate.bound_usd

    def start_of(self, j: int) -> float:
        """When the optimal schedule starts job ``j`` (seconds)."""
        return self.spec.jobs[j].arrival_s if self.planted_starts_s is None else self.planted_starts_s[j]


def plant(
    fleet: tuple[NodeSpec, ...],
    telemetry: Telemetry,
    settings: EpisodeSettings,
    config: PlantedConfig,
    rng: np.random.Generator,
    max_jobs: int | None = None,
    energy: EnergyModel | None = None,
) -> PlantedEpisode:
    """Draw one planted episode from ``rng`` (the only randomness).

    Args:
        fleet: The nodes, in action order (the planted nodes index it).
        telemetry: The background, one column per node (its peak per node bounds the room).
        settings: The episode's settings (horizon, SLA threshold, spot recovery, weights).
        config: The knobs (:class:`~digital_twin.planted.config.PlantedConfig`).
        rng: The only source of randomness (interruptions, cuts, job classes, arrival order).
        max_jobs: Refuse an episode with more jobs than this, as soon as the cut passes it
            (at most one window's pieces more are built); ``None``: no limit.
        energy: The nodes' power and carbon intensity (``None``: the fleet's default), priced by
            the ``energy`` and ``carbon`` weights into each job's cheapest fate.

    Raises:
        SpecError: ``plant_until_s`` is past the horizon; the episode holds more than
            ``max_jobs`` jobs (cutting stops at the first window past it); a GPU home node has
            no cpu left for its GPUs; the certificate's conditions fail (a weight too small: the
            message names it); an energy or carbon weight under which the planted schedule's
            energy is not the certificate's floor (a curved power curve, a varying intensity:
            the message names the weight and the node).
    """
    horizon_s = float(settings.horizon_s)
    if config.plant_until_s > horizon_s:
        raise SpecError(f"plant_until_s {config.plant_until_s:g} is past the horizon {horizon_s:g}")
    n_ticks = settings.tick_grid(telemetry.tick_s).n_ticks
    background_pct = np.asarray(telemetry.background_pct)[:n_ticks, :, CPU]
    peak_pct = background_pct.max(axis=0)
    rates = fleet_rates(fleet, settings, energy or default_energy_model_of(fleet), background_pct)
    interruptions = _draw_interruptions(fleet, config, rng)
    planted: list[tuple[JobSpec, int]] = []
    for i in _home_nodes(fleet, rates, peak_pct):
        node = fleet[i]
        windows = _up_windows(config.plant_until_s, interruptions[i], settings.spot_recovery_s)
        for start_s, end_s in windows:
            pieces = _pieces(node, float(peak_pct[i]), settings.sla_threshold_pct, start_s, end_s, config, rng)
            if max_jobs is not None and len(planted) + len(pieces) > max_jobs:
                raise SpecError(
                    f"the planted episode holds more than limits.max_jobs = {max_jobs:,} jobs (cut at node "
                    f"{node.node_id!r}); raise min_duration_s, lower fill, or {Limits.how_to_raise('max_jobs')}"
                )
            peak = float(peak_pct[i])
            planted.extend((_job(node, peak, piece, settings, config, rng), i) for piece in pieces)
    spec = TwinSpec(fleet, Workload.of([]), telemetry, settings, fixed_interruptions_s=interruptions, energy=energy)
    return _episode(spec, planted, rng)


def _home_nodes(fleet: Sequence[NodeSpec], rates: NodeRates, peak_pct: np.ndarray) -> list[int]:
    """Nodes at the least USD per core-second of their arch (cpu nodes) or per GPU-second (GPU nodes).

    The price, plus the energy floor's rate (:mod:`digital_twin.planted.energy_floor`, 0 unless
    the energy or carbon weight is set): per core, or per GPU with the cores a planted GPU job
    takes there.
    """

    def unit_usd_s(i: int, node: NodeSpec) -> float:
        if node.gpu_count:
            cores = _cores_per_gpu(node, float(peak_pct[i]))
            return (
                node.price_per_hour_usd / 3600.0 / node.gpu_count
                + rates.usd_per_gpu_s[i]
                + (cores * rates.usd_per_core_s[i])
            )
        return node.price_per_hour_usd / 3600.0 / node.cpu_cores + rates.usd_per_core_s[i]

    units = [unit_usd_s(i, node) for i, node in enumerate(fleet)]
    best: dict[str, float] = {}
    for node, unit in zip(fleet, units, strict=True):
        best[_group(node)] = min(best.get(_group(node), math.inf), unit)
    return [i for i, node in enumerate(fleet) if units[i] <= best[_group(node)] * (1.0 + RELATIVE_SLACK)]


def _cores_per_gpu(node: NodeSpec, peak_pct: float) -> float:
    """The cores a planted GPU job takes per GPU on ``node``: the GPUs' share of what the peak background leaves."""
    return math.floor(node.cpu_cores * (1.0 - peak_pct / 100.0) * 1000 / node.gpu_count) / 1000


def _group(node: NodeSpec) -> str:
    """The nodes a planted job on ``node`` may run on: ``"gpu"`` (GPU jobs) or the node's arch (cpu jobs)."""
    return "gpu" if node.gpu_count else node.arch


def _draw_interruptions(
    fleet: Sequence[NodeSpec], config: PlantedConfig, rng: np.random.Generator
) -> tuple[tuple[float, ...], ...]:
    """Per node, its interruption times (spot nodes: ``interruptions_per_spot_node`` uniform draws)."""
    out = []
    for node in fleet:
        if node.is_spot and config.interruptions_per_spot_node:
            draws = rng.uniform(0.0, config.plant_until_s, config.interruptions_per_spot_node)
            out.append(tuple(float(t) for t in np.sort(np.round(draws, 3))))
        else:
            out.append(())
    return tuple(out)


def _up_windows(until_s: float, interruptions_s: Sequence[float], recovery_s: float) -> list[tuple[float, float]]:
    """``[0, until_s)`` without the down windows ``[t, t + recovery_s)`` of the interruptions.

    An interruption while the node is down has no effect (the twin drops it), as here. A window
    ends :data:`INTERRUPTION_MARGIN_S` before its interruption: a run's ``start + duration``,
    rounded, must not reach it (the interruption would come first and evict the run).
    """
    windows, start = [], 0.0
    for t in interruptions_s:
        if t < start:
            continue  # the node is down: no effect
        if t > start:
            windows.append((start, min(t - INTERRUPTION_MARGIN_S, until_s)))
        start = t + recovery_s
    if start < until_s:
        windows.append((start, until_s))
    return [(s, e) for s, e in windows if e > s]


def _pieces(
    node: NodeSpec,
    peak_pct: float,
    sla_threshold_pct: float,
    start_s: float,
    end_s: float,
    config: PlantedConfig,
    rng: np.random.Generator,
) -> list[Piece]:
    """The planted runs of ``node`` in one of its up windows, as pieces of whole cores or GPUs."""
    free_share = 1.0 - peak_pct / 100.0
    if node.gpu_count:
        units, max_units = math.floor(node.gpu_count * config.fill), config.max_job_gpus
    else:
        if not node.is_spot:  # latency-critical jobs may run here: stay at or below the SLA threshold
            free_share = min(free_share, (sla_threshold_pct - peak_pct) / 100.0)
        units, max_units = math.floor(node.cpu_cores * max(free_share, 0.0) * config.fill), config.max_job_cores
    return tile(
        units,
        start_s,
        end_s,
        epoch_s=config.epoch_s,
        min_duration_s=config.min_duration_s,
        max_duration_s=config.max_duration_s,
        max_units=max_units,
        split_units_prob=config.split_cores_prob,
        rng=rng,
    )


def _job(
    node: NodeSpec,
    peak_pct: float,
    piece: Piece,
    settings: EpisodeSettings,
    config: PlantedConfig,
    rng: np.random.Generator,
) -> JobSpec:
    """The job of one planted run (its id is set once all jobs are ordered).

    A GPU job takes its GPUs' share of the cpu the node's peak background leaves.
    """
    duration_s = piece.end_s - piece.start_s
    preemptible = bool(rng.random() < config.preemptible_share)
    if node.gpu_count:
        cores_per_gpu = _cores_per_gpu(node, peak_pct)
        if cores_per_gpu <= 0:
            raise SpecError(f"node {node.node_id!r}: its peak background leaves no cpu for its GPUs")
        return JobSpec(
            "planted",
            piece.start_s,
            duration_s,
            BATCH if rng.random() < 0.5 else STREAM,
            cpu_cores=piece.units * cores_per_gpu,
            mem_gb=_memory_gb(node.mem_gb / node.gpu_count, piece.units),
            gpu_count=piece.units,
            preemptible=preemptible,
        )
    latency_critical = not node.is_spot and bool(rng.random() < config.latency_critical_share)
    workload = LATENCY_CRITICAL if latency_critical else (BATCH if rng.random() < 0.5 else STREAM)
    deadline = None
    if latency_critical:
        deadline = piece.start_s + (duration_s if settings.deadline_at_completion else 0.0) + config.epoch_s
    return JobSpec(
        "planted",
        piece.start_s,
        duration_s,
        workload,
        cpu_cores=float(piece.units),
        mem_gb=_memory_gb(node.mem_gb / node.cpu_cores, piece.units),
        required_arch=node.arch,
        preemptible=preemptible,
        deadline_s=deadline,
    )


def _memory_gb(per_unit_gb: float, units: int) -> float:
    """Whole MiB, at most ``MEMORY_SHARE`` of ``units`` x ``per_unit_gb``."""
    return max(1, math.floor(per_unit_gb * units * MEMORY_SHARE * 1024)) / 1024


def _episode(spec: TwinSpec, planted: list[tuple[JobSpec, int]], rng: np.random.Generator) -> PlantedEpisode:
    """Order the jobs (ties at one instant in a random order, so the order tells nothing), certify.

    ``spec``: the episode without its jobs. Raises :class:`SpecError` where an energy or carbon
    weight keeps the planted schedule from paying each job's cheapest fate exactly.
    """
    order = rng.permutation(len(planted))
    order = order[np.argsort([planted[k][0].arrival_s for k in order], kind="stable")]
    width = len(str(max(len(planted) - 1, 0)))
    jobs, nodes = [], []
    for rank, k in enumerate(order):
        job, node = planted[int(k)]
        jobs.append(replace(job, job_id=f"planted-{rank:0{width}d}"))
        nodes.append(node)
    spec = replace(spec, jobs=Workload.of(jobs))
    certificate = certify(spec)
    energy_weights = _energy_weights(spec.settings)
    if not certificate.attained_by(nodes):
        wrong = next(j for j, node in enumerate(nodes) if node not in certificate.cheapest_nodes[j])
        if energy_weights:
            raise SpecError(
                f"under {energy_weights}, planted job {jobs[wrong].job_id}'s node "
                f"{spec.fleet[nodes[wrong]].node_id!r} is not its cheapest: the planted schedule is not optimal"
            )
        raise RuntimeError(
            f"a bug in the generator: planted job {jobs[wrong].job_id} is not on a node of its cheapest fate"
        )
    if energy_weights:
        floor = energy_floor(spec, TwinConstants.of(spec))
        for j, node in enumerate(nodes):
            reason = inexact_reason(spec, floor, j, node, jobs[j].cpu_cores)
            if reason is not None:
                raise SpecError(f"{energy_weights} > 0: {reason}, so the planted schedule is not proven optimal")
    return PlantedEpisode(spec, tuple(nodes), certificate)


def _energy_weights(settings: EpisodeSettings) -> str:
    """The energy and carbon weights that are set, named (``""``: neither)."""
    weights = settings.weights
    named = [name for name in ("energy_usd_per_kwh", "carbon_usd_per_kg") if getattr(weights, name) > 0]
    return " and ".join(named)
