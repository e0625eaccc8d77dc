"""Scenario files: YAML (schema version 2) -> a frozen :class:`Scenario` -> a :class:`TwinSpec` per episode.

A scenario fixes everything an episode needs::

    schema_version: 2               # 1 is still read: it has no `interference` (always none)
    name: fleet5-synthetic          # required
    description: ...
    seed: 0                         # default episode seed; also seeds `resample: fixed` workloads
    horizon_s: 14400                # the episode covers [0, horizon_s)
    start_hour: 0                   # hour of day at t = 0 (clock features)
    job_budget: 50                  # keep at most this many jobs (first by arrival); optional
    queue_ttl_s: 1800               # null = no TTL
    sla_threshold_pct: 90
    cost_model: prorated            # or active-nodes
    interference: processor-sharing # or none: how background load slows jobs (digital_twin.contention)
    deadline_rule: first-start      # or completion: when a job is late (digital_twin.objective.DEADLINE_RULES)
    latency_slo_factor: 2.0         # latency-critical SLO = factor x nominal duration (the utility term); > 0
    weights: {rejection_usd: 2.0, ..}  # USD per unit of a penalty term: the weight_key of each row of
                                    # digital_twin.objective.PENALTIES (ObjectiveWeights' fields)
    spot: {recovery_s: 600, interruptions: true}
    fleet:      {preset: default-5} | {nodes: [...]} | {generate: {...}} | {alibaba_gpu_csv: {...}}
    telemetry:  {reader: constant, cpu_pct: .., mem_pct: .., tick_s: ..}
              | {reader: <TRACE_READERS name>, path: .., options: {..}, mapping: {..}}
    workload:   {source: synthetic, resample: per-episode|fixed, options: {SyntheticWorkloadConfig fields}}
              | {source: jobs, jobs: [...]}
              | {source: <JOB_FILE_SOURCES name>, path: .., options: {..}}
    limits:     {max_horizon_s: .., max_ticks: .., max_telemetry_cells: .., max_nodes: .., max_jobs: ..}  # optional

Paths are relative to the scenario file, or start with ``${VAR}`` (e.g. ``${ACO_ENV_TRACES}``)
to point at data kept elsewhere. Unknown keys anywhere are errors naming the file and key.
Data files are read lazily (the first time the fleet, telemetry or jobs are needed), so a
scenario whose real data is absent still loads and reports :meth:`Scenario.missing_data`.

Safety: a scenario file is user input, so loading it is bounded in time and memory whatever
it holds. The file must be a regular file of at most ``Limits.max_scenario_bytes`` and its
YAML may expand its aliases to at most ``Limits.max_yaml_nodes`` values
(:mod:`digital_twin.scenario.yaml_file`); error messages quote values through
:func:`~digital_twin.errors.short_repr`. Every size the scenario asks for (telemetry ticks and
ticks x nodes, nodes, jobs, synthetic arrivals) is checked against its
:class:`~digital_twin.limits.Limits` before anything is allocated, and the message says which
limit and how to raise it (the optional ``limits:`` mapping above; see :mod:`digital_twin.limits`).

A :class:`Scenario` pickles with the standard library, with whatever it has already loaded:
its data loaders are plain frozen dataclasses naming module-level functions, never closures
(one module per section: :mod:`~digital_twin.scenario.fleet_section`,
:mod:`~digital_twin.scenario.telemetry_section`, :mod:`~digital_twin.scenario.workload_section`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np

from digital_twin.contention import INTERFERENCE_MODELS, NO_INTERFERENCE, PROCESSOR_SHARING
from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.fleet import NodeSpec
from digital_twin.limits import FILE_LIMITS, Limits, count
from digital_twin.objective import (
    COST_MODELS,
    DEADLINE_AT_FIRST_START,
    DEADLINE_RULES,
    DEFAULT_LATENCY_SLO_FACTOR,
    PRORATED,
    ObjectiveWeights,
)
from digital_twin.scenario.fleet_section import FLEET_PRESETS, FleetLoader, fleet_loader
from digital_twin.scenario.paths import VAR, resolve_path
from digital_twin.scenario.schema import ScenarioError, Section, check_limit, checked
from digital_twin.scenario.telemetry_section import TelemetryLoader, telemetry_loader
from digital_twin.scenario.workload_section import JobsLoader, jobs_loader
from digital_twin.scenario.yaml_file import read_scenario_file
from digital_twin.spec import TwinSpec
from digital_twin.telemetry import CPU, Telemetry
from digital_twin.workload import Workload

__all__ = ["FLEET_PRESETS", "SCHEMA_VERSION", "Scenario", "load_scenario", "parse_scenario", "resolve_path"]

SCHEMA_VERSION = 2
"""The version this aco-env writes. Version 1 (before interference) is read as ``interference: none``."""
READABLE_SCHEMA_VERSIONS = (1, 2)
P = ParamSpec("P")
T = TypeVar("T")
_CHANGEABLE_SETTINGS = frozenset(
    {
        "cost_model",
        "interference",
        "deadline_rule",
        "latency_slo_factor",
        "weights",
        "sla_threshold_pct",
        "queue_ttl_s",
        "spot_recovery_s",
        "spot_interruptions",
        "fixed_interruptions_s",
        "seed",
        "description",
    }
)
_CACHED = ("fleet", "telemetry")  # cached data that no changeable setting affects


@dataclasses.dataclass(frozen=True, eq=False)
class Scenario:
    """A parsed scenario. Data is read on first use and cached; the object is otherwise immutable.

    Attributes:
        name, description: From the file.
        source: The file path (``None`` for scenarios built in code).
        content_hash: SHA-256 of the file's bytes (what a recording pins).
        seed: Default episode seed.
        horizon_s, start_hour, job_budget, queue_ttl_s, sla_threshold_pct, spot_recovery_s,
        spot_interruptions, cost_model, interference, deadline_rule, latency_slo_factor, weights:
        Episode settings (see the module docstring).
        per_episode_workload: True when each episode draws its own jobs from its seed.
        telemetry_source: The telemetry reader's name (for listings).
        data_files: Files under an environment-variable path (real traces) the scenario reads.
        limits: The size limits it was checked against (defaults raised by its ``limits:``).
    """

    name: str
    description: str
    source: Path | None
    content_hash: str
    seed: int
    horizon_s: float
    start_hour: float
    job_budget: int | None
    queue_ttl_s: float | None
    sla_threshold_pct: float
    spot_recovery_s: float
    spot_interruptions: bool
    fixed_interruptions_s: tuple[tuple[float, ...], ...] | None
    cost_model: str
    interference: str
    deadline_rule: str
    latency_slo_factor: float
    weights: ObjectiveWeights
    per_episode_workload: bool
    telemetry_source: str
    data_files: tuple[Path, ...]
    _fleet_loader: FleetLoader = dataclasses.field(repr=False)
    _telemetry_loader: TelemetryLoader = dataclasses.field(repr=False)
    _jobs_loader: JobsLoader = dataclasses.field(repr=False)
    limits: Limits = dataclasses.field(default_factory=Limits, repr=False)

    @cached_property
    def fleet(self) -> tuple[NodeSpec, ...]:
        """The nodes, in action order (read on first use)."""
        return self._built(self._fleet_loader)

    @cached_property
    def telemetry(self) -> Telemetry:
        """Background load for the fleet over the horizon (read on first use)."""
        return self._built(self._telemetry_loader, len(self.fleet))

    @cached_property
    def _fixed_jobs(self) -> Workload:
        return self._built(self._jobs_loader, np.random.default_rng(self.seed))

    def jobs(self, rng: np.random.Generator) -> Workload:
        """The episode's jobs: drawn from ``rng`` for per-episode workloads, else the fixed ones."""
        if self.per_episode_workload:
            return self._built(self._jobs_loader, rng)
        return self._fixed_jobs

    def make_spec(self, rng: np.random.Generator) -> TwinSpec:
        """The twin spec of one episode (jobs drawn from ``rng`` when the workload is per-episode)."""
        jobs = self.jobs(rng)
        return self._built(
            TwinSpec,
            fleet=self.fleet,
            jobs=jobs,
            telemetry=self.telemetry,
            horizon_s=self.horizon_s,
            queue_ttl_s=self.queue_ttl_s,
            sla_threshold_pct=self.sla_threshold_pct,
            spot_recovery_s=self.spot_recovery_s,
            cost_model=self.cost_model,
            interference=self.interference,
            deadline_rule=self.deadline_rule,
            latency_slo_factor=self.latency_slo_factor,
            weights=self.weights,
            spot_interruptions=self.spot_interruptions,
            fixed_interruptions_s=self.fixed_interruptions_s,
        )

    def missing_data(self) -> list[Path]:
        """Real-data files the scenario needs that are not present (``${VAR}/...`` when VAR is unset)."""
        return [p for p in self.data_files if not p.exists()]

    def _require_data(self) -> None:
        missing = self.missing_data()
        if missing:
            unset = sorted({m.group(1) for p in missing if (m := VAR.match(str(p)))})
            hint = (
                f"set {', '.join(unset)} to the folder holding the traces"
                if unset
                else "check the path (and the folder of the traces)"
            )
            raise ScenarioError(f"{self.source or self.name}: needs data that is not present: {missing[0]} ({hint})")

    def with_settings(self, **changes: Any) -> Scenario:
        """A copy with some episode settings changed (e.g. ``cost_model="active-nodes"``).

        Only settings that do not change what the data loaders read may change (not the
        horizon or the job budget: edit the file for those). Data already loaded (fleet,
        telemetry, and the fixed jobs when the seed is unchanged) is shared with the copy, so
        it is not read again.
        """
        unknown = sorted(set(changes) - _CHANGEABLE_SETTINGS)
        if unknown:
            raise ValueError(
                f"cannot change {unknown} of a loaded scenario; changeable: {sorted(_CHANGEABLE_SETTINGS)}"
            )
        copy = dataclasses.replace(self, **changes)
        shared = (*_CACHED, "_fixed_jobs") if copy.seed == self.seed else _CACHED
        copy.__dict__.update({name: self.__dict__[name] for name in shared if name in self.__dict__})
        return copy

    def with_background_cpu(self, cpu_pct: float) -> Scenario:
        """A copy whose background cpu is ``cpu_pct`` on every node at every tick.

        The trace's memory column and tick are kept (the trace is read once, if not already);
        everything else is this scenario's. For "does the replayed load matter" comparisons.

        Raises:
            ValueError: ``cpu_pct`` is not a number in [0, 100].
        """
        if isinstance(cpu_pct, bool) or not isinstance(cpu_pct, int | float) or not 0.0 <= cpu_pct <= 100.0:
            raise ValueError(f"background cpu must be a percent in [0, 100], got {cpu_pct!r}")
        trace = self.telemetry
        array = np.array(trace.background_pct)
        array[..., CPU] = cpu_pct
        telemetry = Telemetry(array, trace.tick_s, source=f"{trace.source}, cpu replaced by a constant {cpu_pct:g} %")
        copy = dataclasses.replace(
            self,
            description=f"{self.description} (background cpu {cpu_pct:g} % everywhere)",
            telemetry_source=f"constant cpu {cpu_pct:g} %",
        )
        shared = ("fleet", "_fixed_jobs") if "_fixed_jobs" in self.__dict__ else ("fleet",)
        copy.__dict__.update({name: self.__dict__[name] for name in shared})
        copy.__dict__["telemetry"] = telemetry
        return copy

    def _built(self, build: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``build(*args, **kwargs)`` once the data is known present; errors name the scenario file."""
        self._require_data()
        try:
            return build(*args, **kwargs)
        except ScenarioError:
            raise
        except (SpecError, TraceError) as exc:
            raise ScenarioError(f"{self.source or self.name}: {exc}") from None


def load_scenario(path: str | Path, limits: Limits | None = None) -> Scenario:
    """Parse and validate a scenario file (data files are read later, on first use).

    Args:
        path: The YAML file.
        limits: Size limits (default :class:`Limits`); the file's ``limits:`` may raise all but
            ``max_scenario_bytes`` and ``max_yaml_nodes``, which guard the reading itself.

    Raises:
        ScenarioError: Not a regular file, too large, unreadable YAML (or an alias bomb), a
            missing or unknown key, a wrong type or value, a size above a limit; the message
            starts with the file and the key path.
    """
    path = Path(path)
    limits = limits or Limits()
    data, content_hash = read_scenario_file(path, limits)
    return parse_scenario(data, path, content_hash, limits)


def parse_scenario(data: object, file: Path, content_hash: str, limits: Limits | None = None) -> Scenario:
    """Validate the mapping ``data`` read from ``file`` into a :class:`Scenario`.

    Args:
        data: The document (plain mappings, lists and scalars).
        file: Where it came from (for messages; data paths are relative to its folder).
        content_hash: What a recording pins (SHA-256 of the file's bytes for a file).
        limits: Size limits before the document's own ``limits:`` (default :class:`Limits`).
    """
    top = Section(data, file, "")
    version = top.get("schema_version", int, required=True)
    if version not in READABLE_SCHEMA_VERSIONS:
        readable = " and ".join(map(str, READABLE_SCHEMA_VERSIONS))
        raise top.error("schema_version", f"unsupported version {version}; this aco-env reads {readable}")
    limits = _limits(top.section("limits", required=False), limits or Limits())
    horizon_s = top.positive("horizon_s")
    check_limit(top, "horizon_s", limits, "max_horizon_s", horizon_s, f"horizon_s = {count(horizon_s)} s")
    job_budget = top.get("job_budget", int, None, nullable=True)
    if job_budget is not None and job_budget < 1:
        raise top.error("job_budget", f"must be >= 1, got {job_budget}")
    if job_budget is not None:
        check_limit(top, "job_budget", limits, "max_jobs", job_budget, f"job_budget = {job_budget:,}")
    cost_model = top.get("cost_model", str, PRORATED)
    if cost_model not in COST_MODELS:
        raise top.error("cost_model", f"must be one of {COST_MODELS}, got {short_repr(cost_model)}")
    interference = _interference(top, version)
    deadline_rule = top.get("deadline_rule", str, DEADLINE_AT_FIRST_START)
    if deadline_rule not in DEADLINE_RULES:
        raise top.error("deadline_rule", f"must be one of {DEADLINE_RULES}, got {short_repr(deadline_rule)}")
    latency_slo_factor = top.positive("latency_slo_factor", DEFAULT_LATENCY_SLO_FACTOR)
    weights = _weights(top)
    spot = top.section("spot", required=False)
    recovery_s, interruptions, fixed = _spot(spot) if spot is not None else (600.0, True, None)
    data_files: list[Path] = []
    fleet = fleet_loader(top.section("fleet"), data_files, limits)
    telemetry = telemetry_loader(top.section("telemetry"), horizon_s, data_files, limits)
    jobs, per_episode = jobs_loader(top.section("workload"), horizon_s, job_budget, data_files, limits)
    scenario = Scenario(
        name=top.get("name", str, required=True),
        description=top.get("description", str, ""),
        source=file,
        content_hash=content_hash,
        seed=top.get("seed", int, 0),
        horizon_s=horizon_s,
        start_hour=top.get("start_hour", float, 0.0),
        job_budget=job_budget,
        queue_ttl_s=top.positive("queue_ttl_s", 1800.0, nullable=True),
        sla_threshold_pct=top.positive("sla_threshold_pct", 90.0),
        spot_recovery_s=recovery_s,
        spot_interruptions=interruptions,
        fixed_interruptions_s=fixed,
        cost_model=cost_model,
        interference=interference,
        deadline_rule=deadline_rule,
        latency_slo_factor=latency_slo_factor,
        weights=weights,
        per_episode_workload=per_episode,
        telemetry_source=str(top.data["telemetry"].get("reader", "?"))
        if isinstance(top.data["telemetry"], dict)
        else "?",
        data_files=tuple(data_files),
        _fleet_loader=fleet,
        _telemetry_loader=telemetry,
        _jobs_loader=jobs,
        limits=limits,
    )
    top.finish()
    return scenario


def _limits(section: Section | None, base: Limits) -> Limits:
    """``base`` with the values of the scenario's ``limits:`` mapping (each an integer >= 1)."""
    if section is None:
        return base
    settable = [f.name for f in dataclasses.fields(Limits) if f.name not in FILE_LIMITS]
    values = {name: section.get(name, int, getattr(base, name)) for name in settable}
    for name in FILE_LIMITS:
        if section.has(name):
            raise section.error(name, f"is checked before the file is read; {Limits.how_to_raise(name)}")
    section.finish()
    try:
        return dataclasses.replace(base, **values)
    except SpecError as exc:
        raise ScenarioError(f"{section.file}: {exc}") from None


def _spot(spot: Section) -> tuple[float, bool, tuple[tuple[float, ...], ...] | None]:
    """The ``spot`` mapping: recovery time (s), whether interruptions happen, the fixed interruption times."""
    recovery_s = spot.positive("recovery_s", 600.0)
    interruptions = spot.get("interruptions", bool, True)
    times = spot.get("fixed_interruptions_s", list, None)
    fixed = (
        None
        if times is None
        else checked(spot, "fixed_interruptions_s", lambda: tuple(tuple(float(t) for t in node) for node in times))
    )
    spot.finish()
    return recovery_s, interruptions, fixed


def _interference(top: Section, version: int) -> str:
    """The ``interference:`` model: version 2 defaults to processor sharing; version 1 has none."""
    if version == 1:
        if "interference" in top.data:
            raise top.error("interference", "needs schema_version: 2 (version 1 files always run without interference)")
        return NO_INTERFERENCE
    interference = top.get("interference", str, PROCESSOR_SHARING)
    if interference not in INTERFERENCE_MODELS:
        raise top.error("interference", f"must be one of {INTERFERENCE_MODELS}, got {short_repr(interference)}")
    return interference


def _weights(top: Section) -> ObjectiveWeights:
    weights_section = top.section("weights", required=False)
    weights = ObjectiveWeights()
    if weights_section is None:
        return weights
    values = {f.name: weights_section.get(f.name, float, getattr(weights, f.name)) for f in dataclasses.fields(weights)}
    weights_section.finish()
    try:
        return ObjectiveWeights(**values)
    except SpecError as exc:
        raise top.error("weights", str(exc)) from None
