"""The oracle's energy and carbon charges: never above what the twin counts, exact where they can be, and used.

* Per run, the charge (:mod:`agents.oracle.model.energy`) over the time the run surely lasts is,
  summed over every run of an episode, at most the twin's ``energy`` and ``carbon`` counts, on
  random small episodes played by random policies (co-located jobs, saturated nodes, GPUs,
  contention, interruptions).
* It equals the twin's count for a linear power curve on a node our jobs cannot saturate, run
  alone or beside another job; it is below it on a concave curve and a saturated node.
* The plan program uses it: a job moves to the cleaner region and hour, and on such an instance
  plan = bound = the exhaustive optimum. Evicted runs (plan and relaxation) are charged too.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.oracle import solve_oracle
from agents.oracle.bounds.exact import bound_options
from agents.oracle.milp.limits import SolveLimits
from agents.oracle.model import terms
from agents.oracle.model.instance import OracleInstance
from agents.oracle.plans.candidates import program_candidates
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec
from digital_twin.energy import CarbonIntensity, PowerCurve, specpower_curve
from digital_twin.energy.model import EnergyModel, NodePower, default_node_power
from digital_twin.episode_settings import PROCESSOR_SHARING
from digital_twin.objective import PENALTY_INDEX
from tests.agents.oracle.test_oracle_random import TOL, _check_instance, brute_force_optimum, replay_plan, small_specs
from tests.agents.oracle.test_oracle_rerun import _spec as rerun_spec
from tests.helpers import seeded_random_policy

WEIGHED = ObjectiveWeights(energy_usd_per_kwh=1.0, carbon_usd_per_kg=20.0)
_ENERGY, _CARBON = PENALTY_INDEX["energy"], PENALTY_INDEX["carbon"]
_ENDS = ("completion", "evicted-requeued", "evicted-failed")


def _charged_runs(twin: DigitalTwin, inst: OracleInstance) -> np.ndarray:
    """``(2,)`` kWh and kg the oracle charges the runs of ``twin``'s episode (played with ``record_events``).

    Each run from its start ``s`` over ``[s, min(s + d, end))``, ``end`` its completion, eviction
    or the episode's end: the time it surely ran, as the programs charge a nominal, failed or
    evicted run.
    """
    node_of = {node.node_id: i for i, node in enumerate(twin.spec.fleet)}
    job_of = {job_id: j for j, job_id in enumerate(inst.job_ids)}
    open_runs: dict[str, tuple[int, float]] = {}
    spans: list[tuple[int, int, float, float]] = []
    for time_s, event, job_id, node_id in twin.event_log:
        if event == "start":
            open_runs[job_id] = (node_of[node_id], time_s)
        elif event in _ENDS:
            node, start = open_runs.pop(job_id)
            spans.append((job_of[job_id], node, start, time_s))
    spans += [(job_of[job_id], node, start, twin.time_s) for job_id, (node, start) in open_runs.items()]
    total = np.zeros(2)
    for j, node, start, end in spans:
        stop = min(start + float(inst.duration_s[j]), end)
        kwh, kg = terms.run_energy_counts(inst, j, node, np.array([start]), np.array([stop]))
        total += (float(kwh[0]), float(kg[0]))
    return total


def _played(spec: TwinSpec, policy_seed: int) -> tuple[DigitalTwin, OracleInstance]:
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    inst = OracleInstance.from_hindsight(twin.hindsight())
    policy = seeded_random_policy(policy_seed, defer_prob=0.3)
    while not twin.done:
        node = policy(twin)
        if node is None:
            twin.defer()
        else:
            twin.place(node)
    return twin, inst


def _counts(twin: DigitalTwin) -> np.ndarray:
    counts = twin.objective().counts
    return np.array([counts[_ENERGY], counts[_CARBON]])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(small_specs(exact_grid=False, energy=True), small_specs(exact_grid=False, tiny_cpu=True, energy=True)),
       st.booleans(), st.integers(0, 2**16))
def test_run_energy__summed_over_an_episode_never_above_the_twins_count(
    spec: TwinSpec, contended: bool, policy_seed: int
) -> None:
    """Random episodes and policies (GPU jobs of 0 millicores too): the runs' charges sum to at most the count."""
    if contended:
        spec = spec.with_settings(interference=PROCESSOR_SHARING)
    twin, inst = _played(spec, policy_seed)
    charged, counted = _charged_runs(twin, inst), _counts(twin)
    assert (charged <= counted * (1 + 1e-9) + 1e-15).all(), (charged, counted)


