"""The oracle's numeric view of one episode, read from a :class:`digital_twin.HindsightView`.

Everything here mirrors the twin's own arithmetic (integer millicores and MiB, ``price / 3600``
per second, the pro-rated share, the SLA predicate) so that the programs account exactly as
the twin does. Nothing is read from the twin's private state: only the hindsight view.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from agents.charges import Charges, share_usd_per_s
from agents.oracle.model.dag import OracleDag, earliest_releases_s, oracle_dag
from agents.oracle.model.energy import RunEnergy, charged, run_energy
from agents.oracle.model.fit import candidates as fit_candidates
from agents.oracle.model.fit import mebibytes, millicores, node_shapes
from agents.oracle.model.rule_caps import NodeCap, node_caps
from digital_twin import EpisodeSettings, HindsightView, JobSpec, NodeSpec
from digital_twin.energy.model import EnergyModel
from digital_twin.episode_settings import PROCESSOR_SHARING
from digital_twin.objective import ObjectiveWeights
from digital_twin.sim.tables.contention import slowest_rate
from digital_twin.sim.tables.rule_tables import CompiledRules, compile_rules
from digital_twin.tick_grid import TickGrid


@dataclass(frozen=True, eq=False)
class OracleInstance:
    """Arrays describing one episode for the oracle's programs (units in the names).

    The episode's settings and tick grid are the twin's own objects (``settings``, ``grid``);
    the properties below read them under the names the programs use.

    Attributes:
        settings: The episode's settings (:class:`digital_twin.EpisodeSettings`).
        grid: The episode's tick grid (:class:`digital_twin.tick_grid.TickGrid`).
        tick_times_s: ``(K,)`` SLA sampling times, ``grid.times_s()``.
        node_cpu_m, node_mem_mib, node_gpus: ``(N,)`` int64 capacities.
        node_price_per_s: ``(N,)`` node price in USD per second.
        node_spot: ``(N,)`` bool.
        interruptions_s: Per node, sorted effective interruption times (all < horizon).
        down_windows_s: Per node, ``(start, end)`` half-open down intervals.
        sla_allowed_cpu_m: ``(K, N)`` int64, the largest allocated millicores on node ``i`` at
            tick ``k`` that does not violate the SLA (``-1`` when the background alone does).
        job_ids: ``(J,)`` job ids in ``spec.jobs`` order (sorted by arrival).
        arrival_s, duration_s: ``(J,)`` seconds (``duration_s`` nominal: a run at full speed).
        longest_run_s: ``(J,)`` the longest a run can take under cpu contention, seconds: the
            nominal duration over the slowest rate of its candidate nodes (``duration_s`` without
            interference; :func:`slowest_rates`).
        slowest_rate: ``(K, N)`` the lowest progress rate of node ``i``'s jobs while tick ``k``'s
            background holds (the node fully allocated; all 1.0 without interference).
        deadline_s: ``(J,)`` seconds, ``+inf`` for jobs without a deadline.
        latency_slo_s: ``(J,)`` latency SLO, ``latency_slo_factor x duration_s`` (the
            ``utility`` term reads it for latency-critical jobs).
        job_cpu_m, job_mem_mib, job_gpus: ``(J,)`` int64 requests.
        job_lc, job_preemptible: ``(J,)`` bool.
        submitted: ``(J,)`` bool, arrival before the horizon (later jobs never exist).
        candidates: Per job, the nodes it could ever run on (the twin's static candidates).
        rate_per_s: ``(J, N)`` pro-rated USD per second of job j on node i (0 off-candidate).
        static_events_s: Sorted times < horizon at which the twin handles an event in every
            episode whatever the policy: ticks, arrivals, interruptions and recoveries. A
            pending job is asked at each of them. A TTL expiry is not one: it is an event only
            when it rejects a job still queued (:func:`first_expiries_s` lists the first ones).
        node_classes: Groups (>= 2) of interchangeable nodes: equal specs apart from the id,
            equal background cpu series and equal interruption times (and, when ``energy`` is
            charged, equal power and carbon intensity).
        energy: The least energy and emissions a run adds to its node
            (:class:`~agents.oracle.model.energy.RunEnergy`), when the episode weighs the
            ``energy`` or ``carbon`` term; ``None`` otherwise (both counted 0, which is exact).
        interference_stretch: ``(J,)`` ``1 +`` the sum of the co-location slowdowns a job can
            suffer (:mod:`digital_twin.sim.tables.interference`): its run can take that many times its
            contention-stretched length (all 1 without interference; ``None`` reads as 1).
        node_caps: The placement rules that cap, at every moment, how many jobs of a group a
            node runs (:mod:`agents.oracle.model.rule_caps`): kept by the programs.
        dag: The workflows (:mod:`agents.oracle.model.dag`), ``None`` when no job is a task.

    Placement rules (:mod:`digital_twin.placement`): the node-side ones are in ``candidates``
    (the twin's static candidates are cut the same way), per-node caps in ``node_caps``; the
    rest (other anti-affinity, spread over domains of several nodes) are not modelled: the
    programs may plan what the twin refuses, and the plan's replay (which places through the
    twin's mask) waits or repairs there; a bound without them is still a bound (they only take
    schedules away), and preferences (>= 0) are charged 0.
    """

    settings: EpisodeSettings
    grid: TickGrid
    tick_times_s: np.ndarray  # (K,)
    node_cpu_m: np.ndarray  # (N,)
    node_mem_mib: np.ndarray  # (N,)
    node_gpus: np.ndarray  # (N,)
    node_price_per_s: np.ndarray  # (N,)
    node_spot: np.ndarray  # (N,)
    interruptions_s: tuple[tuple[float, ...], ...]
    down_windows_s: tuple[tuple[tuple[float, float], ...], ...]
    sla_allowed_cpu_m: np.ndarray  # (K, N)
    job_ids: tuple[str, ...]
    arrival_s: np.ndarray  # (J,)
    duration_s: np.ndarray  # (J,)
    longest_run_s: np.ndarray  # (J,)
    slowest_rate: np.ndarray  # (K, N)
    deadline_s: np.ndarray  # (J,)
    latency_slo_s: np.ndarray  # (J,)
    job_cpu_m: np.ndarray  # (J,)
    job_mem_mib: np.ndarray  # (J,)
    job_gpus: np.ndarray  # (J,)
    job_lc: np.ndarray  # (J,)
    job_preemptible: np.ndarray  # (J,)
    submitted: np.ndarray  # (J,)
    candidates: tuple[tuple[int, ...], ...]
    rate_per_s: np.ndarray  # (J, N)
    static_events_s: np.ndarray  # (E,)
    node_classes: tuple[tuple[int, ...], ...]
    energy: RunEnergy | None = None
    interference_stretch: np.ndarray | None = None  # (J,)
    node_caps: tuple[NodeCap, ...] = ()
    dag: OracleDag | None = None

    @property
    def horizon_s(self) -> float:
        """The episode covers ``[0, horizon_s)``, seconds."""
        return float(self.grid.horizon_s)

    @property
    def tick_s(self) -> float:
        """Telemetry tick length, seconds; SLA sampling times are ``tick_times_s``."""
        return float(self.grid.tick_s)

    @property
    def ttl_s(self) -> float | None:
        """Queue TTL, seconds (``None`` = none)."""
        ttl = self.settings.queue_ttl_s
        return None if ttl is None else float(ttl)

    @property
    def weights(self) -> ObjectiveWeights:
        """Penalties per event in USD."""
        return self.settings.weights

    @property
    def active_nodes(self) -> bool:
        """True under the ``active-nodes`` cost model, False under ``prorated``."""
        return self.settings.active_nodes

    @property
    def deadline_at_completion(self) -> bool:
        """True when lateness is judged at a run's end (``completion``), False at the first start."""
        return self.settings.deadline_at_completion

    @cached_property
    def charges(self) -> Charges:
        """What each penalty term charges under the episode's weights (:class:`agents.charges.Charges`)."""
        return Charges(self.weights)

    @property
    def n_nodes(self) -> int:
        """Number of nodes N."""
        return len(self.node_cpu_m)

    @property
    def n_jobs(self) -> int:
        """Number of jobs J (submitted or not)."""
        return len(self.job_ids)

    @classmethod
    def from_hindsight(cls, view: HindsightView) -> OracleInstance:
        """Build the instance of the episode ``view`` describes."""
        spec = view.spec
        fleet, jobs = spec.fleet, spec.jobs
        horizon = float(spec.settings.horizon_s)
        ticks = np.asarray(view.tick_times_s, dtype=np.float64)
        node_cpu = np.array([millicores(n.cpu_cores) for n in fleet], dtype=np.int64)
        node_gpus = np.array([n.gpu_count for n in fleet], dtype=np.int64)
        price = np.array([n.price_per_hour_usd / 3600.0 for n in fleet])
        candidates = fit_candidates(node_shapes(fleet, jobs))
        judged = spec.rules is not None and spec.rules.judges
        placement = compile_rules(spec.rules, fleet, jobs) if spec.rules is not None and judged else None
        stretch = np.ones(len(jobs))
        if placement is not None:
            candidates = _allowed_candidates(candidates, placement.allowed)
            if placement.interference is not None:
                stretch = 1.0 + np.asarray(placement.interference.max_slowdown, dtype=np.float64)
        submitted = np.array([j.arrival_s < horizon for j in jobs], dtype=bool)
        background = np.asarray(view.background_cpu_pct, dtype=np.float64)[: len(ticks)]
        durations = np.array([j.duration_s for j in jobs], dtype=np.float64)
        slowest = slowest_rate_table(view)
        job_cpu = np.array([millicores(j.cpu_cores) for j in jobs], dtype=np.int64)
        energy = run_energy(view, node_cpu, job_cpu, candidates) if charged(view) else None
        return cls(
            settings=spec.settings,
            grid=spec.grid,
            tick_times_s=ticks,
            node_cpu_m=node_cpu,
            node_mem_mib=np.array([mebibytes(n.mem_gb) for n in fleet], dtype=np.int64),
            node_gpus=node_gpus,
            node_price_per_s=price,
            node_spot=np.array([n.is_spot for n in fleet], dtype=bool),
            interruptions_s=tuple(tuple(float(t) for t in times) for times in view.interruptions_s),
            down_windows_s=view.down_windows_s,
            sla_allowed_cpu_m=_sla_allowed(background, node_cpu, float(spec.settings.sla_threshold_pct)),
            job_ids=tuple(j.job_id for j in jobs),
            arrival_s=np.array([j.arrival_s for j in jobs], dtype=np.float64),
            duration_s=durations,
            longest_run_s=longest_runs(durations * stretch, _slowest_on(candidates, slowest.min(axis=0))),
            slowest_rate=slowest,
            deadline_s=np.array([math.inf if j.deadline_s is None else j.deadline_s for j in jobs]),
            latency_slo_s=durations * float(spec.settings.latency_slo_factor),  # the twin's float expression
            job_cpu_m=job_cpu,
            job_mem_mib=np.array([mebibytes(j.mem_gb) for j in jobs], dtype=np.int64),
            job_gpus=np.array([j.gpu_count for j in jobs], dtype=np.int64),
            job_lc=np.array([j.is_latency_critical for j in jobs], dtype=bool),
            job_preemptible=np.array([j.preemptible for j in jobs], dtype=bool),
            submitted=submitted,
            candidates=candidates,
            rate_per_s=_rates(jobs, candidates, node_cpu, node_gpus, price),
            static_events_s=static_events(view, ticks, submitted),
            node_classes=_node_classes(
                fleet, background, view.interruptions_s, spec.energy_model if energy else None, placement
            ),
            energy=energy,
            interference_stretch=stretch,
            node_caps=() if placement is None else node_caps(placement),
            dag=oracle_dag(jobs, horizon),
        )

    def is_down(self, node: int, time_s: float) -> bool:
        """Whether ``node`` is down at ``time_s`` (half-open down windows)."""
        return any(lo <= time_s < hi for lo, hi in self.down_windows_s[node])

    def next_interruption_s(self, node: int, after_s: np.ndarray) -> np.ndarray:
        """``(n,)`` first interruption time of ``node`` strictly after each time (``inf`` if none)."""
        times = np.array((*self.interruptions_s[node], math.inf))
        return times[np.searchsorted(times, after_s, side="right")]

    @cached_property
    def has_parents(self) -> np.ndarray:
        """``(J,)`` bool, the job is a workflow task released by its parents' completions (False without workflows)."""
        return np.zeros(self.n_jobs, dtype=bool) if self.dag is None else self.dag.has_parents

    @cached_property
    def earliest_start_s(self) -> np.ndarray:
        """``(J,)`` the earliest any run of each job can start, seconds.

        Its arrival, or for a workflow task its earliest release (:func:`agents.oracle.model.dag.earliest_releases_s`).
        """
        if self.dag is None:
            return self.arrival_s
        return earliest_releases_s(self.dag, self.arrival_s, self.duration_s)

    def placeable(self, job: int) -> bool:
        """Submitted and fits some node when empty (otherwise rejected on arrival, or never exists)."""
        return bool(self.submitted[job]) and bool(self.candidates[job])


def slowest_rates(view: HindsightView) -> np.ndarray:
    """``(N,)`` the lowest progress rate each node's jobs can have before the horizon (1.0 without interference)."""
    return slowest_rate_table(view).min(axis=0)


def slowest_rate_table(view: HindsightView) -> np.ndarray:
    """``(K, N)`` the lowest progress rate of each node's jobs while each tick's background holds.

    Under processor sharing a node's rate is lowest when it is fully allocated
    (:func:`digital_twin.sim.tables.contention.slowest_rate`); the background is a step function of the
    ticks before the horizon, computed in millicores exactly as the twin does. All 1.0
    without interference (``K >= 1``).
    """
    spec = view.spec
    n_nodes = len(spec.fleet)
    n_ticks = max(1, len(view.tick_times_s))
    if spec.settings.interference != PROCESSOR_SHARING:
        return np.ones((n_ticks, n_nodes))
    background = np.asarray(view.background_cpu_pct, dtype=np.float64)[:n_ticks]  # (K, N)
    capacity = [millicores(n.cpu_cores) for n in spec.fleet]
    return np.array([
        [slowest_rate(float(pct) * capacity[i] / 100.0, capacity[i]) for i, pct in enumerate(row)]
        for row in background
    ])


def longest_runs(durations: np.ndarray, slowest: np.ndarray) -> np.ndarray:
    """``(J,)`` each job's nominal duration over ``slowest``, its slowest possible rate (seconds).

    Exactly the nominal duration where the job cannot slow down (rate 1); elsewhere a tiny
    relative margin covers the rounding of the twin's piecewise progress.
    """
    return np.where(slowest < 1.0, durations / slowest * (1.0 + 1e-9), durations)


def _allowed_candidates(
    candidates: tuple[tuple[int, ...], ...], allowed: Sequence[tuple[bool, ...] | None]
) -> tuple[tuple[int, ...], ...]:
    """Each job's candidates less the nodes its node-side placement rules forbid (as the twin's)."""
    return tuple(
        nodes if mask is None else tuple(i for i in nodes if mask[i])
        for nodes, mask in zip(candidates, allowed, strict=True)
    )


def _slowest_on(candidates: Sequence[Sequence[int]], rates: np.ndarray) -> np.ndarray:
    """``(J,)`` the slowest of ``rates`` (``(N,)``) over each job's candidate nodes (1.0 for none)."""
    return np.array([min((rates[i] for i in nodes), default=1.0) for nodes in candidates])


def _rates(
    jobs: Sequence[JobSpec],
    candidates: tuple[tuple[int, ...], ...],
    node_cpu: np.ndarray,
    node_gpus: np.ndarray,
    price: np.ndarray,
) -> np.ndarray:
    """``(J, N)`` pro-rated USD/s: GPU share for GPU jobs, cpu share otherwise (as the twin)."""
    rates = np.zeros((len(jobs), len(node_cpu)))
    for j, job in enumerate(jobs):
        for i in candidates[j]:
            if job.gpu_count > 0:
                rates[j, i] = share_usd_per_s(float(price[i]), job.gpu_count, int(node_gpus[i]))
            else:
                rates[j, i] = share_usd_per_s(float(price[i]), millicores(job.cpu_cores), int(node_cpu[i]))
    return rates


def _sla_allowed(background: np.ndarray, node_cpu: np.ndarray, threshold: float) -> np.ndarray:
    """``(K, N)`` largest allocation (millicores) with ``bg + 100 * L / C <= threshold`` in floats."""
    allowed = np.empty(background.shape, dtype=np.int64)
    for (k, i), bg in np.ndenumerate(background):
        capacity = int(node_cpu[i])

        def violates(load: int, bg: float = float(bg), capacity: int = capacity) -> bool:
            return bg + 100.0 * load / capacity > threshold

        guess = min(capacity, max(-1, math.floor((threshold - bg) * capacity / 100.0)))
        while guess >= 0 and violates(guess):
            guess -= 1
        while guess < capacity and not violates(guess + 1):
            guess += 1
        allowed[k, i] = guess
    return allowed


def static_events(view: HindsightView, ticks: np.ndarray, submitted: np.ndarray) -> np.ndarray:
    """``(E,)`` sorted event times < horizon that occur whatever the policy (see :class:`OracleInstance`).

    Args:
        view: The episode.
        ticks: ``(K,)`` SLA tick times.
        submitted: ``(J,)`` bool, the job arrives before the horizon.
    """
    spec = view.spec
    horizon = float(spec.settings.horizon_s)
    times = [ticks, spec.jobs.arrival_s[submitted]]
    times.extend(np.array(windows, dtype=np.float64).reshape(-1) for windows in view.down_windows_s)
    out = np.unique(np.concatenate(times).astype(np.float64))
    return out[out < horizon]


def first_expiries_s(arrival_s: np.ndarray, ttl_s: float | None) -> np.ndarray:
    """``(n,)`` the first TTL expiries ``a + TTL`` of jobs arriving at ``arrival_s`` (seconds; none without a TTL).

    Each is an event of the twin only in episodes where the job is still queued then (it is
    rejected), so a plan may not count on it; the relaxation's decision-time superset holds it.
    The twin's float expression.
    """
    if ttl_s is None:
        return np.zeros(0)
    return np.asarray(arrival_s, dtype=np.float64) + ttl_s


def _node_classes(
    fleet: tuple[NodeSpec, ...],
    background: np.ndarray,
    interruptions: tuple[tuple[float, ...], ...],
    energy: EnergyModel | None = None,
    placement: CompiledRules | None = None,
) -> tuple[tuple[int, ...], ...]:
    """Groups of nodes that are interchangeable in every program (used for symmetry breaking).

    With ``energy`` (the episode's model, when its terms are charged) the nodes of a group also
    draw alike: the same power curve, GPU power and region. Under placement rules they also
    carry the same labels (but their ``node`` id), so every rule treats them alike, and every
    job is allowed on all of them or on none.
    """
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, node in enumerate(fleet):
        key: tuple[object, ...] = (dataclasses.replace(node, node_id="_"), background[:, i].tobytes(), interruptions[i])
        if energy is not None:
            power = energy.nodes[i]
            key += (power.curve.points_u.tobytes(), power.curve.watts.tobytes(), power.gpu, power.region)
        if placement is not None:
            key += (
                tuple(sorted((k, v) for k, v in placement.node_labels[i].items() if k != "node")),
                tuple(allowed is None or allowed[i] for allowed in placement.allowed),
            )
        groups.setdefault(key, []).append(i)
    return tuple(tuple(g) for g in groups.values() if len(g) > 1)
