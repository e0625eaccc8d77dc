"""The ``workload`` section of a scenario: synthetic jobs or workflows, an inline list, or a job file.

:func:`jobs_loader` validates the section now and returns a :class:`JobsLoader`: a frozen
dataclass (so a scenario pickles) called with the episode's ``numpy.random.Generator``, one class
per source (:class:`SyntheticJobs`, :class:`SyntheticWorkflows`, :class:`FixedJobs`,
:class:`FileJobs`; planted episodes, :class:`PlantedJobs`, are drawn by the scenario, which knows
their fleet). Sizes are checked against ``limits.max_jobs`` now: the inline list, a file's
``limit``, the synthetic generator's arrivals (``base_rate_per_s x (1 + diurnal_amplitude) x
horizon_s``, all drawn before the job budget applies) and the workflow generator's tasks (its
expected workflows x the most tasks one can have); a job file is read with at most
``max_jobs + 1`` jobs kept.

The inline list's jobs may be tasks of workflows (``workflow`` and ``parents`` keys); the
section's optional ``workflows`` list describes them (``workflow_id``, ``weight``,
``deadline_s``: :class:`~digital_twin.workflows.WorkflowSpec`).

:func:`declared_durations` reads the section's optional ``declared_durations`` mapping: how the
scenario fills the jobs' declared durations (:mod:`digital_twin.declared_durations`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from digital_twin.declared_durations import DeclaredDurations
from digital_twin.errors import SettingError, SpecError, short_repr
from digital_twin.jobs import JobSpec
from digital_twin.limits import Limits, count
from digital_twin.planted import MarketConfig, PlantedConfig, PlantedEpisode, plant, plant_priced
from digital_twin.scenario.paths import resolve_path
from digital_twin.scenario.schema import Section, call_with_options, check_limit, checked, section_options
from digital_twin.scenario.sources import JOB_FILE_SOURCES, WHOLE_WORKFLOW_SOURCES
from digital_twin.scenario.trace_window import WindowedJobs
from digital_twin.workflows.spec import WorkflowSpec, workflow_from_dict
from digital_twin.workload import Workload
from digital_twin.workloads.explicit import jobs_from_dicts
from digital_twin.workloads.synthetic import SyntheticWorkloadConfig, generate_jobs
from digital_twin.workloads.workflows import WorkflowConfig, generate_workflows


class JobsLoader(Protocol):
    """Where a scenario's jobs come from: called once per workload draw."""

    def __call__(self, rng: np.random.Generator) -> Workload:
        """The jobs of one draw, sorted by arrival; ``rng`` is the draw's generator (fixed sources ignore it).

        Raises:
            SpecError: The jobs are invalid, or more than the limits allow (the scenario adds the file).
        """
        ...


@dataclass(frozen=True)
class SyntheticJobs:
    """``workload.source: synthetic``: jobs drawn from the generator with the episode's rng."""

    config: SyntheticWorkloadConfig
    horizon_s: float
    job_budget: int | None

    def __call__(self, rng: np.random.Generator) -> Workload:
        """One draw of the workload."""
        return generate_jobs(self.config, rng, self.horizon_s, self.job_budget)


@dataclass(frozen=True)
class SyntheticWorkflows:
    """``workload.source: workflows``: workflows drawn from the generator with the episode's rng."""

    config: WorkflowConfig
    horizon_s: float
    job_budget: int | None

    def __call__(self, rng: np.random.Generator) -> Workload:
        """One draw of the workflows (whole workflows within the budget)."""
        return generate_workflows(self.config, rng, self.horizon_s, self.job_budget)


@dataclass(frozen=True)
class FixedJobs:
    """``workload.source: jobs``: the inline list (built at parse time), cut to the budget."""

    jobs: Workload
    job_budget: int | None

    def __call__(self, rng: np.random.Generator) -> Workload:
        """The jobs, at most ``job_budget`` (a task whose parent is cut off goes too; ``rng`` is not used)."""
        del rng
        return self.jobs.head(self.job_budget) if self.job_budget else self.jobs


