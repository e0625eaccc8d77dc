"""What a live cluster has told the service so far, as the twin spec of its episode.

:class:`KnownEpisode` holds the facts the caller pushed (jobs submitted, their ends, telemetry,
node outages) and writes them as a :class:`digital_twin.TwinSpec` that continues the previous
one: the same fleet, settings, energy model and rules; the jobs submitted so far, in submission
order; the telemetry pushed so far, each value from the first tick at or after its push, the last
one held after it (a persistence forecast, as :meth:`digital_twin.DigitalTwin.known_spec` holds
it); the spot outages so far, an outage not yet over ending at ``inf``.

Run times are the cluster's, not the twin's: a job that has not ended has the run time
:data:`OPEN_RUN_S` (its completion lies past any horizon) and the run time the submitter
declared (``declared_duration_s``, what agents see); a job that ended has exactly the run time
that makes its run end at the reported time. So the twin never predicts an end, and the live
spec has no cpu contention nor co-location interference: both are models of run times, and the
reported ends carry the real cluster's (:mod:`serving` explains why agents see the same).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from digital_twin import WORKLOAD_TYPES, JobSpec, NodeSpec, Telemetry, TwinSpec
from digital_twin.fleet import MAX_AMOUNT
from digital_twin.scenario import Scenario
from digital_twin.workload import Workload

_COLUMNS = (
    "job_ids", "arrival_s", "duration_s", "cpu_cores", "mem_gb", "gpu_count", "gpu_vram_gb", "priority", "preemptible",
    "deadline_s", "workload_index", "declared_duration_s", "allowed_gpu_models", "required_arch", "workflow", "parents",
)  # fmt: skip
"""The columns of a :class:`digital_twin.workload.Workload`, kept as lists one job at a time."""
OPEN_RUN_S = 1e12
"""The run time of a job whose end is not known yet: longer than any horizon, so it never ends in the twin."""


def exact_run_s(start_s: float, end_s: float) -> float:
    """The run time ``d`` with ``start_s + d == end_s`` exactly in floating point (``end_s > start_s``).

    >>> start, end = 0.1, 0.30000000000000004
    >>> start + exact_run_s(start, end) == end
    True
    """
    run = end_s - start_s
    while start_s + run < end_s:
        run = math.nextafter(run, math.inf)
    while start_s + run > end_s and math.nextafter(run, 0.0) > 0.0:
        run = math.nextafter(run, 0.0)
    return run


class KnownEpisode:
    """The facts pushed so far about one live episode, and the twin spec they make.

    Args:
        scenario: Gives the fleet, the settings (horizon, TTL, weights...), the energy model,
            the placement rules and the telemetry's tick length.

    Attributes:
        fleet: The nodes, in action order.
        node_index: ``node_id -> index`` in ``fleet``.
        jobs: The jobs submitted so far, in submission order (their index is the twin's job index).
        job_index: ``job_id -> index`` in ``jobs``.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.fleet: tuple[NodeSpec, ...] = scenario.fleet
        self.node_index = {node.node_id: i for i, node in enumerate(self.fleet)}
        rules = scenario.placement
        if rules is not None and rules.interference:
            rules = dataclasses.replace(rules, interference=())
        self._rules = rules
        self._settings = dataclasses.replace(scenario.settings, interference="none", spot_interruptions=False)
        self._energy = scenario.energy
        self._tick_s = float(scenario.telemetry.tick_s)
        n_ticks = self._settings.tick_grid(self._tick_s).n_ticks
        self._background = np.zeros((n_ticks + 1, len(self.fleet), 2))  # (T, N, cpu/mem %): nobody else's load
        self._telemetry: Telemetry | None = None
        self.jobs: list[JobSpec] = []
        self.job_index: dict[str, int] = {}
        self._columns: dict[str, list] = {name: [] for name in _COLUMNS}  # the jobs' columns, appended per job
        self._interruptions: list[list[float]] = [[] for _ in self.fleet]
        self._recoveries: list[list[float]] = [[] for _ in self.fleet]

    @property
    def horizon_s(self) -> float:
        """The episode covers ``[0, horizon_s)`` seconds."""
        return float(self._settings.horizon_s)

    @property
    def ttl_s(self) -> float | None:
        """The queue TTL, seconds (``None``: none)."""
        return self._settings.queue_ttl_s

    def submit(self, job: JobSpec) -> None:
        """Add a submitted job (its ``arrival_s`` is its submission time; ids are unique)."""
        self.job_index[job.job_id] = len(self.jobs)
        self.jobs.append(job)
        for name, value in _row(job).items():
            self._columns[name].append(value)

    def withdraw(self, job_id: str) -> None:
        """Withdraw a job that never ran (cancelled while queued): it asks for more cpu than any node has.

        The twin then rejects it on arrival: it leaves no trace in any queue, decision or node, but
        its arrival stays an event, so every other job is asked when it was (a pass follows every
        event), and the episode replays with the same decisions but its own.
        """
        index = self.job_index[job_id]
        self.jobs[index] = dataclasses.replace(self.jobs[index], cpu_cores=MAX_AMOUNT)
        self._columns["cpu_cores"][index] = MAX_AMOUNT

    def end_run(self, job_id: str, start_s: float, end_s: float) -> None:
        """The run of ``job_id`` that started at ``start_s`` ended at ``end_s``."""
        index = self.job_index[job_id]
        self.jobs[index] = dataclasses.replace(self.jobs[index], duration_s=exact_run_s(start_s, end_s))
        self._columns["duration_s"][index] = self.jobs[index].duration_s

    def set_background(self, node: int, time_s: float, cpu_pct: float, mem_pct: float) -> None:
        """Node ``node``'s background load measured at ``time_s``: it holds from the first tick at or after then."""
        first = self.first_tick_from(time_s)
        self._background[first:, node] = (cpu_pct, mem_pct)
        self._telemetry = None

    def first_tick_from(self, time_s: float) -> int:
        """The first tick ``k`` whose time ``k * tick_s`` (the product the twin fires it at) is ``>= time_s``."""
        k = max(0, math.ceil(time_s / self._tick_s))
        while k > 0 and (k - 1) * self._tick_s >= time_s:
            k -= 1
        while k * self._tick_s < time_s:
            k += 1
        return k

    def background_at(self, node: int, time_s: float) -> tuple[float, float]:
        """Node ``node``'s background (cpu %, mem %) in force at ``time_s`` (its tick's, as pushed so far)."""
        tick = self.first_tick_from(time_s)
        if tick * self._tick_s > time_s:
            tick -= 1
        row = self._background[min(tick, len(self._background) - 1), node]
        return float(row[0]), float(row[1])

    def node_down(self, node: int, time_s: float) -> None:
        """Spot node ``node`` went down at ``time_s`` (it comes back when :meth:`node_up` says)."""
        self._interruptions[node].append(time_s)
        self._recoveries[node].append(math.inf)

    def node_up(self, node: int, time_s: float) -> None:
        """Node ``node``, down, came back at ``time_s``."""
        self._recoveries[node][-1] = time_s

    def is_down(self, node: int) -> bool:
        """Whether ``node`` is down (an outage pushed and not yet over)."""
        return bool(self._recoveries[node]) and self._recoveries[node][-1] == math.inf

    def spec(self, extra: JobSpec | None = None) -> TwinSpec:
        """The twin spec of everything pushed so far, and ``extra`` submitted last when given (a probe).

        A new object each call; the telemetry is rebuilt only after a push.
        """
        if self._telemetry is None:
            self._telemetry = Telemetry(self._background, self._tick_s, source="pushed by the live cluster")
        columns, jobs = self._columns, list[JobSpec | None](self.jobs)
        if extra is not None:
            columns = {name: [*values, _row(extra)[name]] for name, values in columns.items()}
            jobs.append(extra)
        return TwinSpec(
            self.fleet,
            Workload(dict(columns), jobs),  # copies the columns into arrays: O(jobs) in numpy, not per job in Python
            self._telemetry,
            self._settings,
            fixed_interruptions_s=tuple(tuple(times) for times in self._interruptions),
            energy=self._energy,
            rules=self._rules,
            fixed_recoveries_s=tuple(tuple(times) for times in self._recoveries),
        )


def _row(job: JobSpec) -> dict[str, object]:
    """``job`` as one entry per :class:`~digital_twin.workload.Workload` column (NaN: no deadline, none declared)."""
    return {
        "job_ids": job.job_id, "arrival_s": job.arrival_s, "duration_s": job.duration_s, "cpu_cores": job.cpu_cores,
        "mem_gb": job.mem_gb, "gpu_count": job.gpu_count, "gpu_vram_gb": job.gpu_vram_gb, "priority": job.priority,
        "preemptible": job.preemptible, "deadline_s": math.nan if job.deadline_s is None else job.deadline_s,
        "workload_index": WORKLOAD_TYPES.index(job.workload),
        "declared_duration_s": math.nan if job.declared_duration_s is None else job.declared_duration_s,
        "allowed_gpu_models": job.allowed_gpu_models, "required_arch": job.required_arch,
        "workflow": job.workflow, "parents": job.parents,
    }  # fmt: skip
