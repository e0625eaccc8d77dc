"""The planted certificate under every weighted term: exhaustive search never finds a schedule below it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from digital_twin import EpisodeSettings, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec
from digital_twin.energy import CarbonIntensity, PowerCurve, gpu_power
from digital_twin.energy.model import EnergyModel, NodePower
from digital_twin.errors import SpecError
from digital_twin.planted import PlantedConfig, PlantedEpisode, certify, plant, play_planted
from digital_twin.scenario import ScenarioError, load_scenario
from tests.agents.oracle.test_oracle_random import brute_force_optimum
from tests.paths import ROOT

BASE = {"qos_violation_usd": 0.5, "eviction_usd": 5.0, "rejection_usd": 5.0, "wait_usd_per_job_hour": 8.0}
FLEET = (
    NodeSpec("cheap", "x86_64", "on-demand", 4, 16, 0.06),
    NodeSpec("dear", "x86_64", "on-demand", 4, 16, 0.12),
    NodeSpec("gspot", "gpu-node", "spot", 4, 32, 0.55, 2, "A100", 80.0, 0.2),
)
CONFIG = PlantedConfig(
    plant_until_s=1800,
    epoch_s=300,
    min_duration_s=300,
    max_duration_s=900,
    max_job_cores=3,
    max_job_gpus=2,
    latency_critical_share=0.6,
)


def linear_energy(carbon: CarbonIntensity | None = None) -> EnergyModel:
    """Every host a straight line (80 W idle, 200 W full), the A100's GPU power; one region."""
    gpu = gpu_power("A100")
    nodes = tuple(NodePower(PowerCurve.linear(80.0, 200.0), gpu if n.gpu_count else None) for n in FLEET)
    return EnergyModel(nodes, {"default": carbon or CarbonIntensity.constant(300.0)})


def tiny(
    settings: EpisodeSettings, energy: EnergyModel | None, background: list[float], count: int
) -> list[PlantedEpisode]:
    """Up to ``count`` planted episodes of 2 to 5 jobs on :data:`FLEET` (seeds in order)."""
    telemetry = Telemetry.constant(3, background, 40, 3600, 300)
    out = []
    for seed in range(300):
        episode = plant(FLEET, telemetry, settings, CONFIG, np.random.default_rng(seed), energy=energy)
        if 2 <= len(episode.spec.jobs) <= 5:
            out.append(episode)
        if len(out) == count:
            break
    return out


def settings_of(interference: str = "processor-sharing", **weights: float) -> EpisodeSettings:
    extra = {k: v for k, v in weights.items() if k != "latency_slo_factor"}
    return EpisodeSettings(
        3600,
        interference=interference,
        spot_recovery_s=600,
        latency_slo_factor=weights.get("latency_slo_factor", 2.0),
        deadline_rule="completion",
        weights=ObjectiveWeights(**{**BASE, **extra}),
    )


LOADED, IDLE = [0, 0, 25], [0, 0, 0]
EXACT = {  # planted under these settings (and backgrounds), the schedule pays the certificate exactly
    "sla-deadline-unfairness": (
        settings_of(sla_violation_usd=0.3, deadline_miss_usd=0.3, unfairness_usd=1.0),
        None,
        LOADED,
    ),
    "utility-slo-0.5": (settings_of(utility_loss_usd=1.0, latency_slo_factor=0.5), None, LOADED),
    "energy-carbon-linear": (settings_of(energy_usd_per_kwh=2.0, carbon_usd_per_kg=3.0), linear_energy(), LOADED),
    "energy-no-interference": (settings_of("none", energy_usd_per_kwh=2.0), linear_energy(), IDLE),
}


def exhaustive(spec: TwinSpec, bound_usd: float) -> float:
    optimum = brute_force_optimum(spec, bound_usd * 2.0 + 1.0)
    assert optimum is not None, "the decision tree is larger than the search budget"
    return optimum


@pytest.mark.parametrize(
    ("name", "episode"),
    [(name, e) for name, (s, energy, background) in EXACT.items() for e in tiny(s, energy, background, 3)],
    ids=lambda x: x if isinstance(x, str) else f"{len(x.spec.jobs)}j",
)
def test_weighted_planted_episode__exhaustive_search_meets_the_certificate(name: str, episode: PlantedEpisode) -> None:
    """Each weighted term on: the planted schedule replays at the bound and no action sequence is below it."""
    assert play_planted(episode).objective_usd() == pytest.approx(episode.optimum_usd, rel=1e-9)
    assert exhaustive(episode.spec, episode.optimum_usd) == pytest.approx(episode.optimum_usd, rel=1e-9)