@dataclass(frozen=True)
class FileJobs:
    """``workload.source: <job file source>``: jobs read from a file on first use."""

    source: str
    path: Path
    options: Mapping[str, Any]
    file: Path | str
    where: str
    max_jobs: int

    def __call__(self, rng: np.random.Generator) -> Workload:
        """Read the file (at most ``max_jobs`` jobs; more is an error; ``rng`` is not used)."""
        del rng
        options = dict(self.options)
        if self.source in WHOLE_WORKFLOW_SOURCES:  # its limit keeps whole workflows: it caps instead
            options.setdefault("max_tasks", self.max_jobs)
        else:
            options.setdefault("limit", self.max_jobs + 1)  # never build more than one job too many
        jobs: Sequence[JobSpec] = call_with_options(
            JOB_FILE_SOURCES[self.source], options, self.file, self.where, self.path
        )
        if len(jobs) > self.max_jobs:
            raise SpecError(
                f"{self.path}: the file holds more than limits.max_jobs = {self.max_jobs:,} jobs; set job_budget "
                f"(or options.limit), or {Limits.how_to_raise('max_jobs')}"
            )
        return Workload.of(jobs)


BUILT_IN_SOURCES = ("jobs", "planted", "planted-priced", "synthetic", "workflows")
"""``workload.source`` names besides the job files'."""


@dataclass(frozen=True)
class PlantedJobs:
    """``workload.source: planted`` or ``planted-priced``: jobs with their optimal schedule, drawn per episode.

    Not a :class:`JobsLoader`: the jobs depend on the fleet, the telemetry and the settings, so
    the scenario draws them (:meth:`digital_twin.scenario.parsed.Scenario.planted_episode`):
    ``planted`` cuts them from the fleet's cheap capacity (:func:`digital_twin.planted.plant`),
    ``planted-priced`` keeps cheap nodes full and proves the optimum by capacity prices
    (:func:`digital_twin.planted.plant_priced`).
    """

    config: PlantedConfig | MarketConfig
    max_jobs: int

    @property
    def draw(self) -> Callable[..., PlantedEpisode]:
        """The generator of this family: ``(fleet, telemetry, settings, config, rng, max_jobs, energy)``."""
        return plant_priced if isinstance(self.config, MarketConfig) else plant


def jobs_loader(
    section: Section, horizon_s: float, job_budget: int | None, data_files: list[Path], limits: Limits
) -> tuple[JobsLoader | PlantedJobs, bool]:
    """The loader of the ``workload`` section, and whether each episode draws its own jobs."""
    source = section.get("source", str, required=True)
    if source in ("planted", "planted-priced"):
        if job_budget is not None:
            raise section.error("source", "a planted workload keeps all its jobs: remove job_budget")
        kind = PlantedConfig if source == "planted" else MarketConfig
        options, _ = section_options(section, kind, skip=0)
        options.setdefault("plant_until_s", horizon_s)
        config = call_with_options(kind, options, section.file, section.path("options"))
        section.finish()
        return PlantedJobs(config, limits.max_jobs), True
    if source == "synthetic":
        per_episode = resamples(section)
        options, _ = section_options(section, SyntheticWorkloadConfig, skip=0)
        config = call_with_options(SyntheticWorkloadConfig, options, section.file, section.path("options"))
        arrivals = config.base_rate_per_s * (1.0 + config.diurnal_amplitude) * horizon_s
        check_limit(  # the generator draws every arrival before the budget applies
            section,
            "options.base_rate_per_s",
            limits,
            "max_jobs",
            arrivals,
            f"base_rate_per_s x (1 + diurnal_amplitude) x horizon_s = {count(arrivals)} arrivals",
        )
        section.finish()
        return SyntheticJobs(config, horizon_s, job_budget), per_episode
    if source == "workflows":
        per_episode = resamples(section)
        return synthetic_workflows(section, horizon_s, job_budget, limits), per_episode
    if source == "jobs":
        items = section.get("jobs", list, required=True)
        check_limit(section, "jobs", limits, "max_jobs", len(items), f"the list has {len(items):,} jobs, which")
        jobs = checked(section, None, lambda: jobs_from_dicts(items, section.path("jobs")))
        described = section.get("workflows", list, [])
        specs = checked(section, None, lambda: workflow_specs(described, section.path("workflows")))
        workload = checked(section, "jobs", lambda: Workload.of(jobs, specs))
        section.finish()
        return FixedJobs(workload, job_budget), False
    if source not in JOB_FILE_SOURCES:
        raise section.error(
            "source",
            f"unknown source {short_repr(source)}; known: {[*sorted(JOB_FILE_SOURCES), *BUILT_IN_SOURCES]}",
        )
    path = resolve_path(section, "path", data_files)
    options, _ = section_options(section, JOB_FILE_SOURCES[source])
    window_s = section.get("window_s", float, None)
    if window_s is not None:  # read the whole trace; each episode draws its window (and applies the budget)
        section.finish()
        read = FileJobs(source, path, options, section.file, section.path("options"), limits.max_jobs)
        return checked(section, "window_s", lambda: WindowedJobs(read, window_s, job_budget)), True
    if job_budget is not None:
        options.setdefault("limit", job_budget)
    limit = options.get("limit")
    if isinstance(limit, int | float) and not isinstance(limit, bool):
        check_limit(section, "options.limit", limits, "max_jobs", limit, f"limit = {count(limit)} jobs")
    section.finish()
    return FileJobs(source, path, options, section.file, section.path("options"), limits.max_jobs), False


