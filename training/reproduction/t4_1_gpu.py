"""T4.1: GPU scheduling on 32 Alibaba GPU 2023 nodes (cost against Random, QoS of LS jobs).

**The reference** (``tier4_gpu_scheduling.py``): up to 5 nodes per GPU model from
``openb_node_list_gpu_node.csv`` (pandas ``random_state=42``; 32 nodes), priced per GPU-hour
(:data:`digital_twin.fleet.ALIBABA_GPU_MODELS`; P100, G2, G3 are spot at 0.15 interruptions/h);
100 pods stratified by ``qos`` (``random_state=42``) from the 4,334 GPU pods of
``openb_pod_list_gpuspec33.csv`` that are Running or Succeeded: LS -> latency-critical, others ->
batch preemptible; the per-GPU VRAM minimum from ``gpu_spec``, the model itself not enforced.
Metrics: total $/h over the 100 placements and the share of LS jobs on on-demand nodes.
Reported: Random $564.3, First-Fit $119.8, greedy $89.0, ACO-cost $115.0 (79.6 % below Random),
ACO+QoS $157.4 with 97.4 % of LS jobs on on-demand nodes.

**Our sampling differs**: nodes are drawn per model with ``numpy.random.default_rng(42)``
(:func:`digital_twin.scenario.sources.sample_per_group`) and pods per seed with our own
proportional stratified sampler, not pandas' ``random_state=42``, so the nodes and pods are
not the reference's. Nodes are listed grouped by model in name order, as a pandas ``groupby``
lists them (First-Fit depends on that order).

**Its setting**: each pod alone on the empty 32-node cluster, GPU model identity ignored.
**The full twin**: the same pods re-timed as a Poisson stream (creation order kept, trace run
times as durations), capacity held, GPU models enforced, pro-rated cost, spot interruptions,
the real Alibaba 2018 background, plus the oracle.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents import make_agent
from agents.oracle.milp.limits import DEFAULT_LIMITS, SolveLimits
from digital_twin import JobSpec, NodeSpec, fleet_from_alibaba_gpu_csv
from digital_twin.scenario import Scenario
from digital_twin.scenario.sources import sample_per_group
from digital_twin.workloads import REFERENCE_QOS_POLICIES, load_alibaba_gpu_pods
from training.execution.backend import Backend
from training.reproduction import data
from training.reproduction.empty_cluster import fleet_env, place_each, total_price_per_hour
from training.reproduction.play import (
    ORACLE,
    EpisodeRecord,
    metric_savings,
    metric_values,
    oracle_options,
    oracle_over_seeds,
    play_agents,
)
from training.reproduction.scenario_build import aggregate_trace, code_scenario, job_dict
from training.reproduction.stats import paired_savings, summarize

NAME = "T4.1"
TITLE = "GPU scheduling on 32 Alibaba GPU 2023 nodes"
FILES = (data.ALIBABA_GPU_NODES, data.ALIBABA_GPU_PODS, data.ALIBABA_2018_MEAN)
RANDOM, ACO_COST, ACO_QOS = "random", "aco-cost", "aco"
REFERENCE: dict[str, dict[str, float]] = {
    "random": {"total_price_per_hour": 564.3, "ls_on_demand": 0.513},
    "first-fit": {"total_price_per_hour": 119.8, "ls_on_demand": 0.923},
    "cheapest": {"total_price_per_hour": 89.0, "ls_on_demand": 0.808},
    "aco-cost": {"total_price_per_hour": 115.0, "ls_on_demand": 0.744},
    "aco": {"total_price_per_hour": 157.4, "ls_on_demand": 0.974},
}
"""The reference's table (``cheapest`` = its cost-aware greedy, ``aco`` = its ACO+QoS)."""
REFERENCE_HEADLINES = {"aco_cost_saving_vs_random": 0.796, "aco_qos_ls_on_demand": 0.974}


@dataclass(frozen=True)
class Config:
    """Sizes of the T4.1 runs (defaults: the full reproduction)."""

    nodes_per_model: int = 5
    """Nodes sampled per GPU model (the reference's 5; A10 has only 2)."""
    node_seed: int = 42
    """Seed of the node sample (fixed: the testbed, as the reference's random_state=42)."""
    jobs: int = 100
    """Pods sampled per seed."""
    interarrival_s: float = 72.0
    """Mean seconds between pod arrivals in the full twin (100 pods in about 2 h)."""
    horizon_s: float = 21_600.0
    """Full-twin episode length in simulated seconds (6 h)."""
    queue_ttl_s: float = 3600.0
    """Full-twin queue timeout in seconds."""
    agents: tuple[str, ...] = (RANDOM, "first-fit", "cheapest", ACO_COST, ACO_QOS)
    """Agents compared (the oracle is added in the full twin)."""


