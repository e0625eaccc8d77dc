"""Priced planted episodes: the Lagrangian bound holds for any prices, and the planted schedule attains it."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec
from digital_twin.errors import SpecError
from digital_twin.planted import MarketConfig, NodePrice, PlantedEpisode, lagrangian_bound, plant_priced, play_planted
from digital_twin.scenario import load_scenario
from digital_twin.workload import Workload
from digital_twin.workloads.job_mix import JobClass
from tests.agents.oracle.test_oracle_random import brute_force_optimum
from tests.helpers import first_fit, run_twin, seeded_random_policy
from tests.paths import ROOT

WEIGHTS = ObjectiveWeights(
    qos_violation_usd=0.25, eviction_usd=5.0, rejection_usd=5.0, deadline_miss_usd=0.25, wait_usd_per_job_hour=0.4
)
TINY_FLEET = (
    NodeSpec("home", "arm64", "spot", 2, 8, 0.06, interruption_prob_per_hour=0.2),
    NodeSpec("dear", "x86_64", "on-demand", 2, 8, 0.12),
    NodeSpec("ghome", "gpu-node", "spot", 2, 16, 0.4, 1, "A100", 80.0, 0.2),
    NodeSpec("gdear", "gpu-node", "on-demand", 2, 16, 1.0, 1, "A100", 80.0),
)
TINY_MIX = (
    JobClass("batch", 1, 2),
    JobClass("stream", 2, 4),
    JobClass("latency-critical", 1, 2),
    JobClass("batch", 2, 8, 1),
)
TINY_CONFIG = MarketConfig(
    plant_until_s=1500,
    ramp_s=300,
    dear_rate_per_s=0.002,
    lc_rate_per_s=0.0008,
    lc_median_duration_s=300,
    batch_median_duration_s=500,
    stream_median_duration_s=600,
    max_duration_s=900,
    mix=TINY_MIX,
)
TINY_SETTINGS = EpisodeSettings(
    3000, queue_ttl_s=600, interference="processor-sharing", spot_recovery_s=300, weights=WEIGHTS
)


def waits(episode: PlantedEpisode) -> int:
    """How many jobs the planted schedule starts after their arrival."""
    return sum(s > j.arrival_s for j, s in zip(episode.spec.jobs, episode.planted_starts_s or (), strict=True))


def tiny_priced(count: int, with_wait: bool, max_jobs: int = 5) -> list[PlantedEpisode]:
    """Priced episodes of 2 to ``max_jobs`` jobs on :data:`TINY_FLEET` (seeds in order), with a planted wait or not."""
    telemetry = Telemetry.constant(4, [0, 10, 0, 10], 40, 3000, 1000)
    out = []
    for seed in range(3000):
        episode = plant_priced(TINY_FLEET, telemetry, TINY_SETTINGS, TINY_CONFIG, np.random.default_rng(seed))
        if 2 <= len(episode.spec.jobs) <= max_jobs and (waits(episode) > 0) == with_wait:
            out.append(episode)
        if len(out) == count:
            break
    return out


TINY_COUNT = 10
"""Tiny episodes searched exhaustively: 7 without a planted wait, 3 with one."""


@functools.cache
def tiny() -> tuple[PlantedEpisode, ...]:
    """The :data:`TINY_COUNT` tiny episodes (drawn once per process, when a test first asks, not at collection)."""
    return (*tiny_priced(7, with_wait=False), *tiny_priced(3, with_wait=True))


def test_tiny_priced_episodes__include_dear_runs_and_waits() -> None:
    """The tiny episodes searched below do use a dearer node and a wait in their optimum."""
    dear = {1, 3}
    assert len(tiny()) == TINY_COUNT
    assert any(node in dear for e in tiny() for node in e.planted_nodes)
    assert sum(waits(e) > 0 for e in tiny()) == 3


@pytest.mark.parametrize("index", range(TINY_COUNT))
def test_tiny_priced_episode__exhaustive_search_finds_the_planted_value(index: int) -> None:
    """Over every action sequence the best objective is the certificate's bound, which the planted schedule pays."""
    episode = tiny()[index]
    assert play_planted(episode).objective_usd() == pytest.approx(episode.optimum_usd, rel=1e-9)
    optimum = brute_force_optimum(episode.spec, episode.optimum_usd * 2.0 + 1.0, max_visits=400_000)
    assert optimum is not None, "the decision tree is larger than the search budget"
    assert optimum == pytest.approx(episode.optimum_usd, rel=1e-9)


def random_spec(rng: np.random.Generator) -> TwinSpec:
    """A small episode that is not planted: 3 nodes (one spot, interrupted), 3-4 random jobs."""
    fleet = (
        NodeSpec("a", "x86_64", "spot", 2, 8, 0.05, interruption_prob_per_hour=0.2),
        NodeSpec("b", "x86_64", "on-demand", 2, 8, 0.12),
        NodeSpec("g", "gpu-node", "spot", 2, 16, 0.5, 1, "A100", 80.0, 0.2),
    )
    jobs = []
    for k in range(int(rng.integers(3, 5))):
        gpu = int(rng.random() < 0.3)
        kind = "latency-critical" if not gpu and rng.random() < 0.3 else "batch"
        jobs.append(
            JobSpec(
                f"j{k}",
                float(rng.uniform(0, 900)),
                float(rng.uniform(200, 1200)),
                kind,
                float(rng.integers(1, 3)),
                2.0,
                gpu_count=gpu,
                preemptible=bool(rng.random() < 0.4),
            )
        )
    weights = ObjectiveWeights(
        qos_violation_usd=0.2,
        eviction_usd=float(rng.uniform(0.01, 0.5)),
        rejection_usd=float(rng.uniform(0.01, 0.5)),
        wait_usd_per_job_hour=float(rng.uniform(0, 1)),
        utility_loss_usd=float(rng.uniform(0, 0.3)),
    )
    settings = EpisodeSettings(
        2400,
        queue_ttl_s=float(rng.uniform(200, 900)),
        interference="processor-sharing",
        spot_recovery_s=300,
        latency_slo_factor=float(rng.uniform(0.5, 2.0)),
        weights=weights,
    )
    interruptions = ((float(rng.uniform(0, 2000)),), (), (float(rng.uniform(0, 2000)),))
    return TwinSpec(fleet, Workload.of(jobs), Telemetry.constant(3, [0, 30, 0], 40, 2400, 300), settings, interruptions)


