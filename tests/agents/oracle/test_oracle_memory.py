"""The oracle's memory estimate and budget: counts bound the built programs, big episodes are refused early.

Fleets are generated from the default fleet's five node types (``fleet: generate`` in a scenario
written to ``tmp_path``), read the bundled synthetic background at spread offsets, and get 10
synthetic jobs per node over 4 hours, as the default scenario (5 nodes, ~50 jobs).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import agents
import scenarios
from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of
from agents.oracle import OracleTooLargeError, estimate_oracle_memory, solve_oracle
from agents.oracle.bounds.exact import bound_options
from agents.oracle.milp.limits import SolveLimits
from agents.oracle.milp.program import solve_program
from agents.oracle.model.fit import candidates, mebibytes, millicores, node_shapes
from agents.oracle.model.instance import OracleInstance
from agents.oracle.plans.options import plan_options
from agents.oracle.sizing import budget as budget_module
from agents.oracle.sizing import counts
from agents.oracle.sizing.budget import MEMORY_BUDGET_ENV, budget_bytes, check_memory
from digital_twin import DigitalTwin, HindsightView, JobSpec, NodeSpec, TwinSpec
from tests.strategies import twin_specs

TRACE = Path(scenarios.__file__).parent / "data" / "synthetic_dc_mean_300s.csv"
NODE_TYPES = """
      cpu: {arch: x86_64, instance: on-demand, cpu_cores: 32, mem_gb: 128, price_per_hour_usd: 0.48}
      arm: {arch: arm64, instance: spot, cpu_cores: 16, mem_gb: 64, price_per_hour_usd: 0.12,
            interruption_prob_per_hour: 0.15}
      api: {arch: x86_64, instance: on-demand, cpu_cores: 8, mem_gb: 32, price_per_hour_usd: 0.18}
      gpu: {arch: gpu-node, instance: on-demand, cpu_cores: 16, mem_gb: 128, price_per_hour_usd: 3.2,
            gpu_count: 4, gpu_model: A100, gpu_vram_gb: 80.0}
      gpuspot: {arch: gpu-node, instance: spot, cpu_cores: 16, mem_gb: 128, price_per_hour_usd: 1.1,
                gpu_count: 4, gpu_model: A100, gpu_vram_gb: 80.0, interruption_prob_per_hour: 0.2}
"""


def generated_scenario(directory: Path, n_nodes: int, jobs_per_node: int = 10,
                       cost_model: str = "prorated") -> Path:
    """A scenario file: ``n_nodes`` (a multiple of 5) of the five default types, 4 hours of jobs."""
    per_type = n_nodes // 5
    n_jobs = jobs_per_node * n_nodes
    path = directory / f"gen{n_nodes}-{jobs_per_node}-{cost_model}.yaml"
    path.write_text(f"""schema_version: 1
name: gen{n_nodes}
horizon_s: 14400
job_budget: {n_jobs}
queue_ttl_s: 1800
cost_model: {cost_model}
spot: {{recovery_s: 600, interruptions: true}}
fleet:
  generate:
    types:{NODE_TYPES}
    counts: {{cpu: {per_type}, arm: {per_type}, api: {per_type}, gpu: {per_type}, gpuspot: {per_type}}}
telemetry:
  reader: alibaba2018-mean
  path: {TRACE}
  mapping: {{kind: offset-scale-bias, nodes: evenly-spread}}
workload:
  source: synthetic
  options: {{base_rate_per_s: {n_jobs / 14400 * 1.1}, diurnal_amplitude: 0.0, lc_deadline_slack_s: 300}}
