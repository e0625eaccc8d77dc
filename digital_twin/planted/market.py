"""Priced planted episodes: jobs of the default scenario's kinds, an optimum that uses dearer nodes and waiting.

The cut-capacity family (:mod:`digital_twin.planted.generator`) plants every job on a cheapest
node, so its optimum never pays for a dearer node or a wait. Here capacity binds, and the
optimum is proven by capacity prices (a Lagrangian certificate, :mod:`digital_twin.planted.prices`):

* **Roles.** The *home* nodes of a group are its cheapest per unit: per core among the cpu-only
  nodes (cpu jobs), per GPU among the GPU nodes (GPU jobs). The cpu *dear* nodes are the
  on-demand cpu-only nodes at the next price per core; the gap is ``delta`` USD per
  core-second. Home nodes must carry no background (under processor sharing a full node with
  background would slow its jobs); dear nodes keep their background, below which they are filled.
* **Lanes** (:mod:`digital_twin.planted.market_lanes`) keep every home node exactly full from the
  last lane's start to the first lane's end after ``plant_until_s`` (less its down windows); the
  spot home nodes of a group share their interruptions (a reclaim wave of one instance type).
* **Prices.** On the group's *full set* ``G`` (every home node of the group full or down) a home
  cpu node costs ``delta`` per core-second more, a home GPU node ``w`` (the waiting weight) per
  GPU-second more: running a cpu job there costs what the dear node does, and a GPU job is
  indifferent between running there and waiting. Elsewhere the price is 0.
* **Other jobs.** cpu jobs arrive as a Poisson stream per dear node; one is planted on a dear node
  from its arrival when its whole run lies in ``G`` (a tie with running at home) and the dear node
  has room (its background and, with latency-critical jobs on it, the SLA threshold included).
  Latency-critical jobs arrive as another Poisson stream and run on a dear node (a spot home
  would cost the QoS penalty). A GPU lane's run that starts in ``G`` and runs past its end may
  arrive earlier and wait for it (a tie).
* **Check.** Every job's planted option is compared with its least priced option
  (:func:`~digital_twin.planted.prices.lagrangian_bound`): a dear or latency-critical job that
  is not at its least is dropped, a waiting GPU job that is not starts at its arrival instead.
  Each priced instant is full, so the bound equals the planted schedule's cost: optimal.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from digital_twin.energy.model import EnergyModel
from digital_twin.episode_settings import EpisodeSettings
from digital_twin.errors import SpecError
from digital_twin.fleet import NodeSpec
from digital_twin.jobs import JobSpec
from digital_twin.planted.generator import PlantedEpisode
from digital_twin.planted.market_config import MarketConfig
from digital_twin.planted.market_lanes import (
    LaneRun,
    full_intervals,
    intersect,
    lane_runs,
    lane_widths,
    union,
    up_windows,
)
from digital_twin.planted.market_roles import Roles, dear_room, roles_of
from digital_twin.planted.prices import CPU_UNITS, GPU_UNITS, LagrangianCertificate, NodePrice, lagrangian_bound
from digital_twin.sim.constants import TwinConstants
from digital_twin.spec import TwinSpec
from digital_twin.telemetry import CPU, Telemetry
from digital_twin.workload import Workload
from digital_twin.workloads.job_mix import JobClass

RELATIVE_SLACK = 1e-9
"""How much a planted option may exceed its job's least priced cost, relative (float rounding)."""