def random_prices(rng: np.random.Generator) -> dict[int, NodePrice]:
    """Random step prices on nodes 0 (cores) and 2 (GPUs)."""
    out = {}
    for node, resource, scale in ((0, "cpu", 4e-5), (2, "gpu", 3e-4)):
        breaks = np.unique(np.concatenate(([0.0, 2400.0], rng.uniform(0, 2400, 4))))
        out[node] = NodePrice(resource, breaks, rng.uniform(0, scale, len(breaks) - 1))
    return out


@pytest.mark.parametrize("seed", [*range(4), *(pytest.param(seed, marks=pytest.mark.heavy) for seed in range(4, 20))])
def test_lagrangian_bound__holds_for_any_prices_on_any_episode(seed: int) -> None:
    """On random small episodes (preemptible jobs, spot interruptions, lost utility, cheap drops) and random
    prices, no action sequence costs less than L(prices)."""
    rng = np.random.default_rng(seed)
    spec = random_spec(rng)
    for prices in ({}, random_prices(rng), random_prices(rng)):
        bound = lagrangian_bound(spec, prices).bound_usd
        twin = DigitalTwin(spec)
        run_twin(twin, seeded_random_policy(seed), seed=0, check=False)
        optimum = brute_force_optimum(spec, twin.objective_usd() + 1.0, max_visits=400_000)
        assert optimum is not None, "the decision tree is larger than the search budget"
        assert optimum >= bound - 1e-9 * max(1.0, abs(bound))


PRICED5 = ROOT / "scenarios" / "planted5-priced.yaml"


@pytest.mark.parametrize("seed", range(0, 40, 4))
def test_planted5_priced__replays_at_its_bound_and_policies_stay_above(seed: int) -> None:
    """scenarios/planted5-priced.yaml: the planted schedule pays the bound; first-fit and random play do not beat it."""
    episode = load_scenario(PRICED5).planted_episode(np.random.default_rng(seed))
    twin = play_planted(episode)
    assert twin.objective_usd() == pytest.approx(episode.optimum_usd, rel=1e-9)
    assert twin.job_counts()["completed"] == len(episode.spec.jobs)
    for policy in (first_fit, seeded_random_policy(seed, defer_prob=0.3)):
        other = DigitalTwin(episode.spec)
        run_twin(other, policy, seed=0, check=False)
        assert other.objective_usd() >= episode.optimum_usd * (1.0 - 1e-9)


def test_planted5_priced__optimum_varies_and_uses_dear_nodes_and_waits() -> None:
    """Over 50 seeds the optimum's coefficient of variation is >= 10 %; dear nodes and waits are in the optimum."""
    scenario = load_scenario(PRICED5)
    episodes = [scenario.planted_episode(np.random.default_rng(seed)) for seed in range(50)]
    optima = np.array([e.optimum_usd for e in episodes])
    assert optima.std() / optima.mean() >= 0.10
    dear = [i for i, n in enumerate(scenario.fleet) if n.node_id == "node-cpu-01"]
    assert all(any(node in dear for node in e.planted_nodes) for e in episodes)
    assert sum(waits(e) > 0 for e in episodes) >= 20


@pytest.mark.parametrize("name", ["planted50-priced", pytest.param("planted500-priced", marks=pytest.mark.heavy)])
def test_larger_priced_scenarios__replay_at_their_bound(name: str) -> None:
    """The 50- and 500-node priced scenarios: one episode each replays at its certified bound."""
    episode = load_scenario(ROOT / "scenarios" / f"{name}.yaml").planted_episode(np.random.default_rng(1))
    assert play_planted(episode).objective_usd() == pytest.approx(episode.optimum_usd, rel=1e-9)


def test_priced_roles__refuse_a_fleet_the_certificate_cannot_price() -> None:
    """No TTL, a waiting weight below the price gap, or background on a home node: refused, naming it."""
    telemetry = Telemetry.constant(4, [0, 10, 0, 10], 40, 3000, 1000)
    rng = np.random.default_rng(0)
    no_ttl = EpisodeSettings(3000, queue_ttl_s=None, interference="processor-sharing", weights=WEIGHTS)
    with pytest.raises(SpecError, match="queue_ttl_s"):
        plant_priced(TINY_FLEET, telemetry, no_ttl, TINY_CONFIG, rng)
    cheap_wait = EpisodeSettings(
        3000,
        interference="processor-sharing",
        weights=ObjectiveWeights(rejection_usd=5.0, eviction_usd=5.0, wait_usd_per_job_hour=0.01),
    )
    with pytest.raises(SpecError, match="wait_usd_per_job_hour"):
        plant_priced(TINY_FLEET, telemetry, cheap_wait, TINY_CONFIG, rng)
    loaded = Telemetry.constant(4, [5, 10, 0, 10], 40, 3000, 300)
    with pytest.raises(SpecError, match="home node 'home' has background"):
        plant_priced(TINY_FLEET, loaded, TINY_SETTINGS, TINY_CONFIG, rng)
