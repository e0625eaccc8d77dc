"""T1.1: ACO's cost against First-Fit on CPU jobs with the Azure packing size distribution.

**The reference** (``benchmarks/tier1_aco_vs_naive.py``): 30 batch jobs (preemptible, priority
50) with cores from the AzureTracesForPacking2020 weights (2 GB per core) on three x86 nodes of
64 cores / 256 GB. Balanced topology: ``nb-mid`` $0.70 on-demand, ``nb-exp`` $1.00 on-demand,
``nb-cheap`` $0.50 spot (0.15 interruptions/h); adversarial: ``n-exp`` $3.00, ``n-mid`` $0.80,
``n-cheap`` $0.12 spot. Metric: the sum over jobs of the chosen node's $/h. Reported: First-Fit
$21.00, ACO $15.00 (-28.6 %), Random $18.80; adversarial First-Fit $90, ACO $3.60 (-96 %).

**Its setting** (:func:`reference_setting`): each job alone on the empty cluster
(:mod:`training.reproduction.empty_cluster`), our agents unchanged. Every job fits everywhere, so
First-Fit always takes the first-listed node and ACO always the cheapest, whatever the sizes:
the saving is exactly ``(0.70 - 0.50) / 0.70`` on the balanced topology.

**The full twin** (:func:`full_twin`): the same nodes and job sizes, but jobs arrive as a
Poisson stream, run for lognormal durations, hold their cores, pay pro-rated cost, and the spot
node is interrupted (evicted preemptible jobs restart); background load from the bundled
synthetic trace. ACO is ``aco-cost`` (the reference's ``aco_schedule`` without a strategy).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents import make_agent
from agents.oracle.milp.limits import DEFAULT_LIMITS, SolveLimits
from digital_twin import JobSpec, NodeSpec
from digital_twin.scenario import Scenario
from digital_twin.workloads import AZURE_JOB_SIZES
from training.execution.backend import Backend
from training.reproduction import data
from training.reproduction.empty_cluster import fleet_env, place_each, total_price_per_hour
from training.reproduction.play import (
    ORACLE,
    metric_savings,
    metric_values,
    oracle_options,
    oracle_over_seeds,
    play_agents,
)
from training.reproduction.scenario_build import aggregate_trace, code_scenario
from training.reproduction.stats import paired_savings, summarize

NAME = "T1.1"
TITLE = "Cost against First-Fit, CPU jobs with Azure packing sizes"
ACO = "aco-cost"
FIRST_FIT = "first-fit"
TOPOLOGIES: dict[str, tuple[tuple[str, float, str], ...]] = {
    "balanced": (("nb-mid", 0.70, "on-demand"), ("nb-exp", 1.00, "on-demand"), ("nb-cheap", 0.50, "spot")),
    "adversarial": (("n-exp", 3.00, "on-demand"), ("n-mid", 0.80, "on-demand"), ("n-cheap", 0.12, "spot")),
}
"""Topology -> nodes (id, $/h, instance type), in the reference's list order."""
NODE_CORES = 64
NODE_MEM_GB = 256
SPOT_INTERRUPTION_PROB = 0.15
REFERENCE: dict[str, dict[str, float]] = {
    "balanced": {"first-fit": 21.00, "aco-cost": 15.00, "random": 18.80, "aco_saving": 0.2857},
    "adversarial": {"first-fit": 90.00, "aco-cost": 3.60, "aco_saving": 0.96},
}
"""The reference's reported totals ($/h over 30 jobs) and ACO's saving against First-Fit."""


@dataclass(frozen=True)
class Config:
    """Sizes of the T1.1 runs (defaults: the full reproduction)."""

    reference_jobs: int = 30
    """Jobs per seed in the reference setting (the reference's 30)."""
    twin_jobs: int = 100
    """Jobs per episode in the full twin (sized so the oracle's bound is close to its plan)."""
    twin_interarrival_s: float = 90.0
    """Mean seconds between arrivals (Poisson) in the full twin: with the sizes' mean of 4.4
    cores and the durations below, about 110 cores are busy on average, more than the 64 of
    the cheapest node."""
    twin_median_duration_s: float = 1800.0
    """Median job duration in seconds (lognormal)."""
    twin_duration_sigma: float = 0.6
    """Log-standard-deviation of durations."""
    horizon_s: float = 21_600.0
    """Episode length in simulated seconds (6 h): the jobs arrive in about 2.5 h and run at most
    2 h (plus up to the 30 min queue timeout), so every job can finish and its whole cost counts
    (cost after the horizon is not charged, which would reward starting late)."""
    agents: tuple[str, ...] = ("random", FIRST_FIT, "cheapest", ACO)
    """Agents compared in both settings (the oracle is added in the full twin)."""


def topology_fleet(topology: str) -> tuple[NodeSpec, ...]:
    """The three nodes of a topology, in the reference's order."""
    return tuple(
        NodeSpec(
            node_id,
            "x86_64",
            instance,
            NODE_CORES,
            NODE_MEM_GB,
            price,
            interruption_prob_per_hour=SPOT_INTERRUPTION_PROB if instance == "spot" else 0.0,
        )
        for node_id, price, instance in TOPOLOGIES[topology]
    )


