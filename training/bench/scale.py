"""Decisions per job and wall time at scale: first-fit and ACO, each under its deferral rule.

A deferring agent asked after every event can take hundreds of decisions per job on a large
fleet (the ACO scheduler keeps latency-critical jobs off spot nodes and defers them while the
on-demand nodes are full). Under the ``new-fit`` rule, which the ACO agents declare
(:mod:`digital_twin.deferral`), a deferred job is asked again only once it fits somewhere new:
the same episode with far fewer decisions. This section plays whole episodes and reports both
rules for ACO.
"""

from __future__ import annotations

import time
from typing import Any

import scenarios
from aco_env import ClusterSchedulingEnv, EnvConfig
from agents import agent_deferral, make_agent
from digital_twin import NEXT_EVENT
from training.rollout import play_episode

RUNS: tuple[tuple[str, str, str | None], ...] = (
    ("fleet5-synthetic", "first-fit", None),
    ("fleet5-synthetic", "aco", None),
    ("fleet5-synthetic", "aco", NEXT_EVENT),
    ("fleet500-synthetic", "first-fit", None),
    ("fleet500-synthetic", "aco", None),
    ("fleet500-synthetic", "aco", NEXT_EVENT),
)
"""(scenario, agent, deferral rule or ``None`` for the agent's own). The last run, ACO asked after
every event on 500 nodes, takes about 6 minutes on 2 cores: it is the "before" of the rule."""


def play_timed(scenario: str, agent_name: str, deferral: str | None, seed: int) -> dict[str, Any]:
    """One episode of ``agent_name``: wall seconds (agent + env), decisions, decisions per job, objective."""
    rule = deferral or agent_deferral(agent_name)
    env = ClusterSchedulingEnv(scenarios.load(scenario), config=EnvConfig(deferral=rule))
    agent = make_agent(agent_name, env)
    started = time.perf_counter()
    result = play_episode(env, agent, seed)
    wall_s = time.perf_counter() - started
    metrics = result.metrics
    submitted = sum(metrics[f"{status}_jobs"] for status in ("completed", "failed", "rejected", "running", "pending"))
    return {
        "scenario": scenario,
        "nodes": env.n_nodes,
        "agent": agent_name,
        "deferral": rule,
        "seed": seed,
        "wall_s": wall_s,
        "decisions": int(metrics["decisions"]),
        "jobs": int(submitted),
        "decisions_per_job": metrics["decisions"] / max(submitted, 1),
        "objective_usd": metrics["objective_usd"],
    }


def bench_scale(seed: int = 0, runs: tuple[tuple[str, str, str | None], ...] = RUNS) -> dict[str, Any]:
    """Every run of ``runs`` on ``seed``, and ACO's wall time over first-fit's per scenario."""
    rows = [play_timed(scenario, agent, deferral, seed) for scenario, agent, deferral in runs]
    ratios = {}
    for scenario in dict.fromkeys(row["scenario"] for row in rows):
        own = {row["agent"]: row for row in rows if row["scenario"] == scenario and row["deferral"] == (
            agent_deferral(row["agent"]))}
        if {"aco", "first-fit"} <= own.keys():
            ratios[scenario] = own["aco"]["wall_s"] / own["first-fit"]["wall_s"]
    return {"runs": rows, "aco_vs_first_fit_wall": ratios}
