"""A seeded synthetic job generator: diurnal Poisson arrivals and the reference's job mix.

Arrivals are a non-homogeneous Poisson process on ``[0, horizon_s)`` with rate::

    rate(t) = base_rate_per_s * (1 + diurnal_amplitude * sin(2 pi t / 86400 + diurnal_phase_rad))

drawn by thinning (Lewis & Shedler 1979): candidates from a homogeneous process at the peak
rate ``base_rate_per_s * (1 + diurnal_amplitude)``, each kept with probability
``rate(t) / peak``. ``t = 0`` is the episode start; with the default phase the peak falls
14 h and the trough 2 h after it (14:00 and 02:00 for an episode starting at midnight).

Each arrival draws a :class:`JobClass` from ``mix`` (default: the reference system's API
simulation mix, uniform over its 8 classes). Batch jobs are preemptible with probability
``batch_preemptible_prob`` (0.3, as the reference); other jobs are not. When ``cpu_sizes``
is set (e.g. :data:`AZURE_JOB_SIZES`), every CPU-only job's cores are redrawn from it and its
memory is ``mem_gb_per_core`` x cores. Durations are lognormal with a median per workload
type and log-standard-deviation ``duration_sigma``, clipped to
``[min_duration_s, max_duration_s]``. Latency-critical jobs get ``deadline_s = arrival +
lc_deadline_slack_s`` when that is set (each with probability ``lc_deadline_prob``, default 1).
GPU jobs need ``gpu_count >= 1`` of any model. No job declares a duration
(``declared_duration_s`` NaN; the scenario's estimate model fills them,
:mod:`digital_twin.declared_durations`).

Everything random comes from the ``numpy.random.Generator`` passed in, in a fixed order, so the
same config, seed and horizon give identical jobs, and a ``limit`` keeps exactly the first
``limit`` jobs of the unlimited run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from digital_twin import portable_math
from digital_twin.errors import SpecError, short_repr
from digital_twin.identity_cache import IdentityCache
from digital_twin.jobs import BATCH, LATENCY_CRITICAL, STREAM, WORKLOAD_TYPES
from digital_twin.workload import Workload
from digital_twin.workloads._common import check_fraction, check_int, check_positive, coerce
from digital_twin.workloads.job_mix import API_SIMULATION_MIX, CpuSizeDistribution, JobClass

SECONDS_PER_DAY = 86_400.0
_LC_INDEX = WORKLOAD_TYPES.index(LATENCY_CRITICAL)
_BATCH_INDEX = WORKLOAD_TYPES.index(BATCH)


@dataclass(frozen=True, slots=True)
class SyntheticWorkloadConfig:
    """All parameters of the synthetic generator (every field has a default)."""

    base_rate_per_s: float = 1.0 / 120.0
    """Mean arrival rate in jobs/s over a day. The default (one job per 2 min) with the default
    mix and durations asks for about 38 cores on average (4,500 core-seconds per job), i.e.
    about 43 % of the default 5-node fleet's 88 cores (64 % at the diurnal peak)."""
    diurnal_amplitude: float = 0.5
    """Relative swing of the rate around ``base_rate_per_s``, in [0, 1]; 0 = homogeneous."""
    diurnal_phase_rad: float = -2.0 * math.pi / 3.0
    """Phase of the daily sine in radians; the default puts the peak at t = 14 h."""
    mix: tuple[JobClass, ...] = API_SIMULATION_MIX
    """Job classes drawn for each arrival, in proportion to their weights (mappings of
    :class:`JobClass` fields are accepted and converted, as from a scenario file)."""
    cpu_sizes: CpuSizeDistribution | None = None
    """When set, CPU-only jobs draw cores (and memory) from it instead of their class (a
    mapping of :class:`CpuSizeDistribution` fields is accepted)."""
    batch_preemptible_prob: float = 0.3
    """Probability that a batch job is preemptible, in [0, 1] (other types never are)."""
    lc_median_duration_s: float = 120.0
    """Median duration of latency-critical jobs in seconds."""
    batch_median_duration_s: float = 900.0
    """Median duration of batch jobs in seconds."""
    stream_median_duration_s: float = 1800.0
    """Median duration of stream jobs in seconds."""
    duration_sigma: float = 1.0
    """Standard deviation of log-duration (>= 0; 0 = every job lasts its median)."""
    min_duration_s: float = 1.0
    """Durations are clipped to at least this many seconds (> 0)."""
    max_duration_s: float = SECONDS_PER_DAY
    """Durations are clipped to at most this many seconds (>= ``min_duration_s``)."""
    lc_deadline_slack_s: float | None = None
    """Latest start of latency-critical jobs, in seconds after arrival; ``None`` = no deadline."""
    lc_deadline_prob: float = 1.0
    """Probability in [0, 1] that a latency-critical job gets that deadline (only with
    ``lc_deadline_slack_s``). At 1 every latency-critical job has one and no other job does, so
    ``has_deadline`` alone tells the class apart; below 1 it does not (a policy trained there
    must read the workload type: real latency-critical requests, e.g. the Azure LLM trace's,
    come without deadlines). Below 1 one more uniform per arrival is drawn, after all the others."""
    gpu_vram_gb: float = 0.0
    """Minimum VRAM per GPU in GB for GPU jobs (0 = any GPU)."""
    job_id_prefix: str = "syn-"
    """Job ids are ``f"{job_id_prefix}{k}"`` for the k-th arrival (0-based)."""

    def __post_init__(self) -> None:
        check_positive("base_rate_per_s", self.base_rate_per_s)
        check_fraction("diurnal_amplitude", self.diurnal_amplitude)
        phase = self.diurnal_phase_rad
        if not (isinstance(phase, int | float) and math.isfinite(phase)):
            raise SpecError(f"diurnal_phase_rad must be a finite number, got {short_repr(phase)}")
        if isinstance(self.mix, Mapping | str) or not self.mix:
            raise SpecError(f"mix must be a non-empty sequence of JobClass, got {short_repr(self.mix)}")
        mix = tuple(coerce(JobClass, j, f"mix[{i}]") for i, j in enumerate(self.mix))
        object.__setattr__(self, "mix", mix)
        if self.cpu_sizes is not None:
            sizes = coerce(CpuSizeDistribution, self.cpu_sizes, "cpu_sizes")
            object.__setattr__(self, "cpu_sizes", sizes)
        check_fraction("batch_preemptible_prob", self.batch_preemptible_prob)
        for name in ("lc_median_duration_s", "batch_median_duration_s", "stream_median_duration_s",
                     "min_duration_s", "max_duration_s"):
            check_positive(name, getattr(self, name))
        check_positive("duration_sigma", self.duration_sigma, allow_zero=True)
        check_positive("gpu_vram_gb", self.gpu_vram_gb, allow_zero=True)
        if self.max_duration_s < self.min_duration_s:
            raise SpecError("max_duration_s must be >= min_duration_s")
        if self.lc_deadline_slack_s is not None:
            check_positive("lc_deadline_slack_s", self.lc_deadline_slack_s, allow_zero=True)
        check_fraction("lc_deadline_prob", self.lc_deadline_prob)

    def rate_per_s(self, t_s: np.ndarray | float) -> np.ndarray:
        """Arrival rate in jobs/s at episode time(s) ``t_s``.

        >>> cfg = SyntheticWorkloadConfig(base_rate_per_s=1.0, diurnal_amplitude=0.5)
        >>> float(cfg.rate_per_s(14 * 3600.0))
        1.5
        """
        t = np.asarray(t_s, dtype=np.float64)
        angle = 2.0 * np.pi * t / SECONDS_PER_DAY + self.diurnal_phase_rad
        sine = portable_math.sin(angle)  # the same rates on any machine
        return self.base_rate_per_s * (1.0 + self.diurnal_amplitude * sine)

    @property
    def peak_time_s(self) -> float:
        """Time of day of the rate's peak, in seconds in ``[0, 86400)``."""
        fraction_of_day = (math.pi / 2 - self.diurnal_phase_rad) / (2 * math.pi)
        return (fraction_of_day * SECONDS_PER_DAY) % SECONDS_PER_DAY

    def median_duration_s(self, workload: str) -> float:
        """The median duration in seconds of one workload type."""
        medians = {
            LATENCY_CRITICAL: self.lc_median_duration_s,
            BATCH: self.batch_median_duration_s,
            STREAM: self.stream_median_duration_s,
        }
        return medians[workload]


