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
from pathlib import Path

from digital_twin.contention import INTERFERENCE_MODELS, NO_INTERFERENCE, PROCESSOR_SHARING
from digital_twin.errors import SpecError, short_repr
from digital_twin.limits import FILE_LIMITS, Limits, count
from digital_twin.objective import (
    COST_MODELS,
    DEADLINE_AT_FIRST_START,
    DEADLINE_RULES,
    DEFAULT_LATENCY_SLO_FACTOR,
    PRORATED,
    ObjectiveWeights,
)
from digital_twin.scenario.fleet_section import fleet_loader
from digital_twin.scenario.parsed import Scenario
from digital_twin.scenario.schema import ScenarioError, Section, check_limit, checked
from digital_twin.scenario.telemetry_section import telemetry_loader
from digital_twin.scenario.workload_section import jobs_loader
from digital_twin.scenario.yaml_file import read_scenario_file

__all__ = ["SCHEMA_VERSION", "load_scenario", "parse_scenario"]

SCHEMA_VERSION = 2
"""The version this aco-env writes. Version 1 (before interference) is read as ``interference: none``."""
READABLE_SCHEMA_VERSIONS = (1, 2)
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