def _one_node_spec(curve: PowerCurve, background_pct: float, jobs: tuple[JobSpec, ...], gpus: int = 0) -> TwinSpec:
    """One 4-core node on ``curve`` (with ``gpus`` A100s) under a flat background; carbon stepping every 700 s."""
    gpu = {"gpu_count": gpus, "gpu_model": "A100", "gpu_vram_gb": 80.0} if gpus else {}
    node = NodeSpec("n", "gpu-node" if gpus else "x86_64", "on-demand", 4, 16, 0.36, **gpu)  # type: ignore[arg-type]
    carbon = CarbonIntensity(np.array([100.0, 500.0, 250.0]), 700.0, -100.0)
    model = EnergyModel((NodePower(curve, default_node_power(node).gpu, "a"),), {"a": carbon})
    return TwinSpec((node,), jobs, Telemetry.constant(1, background_pct, 10, 3600, 600),
                    EpisodeSettings(3600.0, weights=WEIGHED), energy=model)


def _placed_at_arrival(spec: TwinSpec) -> tuple[DigitalTwin, OracleInstance]:
    """Every job started on node 0 as soon as it is asked (the specs here fit them all)."""
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    inst = OracleInstance.from_hindsight(twin.hindsight())
    while not twin.done:
        twin.place(0)
    return twin, inst


@pytest.mark.parametrize("gpus", [0, 1])
def test_run_energy__exact_on_a_linear_curve_our_jobs_cannot_saturate(gpus: int) -> None:
    """A linear curve, 10 % background, at most 3 of 4 cores ours: alone or beside a job, charge == count."""
    curve = PowerCurve.linear(40.0, 160.0)
    alone = (JobSpec("a", 100.0, 1500.0, "batch", 2, 2, gpu_count=gpus),)
    shared = (*alone, JobSpec("b", 500.0, 2000.0, "batch", 1, 2))
    for jobs in (alone, shared):
        twin, inst = _placed_at_arrival(_one_node_spec(curve, 10.0, jobs, gpus=max(gpus, 1) if gpus else 0))
        counted = _counts(twin)
        assert counted[0] > 0
        np.testing.assert_allclose(_charged_runs(twin, inst), counted, rtol=1e-9)


def test_run_energy__below_the_count_on_a_concave_curve_and_a_saturated_node() -> None:
    """SPECpower curve, 70 % background, two jobs asking all 4 cores: charged less, never more, never 0."""
    curve = specpower_curve("ibm-x3550-x5675")
    jobs = (JobSpec("a", 0.0, 1500.0, "batch", 2, 2), JobSpec("b", 300.0, 1500.0, "batch", 2, 2))
    for subset in (jobs[:1], jobs):
        twin, inst = _placed_at_arrival(_one_node_spec(curve, 70.0, subset))
        charged, counted = _charged_runs(twin, inst), _counts(twin)
        assert (charged > 0).all() and (charged < counted).all(), (charged, counted)


def test_run_energy__a_gpu_job_without_millicores_is_charged_nothing_below_the_twins_count() -> None:
    """A GPU job asking < 0.5 millicore, alone: the twin counts its busy GPU, the oracle charges 0 (valid, below)."""
    jobs = (JobSpec("g", 0.0, 1200.0, "batch", 0.0001, 2, gpu_count=1),)
    twin, inst = _placed_at_arrival(_one_node_spec(PowerCurve.linear(40.0, 160.0), 10.0, jobs, gpus=1))
    assert (_counts(twin) > 0.0).all()
    assert _charged_runs(twin, inst).tolist() == [0.0, 0.0]