def gpu_fleet(path: Path, per_model: int = 5, seed: int = 42) -> tuple[NodeSpec, ...]:
    """Up to ``per_model`` GPU nodes per model, grouped by model name, file order within a model."""
    nodes = [n for n in fleet_from_alibaba_gpu_csv(path) if n.gpu_count > 0]
    keep = sample_per_group([n.gpu_model or "" for n in nodes], per_model, seed)  # ascending
    return tuple(sorted((nodes[i] for i in keep), key=lambda n: n.gpu_model or ""))  # stable sort


def gpu_pods(path: Path) -> tuple[list[JobSpec], list[str]]:
    """The reference's candidate pods (GPU >= 1, Running or Succeeded) and each one's ``qos``."""
    jobs = [
        j
        for j in load_alibaba_gpu_pods(path, phases=("Running", "Succeeded"), qos_policies=REFERENCE_QOS_POLICIES)
        if j.gpu_count >= 1
    ]
    with path.open(newline="") as handle:
        qos_of = {row["name"].strip(): row["qos"].strip() for row in csv.DictReader(handle)}
    return jobs, [qos_of[j.job_id] for j in jobs]


def stratified_sample(keys: Sequence[str], n: int, rng: np.random.Generator) -> list[int]:
    """``n`` indices stratified by key, in ascending (file) order.

    Each key gets ``n`` times its share of the items, rounded by largest remainder (ties to
    the first key in name order); its items are drawn without replacement from ``rng``.
    """
    groups = {key: [i for i, k in enumerate(keys) if k == key] for key in sorted(set(keys))}
    exact = {key: n * len(members) / len(keys) for key, members in groups.items()}
    take = {key: int(np.floor(q)) for key, q in exact.items()}
    by_remainder = sorted(groups, key=lambda key: (-(exact[key] - take[key]), key))
    for key in by_remainder[: n - sum(take.values())]:
        take[key] += 1
    chosen = [int(i) for key, members in groups.items() for i in rng.choice(members, take[key], replace=False)]
    return sorted(chosen)


def ls_on_demand(fleet: Sequence[NodeSpec], jobs: Sequence[JobSpec], nodes: dict[str, int]) -> float:
    """Share of latency-critical jobs started on an on-demand node (unplaced ones count as not)."""
    ls = [j.job_id for j in jobs if j.is_latency_critical]
    hits = sum(1 for job_id in ls if job_id in nodes and not fleet[nodes[job_id]].is_spot)
    return hits / len(ls) if ls else 0.0


def reference_setting(fleet: tuple[NodeSpec, ...], samples: dict[int, list[JobSpec]], config: Config) -> dict[str, Any]:
    """Each pod alone on the empty cluster (GPU model not enforced): $/h, LS on on-demand."""
    env = fleet_env(fleet)
    rows: dict[str, dict[str, list[float]]] = {name: {"total": [], "ls": [], "unplaced": []} for name in config.agents}
    for seed, sample in samples.items():
        jobs = [dataclasses.replace(j, allowed_gpu_models=None) for j in sample]
        for name in config.agents:
            agent = make_agent(name, env)
            agent.reset(seed)
            chosen = place_each(agent, jobs)
            rows[name]["total"].append(total_price_per_hour(fleet, chosen))
            placed = {j.job_id: node for j, node in zip(jobs, chosen, strict=True) if node is not None}
            rows[name]["ls"].append(ls_on_demand(fleet, jobs, placed))
            rows[name]["unplaced"].append(float(sum(node is None for node in chosen)))
    return {
        "per_agent": {
            name: {
                "total_price_per_hour": summarize(r["total"]),
                "ls_on_demand": summarize(r["ls"]),
                "unplaced_jobs": summarize(r["unplaced"]),
            }
            for name, r in rows.items()
        },
        "aco_cost_saving_vs_random": paired_savings(rows[RANDOM]["total"], rows[ACO_COST]["total"]),
    }


