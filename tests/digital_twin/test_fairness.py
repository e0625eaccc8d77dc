"""The unfairness term: 1 - Jain's index of the workload classes' mean normalised service (known answers).

An episode-level measure: the twin recomputes it as jobs arrive and end, so the objective can
fall during an episode; the return still equals minus the final objective.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from aco_env import ClusterSchedulingEnv
from agents.oracle import solve_oracle
from digital_twin import DigitalTwin, ObjectiveWeights
from digital_twin.objective import PENALTIES
from digital_twin.sim.measures import unfairness
from tests.helpers import first_fit, run_twin
from tests.small_twins import ONE_CORE, SPOT_TWO_CORES, TWO_CORES, batch, lc, play, spec_of, stream

WEIGHTS = ObjectiveWeights(sla_violation_usd=0.0, unfairness_usd=10.0)  # one core, 1-core LC: over the SLA


def test_unfairness__is_one_minus_jains_index_over_the_classes_with_jobs() -> None:
    """Known values; empty classes are left out; no service at all, or one class, is fair (0)."""
    assert unfairness([1, 1, 0], [1.0, 0.5, 0.0]) == pytest.approx(1 - 1.5**2 / (2 * 1.25), abs=1e-15)
    assert unfairness([4, 2, 1], [4.0, 0.0, 0.0]) == pytest.approx(2 / 3, abs=1e-15)  # one class served
    assert unfairness([0, 0, 0], [0.0, 0.0, 0.0]) == 0.0
    assert unfairness([3, 5, 0], [0.0, 0.0, 0.0]) == 0.0
    assert unfairness([0, 7, 0], [0.0, 3.5, 0.0]) == 0.0
    for x in (0.1, 1 / 3, 0.7, 1.0):  # equal means: exactly fair, never a rounding residue below 0
        assert unfairness([3, 7, 11], [3 * x, 7 * x, 11 * x]) >= 0.0


def test_unfairness__is_the_only_term_whose_count_may_go_down() -> None:
    """The table marks it: the oracle charges it 0 and the exhaustive search prunes on the others."""
    assert [term.name for term in PENALTIES if not term.monotone] == ["unfairness"]


def test_twin__counts_unfairness_when_jobs_end_and_the_objective_can_fall() -> None:
    """Batch job at 0-600 s (service 1); latency-critical job waits until 600 s, done at 1200 s (service 0.5).

    After the batch job alone: x = (0, 1), unfairness 0.5; at the end x = (0.5, 1): 1 - 2.25 / 2.5
    = 0.1. The objective falls by 0.4 x 10 USD less 600 s of cost: a positive reward.
    """
    spec = spec_of((batch("b", 0.0, 600.0), lc("l", 0.0, 600.0)), fleet=(ONE_CORE,), weights=WEIGHTS)
    twin, objectives = play(spec, {"b": (0, 0.0), "l": (0, 600.0)})
    assert twin.objective()["unfairness"] == pytest.approx(0.1, abs=1e-12)
    assert objectives[-2] == pytest.approx(0.06 + 0.5 * 10.0, abs=1e-12)  # asked for l at 600 s
    assert objectives[-1] == pytest.approx(0.12 + 0.1 * 10.0, abs=1e-12)
    assert -(objectives[-1] - objectives[-2]) > 0  # the last step's reward


def test_twin__running_rejected_and_failed_jobs_have_their_own_service() -> None:
    """Latency-critical done at once (1), batch rejected by its TTL (0), stream running at the horizon.

    The stream job arrives at 600 s and starts at 1200 s: by the 3600 s horizon it did 2400 s of
    work in 3000 s, service 0.8. x = (1, 0, 0.8): unfairness 1 - 1.8^2 / (3 x 1.64). A failed
    job's service is 0: replacing the rejected batch job with one that fails changes nothing.
    """
    expected = 1 - 1.8**2 / (3 * 1.64)
    jobs = (lc("l", 0.0, 600.0), batch("b", 0.0, 60.0, cores=2), stream("s", 600.0, 3000.0))
    spec = spec_of(jobs, queue_ttl_s=900.0, weights=WEIGHTS)
    twin, _ = play(spec, {"l": (0, 0.0), "s": (0, 1200.0)})
    counts = twin.job_counts()
    assert (counts["completed"], counts["rejected"], counts["running"]) == (1, 1, 1)
    assert twin.objective()["unfairness"] == pytest.approx(expected, abs=1e-12)
    failing = (lc("l", 0.0, 600.0), batch("b", 0.0, 600.0), stream("s", 600.0, 3000.0))
    spec = spec_of(failing, fleet=(TWO_CORES, SPOT_TWO_CORES), queue_ttl_s=900.0, weights=WEIGHTS,
                   fixed_interruptions_s=((), (300.0,)))
    twin, _ = play(spec, {"l": (0, 0.0), "b": (1, 0.0), "s": (0, 1200.0)})
    assert twin.job_counts()["failed"] == 1
    assert twin.objective()["unfairness"] == pytest.approx(expected, abs=1e-12)


def test_twin__service_measures_the_run_stretched_by_contention() -> None:
    """Node 0 (1 core, 100 % background) runs a 1-core batch job at half speed; node 1 is idle.

    Batch 600 s done at 1200 s (service 0.5), latency-critical on node 1 done at 600 s (1):
    unfairness 0.1 under processor sharing, 0 without interference. A 3000 s stream job at half
    speed for the whole 3600 s horizon did 1800 s of work: service 0.5 when it is the third class.
    """
    fleet = (ONE_CORE, TWO_CORES)
    jobs = (batch("b", 0.0, 600.0), lc("l", 0.0, 600.0))
    for interference, expected in (("processor-sharing", 0.1), ("none", 0.0)):
        spec = spec_of(jobs, fleet=fleet, cpu_pct=(100.0, 0.0), weights=WEIGHTS, interference=interference)
        twin, _ = play(spec, {"b": (0, 0.0), "l": (1, 0.0)})
        assert twin.objective()["unfairness"] == pytest.approx(expected, abs=1e-12), interference
    spec = spec_of((*jobs, stream("s", 0.0, 3000.0)), fleet=fleet, cpu_pct=(100.0, 0.0), weights=WEIGHTS,
                   interference="processor-sharing")
    twin, _ = play(spec, {"s": (0, 0.0), "l": (1, 0.0), "b": (0, 3000.0)})  # b queued behind s: service 0
    assert twin.job_counts()["running"] == 1
    assert twin.objective()["unfairness"] == pytest.approx(1 - 1.5**2 / (3 * 1.25), abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_twin__the_hot_path_dict_equals_the_breakdown_while_unfairness_moves(seed: int) -> None:
    """On fleet5-utility the objective dict cache follows counts that go down, bit for bit, at every step."""
    env = ClusterSchedulingEnv(scenario="fleet5-utility")
    observation, _ = env.reset(seed=seed)
    twin = env._twin
    rng = np.random.default_rng(seed)
    seen, done = [], False
    while not done:
        assert twin.objective_dict() == twin.objective().as_dict()
        seen.append(twin.objective()["unfairness"])
        action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
        observation, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    assert twin.objective_dict() == twin.objective().as_dict()
    assert any(later < earlier for earlier, later in itertools.pairwise(seen))


def test_oracle__charges_unfairness_nothing_and_reports_the_plans_value_by_replay() -> None:
    """The bound ignores the term (the same with its weight 0 or 10); the plan's value counts it and
    equals its replay; first-fit stays above the bound."""
    jobs = (batch("b", 0.0, 600.0), lc("l", 0.0, 600.0), stream("s", 300.0, 600.0))
    bounds = []
    for weight in (0.0, 10.0):
        spec = spec_of(jobs, fleet=(ONE_CORE,), queue_ttl_s=1200.0, weights=ObjectiveWeights(unfairness_usd=weight))
        twin = DigitalTwin(spec)
        twin.reset(np.random.default_rng(0))
        result = solve_oracle(twin.hindsight(), time_limit_s=30.0)
        replayed, _ = play(spec, {j: p for j, p in result.plan.items() if p is not None})
        assert result.plan_objective_usd == pytest.approx(replayed.objective_usd(), abs=1e-12)
        assert result.plan_breakdown["unfairness"] == replayed.objective()["unfairness"]
        heuristic = DigitalTwin(spec)
        run_twin(heuristic, first_fit, seed=0, check=False)
        assert heuristic.objective_usd() >= result.lower_bound_usd - 1e-9
        bounds.append(result.lower_bound_usd)
    assert bounds[0] == pytest.approx(bounds[1], abs=1e-12)