def diurnal_arrivals(
    config: SyntheticWorkloadConfig, rng: np.random.Generator, horizon_s: float
) -> np.ndarray:
    """Arrival times in ``[0, horizon_s)`` by thinning; ``(n,)`` float64, sorted."""
    peak = config.base_rate_per_s * (1.0 + config.diurnal_amplitude)
    chunk = max(64, math.ceil(peak * horizon_s * 1.1))
    candidates = np.cumsum(rng.exponential(1.0 / peak, size=chunk))
    last = float(candidates[-1])
    if last < horizon_s:  # rare: the first chunk ends before the horizon
        times = [candidates]
        while last < horizon_s:
            times.append(last + np.cumsum(rng.exponential(1.0 / peak, size=chunk)))
            last = float(times[-1][-1])
        candidates = np.concatenate(times)
    candidates = candidates[: candidates.searchsorted(horizon_s)]  # sorted: the times < horizon_s
    draws = rng.random(candidates.size) * peak
    if config.diurnal_amplitude == 0.0:  # rate_per_s is base_rate_per_s x (1 + 0 x sine): exactly the base rate
        return candidates[draws < config.base_rate_per_s]
    return candidates[draws < config.rate_per_s(candidates)]


def _categorical(rng: np.random.Generator, cdf: np.ndarray, n: int, count: int) -> np.ndarray:
    """The first ``count`` of ``n`` indices drawn from the distribution ``cdf`` (:func:`_cdf`), by inverse CDF.

    One uniform per draw, as ``rng.choice(len(weights), n, p=...)`` does (same numbers), without
    its argument checks, which cost more than the draw at every env reset. All ``n`` are drawn,
    so that the generator's next numbers do not depend on ``count``.
    """
    return cdf.searchsorted(rng.random(n)[:count], side="right")