def plant_priced(
    fleet: tuple[NodeSpec, ...],
    telemetry: Telemetry,
    settings: EpisodeSettings,
    config: MarketConfig,
    rng: np.random.Generator,
    max_jobs: int | None = None,
    energy: EnergyModel | None = None,
) -> PlantedEpisode:
    """Draw one priced planted episode from ``rng`` (the only randomness).

    Raises:
        SpecError: ``plant_until_s`` past the horizon; the fleet has no home and dear roles
            (:func:`~digital_twin.planted.market_roles.roles_of` says why); more than
            ``max_jobs`` jobs; an energy, carbon or preference weight (not priced).
    """
    horizon_s = float(settings.horizon_s)
    if config.plant_until_s > horizon_s:
        raise SpecError(f"plant_until_s {config.plant_until_s:g} is past the horizon {horizon_s:g}")
    n_ticks = settings.tick_grid(telemetry.tick_s).n_ticks
    peak_pct = np.asarray(telemetry.background_pct)[:n_ticks, :, CPU].max(axis=0)
    roles = roles_of(fleet, settings, peak_pct, config)
    interruptions = _interruptions(fleet, roles, config, rng)
    config = replace(config, plant_until_s=config.plant_until_s * (1.0 - config.until_spread * float(rng.random())))
    runs: list[LaneRun] = []
    full: dict[str, list[tuple[float, float]]] = {}  # where every home node of the group is full (or down)
    down: dict[str, list[tuple[float, float]]] = {}  # the group's shared down windows (priced 0: no run covers them)
    for group, homes in (("cpu", roles.cpu_homes), ("gpu", roles.gpu_homes)):
        group_full: list[tuple[float, float]] | None = None
        for i in homes:
            widths = lane_widths(fleet[i], config, rng)
            windows = up_windows(interruptions[i], settings.spot_recovery_s, config.plant_until_s)
            node_runs = lane_runs(i, widths, windows, config, _latest_end(settings), rng)
            runs += node_runs
            downs = [(close, close + settings.spot_recovery_s) for _, close, cut in windows if cut]
            covered = union(full_intervals(node_runs, len(widths)), downs)
            group_full = covered if group_full is None else intersect(group_full, covered)
            down[group] = downs
        full[group] = group_full or []
    jobs: list[tuple[JobSpec, int, float]] = [_lane_job(r, fleet) for r in runs]
    jobs += _streams(fleet, roles, full["cpu"], peak_pct, settings, config, rng)
    if max_jobs is not None and len(jobs) > max_jobs:
        raise SpecError(f"the planted episode holds {len(jobs):,} jobs, more than limits.max_jobs = {max_jobs:,}")
    prices = _prices(roles, {g: _less(full[g], down.get(g, [])) for g in full}, settings, horizon_s)
    _delay_gpu_waits(jobs, runs, full["gpu"], settings, rng)
    base = TwinSpec(fleet, Workload.of([]), telemetry, settings, fixed_interruptions_s=interruptions, energy=energy)
    return _checked(base, jobs, prices, rng)


def _latest_end(settings: EpisodeSettings) -> float:
    """Planted runs end by the horizon less the queue TTL.

    A job whose latest start plus its duration passes the horizon could be started late and cut
    off by it, cheaper than completing.
    """
    assert settings.queue_ttl_s is not None  # roles_of refuses a world without a TTL
    return float(settings.horizon_s) - float(settings.queue_ttl_s)


def _interruptions(
    fleet: tuple[NodeSpec, ...], roles: Roles, config: MarketConfig, rng: np.random.Generator
) -> tuple[tuple[float, ...], ...]:
    """Per node its interruptions: one wave per home group (shared by its spot home nodes), others their own."""

    def draw() -> tuple[float, ...]:
        times = rng.uniform(0.0, config.plant_until_s, config.interruptions_per_spot_node)
        return tuple(float(t) for t in np.sort(np.round(times, 3)))

    waves = {"cpu": draw(), "gpu": draw()}
    out: list[tuple[float, ...]] = []
    for i, node in enumerate(fleet):
        if not node.is_spot:
            out.append(())
        elif i in roles.cpu_homes:
            out.append(waves["cpu"])
        elif i in roles.gpu_homes:
            out.append(waves["gpu"])
        else:
            out.append(draw())
    return tuple(out)


def _lane_job(run: LaneRun, fleet: tuple[NodeSpec, ...]) -> tuple[JobSpec, int, float]:
    """A lane run as a job arriving at its start: ``(job, node, planted start)``."""
    c = run.job_class
    job = JobSpec(
        "planted",
        run.start_s,
        run.duration_s,
        c.workload,
        c.cpu_cores,
        c.mem_gb,
        gpu_count=c.gpu_count,
        gpu_vram_gb=fleet[run.node].gpu_vram_gb if c.gpu_count else 0.0,
        priority=c.priority,
    )
    return job, run.node, run.start_s