def azure_jobs(n_jobs: int, rng: np.random.Generator) -> list[JobSpec]:
    """``n_jobs`` batch jobs (preemptible, priority 50) with Azure packing sizes, 2 GB/core.

    The reference draws its sizes once with ``random.Random(42).choices(...)``; we draw per seed
    from ``rng``. In the reference's setting the totals do not depend on the sizes (every size,
    at most 32 cores, fits on every empty 64-core node).
    """
    weights = np.asarray(AZURE_JOB_SIZES.weights, dtype=float)
    cores = rng.choice(np.asarray(AZURE_JOB_SIZES.sizes, dtype=float), size=n_jobs, p=weights / weights.sum())
    return [
        JobSpec(
            f"azure-{k}",
            0.0,
            1.0,
            "batch",
            float(c),
            float(c) * AZURE_JOB_SIZES.mem_gb_per_core,
            priority=50,
            preemptible=True,
        )
        for k, c in enumerate(cores)
    ]


def known_saving(topology: str) -> float:
    """``(first-listed price - cheapest price) / first-listed price``: the empty-cluster answer."""
    prices = [price for _, price, _ in TOPOLOGIES[topology]]
    return (prices[0] - min(prices)) / prices[0]


def reference_setting(topology: str, seeds: Sequence[int], config: Config | None = None) -> dict[str, Any]:
    """Every job alone on the empty cluster; totals in $/h per agent and ACO's paired saving."""
    config = config or Config()
    fleet = topology_fleet(topology)
    env = fleet_env(fleet)
    totals: dict[str, list[float]] = {name: [] for name in config.agents}
    for seed in seeds:
        jobs = azure_jobs(config.reference_jobs, np.random.default_rng(seed))
        for name in config.agents:
            agent = make_agent(name, env)
            agent.reset(seed)
            totals[name].append(total_price_per_hour(fleet, place_each(agent, jobs)))
    return {
        "total_price_per_hour": {name: summarize(values) for name, values in totals.items()},
        "aco_saving_vs_first_fit": paired_savings(totals[FIRST_FIT], totals[ACO]),
        "known_saving": known_saving(topology),
    }


def twin_scenario(topology: str, config: Config | None = None) -> Scenario:
    """The full-twin scenario: Azure-sized batch jobs arriving over time on the topology."""
    config = config or Config()
    sizes = AZURE_JOB_SIZES
    workload = {
        "source": "synthetic",
        "resample": "per-episode",
        "options": {
            "base_rate_per_s": 1.0 / config.twin_interarrival_s,
            "diurnal_amplitude": 0.0,
            "mix": [{"workload": "batch", "cpu_cores": 1, "mem_gb": 2, "priority": 50}],
            "cpu_sizes": {
                "sizes": list(sizes.sizes),
                "weights": list(sizes.weights),
                "mem_gb_per_core": sizes.mem_gb_per_core,
            },
            "batch_preemptible_prob": 1.0,
            "batch_median_duration_s": config.twin_median_duration_s,
            "duration_sigma": config.twin_duration_sigma,
            "min_duration_s": 60.0,
            "max_duration_s": 4 * config.twin_median_duration_s,
            "job_id_prefix": "azure-",
        },
    }
    return code_scenario(
        f"t1.1-{topology}",
        topology_fleet(topology),
        telemetry=aggregate_trace(data.BUNDLED_SYNTHETIC_TRACE, "evenly-spread"),
        workload=workload,
        horizon_s=config.horizon_s,
        job_budget=config.twin_jobs,
        description="T1.1 in the full twin: Azure packing sizes, Poisson arrivals, spot interruptions",
    )


TWIN_METRICS = ("objective_usd", "cost_usd", "rejected_jobs", "mean_wait_s", "utilization_cpu")


def full_twin(
    topology: str,
    seeds: Sequence[int],
    config: Config | None = None,
    oracle_limits: SolveLimits | None = DEFAULT_LIMITS,
    backend: Backend | None = None,
) -> dict[str, Any]:
    """Every agent (and the oracle when available) on the twin, as one batch on ``backend``; metrics and savings."""
    config = config or Config()
    scenario = twin_scenario(topology, config)
    agents: list[tuple[str, dict[str, Any]]] = [(name, {}) for name in config.agents]
    oracle = oracle_options(oracle_limits)
    if oracle is not None:
        agents.append((ORACLE, oracle))
    records = play_agents(lambda _seed: scenario, agents, seeds, backend)
    per_agent = {
        name: {key: summarize(metric_values(recs, key)) for key in TWIN_METRICS} for name, recs in records.items()
    }
    out: dict[str, Any] = {
        "per_agent": per_agent,
        "aco_cost_saving_vs_first_fit": metric_savings(records, FIRST_FIT, ACO, "cost_usd"),
        "aco_objective_saving_vs_first_fit": metric_savings(records, FIRST_FIT, ACO, "objective_usd"),
        "oracle": None,
    }
    if oracle_limits is not None and oracle is not None:
        out["oracle_objective_saving_vs_first_fit"] = metric_savings(records, FIRST_FIT, ORACLE, "objective_usd")
        out["oracle"] = oracle_over_seeds(records[ORACLE], oracle_limits)
    return out


def run(
    seeds: Sequence[int],
    config: Config | None = None,
    oracle_limits: SolveLimits | None = DEFAULT_LIMITS,
    backend: Backend | None = None,
) -> dict[str, Any]:
    """Both topologies in both settings (no real data needed); the twin's episodes run on ``backend``."""
    config = config or Config()
    return {
        **data.tier_head(NAME, TITLE, seeds),
        "data": [{"file": data.BUNDLED_SYNTHETIC_TRACE.name, "note": "bundled synthetic background (full twin only)"}],
        "config": dataclasses.asdict(config),
        "reference": REFERENCE,
        "topologies": {
            topology: {
                "reference_setting": reference_setting(topology, seeds, config),
                "full_twin": full_twin(topology, seeds, config, oracle_limits, backend),
            }
            for topology in TOPOLOGIES
        },
    }