def _cdf(weights: Sequence[float]) -> np.ndarray:
    """The cumulative distribution of ``weights`` (read-only), as :func:`_categorical` draws from it."""
    cdf = np.cumsum(weights, dtype=np.float64)
    cdf /= cdf[-1]
    return _frozen(cdf)


def _frozen(array: np.ndarray) -> np.ndarray:
    """``array``, made read-only."""
    array.flags.writeable = False
    return array


def _cannot_overflow(config: SyntheticWorkloadConfig, horizon_s: float) -> bool:
    """Whether every memory (size x GB per core) and deadline (arrival + slack) drawn is finite."""
    sizes = config.cpu_sizes
    if sizes is not None and not math.isfinite(max(sizes.sizes) * sizes.mem_gb_per_core):
        return False
    slack = config.lc_deadline_slack_s
    return slack is None or math.isfinite(horizon_s + slack)


class _ClassColumns(NamedTuple):
    """A config's mix as read-only arrays: one entry per class (indexed by the drawn class), and the draws' CDFs."""

    cpu_cores: np.ndarray  # (len(mix),) float64
    mem_gb: np.ndarray  # (len(mix),) float64
    gpu_count: np.ndarray  # (len(mix),) int64
    cpu_only: np.ndarray  # (len(mix),) bool: no GPUs (redrawn from cpu_sizes when set)
    workload_index: np.ndarray  # (len(mix),) int64 index into WORKLOAD_TYPES
    priority: np.ndarray  # (len(mix),) int64
    median_duration_s: np.ndarray  # (len(mix),) float64: the median of the class's workload type
    class_cdf: np.ndarray  # (len(mix),) float64: _cdf of the classes' weights
    cpu_sizes: _SizeColumns | None  # config.cpu_sizes as arrays (None without it)


class _SizeColumns(NamedTuple):
    """A :class:`CpuSizeDistribution` as read-only arrays."""

    sizes: np.ndarray  # (S,) float64
    cdf: np.ndarray  # (S,) float64: _cdf of the weights
    mem_gb_per_core: float


def _new_class_columns(config: SyntheticWorkloadConfig) -> _ClassColumns:
    mix = config.mix
    sizes = config.cpu_sizes
    return _ClassColumns(
        cpu_cores=_frozen(np.array([c.cpu_cores for c in mix], dtype=np.float64)),
        mem_gb=_frozen(np.array([c.mem_gb for c in mix], dtype=np.float64)),
        gpu_count=_frozen(np.array([c.gpu_count for c in mix], dtype=np.int64)),
        cpu_only=_frozen(np.array([c.gpu_count == 0 for c in mix])),
        workload_index=_frozen(np.array([WORKLOAD_TYPES.index(c.workload) for c in mix], dtype=np.int64)),
        priority=_frozen(np.array([c.priority for c in mix], dtype=np.int64)),
        median_duration_s=_frozen(np.array([config.median_duration_s(c.workload) for c in mix])),
        class_cdf=_cdf([c.weight for c in mix]),
        cpu_sizes=None if sizes is None else _SizeColumns(
            sizes=_frozen(np.array(sizes.sizes, dtype=np.float64)),
            cdf=_cdf(sizes.weights),
            mem_gb_per_core=sizes.mem_gb_per_core,
        ),
    )


_class_columns: IdentityCache[SyntheticWorkloadConfig, _ClassColumns] = IdentityCache(_new_class_columns)
"""The per-class columns of a config, by identity: a scenario draws from its one config at every reset."""


_JOB_IDS: dict[str, tuple[str, ...]] = {}
"""Per job id prefix, the ids of the first jobs (strings: shared safely by every workload)."""