def _streams(
    fleet: tuple[NodeSpec, ...],
    roles: Roles,
    cpu_full: list[tuple[float, float]],
    peak_pct: np.ndarray,
    settings: EpisodeSettings,
    config: MarketConfig,
    rng: np.random.Generator,
) -> list[tuple[JobSpec, int, float]]:
    """The Poisson streams of the dear nodes: cpu jobs run wholly in ``cpu_full``, latency-critical jobs."""
    out: list[tuple[JobSpec, int, float]] = []
    held: dict[int, list[tuple[float, float, float, float, bool]]] = {i: [] for i in roles.dears}
    latest_end = _latest_end(settings)
    load = math.exp(config.load_sigma * float(rng.standard_normal()) - config.load_sigma**2 / 2.0)
    for kind, rate in (("cpu", config.dear_rate_per_s), ("lc", config.lc_rate_per_s)):
        total = rate * load * len(roles.dears)
        t = 0.0
        while total > 0:
            t += float(rng.exponential(1.0 / total))
            if t >= config.plant_until_s:
                break
            job_class = config.draw_class(kind, rng)
            assert job_class is not None  # the config has classes of both kinds
            duration = config.draw_duration(job_class, rng)
            end = t + duration
            if end > latest_end or (kind == "cpu" and not any(s <= t and end <= e for s, e in cpu_full)):
                continue
            node = _dear_with_room(fleet, roles, held, peak_pct, settings, t, end, job_class, kind == "lc")
            if node is None:
                continue
            deadline = t + config.lc_deadline_slack_s if kind == "lc" else None
            job = JobSpec(
                "planted",
                t,
                duration,
                job_class.workload,
                job_class.cpu_cores,
                job_class.mem_gb,
                priority=job_class.priority,
                deadline_s=deadline,
            )
            out.append((job, node, t))
    return out


def _dear_with_room(
    fleet: tuple[NodeSpec, ...],
    roles: Roles,
    load: dict[int, list[tuple[float, float, float, float, bool]]],
    peak_pct: np.ndarray,
    settings: EpisodeSettings,
    start_s: float,
    end_s: float,
    job_class: JobClass,
    latency_critical: bool,
) -> int | None:
    """The first dear node with room for the run over ``[start_s, end_s)`` (recorded in ``load``), else ``None``.

    ``load[i]``: the node's runs as ``(start, end, cores, mem GB, latency-critical)``.
    """
    for i in roles.dears:
        overlapping = [r for r in load[i] if r[0] < end_s and r[1] > start_s]
        lc_here = latency_critical or any(r[4] for r in overlapping)
        room = dear_room(fleet[i], float(peak_pct[i]), settings.sla_threshold_pct, lc_here)
        cores, mem = _peak(overlapping, start_s, end_s)
        if cores + job_class.cpu_cores <= room and mem + job_class.mem_gb <= fleet[i].mem_gb:
            load[i].append((start_s, end_s, job_class.cpu_cores, job_class.mem_gb, latency_critical))
            return i
    return None


def _peak(runs: list[tuple[float, float, float, float, bool]], start_s: float, end_s: float) -> tuple[float, float]:
    """The most cores and memory the runs hold at one instant of ``[start_s, end_s)`` (each a step function)."""
    times = sorted({start_s, *(r[0] for r in runs if start_s <= r[0] < end_s)})
    cores = max((sum(r[2] for r in runs if r[0] <= t < r[1]) for t in times), default=0.0)
    mem = max((sum(r[3] for r in runs if r[0] <= t < r[1]) for t in times), default=0.0)
    return cores, mem


