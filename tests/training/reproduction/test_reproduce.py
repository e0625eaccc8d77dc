"""`aco-env reproduce`: each tier on a tiny configuration, known answers, skips, and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.aco import COST_ONLY
from agents.oracle.milp.limits import SolveLimits
from digital_twin import JobSpec, default_fleet
from tests.paths import ROOT
from training.reproduction import TIERS, data, t1_1_cost, t1_3_latency, t4_1_gpu, t5_2_predictor
from training.reproduction.empty_cluster import fleet_env, place_each
from training.reproduction.play import oracle_available
from training.reproduction.report import render_blocks
from training.reproduction.stats import ci95_half_width, paired_savings, summarize

TRACES = data.traces_dir()
needs_gpu_data = pytest.mark.skipif(
    bool(data.missing_files(t4_1_gpu.FILES, TRACES)), reason="Alibaba GPU 2023 / 2018 traces not present"
)
needs_2018_data = pytest.mark.skipif(
    bool(data.missing_files(t5_2_predictor.FILES, TRACES)), reason="Alibaba 2018 mean trace not present"
)
TINY_T11 = t1_1_cost.Config(reference_jobs=6, twin_jobs=8, horizon_s=7200.0)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Prediction files go to a temporary cache, never the user's ~/.cache."""
    monkeypatch.setenv("ACO_ENV_CACHE", str(tmp_path / "cache"))
    yield


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "training.cli.main", *args], capture_output=True, text=True, cwd=cwd)


# ------------------------------------------------------------------------------ statistics
def test_stats__interval_is_the_student_t_half_width() -> None:
    """The 95 % half-width of (1, 2, 3) is t(0.975, 2) * 1 / sqrt(3); one value has none, equal values 0."""
    assert ci95_half_width([1.0, 2.0, 3.0]) == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert ci95_half_width([5.0]) is None
    assert summarize([2.0, 2.0, 2.0])["ci95"] == 0.0
    assert paired_savings([10.0, 4.0], [5.0, 3.0])["values"] == [0.5, 0.25]


# ------------------------------------------------------------------------------ T1.1
def test_t1_1_reference_setting__aco_saves_exactly_the_price_gap_on_the_balanced_topology() -> None:
    """On the empty cluster First-Fit pays jobs x $0.70, ACO jobs x $0.50: saving (0.70-0.50)/0.70 on every seed."""
    result = t1_1_cost.reference_setting("balanced", [0, 1, 2], TINY_T11)
    n = TINY_T11.reference_jobs
    assert result["total_price_per_hour"]["first-fit"]["values"] == pytest.approx([0.70 * n] * 3)
    assert result["total_price_per_hour"]["aco-cost"]["values"] == pytest.approx([0.50 * n] * 3)
    assert result["aco_saving_vs_first_fit"]["values"] == pytest.approx([(0.70 - 0.50) / 0.70] * 3)
    assert result["known_saving"] == pytest.approx((0.70 - 0.50) / 0.70)


def test_t1_1_run__tiny_configuration_is_well_formed() -> None:
    """Both topologies, both settings, one summary per agent and seed count; objective >= compute cost."""
    result = t1_1_cost.run([0, 1], TINY_T11, oracle_limits=None)
    assert set(result["topologies"]) == set(t1_1_cost.TOPOLOGIES)
    for both in result["topologies"].values():
        twin = both["full_twin"]
        assert set(twin["per_agent"]) == set(TINY_T11.agents) and twin["oracle"] is None
        for row in twin["per_agent"].values():
            assert row["objective_usd"]["n"] == 2
            assert all(o >= c - 1e-9 >= 0.0 for o, c in
                       zip(row["objective_usd"]["values"], row["cost_usd"]["values"], strict=True))
        assert both["reference_setting"]["aco_saving_vs_first_fit"]["n"] == 2
    json.dumps(result)  # JSON-ready


@pytest.mark.skipif(not oracle_available(), reason="agents.oracle not importable")
def test_t1_1_full_twin__no_agent_beats_the_oracle_lower_bound() -> None:
    """With the oracle, every agent's objective is at or above the oracle's bound on each seed."""
    config = t1_1_cost.Config(reference_jobs=4, twin_jobs=5, horizon_s=3600.0)
    twin = t1_1_cost.full_twin("balanced", [0, 1], config, oracle_limits=SolveLimits())
    bounds = twin["oracle"]["lower_bound_usd"]["values"]
    for row in twin["per_agent"].values():
        assert all(value >= bound - 1e-6 for value, bound in zip(row["objective_usd"]["values"], bounds, strict=True))


