"""Planted-optimum episodes: the schedule replays at its value, nothing beats it, nor does exhaustive search."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from aco_env.hindsight import hindsight_of
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec
from digital_twin.errors import SpecError
from digital_twin.planted import PlantedConfig, PlantedEpisode, certify, plant, play_planted
from digital_twin.scenario import ScenarioError, load_scenario
from digital_twin.workload import Workload
from tests.agents.oracle.test_oracle_random import brute_force_optimum
from tests.helpers import assert_twin_invariants, first_fit, run_twin, seeded_random_policy
from tests.paths import ROOT

PLANTED5 = ROOT / "scenarios" / "planted5.yaml"
WEIGHTS = ObjectiveWeights(qos_violation_usd=0.5, eviction_usd=5.0, rejection_usd=5.0, wait_usd_per_job_hour=2.0)
SETTINGS = EpisodeSettings(14400, interference="processor-sharing", spot_recovery_s=600, weights=WEIGHTS)


def generated_fleet(n_nodes: int, rng: np.random.Generator) -> tuple[NodeSpec, ...]:
    """``n_nodes`` nodes: cheap and dear x86 of several sizes, cheap spot and dear on-demand GPU nodes."""
    nodes = []
    for k in range(n_nodes):
        kind = k % 5
        if kind in (0, 1):
            cores = int(rng.choice([8, 16, 24, 32]))
            nodes.append(NodeSpec(f"x86-{k}", "x86_64", "on-demand", cores, 4 * cores, 0.015 * cores))
        elif kind == 2:
            nodes.append(NodeSpec(f"dear-{k}", "x86_64", "on-demand", 16, 64, 0.48))
        elif kind == 3:
            gpus = int(rng.choice([2, 4, 8]))
            nodes.append(
                NodeSpec(f"gspot-{k}", "gpu-node", "spot", 4 * gpus, 32 * gpus, 0.275 * gpus, gpus, "A100", 80.0, 0.2)
            )
        else:
            nodes.append(NodeSpec(f"god-{k}", "gpu-node", "on-demand", 16, 128, 3.2, 4, "A100", 80.0))
    return tuple(nodes)


def planted_episodes(n_nodes: int, seeds: range, **options: float) -> list[PlantedEpisode]:
    """Planted episodes on generated fleets of ``n_nodes`` nodes with a random background."""
    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        fleet = generated_fleet(n_nodes, rng)
        telemetry = Telemetry.constant(n_nodes, rng.uniform(0, 30, n_nodes).tolist(), 40, SETTINGS.horizon_s, 300)
        config = PlantedConfig(plant_until_s=10800, **options)
        out.append(plant(fleet, telemetry, SETTINGS, config, rng))
    return out


def cheapest_fate_usd(episode: PlantedEpisode, j: int) -> float:
    """Job ``j``'s cheapest completion, recomputed from the node prices (not the twin's tables)."""
    job = episode.spec.jobs[j]
    best = np.inf
    for node in episode.spec.fleet:
        if job.gpu_count:
            if node.gpu_count < job.gpu_count:
                continue
            share = job.gpu_count / node.gpu_count
        else:
            if node.arch != job.required_arch or node.cpu_cores < job.cpu_cores or node.mem_gb < job.mem_gb:
                continue
            share = job.cpu_cores / node.cpu_cores
        qos = WEIGHTS.qos_violation_usd if job.workload == "latency-critical" and node.is_spot else 0.0
        best = min(best, node.price_per_hour_usd * share * job.duration_s / 3600.0 + qos)
    return float(best)


RECIPES = [
    *((5, seed, ()) for seed in range(0, 40)),
    *((10, seed, (("fill", 0.8),)) for seed in range(40, 60)),
    *((20, seed, (("latency_critical_share", 0.6), ("max_job_cores", 4))) for seed in range(60, 70)),
    *((5, seed, (("interruptions_per_spot_node", 2), ("preemptible_share", 1.0))) for seed in range(100, 230)),
    *((50, seed, (("fill", 0.9),)) for seed in range(230, 235)),
]
"""``(n_nodes, seed, options)`` of the planted episodes the tests play, built when a test asks (not at collection)."""


@functools.cache
def episode_of(n_nodes: int, seed: int, options: tuple[tuple[str, float], ...]) -> PlantedEpisode:
    """The planted episode of a recipe of :data:`RECIPES` (built once per process)."""
    return planted_episodes(n_nodes, range(seed, seed + 1), **dict(options))[0]


def _recipe_id(recipe: tuple[int, int, tuple[tuple[str, float], ...]]) -> str:
    return f"{recipe[0]}n-seed{recipe[1]}"


@pytest.mark.parametrize("recipe", RECIPES, ids=_recipe_id)
def test_planted_schedule__replays_at_its_value_and_attains_every_cheapest_fate(
    recipe: tuple[int, int, tuple[tuple[str, float], ...]],
) -> None:
    """The twin's replay of the planted schedule costs exactly the certificate's bound, with no penalty."""
    episode = episode_of(*recipe)
    twin = play_planted(episode)
    assert_twin_invariants(twin)
    objective = twin.objective()
    assert twin.objective_usd() == pytest.approx(episode.optimum_usd, rel=1e-9)
    assert objective.total_usd - objective.cost_usd == pytest.approx(0.0, abs=1e-12)  # no penalty of any kind
    assert twin.job_counts()["completed"] == len(episode.spec.jobs)
    for j in range(len(episode.spec.jobs)):
        assert episode.certificate.cheapest_usd[j] == pytest.approx(cheapest_fate_usd(episode, j), rel=1e-12)


@pytest.mark.parametrize("recipe", RECIPES[::3], ids=_recipe_id)
def test_planted_value__no_policy_plays_below_it(recipe: tuple[int, int, tuple[tuple[str, float], ...]]) -> None:
    """First-fit and random play (with deferrals) never score below the planted optimum."""
    episode = episode_of(*recipe)
    for policy in (first_fit, seeded_random_policy(1), seeded_random_policy(2, defer_prob=0.5)):
        twin = DigitalTwin(episode.spec)
        run_twin(twin, policy, seed=0, check_every=25)
        assert twin.objective_usd() >= episode.optimum_usd * (1.0 - 1e-9)


def tiny_episodes() -> list[PlantedEpisode]:
    """Planted episodes small enough to search exhaustively: 3 nodes, at most 6 jobs."""
    fleet = (
        NodeSpec("cheap", "x86_64", "on-demand", 4, 16, 0.06),
        NodeSpec("dear", "x86_64", "on-demand", 4, 16, 0.12),
        NodeSpec("gspot", "gpu-node", "spot", 4, 32, 0.55, 2, "A100", 80.0, 0.2),
    )
    settings = EpisodeSettings(3600, interference="processor-sharing", spot_recovery_s=600, weights=WEIGHTS)
    telemetry = Telemetry.constant(3, [0, 0, 25], 40, 3600, 300)
    config = PlantedConfig(
        plant_until_s=1800, epoch_s=300, min_duration_s=300, max_duration_s=900, max_job_cores=3, max_job_gpus=2
    )
    out = []
    for seed in range(200):
        episode = plant(fleet, telemetry, settings, config, np.random.default_rng(seed))
        if 2 <= len(episode.spec.jobs) <= 6:
            out.append(episode)
        if len(out) == 8:
            break
    return out


@pytest.mark.parametrize("episode", tiny_episodes(), ids=lambda e: f"{len(e.spec.jobs)}j")
def test_tiny_planted_episode__exhaustive_search_finds_the_planted_value(episode: PlantedEpisode) -> None:
    """Over every action sequence (placements and deferrals), the best objective is the planted one."""
    twin = DigitalTwin(episode.spec)
    run_twin(twin, seeded_random_policy(0), seed=0, check=False)
    upper = max(twin.objective_usd(), episode.optimum_usd) * 2.0 + 1.0  # the search must find the optimum itself
    optimum = brute_force_optimum(episode.spec, upper)
    assert optimum is not None, "the decision tree is larger than the search budget"
    assert optimum == pytest.approx(episode.optimum_usd, rel=1e-9)


def test_certificate__names_the_weight_that_is_too_small() -> None:
    """A planted episode whose penalties make dropping a job cheaper than running it is refused."""
    episode = episode_of(*RECIPES[0])
    low_rejection = episode.spec.with_settings(weights=ObjectiveWeights(rejection_usd=0.01, wait_usd_per_job_hour=2.0))
    with pytest.raises(SpecError, match="rejection_usd"):
        certify(low_rejection)
    no_wait = episode.spec.with_settings(weights=ObjectiveWeights(rejection_usd=5.0, eviction_usd=5.0))
    with pytest.raises(SpecError, match="wait_usd_per_job_hour"):
        certify(no_wait)
    with pytest.raises(SpecError, match="prorated"):
        certify(episode.spec.with_settings(cost_model="active-nodes"))


def _evicted_job_spec() -> TwinSpec:
    """One preemptible GPU job (0 s, 1800 s) and two equal spot nodes; ``gspot-b`` is interrupted at 600 s."""
    fleet = (
        NodeSpec("gspot-a", "gpu-node", "spot", 4, 32, 0.55, 2, "A100", 80.0, 0.2),
        NodeSpec("gspot-b", "gpu-node", "spot", 4, 32, 0.55, 2, "A100", 80.0, 0.2),
    )
    job = JobSpec("p", 0, 1800, "batch", 1, 8, gpu_count=1, preemptible=True)
    settings = EpisodeSettings(
        3600, queue_ttl_s=None, interference="processor-sharing", spot_recovery_s=600, weights=WEIGHTS
    )
    telemetry = Telemetry.constant(2, 0, 40, 3600, 300)
    return TwinSpec(fleet, Workload.of([job]), telemetry, settings, ((), (600.0,)))


def test_certificate__holds_for_a_preemptible_job_that_a_policy_gets_evicted_on_purpose() -> None:
    """Started on ``gspot-b`` and evicted at 600 s, the job could wait to the last tick and run 300 s:
    cheaper than its run were the wait after the requeue free. Every wait counts, so it is not, and
    exhaustive search finds the certificate's bound (the run on ``gspot-a``)."""
    spec = _evicted_job_spec()
    certificate = certify(spec)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    twin.place(1)  # gspot-b at 0 s
    while not twin.done and twin.time_s < 3300.0:  # requeued at 600 s
        twin.defer()
    twin.place(0)
    while not twin.done:
        twin.defer()
    run_usd = 0.55 / 2 * (600 + 300) / 3600  # the two runs: less than the 1800 s one
    assert run_usd < certificate.bound_usd
    assert twin.objective()["wait_job_hours"] == pytest.approx((3300 - 600) / 3600, rel=1e-12)
    assert twin.objective_usd() >= certificate.bound_usd
    optimum = brute_force_optimum(spec, twin.objective_usd() + 1.0)
    assert optimum == pytest.approx(certificate.bound_usd, rel=1e-9)