def _loose_specs() -> list[tuple[str, TwinSpec]]:
    """Specs whose certificate is a bound the planted schedule need not meet (so :func:`plant` refuses them)."""
    base = tiny(settings_of(), None, [20, 0, 25], 3)
    varying = CarbonIntensity(np.array([100.0, 500.0, 50.0, 400.0]), tick_s=900.0)
    out = []
    for k, episode in enumerate(base):
        spec = episode.spec
        out.append((f"concave-curve-{k}", spec.with_settings(weights=ObjectiveWeights(**BASE, energy_usd_per_kwh=3.0))))
        carbon = dataclasses.replace(spec, energy=linear_energy(varying))
        out.append(
            (f"varying-carbon-{k}", carbon.with_settings(weights=ObjectiveWeights(**BASE, carbon_usd_per_kg=5.0)))
        )
        loaded = dataclasses.replace(spec, energy=linear_energy())
        no_sharing = loaded.with_settings(interference="none", weights=ObjectiveWeights(**BASE, energy_usd_per_kwh=4.0))
        out.append((f"oversubscribed-{k}", no_sharing))
    return out


@pytest.mark.parametrize(("name", "spec"), _loose_specs(), ids=lambda x: x if isinstance(x, str) else "")
def test_certificate__is_a_lower_bound_where_the_planted_schedule_cannot_meet_it(name: str, spec: TwinSpec) -> None:
    """A curved power curve, a varying intensity, a node that may be over-subscribed without contention:
    the certificate stays below every action sequence."""
    bound = certify(spec).bound_usd
    assert exhaustive(spec, bound) >= bound * (1.0 - 1e-9)


def test_plant__refuses_energy_weights_it_cannot_prove() -> None:
    """A curved power curve or a varying intensity under an energy or carbon weight is refused, naming it."""
    telemetry = Telemetry.constant(3, [0, 0, 25], 40, 3600, 300)
    rng = np.random.default_rng(0)
    with pytest.raises(SpecError, match=r"energy_usd_per_kwh > 0: node '[a-z]+''s power curve is not linear"):
        plant(FLEET, telemetry, settings_of(energy_usd_per_kwh=1.0), CONFIG, rng)
    varying = linear_energy(CarbonIntensity(np.array([100.0, 500.0]), tick_s=900.0))
    with pytest.raises(SpecError, match=r"carbon_usd_per_kg > 0: .* carbon intensity varies"):
        plant(FLEET, telemetry, settings_of(carbon_usd_per_kg=1.0), CONFIG, np.random.default_rng(0), energy=varying)


def _planted5_with(tmp_path: Path, extra_weights: str, tail: str = "") -> Path:
    text = (ROOT / "scenarios" / "planted5.yaml").read_text(encoding="utf-8")
    text = text.replace("  wait_usd_per_job_hour: 2.0", f"  wait_usd_per_job_hour: 2.0\n{extra_weights}") + tail
    path = tmp_path / "planted5-variant.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_planted5__an_energy_price_of_10_usd_per_kwh_is_refused(tmp_path: Path) -> None:
    """planted5 at 10 USD/kWh: rejecting a big GPU job undercuts its run's energy, so the episode is refused."""
    scenario = load_scenario(_planted5_with(tmp_path, "  energy_usd_per_kwh: 10"))
    with pytest.raises(ScenarioError, match="rejection_usd 5 < its cheapest run"):
        scenario.planted_episode(np.random.default_rng(0))


def test_planted5__honours_its_energy_section(tmp_path: Path) -> None:
    """A linear power curve and a zero-carbon region price the optimum; the planted replay pays exactly that."""
    energy = "energy:\n  power:\n    default: {idle_w: 100, peak_w: 300}\n  regions:\n    green: {g_per_kwh: 0}\n"
    priced = load_scenario(_planted5_with(tmp_path, "  energy_usd_per_kwh: 0.12\n  carbon_usd_per_kg: 0.2", energy))
    episode = priced.planted_episode(np.random.default_rng(0))
    breakdown = play_planted(episode).objective()
    assert breakdown.total_usd == pytest.approx(episode.optimum_usd, rel=1e-9)
    assert breakdown["carbon_kg"] == 0.0  # the zero-carbon region, not the default 400 g/kWh
    assert breakdown["energy_usd"] > 0.0
    # every host draws 100-300 W whatever its cores: the 24-core x86 node is cheaper per core than the 16-core one
    homes = {episode.spec.fleet[i].node_id for i in episode.planted_nodes}
    assert homes == {"x86-b", "gpu-spot"}