# ------------------------------------------------------------------------------ T1.3
def test_t1_3_run__times_every_decision_of_each_burst() -> None:
    """Each (seed, burst) times ceil(min_samples / B) bursts of B decisions, in both settings; all positive."""
    config = t1_3_latency.Config(bursts=(1, 3), min_samples=6, warmup=2, job_duration_s=600.0)
    result = t1_3_latency.run([0, 1], config)
    for setting in ("reference_setting", "in_env"):
        assert set(result[setting]) == {"1", "3"}
        for burst, row in result[setting].items():
            assert row["samples_per_seed"] == math.ceil(6 / int(burst)) * int(burst)
            assert row["wall_p99_ms"]["n"] == 2 and all(v > 0 for v in row["cpu_p99_ms"]["values"])
            assert row["wall_p99_ms"]["mean"] >= row["wall_p50_ms"]["mean"]
            assert 0.0 <= row["preempted_share"]["mean"] <= 1.0


# ------------------------------------------------------------------------------ agents in the reference setting
def test_aco_cost__uses_no_router_so_a_latency_critical_job_may_go_to_spot() -> None:
    """On the empty default fleet `aco` keeps a 12-core LC job on on-demand, `aco-cost` takes the spot ARM node."""
    env = fleet_env(default_fleet())
    job = JobSpec("lc", 0.0, 60.0, "latency-critical", 12, 24)  # too big for node-api-03
    routed, cost_only = make_agent("aco", env), make_agent("aco-cost", env)
    for agent in (routed, cost_only):
        agent.reset(seed=0)
    assert default_fleet()[place_each(routed, [job])[0]].instance == "on-demand"
    assert default_fleet()[place_each(cost_only, [job])[0]].node_id == "node-arm-02"
    assert cost_only.last_decision.strategy is COST_ONLY


# ------------------------------------------------------------------------------ T4.1
def test_stratified_sample__allocates_in_proportion_without_repeats() -> None:
    """78 % LS of the candidates gives 78 of 100 (and 8 of 10); indices unique and ascending."""
    keys = ["LS"] * 780 + ["BE"] * 200 + ["Burstable"] * 15 + ["Guaranteed"] * 5
    for n, expected_ls in ((100, 78), (10, 8)):
        chosen = t4_1_gpu.stratified_sample(keys, n, np.random.default_rng(0))
        assert len(chosen) == n == len(set(chosen)) and chosen == sorted(chosen)
        assert sum(keys[i] == "LS" for i in chosen) == expected_ls


@needs_gpu_data
def test_t4_1_run__tiny_configuration_on_the_real_data() -> None:
    """32 nodes grouped by model; ACO+QoS puts at least as many LS pods on on-demand as any agent, per seed."""
    config = t4_1_gpu.Config(jobs=12, horizon_s=3600.0)
    result = t4_1_gpu.run([0, 1], config, oracle_limits=None)
    assert result["testbed"]["nodes"] == 32 and result["testbed"]["ls_jobs_per_seed"] == [9, 9]
    ref = result["reference_setting"]["per_agent"]
    for name, row in ref.items():
        assert all(a >= b for a, b in zip(ref["aco"]["ls_on_demand"]["values"], row["ls_on_demand"]["values"],
                                          strict=True)), name
    assert set(result["full_twin"]["per_agent"]) == set(config.agents)
    fleet = t4_1_gpu.gpu_fleet(TRACES / data.ALIBABA_GPU_NODES)
    models = [n.gpu_model for n in fleet]
    assert models == sorted(models)


# ------------------------------------------------------------------------------ T5.2
def test_pick_windows__finds_the_flat_and_the_rising_stretches() -> None:
    """On a series flat at the start and noisy and rising at the end, stable windows are early, volatile late."""
    rng = np.random.default_rng(0)
    series = np.concatenate([np.full(300, 40.0), 40 + np.cumsum(rng.normal(0.5, 3.0, 300))])
    starts, scores = t5_2_predictor.window_scores(series, 100, 10)
    stable = t5_2_predictor.pick_windows(starts, scores, 2, 100, lowest=True)
    volatile = t5_2_predictor.pick_windows(starts, scores, 2, 100, lowest=False)
    assert max(stable) + 100 <= 300 and min(volatile) >= 200
    assert all(abs(a - b) >= 100 for a in stable for b in stable if a != b)
    with pytest.raises(ValueError, match="non-overlapping"):
        t5_2_predictor.pick_windows(starts, scores, 7, 100, lowest=True)