""")
    return path


def scenario_hindsight(scenario: str | Path, seed: int = 0) -> HindsightView:
    env = ClusterSchedulingEnv(scenario)
    env.reset(seed=seed)
    return hindsight_of(env)


def built_sizes(hindsight: HindsightView) -> dict[str, tuple[int, int, int, int]]:
    """``(options, variables, rows, non-zeros)`` of both programs, built but solved with no time."""
    inst = OracleInstance.from_hindsight(hindsight)
    out = {}
    for name, options in (("plan", plan_options(inst)), ("bound", bound_options(inst))):
        result = solve_program(inst, options, SolveLimits(node_limit=1, time_limit_s=1e-6), mip_rel_gap=1e-7)
        out[name] = (options.n, result.n_variables, result.n_constraints, result.n_nonzeros)
    return out


def assert_estimate_bounds_programs(hindsight: HindsightView) -> None:
    estimate = estimate_oracle_memory(hindsight)
    built = built_sizes(hindsight)
    for name, size in (("plan", estimate.plan), ("bound", estimate.bound)):
        assert size is not None
        guess = (size.n_options, size.n_variables, size.n_constraints, size.n_nonzeros)
        assert all(g >= b for g, b in zip(guess, built[name], strict=True)), (name, guess, built[name])


@pytest.mark.parametrize("cost_model", ["prorated", "active-nodes"])
def test_estimate_oracle_memory__counts_bound_the_built_programs(cost_model: str) -> None:
    """On default episodes, estimated options, variables, rows and non-zeros are >= the built ones."""
    scenario = scenarios.load("fleet5-synthetic").with_settings(cost_model=cost_model)
    for seed in range(3):
        assert_estimate_bounds_programs(scenario_hindsight(scenario, seed))


def test_estimate_oracle_memory__a_grid_too_fine_to_sweep_is_still_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the sweep's cell limit every cell counts as full: still >= the built programs, and larger."""
    hindsight = scenario_hindsight(scenarios.load("fleet5-synthetic").with_settings(cost_model="active-nodes"))
    swept = estimate_oracle_memory(hindsight)
    monkeypatch.setattr(counts, "_MAX_SWEEP_CELLS", 10)
    assert_estimate_bounds_programs(hindsight)
    coarse = estimate_oracle_memory(hindsight)
    assert coarse.bound is not None and swept.bound is not None
    assert coarse.bound.n_nonzeros > swept.bound.n_nonzeros


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(twin_specs(max_nodes=5, max_jobs=15))
def test_estimate_oracle_memory__counts_bound_the_built_programs_on_random_episodes(spec: TwinSpec) -> None:
    """Random fleets, GPUs, interruptions, deadlines, TTLs and cost models: estimates >= built sizes."""
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    assert_estimate_bounds_programs(twin.hindsight())


def test_estimate_oracle_memory__grows_with_the_fleet(tmp_path: Path) -> None:
    """5 (default), 20 and 50 nodes with 10 jobs per node: every estimated size grows."""
    estimates = [estimate_oracle_memory(scenario_hindsight(s)) for s in
                 ("fleet5-synthetic", generated_scenario(tmp_path, 20), generated_scenario(tmp_path, 50))]
    for small, large in itertools.pairwise(estimates):
        assert large.n_nodes > small.n_nodes
        assert large.plan.n_nonzeros > small.plan.n_nonzeros
        assert large.bound is not None and small.bound is not None
        assert large.bound.n_nonzeros > small.bound.n_nonzeros
        assert large.peak_bytes > small.peak_bytes


def test_solve_oracle__a_tiny_budget_refuses_the_default_episode_in_one_clear_line() -> None:
    """The error is a ValueError whose one line gives the estimate, the budget and how to raise it."""
    hindsight = scenario_hindsight("fleet5-synthetic")
    with pytest.raises(OracleTooLargeError) as caught:
        solve_oracle(hindsight, memory_budget_bytes=1e6, too_large="refuse")
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert "\n" not in message
    assert "estimated peak" in message and "budget of 0.00 GB" in message
    assert "memory_budget_gb" in message and MEMORY_BUDGET_ENV in message
    assert caught.value.estimate == estimate_oracle_memory(hindsight)
    assert caught.value.budget_bytes == 1e6


@pytest.mark.heavy
def test_solve_oracle__the_default_budget_accepts_the_default_episode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Default episodes (seeds 0-4) fit 4 GB; the solve reports the estimate it checked."""
    monkeypatch.delenv(MEMORY_BUDGET_ENV, raising=False)
    env = ClusterSchedulingEnv("fleet5-synthetic")
    for seed in range(5):
        env.reset(seed=seed)
        check_memory(estimate_oracle_memory(hindsight_of(env)), budget_bytes())
    result = solve_oracle(hindsight_of(env), compute_bound=False)
    assert result.memory_estimate.bound is None
    assert result.memory_estimate.plan.n_nonzeros >= result.plan_program.n_nonzeros


def test_oracle_agent__refuses_at_reset_and_the_option_or_variable_raises_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``memory_budget_gb`` and ``ACO_ENV_ORACLE_MEMORY_GB`` set the agent's budget (option first)."""
    env = ClusterSchedulingEnv("toy3")
    env.reset(seed=0)
    with pytest.raises(OracleTooLargeError, match=r"memory budget of 0\.00 GB"):
        agents.make_agent("oracle", env, memory_budget_gb=1e-6, too_large="refuse").reset(0)
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "1e-6")
    agent = agents.make_agent("oracle", env, too_large="refuse")
    with pytest.raises(OracleTooLargeError):
        agent.reset(0)
    assert agent.last_result is None
    agent = agents.make_agent("oracle", env, memory_budget_gb=1.0, too_large="refuse")  # the option wins
    agent.reset(0)
    assert agent.last_result is not None and agent.last_result.proven_optimal


