"""Scenario files: YAML (schema version 1) -> a frozen :class:`Scenario` -> a :class:`TwinSpec` per episode.

A scenario fixes everything an episode needs::

    schema_version: 1
    name: fleet5-synthetic          # required
    description: ...
    seed: 0                         # default episode seed; also seeds `resample: fixed` workloads
    horizon_s: 14400                # the episode covers [0, horizon_s)
    start_hour: 0                   # hour of day at t = 0 (clock features)
    job_budget: 50                  # keep at most this many jobs (first by arrival); optional
    queue_ttl_s: 1800               # null = no TTL
    sla_threshold_pct: 90
    cost_model: prorated            # or active-nodes
    weights: {sla_violation_usd: .., qos_violation_usd: .., eviction_usd: .., deadline_miss_usd: .., rejection_usd: ..}
    spot: {recovery_s: 600, interruptions: true}
    fleet:      {preset: default-5} | {nodes: [...]} | {generate: {...}} | {alibaba_gpu_csv: {...}}
    telemetry:  {reader: constant, cpu_pct: .., mem_pct: .., tick_s: ..}
              | {reader: <TRACE_READERS name>, path: .., options: {..}, mapping: {..}}
    workload:   {source: synthetic, resample: per-episode|fixed, options: {SyntheticWorkloadConfig fields}}
              | {source: jobs, jobs: [...]}
              | {source: <JOB_FILE_SOURCES name>, path: .., options: {..}}

Paths are relative to the scenario file, or start with ``${VAR}`` (e.g. ``${ACO_ENV_TRACES}``)
to point at data kept elsewhere. Unknown keys anywhere are errors naming the file and key.
Data files are read lazily (the first time the fleet, telemetry or jobs are needed), so a
scenario whose real data is absent still loads and reports :meth:`Scenario.missing_data`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from digital_twin.errors import SpecError, TraceError
from digital_twin.fleet import (
    NodeSpec,
    default_fleet,
    fleet_from_alibaba_gpu_csv,
    fleet_from_dicts,
    generate_fleet,
    node_from_dict,
)
from digital_twin.jobs import JobSpec
from digital_twin.objective import COST_MODELS, PRORATED, ObjectiveWeights
from digital_twin.scenario.schema import ScenarioError, Section, call_with_options, check_options
from digital_twin.scenario.sources import (
    JOB_FILE_SOURCES,
    TRACE_READERS,
    constant_telemetry,
    evenly_spread_offsets,
    sample_per_group,
)
from digital_twin.spec import TwinSpec
from digital_twin.telemetry import Telemetry
from digital_twin.traces.mapping import (
    ALIBABA_REFERENCE_MAPPING,
    OffsetScaleBias,
    n_ticks_for,
    telemetry_from_aggregate,
    telemetry_from_machines,
)
from digital_twin.workload import Workload
from digital_twin.workloads.explicit import jobs_from_dicts
from digital_twin.workloads.synthetic import SyntheticWorkloadConfig, generate_jobs

SCHEMA_VERSION = 1
_VAR = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CHANGEABLE_SETTINGS = frozenset(
    {
        "cost_model",
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
FLEET_PRESETS: dict[str, Callable[[], tuple[NodeSpec, ...]]] = {"default-5": default_fleet}


@dataclasses.dataclass(frozen=True, eq=False)
class Scenario:
    """A parsed scenario. Data is read on first use and cached; the object is otherwise immutable.

    Attributes:
        name, description: From the file.
        source: The file path (``None`` for scenarios built in code).
        content_hash: SHA-256 of the file's bytes (what a recording pins).
        seed: Default episode seed.
        horizon_s, start_hour, job_budget, queue_ttl_s, sla_threshold_pct, spot_recovery_s,
        spot_interruptions, cost_model, weights: Episode settings (see the module docstring).
        per_episode_workload: True when each episode draws its own jobs from its seed.
        telemetry_source: The telemetry reader's name (for listings).
        data_files: Files under an environment-variable path (real traces) the scenario reads.
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
    weights: ObjectiveWeights
    per_episode_workload: bool
    telemetry_source: str
    data_files: tuple[Path, ...]
    _fleet_loader: Callable[[], tuple[NodeSpec, ...]] = dataclasses.field(repr=False)
    _telemetry_loader: Callable[[int], Telemetry] = dataclasses.field(repr=False)
    _jobs_loader: Callable[[np.random.Generator], Sequence[JobSpec]] = dataclasses.field(repr=False)

    @cached_property
    def fleet(self) -> tuple[NodeSpec, ...]:
        """The nodes, in action order (read on first use)."""
        return self._wrap(self._fleet_loader)

    @cached_property
    def telemetry(self) -> Telemetry:
        """Background load for the fleet over the horizon (read on first use)."""
        return self._wrap(lambda: self._telemetry_loader(len(self.fleet)))

    @cached_property
    def _fixed_jobs(self) -> Workload:
        return self._wrap(lambda: Workload.of(self._jobs_loader(np.random.default_rng(self.seed))))

    def jobs(self, rng: np.random.Generator) -> Workload:
        """The episode's jobs: drawn from ``rng`` for per-episode workloads, else the fixed ones."""
        if self.per_episode_workload:
            return self._wrap(lambda: Workload.of(self._jobs_loader(rng)))
        return self._fixed_jobs

    def make_spec(self, rng: np.random.Generator) -> TwinSpec:
        """The twin spec of one episode (jobs drawn from ``rng`` when the workload is per-episode)."""
        jobs = self.jobs(rng)
        return self._wrap(
            lambda: TwinSpec(
                fleet=self.fleet,
                jobs=jobs,
                telemetry=self.telemetry,
                horizon_s=self.horizon_s,
                queue_ttl_s=self.queue_ttl_s,
                sla_threshold_pct=self.sla_threshold_pct,
                spot_recovery_s=self.spot_recovery_s,
                cost_model=self.cost_model,
                weights=self.weights,
                spot_interruptions=self.spot_interruptions,
                fixed_interruptions_s=self.fixed_interruptions_s,
            )
        )

    def missing_data(self) -> list[Path]:
        """Real-data files the scenario needs that are not present (``${VAR}/...`` when VAR is unset)."""
        return [p for p in self.data_files if not p.exists()]

    def _require_data(self) -> None:
        missing = self.missing_data()
        if missing:
            unset = sorted({m.group(1) for p in missing if (m := _VAR.match(str(p)))})
            hint = (
                f"set {', '.join(unset)} to the folder holding the traces"
                if unset
                else "check the path (and the folder of the traces)"
            )
            raise ScenarioError(f"{self.source or self.name}: needs data that is not present: {missing[0]} ({hint})")

    def with_settings(self, **changes: Any) -> Scenario:
        """A copy with some episode settings changed (e.g. ``cost_model="active-nodes"``).

        Only settings that do not change what the data loaders read may change (not the
        horizon or the job budget: edit the file for those).
        """
        unknown = sorted(set(changes) - _CHANGEABLE_SETTINGS)
        if unknown:
            raise ValueError(
                f"cannot change {unknown} of a loaded scenario; changeable: {sorted(_CHANGEABLE_SETTINGS)}"
            )
        return dataclasses.replace(self, **changes)

    def _wrap(self, build: Callable[[], Any]) -> Any:
        self._require_data()
        try:
            return build()
        except ScenarioError:
            raise
        except (SpecError, TraceError) as exc:
            raise ScenarioError(f"{self.source or self.name}: {exc}") from None