@needs_2018_data
def test_t5_2_run__tiny_configuration_on_the_real_data() -> None:
    """Shares are fractions per seed; the EMA steers more jobs to stable nodes than no prediction (empty cluster)."""
    config = t5_2_predictor.Config(jobs=40, predictors=("ema",), twin_arrival_window_s=600.0,
                                   twin_median_duration_s=300.0)
    result = t5_2_predictor.run([0, 1], config)
    for setting in ("reference_setting", "full_twin"):
        shares = result[setting]["stable_share"]
        assert set(shares) == {"none", "ema"}
        assert all(0.0 <= v <= 1.0 for s in shares.values() for v in s["values"])
    ref = result["reference_setting"]["stable_share"]
    assert ref["ema"]["mean"] > ref["none"]["mean"]


# ------------------------------------------------------------------------------ missing data
@pytest.mark.parametrize("module", [t4_1_gpu, t5_2_predictor])
def test_real_data_tiers__skip_with_a_message_when_the_traces_are_absent(
    module: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unset ACO_ENV_TRACES names the variable; an empty folder names the missing files."""
    monkeypatch.delenv("ACO_ENV_TRACES", raising=False)
    assert "ACO_ENV_TRACES" in module.run([0])["skipped"]  # type: ignore[attr-defined]
    monkeypatch.setenv("ACO_ENV_TRACES", str(tmp_path))
    skipped = module.run([0])["skipped"]  # type: ignore[attr-defined]
    assert str(tmp_path) in skipped and module.FILES[0] in skipped  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ report and CLI
def test_render_blocks__show_every_tier_with_its_command_or_its_skip() -> None:
    """The generated block has T1.1's tables and known answer, and a 'Not run' line for a skipped tier."""
    document = {
        "command": "aco-env reproduce --seeds 2 --out x", "date": "2026-01-01",
        "machine": {"python": "3.11", "processor": "x86_64", "cpus": 2},
        "settings": {"seeds": 2, "oracle_limits": None, "oracle_available": False, "traces_present": False},
        "tiers": {"T1.1": t1_1_cost.run([0, 1], TINY_T11, None),
                  "T4.1": {"tier": "T4.1", "title": "GPU", "seeds": [0, 1], "skipped": "skipped: no data"}},
    }
    page = render_blocks(document)["reproduction"]
    assert page.startswith("Command: `aco-env reproduce --seeds 2 --out x` (commit not recorded, 2026-01-01;")
    assert "aco-env reproduce --tier T1.1 --seeds 2 --out results/reproduction --no-oracle" in page
    assert "| T1.1 | ACO saving vs First-Fit (balanced) | 28.6 % | 28.6 ± 0.0 % |" in page
    assert "(0.70 - 0.50)/0.70 = 28.6 %" in page and "| ACO saving vs First-Fit | 28.6 % | 28.6 ± 0.0 %" in page
    assert "**Not run**: skipped: no data" in page


@pytest.mark.subprocess
def test_cli_reproduce__t1_1_without_the_oracle_writes_json_and_markdown(tmp_path: Path) -> None:
    """`reproduce --tier T1.1 --seeds 2 --no-oracle --out DIR` exits 0 and writes both files."""
    result = cli("reproduce", "--tier", "T1.1", "--seeds", "2", "--no-oracle", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "reproduction.json").read_text())
    assert list(document["tiers"]) == ["T1.1"] and document["settings"]["seeds"] == 2
    assert "## T1.1" in (tmp_path / "reproduction.md").read_text()


@pytest.mark.subprocess
@pytest.mark.slow
def test_cli_reproduce__t1_1_smoke_with_the_oracle(tmp_path: Path) -> None:
    """The issue's smoke test: `python -m training.cli.main reproduce --tier T1.1 --seeds 2 --out tmp` (minutes)."""
    result = cli("reproduce", "--tier", "T1.1", "--seeds", "2", "--out", "tmp", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "tmp" / "reproduction.json").read_text())
    twin = document["tiers"]["T1.1"]["topologies"]["balanced"]["full_twin"]
    assert (twin["oracle"] is not None) == document["settings"]["oracle_available"]


@pytest.mark.subprocess
def test_cli_reproduce__unknown_tier_exits_2(tmp_path: Path) -> None:
    """An unknown tier is refused with the list of known ones."""
    result = cli("reproduce", "--tier", "T9.9", "--out", str(tmp_path))
    assert result.returncode == 2 and all(name in result.stderr for name in TIERS)