def test_planted_scenario__each_seed_its_episode_and_the_env_plays_it() -> None:
    """scenarios/planted5.yaml: the env's episode is the planted one of its seed; seeds differ."""
    import gymnasium as gym
    from gymnasium.utils import seeding

    from aco_env.registration import PLANTED5_ID

    scenario = load_scenario(PLANTED5)
    assert scenario.planted
    env = gym.make(PLANTED5_ID)
    env.reset(seed=3)
    rng, _ = seeding.np_random(3)
    episode = scenario.planted_episode(rng)
    spec = hindsight_of(env).spec
    assert [job.job_id for job in spec.jobs] == [job.job_id for job in episode.spec.jobs]
    assert spec.fixed_interruptions_s == episode.spec.fixed_interruptions_s
    other = scenario.planted_episode(seeding.np_random(4)[0])
    assert [j.arrival_s for j in other.spec.jobs] != [j.arrival_s for j in episode.spec.jobs]


def test_planted_scenario__bad_options_name_the_file_and_key(tmp_path: Path) -> None:
    """An unknown or invalid planted option is an error naming the file and the key."""
    text = PLANTED5.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("fill: 1.0", "fill: 1.5"))
    with pytest.raises(ScenarioError, match=r"bad\.yaml.*fill"):
        load_scenario(bad)
    bad.write_text(text.replace("fill: 1.0", "fil: 1.0"))
    with pytest.raises(ScenarioError, match=r"bad\.yaml.*fil"):
        load_scenario(bad)


def test_planted_scenario__refuses_a_job_budget_and_too_many_jobs(tmp_path: Path) -> None:
    """job_budget does not apply to planted workloads; an episode above limits.max_jobs is refused while it is cut."""
    text = PLANTED5.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("start_hour: 6", "start_hour: 6\njob_budget: 10"))
    with pytest.raises(ScenarioError, match=r"bad\.yaml.*job_budget"):
        load_scenario(bad)
    bad.write_text(text.replace("start_hour: 6", "start_hour: 6\nlimits: {max_jobs: 100}"))
    with pytest.raises(ScenarioError, match=r"bad\.yaml.*max_jobs"):
        load_scenario(bad).planted_episode(np.random.default_rng(0))