def _two_regions(weights: ObjectiveWeights) -> TwinSpec:
    """Two equal nodes in two regions: ``dirty`` at 800 g/kWh, ``grid`` at 600 g/kWh until 1200 s, then 50."""
    fleet = tuple(NodeSpec(name, "x86_64", "on-demand", 4, 16, 0.36) for name in ("dirty", "clean"))
    curve = PowerCurve.linear(40.0, 160.0)
    carbon = {"dirty": CarbonIntensity.constant(800.0), "grid": CarbonIntensity(np.array([600.0, 50.0, 50.0]), 1200.0)}
    model = EnergyModel((NodePower(curve, None, "dirty"), NodePower(curve, None, "grid")), carbon)
    jobs = (JobSpec("j", 0.0, 1200.0, "batch", 2, 2),)
    return TwinSpec(fleet, jobs, Telemetry.constant(2, 10, 10, 3600, 600), EpisodeSettings(3600.0, weights=weights),
                    energy=model)


def test_oracle__waits_for_the_clean_hour_in_the_clean_region_and_proves_it() -> None:
    """The job (60 W for 1200 s: 0.02 kWh) starts at 1200 s on ``clean``: 1 g, not 12 or 16; plan = bound = optimum.

    Equal nodes but for their region are not interchangeable once carbon is weighed (with no
    weight they form one class). 0.06 USD of compute, 0.02 of energy, 0.02 of carbon.
    """
    spec = _two_regions(WEIGHED)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    assert OracleInstance.from_hindsight(twin.hindsight()).node_classes == ()
    unweighed = _two_regions(ObjectiveWeights())
    plain = DigitalTwin(unweighed)
    plain.reset(np.random.default_rng(0))
    assert OracleInstance.from_hindsight(plain.hindsight()).node_classes == ((0, 1),)
    result = solve_oracle(twin.hindsight())
    assert result.plan == {"j": (1, 1200.0)}
    assert result.plan_objective_usd == pytest.approx(0.06 + 0.02 + 20.0 * 0.02 * 50.0 / 1000.0, rel=1e-9)  # 1 g
    assert result.proven_optimal
    assert result.lower_bound_usd <= result.plan_objective_usd + TOL
    assert brute_force_optimum(spec, replay_plan(spec, result)) == pytest.approx(result.plan_objective_usd, abs=TOL)


def _rerun_with_energy(interruptions: tuple[float, ...]) -> TwinSpec:
    """The evict-and-rerun episode (:func:`tests.agents.oracle.test_oracle_rerun._spec`), energy and carbon weighed."""
    spec = rerun_spec()
    curve = PowerCurve.linear(40.0, 160.0)
    carbon = {"a": CarbonIntensity(np.array([100.0, 700.0, 300.0]), 500.0, 0.0)}
    model = EnergyModel(tuple(NodePower(curve, None, "a") for _ in spec.fleet), carbon)
    settings_ = dataclasses.replace(spec.settings, weights=ObjectiveWeights(energy_usd_per_kwh=2.0,
                                                                              carbon_usd_per_kg=40.0))
    return dataclasses.replace(spec, settings=settings_, energy=model, fixed_interruptions_s=(interruptions, ()))


@pytest.mark.parametrize("interruptions", [(900.0,), (900.0, 2100.0), (900.0, 1500.0, 2400.0), (450.0, 2000.0)])
def test_oracle__evicted_runs_are_charged_their_energy_in_plan_and_bound(interruptions: tuple[float, ...]) -> None:
    """Plan program's value == replay (linear curve, unsaturated: exact, evicted first run too); bound <= optimum.

    The relaxation's last runs past the first TTL window also count the least energy of the
    evicted run they prove: more than their own run's.
    """
    spec = _rerun_with_energy(interruptions)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    view = twin.hindsight()
    inst = OracleInstance.from_hindsight(view)
    batch = program_candidates(inst, view, None, SolveLimits(), 1e-7, contended=False)
    milp = next(candidate for candidate in batch if candidate.source == "milp")
    assert milp.program is not None and milp.program.objective_usd == pytest.approx(milp.total_usd, abs=TOL)
    relaxation = bound_options(inst)
    later = relaxation.start_lo_s >= 600.0  # past the first TTL window
    assert later.any()
    spans = zip(relaxation.node[later], relaxation.start_hi_s[later], relaxation.use_end_s[later], strict=True)
    own = np.array([terms.run_energy_counts(inst, 0, int(n), np.array([hi]), np.array([end]))[0][0]
                    for n, hi, end in spans])  # the option's own run over its core
    assert (relaxation.counts[later, _ENERGY] > own).all()
    _check_instance(spec, exact_grid=False)  # bound <= exhaustive optimum <= plan == replay
