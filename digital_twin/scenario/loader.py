"""Scenario files: YAML (schema version 2) -> a frozen :class:`Scenario` -> a :class:`TwinSpec` per episode.

A scenario fixes everything an episode needs::

    schema_version: 2               # 1 is read too: it has no `interference` (always none)
    name: fleet5-synthetic          # required
    description: ...
    seed: 0                         # default episode seed; also seeds `resample: fixed` workloads
    horizon_s: 14400                # the episode covers [0, horizon_s)
    start_hour: 0                   # hour of day at t = 0 (clock features)
    job_budget: 50                  # keep at most this many jobs (first by arrival); optional
    queue_ttl_s: 1800               # null = no TTL
    sla_threshold_pct: 90
    cost_model: prorated            # or active-nodes
    interference: processor-sharing # or none: how background load slows jobs (digital_twin.sim.tables.contention)
    deadline_rule: first-start      # or completion: when a job is late (digital_twin.objective.DEADLINE_RULES)
    latency_slo_factor: 2.0         # latency-critical SLO = factor x nominal duration (the utility term); > 0
    weights: {rejection_usd: 2.0, ..}  # USD per unit of a penalty term: the weight_key of each row of
                                    # digital_twin.objective.PENALTIES (ObjectiveWeights' fields)
    spot: {recovery_s: 600, interruptions: true}   # or {model: trace, traces: [..], start_s: random}:
                                    # replayed availability (digital_twin.scenario.spot_section)
    fleet:      {preset: default-5} | {nodes: [...]} | {generate: {...}} | {alibaba_gpu_csv: {...}}
              | {alibaba_spot_gpu_2026_csv: {path: .., per_model: .., seed: ..}}
    telemetry:  {reader: constant, cpu_pct: .., mem_pct: .., tick_s: ..}
              | {reader: <TRACE_READERS name>, path: .., options: {..}, mapping: {..}}
    workload:   {source: synthetic, resample: per-episode|fixed, options: {SyntheticWorkloadConfig fields}}
              | {source: jobs, jobs: [...]}
              | {source: <JOB_FILE_SOURCES name>, path: .., options: {..}}
                # any source may add: declared_durations: {model: noisy|exact|class-median,
                #   median_accuracy: 0.109, sigma: 1.0, from_trace: true}   (these are the defaults;
                #   digital_twin.declared_durations)
    energy:     {accounting: true, power: {..}, regions: {..}, node_regions: {..}}   # optional:
                # node power curves and grid carbon intensity (digital_twin.scenario.energy_section)
    placement:  {topology: {..}, nodes: [..], job_labels: [..], rules: [..], interference: [..]}  # optional:
                # labels, taints, affinity, anti-affinity and spread, Kubernetes-shaped, and co-location
                # slowdowns (digital_twin.placement.rules)
    limits:     {max_horizon_s: .., max_ticks: .., max_telemetry_cells: .., max_nodes: .., max_jobs: ..}  # optional

The episode settings (``horizon_s``, ``start_hour``, ``queue_ttl_s``, ``sla_threshold_pct``,
``cost_model``, ``interference``, ``deadline_rule``, ``latency_slo_factor``, ``weights`` and
``spot.recovery_s``/``interruptions``) become one
:class:`~digital_twin.episode_settings.EpisodeSettings`: the file gives their types, that class
checks their values (its errors name the key), and absent keys take its defaults.

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
from typing import Any

from digital_twin.episode_settings import NO_INTERFERENCE, PROCESSOR_SHARING, EpisodeSettings
from digital_twin.errors import SettingError, SpecError
from digital_twin.limits import FILE_LIMITS, Limits, count
from digital_twin.objective import ObjectiveWeights
from digital_twin.placement.rules import PlacementRules
from digital_twin.scenario.energy_section import energy_loader
from digital_twin.scenario.fleet_section import fleet_loader
from digital_twin.scenario.parsed import Scenario
from digital_twin.scenario.schema import ScenarioError, Section, check_limit, checked
from digital_twin.scenario.spot_section import SpotReplayLoader, spot_replay_loader
from digital_twin.scenario.telemetry_section import telemetry_loader
from digital_twin.scenario.workload_section import declared_durations, jobs_loader
from digital_twin.scenario.yaml_file import read_scenario_file

__all__ = ["SCHEMA_VERSION", "load_scenario", "parse_scenario"]

SCHEMA_VERSION = 2
"""The version this aco-env writes. Version 1 has no ``interference`` key and is read as ``interference: none``."""
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
    data_files: list[Path] = []
    settings, fixed, spot_replay = _settings(top, version, data_files)
    horizon_s = settings.horizon_s
    check_limit(top, "horizon_s", limits, "max_horizon_s", horizon_s, f"horizon_s = {count(horizon_s)} s")
    job_budget = top.get("job_budget", int, None, nullable=True)
    if job_budget is not None and job_budget < 1:
        raise top.error("job_budget", f"must be >= 1, got {job_budget}")
    if job_budget is not None:
        check_limit(top, "job_budget", limits, "max_jobs", job_budget, f"job_budget = {job_budget:,}")
    fleet = fleet_loader(top.section("fleet"), data_files, limits)
    telemetry = telemetry_loader(top.section("telemetry"), horizon_s, data_files, limits)
    energy, accounting = energy_loader(top.section("energy", required=False), data_files)
    if not accounting:
        settings = checked(top, "energy.accounting", lambda: dataclasses.replace(settings, energy_accounting=False))
    workload = top.section("workload")
    declared = declared_durations(workload)
    jobs, per_episode = jobs_loader(workload, horizon_s, job_budget, data_files, limits)
    scenario = Scenario(
        name=top.get("name", str, required=True),
        description=top.get("description", str, ""),
        source=file,
        content_hash=content_hash,
        seed=_seed(top),
        settings=settings,
        job_budget=job_budget,
        fixed_interruptions_s=fixed,
        per_episode_workload=per_episode,
        telemetry_source=str(top.data["telemetry"].get("reader", "?"))
        if isinstance(top.data["telemetry"], dict)
        else "?",
        data_files=tuple(data_files),
        _fleet_loader=fleet,
        _telemetry_loader=telemetry,
        _jobs_loader=jobs,
        limits=limits,
        declared_durations=declared,
        _energy_loader=energy,
        placement=_placement(top),
        _spot_loader=spot_replay,
    )
    if scenario.planted and scenario.placement is not None:
        raise top.error("placement", "a planted workload takes no placement rules (its optimum is planted without)")
    if scenario.planted and spot_replay is not None:
        raise top.error("spot.model", "a planted workload draws its interruptions (its optimum avoids them)")
    top.finish()
    return scenario


def _seed(top: Section) -> int:
    """The scenario's ``seed``: an integer >= 0 (NumPy's generators take no negative seed)."""
    seed = top.get("seed", int, 0)
    if seed < 0:
        raise top.error("seed", f"must be an integer >= 0, got {seed}")
    return seed


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


_TOP_LEVEL_SETTINGS: dict[str, tuple[type, bool]] = {
    "start_hour": (float, False),
    "queue_ttl_s": (float, True),
    "sla_threshold_pct": (float, False),
    "cost_model": (str, False),
    "deadline_rule": (str, False),
    "latency_slo_factor": (float, False),
}
"""The :class:`EpisodeSettings` fields written as top-level keys of the same name: ``(type, nullable)``
(``horizon_s``, ``interference``, ``weights`` and ``spot`` are read by their own rules)."""
_KEY_OF_SETTING = {"spot_recovery_s": "spot.recovery_s", "spot_interruptions": "spot.interruptions"}
"""Where a setting not written under its own name is in the file."""


def _settings(
    top: Section, version: int, data_files: list[Path]
) -> tuple[EpisodeSettings, tuple[tuple[float, ...], ...] | None, SpotReplayLoader | None]:
    """The episode settings the file states, the ``spot.fixed_interruptions_s`` times and the replayed traces.

    Absent keys take :class:`EpisodeSettings`' defaults. The file gives the types (a number, a
    string, ...); the values are checked by :class:`EpisodeSettings` alone, its errors naming
    the key.
    """
    values: dict[str, Any] = {"horizon_s": top.get("horizon_s", float, required=True)}
    for name, (kind, nullable) in _TOP_LEVEL_SETTINGS.items():
        if top.has(name):
            values[name] = top.get(name, kind, nullable=nullable)
    values["interference"] = _interference(top, version)
    if top.has("weights"):
        values["weights"] = _weights(top)
    fixed, replay = None, None
    spot = top.section("spot", required=False)
    if spot is not None:
        replay = spot_replay_loader(spot, data_files)
        if spot.has("recovery_s"):
            values["spot_recovery_s"] = spot.get("recovery_s", float)
        if spot.has("interruptions"):
            values["spot_interruptions"] = spot.get("interruptions", bool)
        fixed = _fixed_interruptions(spot)
        spot.finish()
    try:
        return EpisodeSettings(**values), fixed, replay
    except SettingError as exc:
        raise top.error(_KEY_OF_SETTING.get(exc.name, exc.name), exc.problem) from None


def _fixed_interruptions(spot: Section) -> tuple[tuple[float, ...], ...] | None:
    """``spot.fixed_interruptions_s``: per node, its interruption times (``None``: drawn per episode)."""
    times = spot.get("fixed_interruptions_s", list, None)
    if times is None:
        return None
    return checked(spot, "fixed_interruptions_s", lambda: tuple(tuple(float(t) for t in node) for node in times))


def _interference(top: Section, version: int) -> str:
    """The ``interference:`` model: version 2 defaults to processor sharing; version 1 has none."""
    if version == 1:
        if top.has("interference"):
            raise top.error("interference", "needs schema_version: 2 (version 1 files always run without interference)")
        return NO_INTERFERENCE
    interference: str = top.get("interference", str, PROCESSOR_SHARING)
    return interference


def _weights(top: Section) -> ObjectiveWeights:
    """The ``weights:`` mapping (absent keys: :class:`ObjectiveWeights`' defaults)."""
    weights_section = top.section("weights")
    weights = ObjectiveWeights()
    values = {f.name: weights_section.get(f.name, float, getattr(weights, f.name)) for f in dataclasses.fields(weights)}
    weights_section.finish()
    try:
        return ObjectiveWeights(**values)
    except SpecError as exc:
        raise top.error("weights", str(exc)) from None


def _placement(top: Section) -> PlacementRules | None:
    """The ``placement`` section, checked (errors name the file and the key); ``None`` when absent."""
    data = top.get("placement", dict, None, nullable=True)
    if data is None:
        return None
    try:
        return PlacementRules.parse(data, "placement")
    except SpecError as exc:
        raise ScenarioError(f"{top.file}: {exc}") from None
