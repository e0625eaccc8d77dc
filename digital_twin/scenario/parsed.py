"""A parsed scenario: the frozen :class:`Scenario`, which builds a :class:`TwinSpec` per episode.

Its settings come from the file (:mod:`digital_twin.scenario.loader` parses it); its data (fleet,
telemetry, fixed jobs) is read on first use through the section loaders and cached.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np

from digital_twin.declared_durations import DeclaredDurations
from digital_twin.energy.model import EnergyModel
from digital_twin.episode_settings import EpisodeSettings
from digital_twin.errors import SpecError, TraceError
from digital_twin.fleet import NodeSpec
from digital_twin.limits import Limits, applied_limits
from digital_twin.placement.rules import PlacementRules
from digital_twin.planted import PlantedEpisode
from digital_twin.scenario.energy_section import EnergyLoader
from digital_twin.scenario.fleet_section import FleetLoader
from digital_twin.scenario.paths import VAR
from digital_twin.scenario.schema import ScenarioError
from digital_twin.scenario.spot_section import SpotReplayLoader
from digital_twin.scenario.telemetry_section import TelemetryLoader
from digital_twin.scenario.workload_section import JobsLoader, PlantedJobs
from digital_twin.sim.twin import DigitalTwin
from digital_twin.spec import TwinSpec
from digital_twin.spot.replay import SpotReplay
from digital_twin.telemetry import CPU, Telemetry
from digital_twin.workload import Workload

P = ParamSpec("P")
T = TypeVar("T")
_CHANGEABLE_SETTINGS = frozenset(f.name for f in dataclasses.fields(EpisodeSettings)) - {"horizon_s", "start_hour"}
"""The episode settings :meth:`Scenario.with_settings` may change (not what the data loaders read)."""
_CHANGEABLE = _CHANGEABLE_SETTINGS | {"fixed_interruptions_s", "seed", "description"}
_CACHED = ("fleet", "telemetry", "energy", "spot_replay")  # cached data that no changeable setting affects


@dataclasses.dataclass(frozen=True, eq=False)
class Scenario:
    """A parsed scenario. Data is read on first use and cached; the object is otherwise immutable.

    Attributes:
        name, description: From the file.
        source: The file path (``None`` for scenarios built in code).
        content_hash: SHA-256 of the file's bytes (what a recording pins).
        seed: Default episode seed.
        settings: The episode settings every spec it builds holds (horizon, TTL, SLA
            threshold, spot, cost model, interference, objective rules and weights, start hour).
        job_budget: At most this many jobs per episode (the first by arrival; ``None``: all).
        fixed_interruptions_s: Per node, given spot interruption times instead of random draws
            (``None``: drawn per episode).
        per_episode_workload: True when each episode draws its own jobs from its seed.
        telemetry_source: The telemetry reader's name (for listings).
        data_files: Files under an environment-variable path (real traces) the scenario reads.
        limits: The size limits it was checked against (defaults raised by its ``limits:``).
        declared_durations: How the jobs' declared durations are filled once drawn
            (``workload.declared_durations``; default ``noisy``). Each draw of jobs gets its
            declarations from a generator spawned from the draw's (``rng.spawn(1)[0]``), which
            does not advance it: the episode's other draws are as without declarations, and
            the same seed gives the same declarations. A fixed workload's are drawn once, from
            the scenario seed, with its jobs.
        placement: The ``placement`` section: node labels and taints, job labels and placement
            rules (:mod:`digital_twin.placement.rules`); ``None``: no rules.
    """

    name: str
    description: str
    source: Path | None
    content_hash: str
    seed: int
    settings: EpisodeSettings
    job_budget: int | None
    fixed_interruptions_s: tuple[tuple[float, ...], ...] | None
    per_episode_workload: bool
    telemetry_source: str
    data_files: tuple[Path, ...]
    _fleet_loader: FleetLoader = dataclasses.field(repr=False)
    _telemetry_loader: TelemetryLoader = dataclasses.field(repr=False)
    _jobs_loader: JobsLoader | PlantedJobs = dataclasses.field(repr=False)
    limits: Limits = dataclasses.field(default_factory=Limits, repr=False)
    declared_durations: DeclaredDurations = dataclasses.field(default_factory=DeclaredDurations, repr=False)
    _energy_loader: EnergyLoader | None = dataclasses.field(default=None, repr=False)
    placement: PlacementRules | None = dataclasses.field(default=None, repr=False)
    _spot_loader: SpotReplayLoader | None = dataclasses.field(default=None, repr=False)

    @cached_property
    def fleet(self) -> tuple[NodeSpec, ...]:
        """The nodes, in action order (read on first use)."""
        return self._built(self._fleet_loader)

    @cached_property
    def telemetry(self) -> Telemetry:
        """Background load for the fleet over the horizon (read on first use)."""
        return self._built(self._telemetry_loader, len(self.fleet))

    @cached_property
    def energy(self) -> EnergyModel | None:
        """The nodes' power and their grids' carbon intensity (``None``: the fleet's default; read on first use)."""
        return None if self._energy_loader is None else self._built(self._energy_loader, self.fleet)

    @cached_property
    def spot_replay(self) -> SpotReplay | None:
        """The spot nodes' replayed availability (``spot.model: trace``; read on first use), else ``None``."""
        return None if self._spot_loader is None else self._built(self._spot_loader, self.fleet)

    @cached_property
    def _fixed_jobs(self) -> Workload:
        loader = self._jobs_loader
        assert not isinstance(loader, PlantedJobs)  # planted workloads are per-episode
        rng = np.random.default_rng(self.seed)
        return self._declared(self._built(loader, rng), rng)

    @property
    def planted(self) -> bool:
        """Whether each episode is planted: drawn with its optimal schedule (:meth:`planted_episode`)."""
        return isinstance(self._jobs_loader, PlantedJobs)

    def planted_episode(self, rng: np.random.Generator) -> PlantedEpisode:
        """The planted episode drawn from ``rng``: what :meth:`make_spec` builds, with its optimum.

        Raises:
            ScenarioError: The scenario is not planted, or the certificate's conditions fail.
        """
        loader = self._jobs_loader
        if not isinstance(loader, PlantedJobs):
            raise ScenarioError(f"{self.source or self.name}: the workload is not planted")
        episode = self._built(
            loader.draw, self.fleet, self.telemetry, self.settings, loader.config, rng, loader.max_jobs, self.energy
        )
        spec = dataclasses.replace(episode.spec, jobs=self._declared(episode.spec.jobs, rng))
        return dataclasses.replace(episode, spec=spec)

    def jobs(self, rng: np.random.Generator) -> Workload:
        """The episode's jobs: drawn from ``rng`` for per-episode workloads, else the fixed ones."""
        loader = self._jobs_loader
        if isinstance(loader, PlantedJobs):
            return self.planted_episode(rng).spec.jobs
        if self.per_episode_workload:
            return self._declared(self._built(loader, rng), rng)
        return self._fixed_jobs

    def make_spec(self, rng: np.random.Generator) -> TwinSpec:
        """The twin spec of one episode (jobs drawn from ``rng`` when the workload is per-episode).

        A planted episode's spot interruptions are drawn with its jobs (the planted runs avoid them).
        Replayed spot traces start at an offset drawn from a child of ``rng`` (``rng`` is not
        advanced: the jobs and any other draw are those of the same scenario with Poisson spot);
        with ``spot_interruptions`` off (:meth:`with_settings`) nothing is replayed.
        """
        if self.planted:
            return self.planted_episode(rng).spec
        jobs = self.jobs(rng)
        interruptions, recoveries = self.fixed_interruptions_s, None
        replay = self.spot_replay if self.settings.spot_interruptions else None  # off: an ablation without any
        if replay is not None:
            horizon_s = float(self.settings.horizon_s)
            start_s = self._built(replay.draw_start_s, rng.spawn(1)[0], horizon_s)
            interruptions, recoveries = replay.outages(start_s, horizon_s)
        return self._built(
            TwinSpec,
            self.fleet,
            jobs,
            self.telemetry,
            self.settings,
            interruptions,
            self.energy,
            self.placement,
            recoveries,
        )

    def twin(self, spec: TwinSpec) -> DigitalTwin:
        """A twin of ``spec`` (one of this scenario's episodes); an error in it names the scenario file.

        Building a twin resolves the episode's placement rules, where a job its rules keep off
        every node is found (:mod:`digital_twin.sim.tables.rule_tables`).
        """
        return self._built(DigitalTwin, spec)

    def _declared(self, jobs: Workload, rng: np.random.Generator) -> Workload:
        """``jobs`` with their declared durations filled, drawn from a child of ``rng`` (``rng`` is not advanced)."""
        return self._built(self.declared_durations.apply, jobs, rng.spawn(1)[0])

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
        unknown = sorted(set(changes) - _CHANGEABLE)
        if unknown:
            raise ValueError(f"cannot change {unknown} of a loaded scenario; changeable: {sorted(_CHANGEABLE)}")
        if "fixed_interruptions_s" in changes and self._spot_loader is not None:
            raise ValueError("the scenario replays spot traces (spot.model: trace): its interruptions are the traces'")
        settings = {name: changes.pop(name) for name in list(changes) if name in _CHANGEABLE_SETTINGS}
        if settings:
            changes["settings"] = dataclasses.replace(self.settings, **settings)
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
        shared = [name for name in ("fleet", "energy", "_fixed_jobs") if name in self.__dict__]
        copy.__dict__.update({name: self.__dict__[name] for name in shared})
        copy.__dict__["telemetry"] = telemetry
        return copy

    def _built(self, build: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``build(*args, **kwargs)`` once the data is known present; errors name the scenario file."""
        self._require_data()
        try:
            with applied_limits(self.limits):  # the readers bound the files by the scenario's limits
                return build(*args, **kwargs)
        except ScenarioError:
            raise
        except (SpecError, TraceError) as exc:
            raise ScenarioError(f"{self.source or self.name}: {exc}") from None