def workflow_specs(items: list[Any], where: str) -> list[WorkflowSpec]:
    """The ``workflows`` list of an inline workload: one :class:`WorkflowSpec` per mapping (``where[k]`` in errors)."""
    return [workflow_from_dict(item, f"{where}[{k}]") for k, item in enumerate(items)]


def resamples(section: Section) -> bool:
    """``workload.resample`` of a generated workload: ``per-episode`` (True, the default) or ``fixed``."""
    resample = section.get("resample", str, "per-episode")
    if resample not in ("per-episode", "fixed"):
        raise section.error("resample", f"must be 'per-episode' or 'fixed', got {short_repr(resample)}")
    return resample == "per-episode"


def synthetic_workflows(
    section: Section, horizon_s: float, job_budget: int | None, limits: Limits
) -> SyntheticWorkflows:
    """``workload.source: workflows``: the generator's options, checked, and its size against ``max_jobs``."""
    options, _ = section_options(section, WorkflowConfig, skip=0)
    config = call_with_options(WorkflowConfig, options, section.file, section.path("options"))
    workflows = config.count if config.count is not None else config.rate_per_s * horizon_s
    tasks = workflows * config.max_tasks_per_workflow
    what = f"{count(workflows)} workflows x up to {config.max_tasks_per_workflow} tasks = {count(tasks)} tasks"
    check_limit(section, "options", limits, "max_jobs", tasks, what)  # drawn before the job budget applies
    section.finish()
    return SyntheticWorkflows(config, horizon_s, job_budget)


def declared_durations(section: Section) -> DeclaredDurations:
    """``workload.declared_durations``: the estimate model (absent: ``noisy`` with its defaults).

    The mapping's keys are :class:`~digital_twin.declared_durations.DeclaredDurations`' fields
    (``model``, ``median_accuracy``, ``sigma``, ``from_trace``); absent keys take its defaults.
    Marks the key read in ``section``, so call it before the section is finished.

    Raises:
        ScenarioError: Not a mapping, an unknown key, a wrong type or value (names the file and key).
    """
    mapping = section.section("declared_durations", required=False)
    if mapping is None:
        return DeclaredDurations()
    default = DeclaredDurations()
    values = {
        "model": mapping.get("model", str, default.model),
        "median_accuracy": mapping.get("median_accuracy", float, default.median_accuracy),
        "sigma": mapping.get("sigma", float, default.sigma),
        "from_trace": mapping.get("from_trace", bool, default.from_trace),
    }
    mapping.finish()
    try:
        return DeclaredDurations(**values)
    except SettingError as exc:
        raise mapping.error(exc.name, exc.problem) from None
