"""T1.3: scheduling latency p99 with 1 to 200 queued jobs.

**The reference** (``tier1_p99_latency.py``): a fresh scheduler service per burst size
{1, 10, 50, 100, 200}; the burst's jobs (batch, 0.1 core, 0.2 GB, preemptible: the
``PREEMPTIBLE_ACTOR`` strategy, so the full 20-ant x 5-iteration colony on the x86/arm nodes)
are submitted one after the other and each ``submit_job()`` (routing, scheduling, allocation)
is timed. Reported p99: 0.658 / 0.686 / 0.745 / 0.712 / 0.696 ms, headline "< 0.75 ms".

**Its setting** (:func:`reference_setting`): our scheduling function
:func:`agents.aco.scheduler.schedule` (route, filter, cost engine, colony) plus the carried
pheromone update, timed per job; the burst's jobs are allocated one after the other on a fresh
5-node fleet (utilisation = allocated / total, no telemetry), as the reference's service does.

**In the env** (:func:`in_env`): the burst's jobs all arrive at t = 0 in a
:class:`~aco_env.ClusterSchedulingEnv` (default fleet, bundled synthetic background, spot
interruptions on), so the queue really holds B, B - 1, ..., 1 jobs at the successive decisions;
each ``agent.predict`` of the registered ``aco`` agent (which reads the env's cluster view,
queue included) is timed.

Both repeat each burst until at least ``min_samples`` decisions per seed are timed, take the
p50/p99 per seed, and summarise them over seeds (mean and 95 % interval). Each decision is timed
twice: wall-clock (``time.perf_counter_ns``, what the reference measured) and CPU time of the
deciding thread (``time.thread_time_ns``). On a shared machine a decision that loses the CPU to
another process waits for the kernel's next scheduling tick (a few ms): such waits dominate a
wall-clock p99 but not the CPU time, and ``preempted_share`` counts them (wall - CPU > 1 ms).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aco_env import ClusterSchedulingEnv
from agents import Agent, make_agent
from agents.aco import FleetArrays, NodePheromone, schedule
from agents.aco.bench import LATENCY_JOB
from agents.base import AgentState
from agents.oracle.milp.limits import SolveLimits
from digital_twin import default_fleet
from digital_twin.scenario import Scenario
from training.evaluation.rollout import play_episode
from training.execution.backend import Backend
from training.reproduction import data
from training.reproduction.scenario_build import aggregate_trace, code_scenario, job_dict
from training.reproduction.stats import summarize

NAME = "T1.3"
TITLE = "Scheduling latency p99 at 1-200 queued jobs"
REFERENCE_P99_MS: dict[int, float] = {1: 0.658, 10: 0.686, 50: 0.745, 100: 0.712, 200: 0.696}
REFERENCE_HEADLINE_MS = 0.75


@dataclass(frozen=True)
class Config:
    """Sizes of the T1.3 runs (defaults: the full reproduction)."""

    bursts: tuple[int, ...] = (1, 10, 50, 100, 200)
    """Queued jobs per burst."""
    min_samples: int = 1000
    """Decisions timed per (seed, burst): the burst is repeated ``ceil(min_samples / B)`` times."""
    warmup: int = 50
    """Untimed decisions before each seed's measurements (imports, caches)."""
    job_duration_s: float = 3600.0
    """Duration of the burst's jobs in the env (long: nothing completes during the burst)."""


PREEMPTED_MS = 1.0
"""A decision whose wall time exceeds its CPU time by more than this waited for the CPU."""


def _summary_of(wall_ms: Sequence[float], cpu_ms: Sequence[float]) -> dict[str, float]:
    """Percentiles of one (seed, burst): wall and CPU time in ms, and the share preempted."""
    wall, cpu = np.asarray(wall_ms, dtype=float), np.asarray(cpu_ms, dtype=float)
    return {
        "wall_p99": float(np.percentile(wall, 99)),
        "wall_p50": float(np.percentile(wall, 50)),
        "cpu_p99": float(np.percentile(cpu, 99)),
        "cpu_p50": float(np.percentile(cpu, 50)),
        "preempted": float(np.mean(wall - cpu > PREEMPTED_MS)),
        "n": int(wall.size),
    }


def _burst_ms(fleet: FleetArrays, burst: int, rng: np.random.Generator) -> tuple[list[float], list[float]]:
    """One fresh service: ``burst`` jobs scheduled and allocated in turn; (wall, CPU) ms per decision."""
    free_cpu = fleet.cpu_cores.copy()
    used_cpu = np.zeros_like(free_cpu)
    running = np.zeros((fleet.n_nodes, 3), dtype=np.int64)
    pheromone = NodePheromone(fleet.n_nodes)
    job = LATENCY_JOB
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(burst):
        started, started_cpu = time.perf_counter_ns(), time.thread_time_ns()
        utilization = 100.0 * used_cpu / fleet.cpu_cores
        decision = schedule(
            job, fleet, free_cpu >= job.cpu_cores, utilization, running, rng, pheromone=pheromone.values
        )
        if decision.node is not None:
            pheromone.update(decision.node)
            free_cpu[decision.node] -= job.cpu_cores
            used_cpu[decision.node] += job.cpu_cores
            running[decision.node, 1] += 1  # a batch job
        cpu.append((time.thread_time_ns() - started_cpu) / 1e6)
        wall.append((time.perf_counter_ns() - started) / 1e6)
    return wall, cpu