def twin_scenario(fleet: tuple[NodeSpec, ...], sample: list[JobSpec], seed: int, config: Config) -> Scenario:
    """The sampled pods as a Poisson stream (creation order kept) on the 32 nodes, real background."""
    rng = np.random.default_rng([seed, 41])  # arrivals: a stream apart from the sample's
    arrivals = np.concatenate([[0.0], np.cumsum(rng.exponential(config.interarrival_s, len(sample) - 1))])
    ordered = sorted(sample, key=lambda j: j.arrival_s)
    jobs = [job_dict(dataclasses.replace(j, arrival_s=float(t))) for j, t in zip(ordered, arrivals, strict=True)]
    root = data.traces_dir()
    assert root is not None  # checked by run()
    return code_scenario(
        f"t4.1-seed-{seed}",
        fleet,
        telemetry=aggregate_trace(root / data.ALIBABA_2018_MEAN, "evenly-spread"),
        workload={"source": "jobs", "jobs": jobs},
        horizon_s=config.horizon_s,
        queue_ttl_s=config.queue_ttl_s,
        description="T4.1 in the full twin: sampled Alibaba GPU pods re-timed as a Poisson stream",
    )


TWIN_METRICS = (
    "objective_usd",
    "cost_usd",
    "qos_compliance",
    "sla_violations",
    "failed_jobs",
    "rejected_jobs",
    "mean_wait_s",
)


def _twin_row(
    fleet: tuple[NodeSpec, ...], records: list[EpisodeRecord], scenarios: dict[int, Scenario]
) -> dict[str, Any]:
    row = {key: summarize(metric_values(records, key)) for key in TWIN_METRICS}
    row["ls_on_demand"] = summarize([ls_on_demand(fleet, scenarios[r.seed].jobs(None), r.placements) for r in records])
    return row


def full_twin(
    fleet: tuple[NodeSpec, ...],
    samples: dict[int, list[JobSpec]],
    config: Config,
    oracle_limits: SolveLimits | None,
    backend: Backend | None = None,
) -> dict[str, Any]:
    """Every agent (and the oracle when available) on one twin episode per seed, as one batch on ``backend``."""
    scenarios = {seed: twin_scenario(fleet, sample, seed, config) for seed, sample in samples.items()}
    seeds = list(samples)
    agents: list[tuple[str, dict[str, Any]]] = [(name, {}) for name in config.agents]
    oracle = oracle_options(oracle_limits)
    if oracle is not None:
        agents.append((ORACLE, oracle))
    records = play_agents(scenarios.__getitem__, agents, seeds, backend)
    out: dict[str, Any] = {
        "per_agent": {name: _twin_row(fleet, recs, scenarios) for name, recs in records.items()},
        "aco_cost_saving_vs_random": metric_savings(records, RANDOM, ACO_COST, "cost_usd"),
        "aco_cost_objective_saving_vs_random": metric_savings(records, RANDOM, ACO_COST, "objective_usd"),
        "oracle": None,
    }
    if oracle_limits is not None and oracle is not None:
        out["oracle"] = oracle_over_seeds(records[ORACLE], oracle_limits)
    return out


def run(
    seeds: Sequence[int],
    config: Config | None = None,
    oracle_limits: SolveLimits | None = DEFAULT_LIMITS,
    backend: Backend | None = None,
) -> dict[str, Any]:
    """Both settings; a skip record when the Alibaba traces are not present."""
    config = config or Config()
    head = data.tier_head(NAME, TITLE, seeds)
    root, skipped = data.locate_traces(FILES)
    if root is None:
        return {**head, "skipped": skipped}
    fleet = gpu_fleet(root / data.ALIBABA_GPU_NODES, config.nodes_per_model, config.node_seed)
    pods, qos = gpu_pods(root / data.ALIBABA_GPU_PODS)
    samples = {
        seed: [pods[i] for i in stratified_sample(qos, config.jobs, np.random.default_rng(seed))] for seed in seeds
    }
    return {
        **head,
        "data": data.describe_files([root / name for name in FILES]),
        "config": dataclasses.asdict(config),
        "testbed": {
            "nodes": len(fleet),
            "gpus": sum(n.gpu_count for n in fleet),
            "on_demand_nodes": sum(not n.is_spot for n in fleet),
            "candidate_pods": len(pods),
            "ls_jobs_per_seed": [sum(j.is_latency_critical for j in s) for s in samples.values()],
        },
        "reference": {"per_agent": REFERENCE, **REFERENCE_HEADLINES},
        "reference_setting": reference_setting(fleet, samples, config),
        "full_twin": full_twin(fleet, samples, config, oracle_limits, backend),
    }