def load_scenario(path: str | Path) -> Scenario:
    """Parse and validate a scenario file (data files are read later, on first use).

    Raises:
        ScenarioError: Unreadable YAML, a missing or unknown key, a wrong type or value; the
            message starts with the file and the key path.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read scenario file ({exc.strerror})") from None
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {exc}") from None
    return parse_scenario(data, path, hashlib.sha256(raw).hexdigest())


def parse_scenario(data: object, file: Path, content_hash: str) -> Scenario:
    """Validate the mapping ``data`` read from ``file`` into a :class:`Scenario`."""
    top = Section(data, file, "")
    version = top.get("schema_version", int, required=True)
    if version != SCHEMA_VERSION:
        raise top.error("schema_version", f"unsupported version {version}; this aco-env reads {SCHEMA_VERSION}")
    horizon_s = top.positive("horizon_s")
    job_budget = top.get("job_budget", int, None, nullable=True)
    if job_budget is not None and job_budget < 1:
        raise top.error("job_budget", f"must be >= 1, got {job_budget}")
    cost_model = top.get("cost_model", str, PRORATED)
    if cost_model not in COST_MODELS:
        raise top.error("cost_model", f"must be one of {COST_MODELS}, got {cost_model!r}")
    weights_section = top.section("weights", required=False)
    weights = ObjectiveWeights()
    if weights_section is not None:
        values = {
            f.name: weights_section.get(f.name, float, getattr(weights, f.name)) for f in dataclasses.fields(weights)
        }
        weights_section.finish()
        try:
            weights = ObjectiveWeights(**values)
        except SpecError as exc:
            raise top.error("weights", str(exc)) from None
    spot = top.section("spot", required=False)
    recovery_s = spot.positive("recovery_s", 600.0) if spot else 600.0
    interruptions = spot.get("interruptions", bool, True) if spot else True
    fixed = spot.get("fixed_interruptions_s", list, None) if spot else None
    if fixed is not None:
        fixed = tuple(tuple(float(t) for t in times) for times in fixed)
    if spot:
        spot.finish()
    data_files: list[Path] = []
    fleet_loader = _fleet(top.section("fleet"), data_files)
    telemetry_loader = _telemetry(top.section("telemetry"), horizon_s, data_files)
    jobs_loader, per_episode = _workload(top.section("workload"), horizon_s, job_budget, data_files)
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
        weights=weights,
        per_episode_workload=per_episode,
        telemetry_source=str(top.data["telemetry"].get("reader", "?"))
        if isinstance(top.data["telemetry"], dict)
        else "?",
        data_files=tuple(data_files),
        _fleet_loader=fleet_loader,
        _telemetry_loader=telemetry_loader,
        _jobs_loader=jobs_loader,
    )
    top.finish()
    return scenario


def resolve_path(section: Section, key: str, data_files: list[Path]) -> Path:
    """The path under ``key``: ``${VAR}/...`` from the environment, else relative to the file."""
    text = section.get(key, str, required=True)
    match = _VAR.match(text)
    if match:
        base = os.environ.get(match.group(1))
        # With the variable unset the path keeps its ${VAR} text: missing_data() reports it and
        # reading it raises an error that says which variable to set.
        path = Path(base) / text[match.end() :].lstrip("/") if base else Path(text)
        data_files.append(path)
        return path
    return (Path(section.file).parent / text).resolve()


def _fleet(section: Section, data_files: list[Path]) -> Callable[[], tuple[NodeSpec, ...]]:
    kinds = [k for k in ("preset", "nodes", "generate", "alibaba_gpu_csv") if section.has(k)]
    if len(kinds) != 1:
        raise ScenarioError(f"{section.file}: fleet: give exactly one of preset, nodes, generate, alibaba_gpu_csv")
    kind = kinds[0]
    if kind == "preset":
        name = section.get("preset", str)
        if name not in FLEET_PRESETS:
            raise section.error("preset", f"unknown preset {name!r}; known: {sorted(FLEET_PRESETS)}")
        section.finish()
        return FLEET_PRESETS[name]
    if kind == "nodes":
        items = section.get("nodes", list)
        fleet = _checked(section, None, lambda: fleet_from_dicts(items, section.path("nodes")))
        section.finish()
        return lambda: fleet
    if kind == "generate":
        gen = section.section("generate")
        types = gen.section("types")
        templates = {
            name: _checked(
                gen,
                "types",
                lambda name=name: node_from_dict({"node_id": name, **types.get(name, dict)}, types.path(name)),
            )
            for name in list(types.data)
        }
        types.finish()
        counts = gen.get("counts", dict)
        seed = gen.get("seed", int, 0)
        jitter = gen.get("price_jitter", float, 0.0)
        gen.finish()
        section.finish()
        fleet = _checked(gen, "counts", lambda: generate_fleet(templates, counts, np.random.default_rng(seed), jitter))
        return lambda: fleet
    csv_section = section.section("alibaba_gpu_csv")
    path = resolve_path(csv_section, "path", data_files)
    per_model = csv_section.get("per_model", int, None)
    seed = csv_section.get("seed", int, 0)
    gpu_only = csv_section.get("gpu_only", bool, True)
    csv_section.finish()
    section.finish()

    def load() -> tuple[NodeSpec, ...]:
        nodes = fleet_from_alibaba_gpu_csv(path)
        if gpu_only:
            nodes = tuple(n for n in nodes if n.gpu_count > 0)
        if per_model is not None:
            keep = sample_per_group([n.gpu_model or "cpu" for n in nodes], per_model, seed)
            nodes = tuple(nodes[i] for i in keep)
        return nodes

    return load


def _telemetry(section: Section, horizon_s: float, data_files: list[Path]) -> Callable[[int], Telemetry]:
    reader = section.get("reader", str, required=True)
    if reader == "constant":
        options = section.rest()
        check_options(constant_telemetry, options, section.file, section.where, skip=2)
        return lambda n_nodes: call_with_options(
            constant_telemetry, options, section.file, section.where, n_nodes, horizon_s
        )
    if reader not in TRACE_READERS:
        raise section.error("reader", f"unknown reader {reader!r}; known: {[*sorted(TRACE_READERS), 'constant']}")
    path = resolve_path(section, "path", data_files)
    options = _options(section, TRACE_READERS[reader])
    mapping = section.section("mapping")
    kind = mapping.get("kind", str, required=True)
    wrap = mapping.get("wrap", bool, False)
    if kind == "offset-scale-bias":
        nodes = mapping.get("nodes", (str, list), required=True)
        mem_scale = mapping.get("mem_scale", float, 0.5)
        if nodes == "reference-alibaba":
            offsets = list(ALIBABA_REFERENCE_MAPPING.values())
        elif nodes == "evenly-spread":
            offsets = []  # computed from the series length when loaded
        elif isinstance(nodes, str):
            raise mapping.error(
                "nodes",
                f"unknown named mapping {nodes!r}; use 'reference-alibaba', "
                "'evenly-spread' or a list of {offset, scale, bias_pct}",
            )
        else:
            offsets = [_checked(mapping, f"nodes[{i}]", lambda d=d: OffsetScaleBias(**d)) for i, d in enumerate(nodes)]
        mapping.finish()
        section.finish()

        def load(n_nodes: int) -> Telemetry:
            series = call_with_options(TRACE_READERS[reader], options, section.file, section.path("options"), path)
            node_offsets = (
                evenly_spread_offsets(series.n_ticks, n_ticks_for(horizon_s, series.tick_s), n_nodes)
                if nodes == "evenly-spread"
                else offsets
            )
            if len(node_offsets) != n_nodes:
                raise mapping.error("nodes", f"has {len(node_offsets)} entries for a fleet of {n_nodes} nodes")
            return telemetry_from_aggregate(series, node_offsets, horizon_s, mem_scale=mem_scale, wrap=wrap)

        return load
    if kind == "per-machine":
        machines = mapping.get("machines", list, None)
        offset = mapping.get("offset", int, 0)
        mapping.finish()
        section.finish()

        def load_machines(n_nodes: int) -> Telemetry:
            series = call_with_options(TRACE_READERS[reader], options, section.file, section.path("options"), path)
            if machines is not None and len(machines) != n_nodes:
                raise mapping.error("machines", f"has {len(machines)} entries for a fleet of {n_nodes} nodes")
            return telemetry_from_machines(series, horizon_s, machines=machines, offset=offset, wrap=wrap)

        return load_machines
    raise mapping.error("kind", f"unknown mapping {kind!r}; known: ['offset-scale-bias', 'per-machine']")


def _workload(
    section: Section, horizon_s: float, job_budget: int | None, data_files: list[Path]
) -> tuple[Callable[[np.random.Generator], Sequence[JobSpec]], bool]:
    source = section.get("source", str, required=True)
    if source == "synthetic":
        resample = section.get("resample", str, "per-episode")
        if resample not in ("per-episode", "fixed"):
            raise section.error("resample", f"must be 'per-episode' or 'fixed', got {resample!r}")
        options = _options(section, SyntheticWorkloadConfig, skip=0)
        config = call_with_options(SyntheticWorkloadConfig, options, section.file, section.path("options"))
        section.finish()
        return (lambda rng: generate_jobs(config, rng, horizon_s, job_budget)), resample == "per-episode"
    if source == "jobs":
        items = section.get("jobs", list, required=True)
        jobs = _checked(section, None, lambda: jobs_from_dicts(items, section.path("jobs")))
        section.finish()
        return (lambda rng: jobs[:job_budget] if job_budget else jobs), False
    if source not in JOB_FILE_SOURCES:
        raise section.error(
            "source", f"unknown source {source!r}; known: {[*sorted(JOB_FILE_SOURCES), 'jobs', 'synthetic']}"
        )
    path = resolve_path(section, "path", data_files)
    options = _options(section, JOB_FILE_SOURCES[source])
    if job_budget is not None:
        options.setdefault("limit", job_budget)
    section.finish()
    function = JOB_FILE_SOURCES[source]
    return (lambda rng: call_with_options(function, options, section.file, section.path("options"), path)), False


def _options(section: Section, function: Callable[..., Any], skip: int = 1) -> dict[str, Any]:
    """The ``options`` mapping of ``section``, checked against ``function``'s keyword parameters."""
    options_section = section.section("options", required=False)
    options = options_section.rest() if options_section else {}
    check_options(function, options, section.file, section.path("options"), skip=skip)
    return options


def _checked(section: Section, key: str | None, build: Callable[[], Any]) -> Any:
    """``build()``, re-raising errors with the file and ``key`` (``None``: the message names it)."""
    try:
        return build()
    except (SpecError, TypeError) as exc:
        if key is None:
            raise ScenarioError(f"{section.file}: {exc}") from None
        raise section.error(key, str(exc)) from None