def _less(intervals: list[tuple[float, float]], holes: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``intervals`` less ``holes`` (both sorted lists of disjoint intervals)."""
    out = []
    for start, end in intervals:
        pieces = [(start, end)]
        for h0, h1 in holes:
            pieces = [p for s0, s1 in pieces for p in ((s0, min(s1, h0)), (max(s0, h1), s1)) if p[1] > p[0]]
        out += pieces
    return out


def _prices(
    roles: Roles, full: dict[str, list[tuple[float, float]]], settings: EpisodeSettings, horizon_s: float
) -> dict[int, NodePrice]:
    """Per home node: ``delta`` per core-second (cpu) or ``w`` per GPU-second (GPU) on its group's full set."""
    wait = settings.weights.wait_usd_per_job_hour / 3600.0
    out = {}
    for homes, resource, value, group in (
        (roles.cpu_homes, CPU_UNITS, roles.delta_usd_per_core_s, "cpu"),
        (roles.gpu_homes, GPU_UNITS, wait, "gpu"),
    ):
        breaks, values = [0.0], []
        for start, end in full[group]:
            start, end = max(start, 0.0), min(end, horizon_s)
            if end <= start:
                continue
            if start > breaks[-1]:
                breaks.append(start)
                values.append(0.0)
            breaks.append(end)
            values.append(value)
        if breaks[-1] < horizon_s:
            breaks.append(horizon_s)
            values.append(0.0)
        if len(breaks) > 1:
            price = NodePrice(resource, np.array(breaks), np.array(values))  # one object: the certificate groups by it
            for i in homes:
                out[i] = price
    return out


def _delay_gpu_waits(
    jobs: list[tuple[JobSpec, int, float]],
    runs: list[LaneRun],
    gpu_full: list[tuple[float, float]],
    settings: EpisodeSettings,
    rng: np.random.Generator,
) -> None:
    """Make GPU lane runs that start in the full set and run past its end arrive earlier (in place).

    They arrive while the lane's previous run holds their GPUs and wait (a tie with starting at once).
    """
    ttl = settings.queue_ttl_s if settings.queue_ttl_s is not None else math.inf
    previous: dict[tuple[int, int], float] = {}
    for k, run in enumerate(runs):
        key = (run.node, run.lane)
        before = previous.get(key)
        previous[key] = run.start_s
        if not run.job_class.gpu_count or before is None:
            continue
        holding = next(((s, e) for s, e in gpu_full if s <= run.start_s < e), None)
        if holding is None or run.end_s < holding[1]:
            continue
        earliest = max(run.start_s - ttl, before, holding[1] - run.duration_s, holding[0])
        if earliest < run.start_s:
            job, node, start = jobs[k]
            jobs[k] = (replace(job, arrival_s=float(rng.uniform(earliest, run.start_s))), node, start)


def _checked(
    base: TwinSpec, jobs: list[tuple[JobSpec, int, float]], prices: dict[int, NodePrice], rng: np.random.Generator
) -> PlantedEpisode:
    """Order, certify, repair (drop stream jobs, undo waits not at their least), certify again."""
    for _ in range(3):
        episode = _episode(base, jobs, prices, rng)
        bad = _not_least(episode, prices)
        if not bad:
            return episode
        kept = []
        for job, node, start in jobs:
            key = (job.arrival_s, job.duration_s, node)
            if key in bad:
                if job.arrival_s < start:  # a waiting GPU run: start it at once instead
                    kept.append((replace(job, arrival_s=start), node, start))
                elif job.deadline_s is not None or node not in prices:  # a stream job: drop it
                    continue
                else:
                    raise RuntimeError(f"a bug in the priced generator: lane run of {job.job_id} is not at its least")
            else:
                kept.append((job, node, start))
        jobs = kept
    raise RuntimeError("a bug in the priced generator: the schedule is not at its least after repairs")


def _episode(
    base: TwinSpec, jobs: list[tuple[JobSpec, int, float]], prices: dict[int, NodePrice], rng: np.random.Generator
) -> PlantedEpisode:
    """The episode of ``jobs`` (ordered by arrival, ties in a random order) with its Lagrangian certificate.

    ``base``: the episode without its jobs.
    """
    order = rng.permutation(len(jobs))
    order = order[np.argsort([jobs[k][0].arrival_s for k in order], kind="stable")]
    width = len(str(max(len(jobs) - 1, 0)))
    ordered = [jobs[int(k)] for k in order]
    specs = [replace(job, job_id=f"planted-{rank:0{width}d}") for rank, (job, _, _) in enumerate(ordered)]
    spec = replace(base, jobs=Workload.of(specs))
    certificate = lagrangian_bound(spec, prices)
    return PlantedEpisode(spec, tuple(n for _, n, _ in ordered), certificate, tuple(s for _, _, s in ordered))


def _not_least(episode: PlantedEpisode, prices: dict[int, NodePrice]) -> set[tuple[float, float, int]]:
    """``(arrival, duration, node)`` of the jobs whose planted option costs more than their least priced one."""
    spec, certificate = episode.spec, episode.certificate
    assert isinstance(certificate, LagrangianCertificate)
    c = TwinConstants.of(spec)
    wait = spec.settings.weights.wait_usd_per_job_hour / 3600.0
    bad = set()
    for j, (node, start) in enumerate(zip(episode.planted_nodes, episode.planted_starts_s or (), strict=True)):
        price = prices.get(node)
        units = c.req_gpus[j] if price is not None and price.resource == GPU_UNITS else c.req_cpu_m[j] / 1000.0
        rate = c.price_per_s[node] * (c.req_gpus[j] / c.gpus[node] if c.req_gpus[j] else c.req_cpu_m[j] / c.cpu_m[node])
        usd = rate * c.duration_s[j] + wait * (start - c.arrival_s[j])
        if price is not None:
            usd += units * float(price.integral(np.array([start]), np.array([start + c.duration_s[j]]))[0])
        if usd > certificate.priced_usd[j] * (1.0 + RELATIVE_SLACK) + 1e-15:
            bad.add((c.arrival_s[j], c.duration_s[j], node))
    return bad