def _job_ids(prefix: str, count: int) -> list[str]:
    """``[f"{prefix}{k}" for k in range(count)]``, from a cache for the usual workload sizes."""
    ids = _JOB_IDS.get(prefix, ())
    if len(ids) < count <= 4096:
        if len(_JOB_IDS) >= 16:
            _JOB_IDS.clear()
        ids = _JOB_IDS[prefix] = tuple(f"{prefix}{k}" for k in range(max(count, 64)))
    if len(ids) < count:  # a large workload: not cached
        return [f"{prefix}{k}" for k in range(count)]
    return list(ids[:count])


def generate_jobs(
    config: SyntheticWorkloadConfig,
    rng: np.random.Generator,
    horizon_s: float,
    limit: int | None = None,
) -> Workload:
    """Draw a synthetic workload on ``[0, horizon_s)``.

    Args:
        config: Generator parameters.
        rng: The only source of randomness.
        horizon_s: Length of the arrival window in seconds (> 0).
        limit: Keep only the first ``limit`` arrivals (>= 0; ``None`` = all).

    Returns:
        Jobs sorted by arrival; arrivals are the process's own times (not shifted).

    Raises:
        SpecError: A bad argument.

    >>> jobs = generate_jobs(SyntheticWorkloadConfig(), np.random.default_rng(0), 3600.0)
    >>> jobs == generate_jobs(SyntheticWorkloadConfig(), np.random.default_rng(0), 3600.0)
    True
    """
    if not isinstance(rng, np.random.Generator):
        raise SpecError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    check_positive("horizon_s", horizon_s)
    if limit is not None:
        check_int("limit", limit, 0)
    arrival = diurnal_arrivals(config, rng, horizon_s)
    n = arrival.size
    count = n if limit is None else min(n, limit)
    classes = _class_columns(config)
    # Draw every attribute for every arrival, in a fixed order, before applying ``limit``; then
    # keep the first ``count`` draws of each.
    kind = _categorical(rng, classes.class_cdf, n, count)
    preempt_draw = rng.random(n)[:count]
    z = rng.standard_normal(n)[:count]
    sizes, mem_per_core = None, 0.0
    if classes.cpu_sizes is not None:
        size_index = _categorical(rng, classes.cpu_sizes.cdf, n, count)
        sizes, mem_per_core = classes.cpu_sizes.sizes[size_index], classes.cpu_sizes.mem_gb_per_core
    spread = portable_math.exp(config.duration_sigma * z)  # the same jobs from a seed on any machine
    # np.clip's values (nothing here is NaN), without its Python-level overhead
    duration = np.minimum(np.maximum(classes.median_duration_s[kind] * spread, config.min_duration_s),
                          config.max_duration_s)

    # Columns, not JobSpec objects: this runs at every env reset (see digital_twin.workload).
    cpu = classes.cpu_cores[kind]
    mem = classes.mem_gb[kind]
    if sizes is not None:  # CPU-only jobs take their cores from the size distribution
        cpu_only = classes.cpu_only[kind]
        cpu = np.where(cpu_only, sizes, cpu)
        mem = np.where(cpu_only, cpu * mem_per_core, mem)
    gpus = classes.gpu_count[kind]
    workload_index = classes.workload_index[kind]
    arrival = arrival[:count]
    deadline = np.full(count, np.nan)
    if config.lc_deadline_slack_s is not None:
        is_lc = workload_index == _LC_INDEX
        if config.lc_deadline_prob < 1.0:  # the last draw: the other columns are those of prob 1
            is_lc &= rng.random(n)[:count] < config.lc_deadline_prob
        deadline[is_lc] = arrival[is_lc] + config.lc_deadline_slack_s
    # Every column is valid by construction: the config's values are checked, arrivals are drawn
    # sorted in [0, horizon_s), durations are clipped to [min_duration_s, max_duration_s], the ids
    # are distinct. Only the memory of a redrawn size (a product) and a deadline (a sum) could
    # overflow to infinity: when one could, the columns are checked as any others are.
    build = Workload.from_valid_columns if _cannot_overflow(config, horizon_s) else Workload.from_columns
    return build(
        job_ids=_job_ids(config.job_id_prefix, count),
        arrival_s=arrival,
        duration_s=duration,
        workload_index=workload_index,
        cpu_cores=cpu,
        mem_gb=mem,
        gpu_count=gpus,
        gpu_vram_gb=np.where(gpus > 0, config.gpu_vram_gb, 0.0),
        priority=classes.priority[kind],
        preemptible=(workload_index == _BATCH_INDEX) & (preempt_draw < config.batch_preemptible_prob),
        deadline_s=deadline,
    )
