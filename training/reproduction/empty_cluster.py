"""The reference's own benchmark setting: every job placed alone on an empty cluster.

The reference benchmarks (T1.1, T4.1, T5.x) never allocate a node between calls: each job is an
independent placement on an empty cluster, with no durations, no queue, no background load and
no spot interruptions. We reproduce that setting with *our* agents, unchanged: for each job a
one-job twin is built on the fleet (background 0 %, interruptions off), and the agent decides
from that twin's :class:`aco_env.ClusterView` through its public ``act`` method. The view, and
so the mask of nodes the job fits on, comes from the twin itself, never from a second copy of
its rules. The agent's own state (random generator, carried pheromone) carries from job to job,
as the reference's scheduler service does.

Example:
    >>> from agents import make_agent
    >>> from digital_twin import JobSpec, default_fleet
    >>> env = fleet_env(default_fleet())
    >>> agent = make_agent("cheapest", env)
    >>> agent.reset(seed=0)
    >>> place_each(agent, [JobSpec("j", 0.0, 1.0, "batch", 4, 8)])
    [1]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from aco_env import ClusterSchedulingEnv, ClusterView, cluster_view_of
from agents.view_agent import ViewAgent
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec
from training.reproduction.scenario_build import code_scenario, constant_background, job_dict

_SPAN_S = 1.0  # the one-job twin's horizon: the job arrives at 0 and is decided at once


def fleet_env(fleet: Sequence[NodeSpec]) -> ClusterSchedulingEnv:
    """An env on ``fleet`` to bind agents to (agents read its fleet; it is never stepped)."""
    placeholder = JobSpec("placeholder", 0.0, _SPAN_S, "batch", 0.001, 0.001)
    scenario = code_scenario(
        "empty-cluster",
        fleet,
        telemetry=constant_background(0.0, 0.0, _SPAN_S),
        workload={"source": "jobs", "jobs": [job_dict(placeholder)]},
        horizon_s=_SPAN_S,
        spot_interruptions=False,
    )
    return ClusterSchedulingEnv(scenario)


def empty_cluster_view(fleet: Sequence[NodeSpec], job: JobSpec) -> ClusterView:
    """The view of ``job`` alone on an empty, idle ``fleet`` (``view.job`` is None if it fits nowhere)."""
    alone = dataclasses.replace(job, arrival_s=0.0, deadline_s=None)
    spec = TwinSpec(
        fleet=tuple(fleet),
        jobs=(alone,),
        telemetry=Telemetry.constant(len(fleet), 0.0, 0.0, _SPAN_S, _SPAN_S),
        settings=EpisodeSettings(_SPAN_S, queue_ttl_s=None, spot_interruptions=False),
    )
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))  # no randomness is drawn: interruptions are off
    return cluster_view_of(twin, history_ticks=1)


def place_each(agent: ViewAgent, jobs: Sequence[JobSpec]) -> list[int | None]:
    """The node ``agent`` picks for each job on an empty cluster (``None``: not placed).

    The caller resets the agent first (``agent.reset(seed)``); its state then carries across
    the jobs, in order.
    """
    return [agent.act(empty_cluster_view(agent.fleet, job)) for job in jobs]


def total_price_per_hour(fleet: Sequence[NodeSpec], nodes: Sequence[int | None]) -> float:
    """The reference's cost metric: the sum of the chosen nodes' prices in $/h (unplaced: 0)."""
    return float(sum(fleet[i].price_per_hour_usd for i in nodes if i is not None))