def test_budget_bytes__option_then_environment_variable_then_4_gb(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget's sources in order; bad values are errors that name where they came from."""
    monkeypatch.delenv(MEMORY_BUDGET_ENV, raising=False)
    assert budget_bytes() == budget_module.DEFAULT_MEMORY_BUDGET_GB * 1e9 == 4e9
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "16")
    assert budget_bytes() == 16e9
    assert budget_bytes(2.0) == 2e9
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "inf")
    assert budget_bytes() == float("inf")
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match=MEMORY_BUDGET_ENV):
        budget_bytes()
    with pytest.raises(ValueError, match="> 0"):
        budget_bytes(0.0)
    with pytest.raises(ValueError, match="> 0"):
        agents.make_agent("oracle", ClusterSchedulingEnv("toy3"), memory_budget_gb=-1.0)


def test_solve_oracle__refuses_a_500_node_episode_before_building_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """500 nodes and 5,000 jobs: refused under the default budget when asked, with nothing built."""
    monkeypatch.delenv(MEMORY_BUDGET_ENV, raising=False)
    hindsight = scenario_hindsight(generated_scenario(tmp_path, 500))

    def must_not_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("the oracle built its instance before checking the budget")

    monkeypatch.setattr(OracleInstance, "from_hindsight", must_not_build)
    with pytest.raises(OracleTooLargeError, match="500 nodes") as caught:
        solve_oracle(hindsight, too_large="refuse")
    assert caught.value.estimate is not None and caught.value.estimate.peak_bytes > 100 * 4e9


def test_node_shapes__candidates_match_the_per_pair_fit_test() -> None:
    """Vectorised candidates equal the twin's rule checked for every (job, node) pair."""

    @settings(max_examples=100, deadline=None)
    @given(twin_specs(max_nodes=6, max_jobs=20))
    def check(spec: TwinSpec) -> None:
        expected = tuple(
            tuple(i for i, node in enumerate(spec.fleet) if _fits(job, node)) for job in spec.jobs
        )
        assert candidates(node_shapes(spec.fleet, spec.jobs)) == expected

    check()


def _fits(job: JobSpec, node: NodeSpec) -> bool:
    """The fit rule written out for one pair (the reference the vectorised test must match)."""
    if job.required_arch is not None and node.arch != job.required_arch:
        return False
    if job.gpu_count > 0 and (
        node.gpu_count < job.gpu_count
        or node.gpu_vram_gb < job.gpu_vram_gb
        or (job.allowed_gpu_models is not None and node.gpu_model not in job.allowed_gpu_models)
    ):
        return False
    return millicores(job.cpu_cores) <= millicores(node.cpu_cores) and mebibytes(job.mem_gb) <= mebibytes(node.mem_gb)


_MEASURE = r"""
import json, sys
import scipy.optimize
from aco_env import ClusterSchedulingEnv, hindsight_of
from agents.oracle import estimate_oracle_memory, solve_oracle
def kib(key):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key))
env = ClusterSchedulingEnv(sys.argv[1])
env.reset(seed=0)
hindsight = hindsight_of(env)
estimate = estimate_oracle_memory(hindsight)
open("/proc/self/clear_refs", "w").write("5")  # restart the peak (VmHWM) from here
base = kib("VmRSS:")
solve_oracle(hindsight)
print(json.dumps({"estimate": estimate.peak_bytes, "measured": (kib("VmHWM:") - base) * 1024}))
"""


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc to read peak memory")
def test_estimate_oracle_memory__is_above_the_measured_peak(tmp_path: Path) -> None:
    """In a fresh process, the solve's peak resident memory stays below the estimate (HiGHS included)."""
    for scenario in ("fleet5-synthetic", str(generated_scenario(tmp_path, 20))):
        out = subprocess.run([sys.executable, "-c", _MEASURE, scenario], capture_output=True, text=True, check=True)
        sizes = json.loads(out.stdout.strip().splitlines()[-1])
        assert sizes["estimate"] >= sizes["measured"], sizes