def reference_setting(seeds: Sequence[int], config: Config | None = None) -> dict[str, Any]:
    """Per burst size: wall and CPU percentiles per seed, summarised over seeds (ms)."""
    config = config or Config()
    fleet = FleetArrays.from_fleet(default_fleet())
    per_burst: dict[str, list[dict[str, float]]] = {}
    for seed in seeds:
        rng = np.random.default_rng(seed)
        _burst_ms(fleet, config.warmup, rng)
        for burst in config.bursts:
            wall: list[float] = []
            cpu: list[float] = []
            for _ in range(math.ceil(config.min_samples / burst)):
                w, c = _burst_ms(fleet, burst, rng)
                wall, cpu = wall + w, cpu + c
            per_burst.setdefault(str(burst), []).append(_summary_of(wall, cpu))
    return _summary(per_burst)


def burst_scenario(burst: int, config: Config | None = None) -> Scenario:
    """``burst`` latency jobs all arriving at t = 0 on the default fleet (bundled background)."""
    config = config or Config()
    jobs = [
        job_dict(dataclasses.replace(LATENCY_JOB, job_id=f"burst-{k}", duration_s=config.job_duration_s))
        for k in range(burst)
    ]
    return code_scenario(
        f"t1.3-burst-{burst}",
        default_fleet(),
        telemetry=aggregate_trace(data.BUNDLED_SYNTHETIC_TRACE, "evenly-spread"),
        workload={"source": "jobs", "jobs": jobs},
        horizon_s=2 * config.job_duration_s,
        description=f"T1.3 in the env: {burst} queued latency jobs at t = 0",
    )


@dataclass
class _CpuTimed:
    """An agent wrapper noting the CPU time of each ``predict`` (the wall time is the rollout's)."""

    inner: Agent
    cpu_ms: list[float] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The wrapped agent's name."""
        return self.inner.name

    def reset(self, seed: int | None = None) -> None:
        """Reset the wrapped agent."""
        self.inner.reset(seed)

    def predict(
        self,
        observation: dict[str, np.ndarray],
        state: AgentState = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, AgentState]:
        """The wrapped agent's action; its CPU time is appended to :attr:`cpu_ms`."""
        started = time.thread_time_ns()
        out = self.inner.predict(observation, state, episode_start, deterministic)
        self.cpu_ms.append((time.thread_time_ns() - started) / 1e6)
        return out


def _env_ms(scenario: Scenario, episode_seeds: Sequence[int], agent: str) -> tuple[list[float], list[float]]:
    """(wall, CPU) ms of every ``agent.predict`` over one episode per seed of a burst scenario."""
    env = ClusterSchedulingEnv(scenario)
    timed = _CpuTimed(make_agent(agent, env))
    wall: list[float] = []
    for seed in episode_seeds:
        wall += play_episode(env, timed, seed).decision_latency_ms.tolist()
    return wall, timed.cpu_ms


def in_env(seeds: Sequence[int], config: Config | None = None, agent: str = "aco") -> dict[str, Any]:
    """Per burst size: ``agent.predict`` latency (ms) with the env's queue holding the burst.

    Each burst's scenario is built once and shared by its seeds.
    """
    config = config or Config()
    per_burst: dict[str, list[dict[str, float]]] = {}
    _env_ms(burst_scenario(config.warmup, config), [0], agent)  # warm-up
    for burst in config.bursts:
        repeats = math.ceil(config.min_samples / burst)
        scenario = burst_scenario(burst, config)
        for seed in seeds:
            wall, cpu = _env_ms(scenario, [seed * 100_000 + r for r in range(repeats)], agent)
            per_burst.setdefault(str(burst), []).append(_summary_of(wall, cpu))
    return _summary(per_burst)


def _summary(per_burst: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    keys = ("wall_p99", "wall_p50", "cpu_p99", "cpu_p50", "preempted")
    return {
        burst: {
            **{
                f"{key}_ms" if key != "preempted" else "preempted_share": summarize([s[key] for s in seeds])
                for key in keys
            },
            "samples_per_seed": seeds[0]["n"],
        }
        for burst, seeds in per_burst.items()
    }


def run(
    seeds: Sequence[int],
    config: Config | None = None,
    oracle_limits: SolveLimits | None = None,
    backend: Backend | None = None,
) -> dict[str, Any]:
    """Both settings (no real data needed; the oracle does not apply to latency).

    Every run stays in this process whatever ``backend`` is given: the numbers are decision
    latencies, and episodes running beside them on the same cores would be measured too.
    """
    del oracle_limits, backend
    config = config or Config()
    return {
        **data.tier_head(NAME, TITLE, seeds),
        "data": [{"file": data.BUNDLED_SYNTHETIC_TRACE.name, "note": "bundled synthetic background (env only)"}],
        "config": dataclasses.asdict(config),
        "job": {k: v for k, v in dataclasses.asdict(LATENCY_JOB).items() if k != "job_id"},
        "reference": {"p99_ms": {str(k): v for k, v in REFERENCE_P99_MS.items()}, "headline_ms": REFERENCE_HEADLINE_MS},
        "reference_setting": reference_setting(seeds, config),
        "in_env": in_env(seeds, config),
    }
