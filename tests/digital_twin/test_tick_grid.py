"""One tick grid everywhere: a 0.3 s tick and a 2.7 s horizon give 9 ticks in every layer.

In floats ``2.7 / 0.3`` is ``9.000000000000002`` and ``9 * 0.3`` is ``2.6999999999999997 < 2.7``,
so a naive ceiling says 10 and a naive ``k * tick < horizon`` loop fires a tenth tick. The
readers (a generic trace file and the constant reader), the telemetry, the twin (the ticks it
fires, the SLA samples), the env's views and the oracle's instance must all say 9.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of
from agents.oracle import solve_oracle
from agents.oracle.bounds.decision_times import grid_bounds
from agents.oracle.model.instance import OracleInstance
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, SettingError, Telemetry, TickGrid, TwinSpec
from digital_twin.scenario import load_scenario
from digital_twin.tick_grid import count_ticks
from digital_twin.traces import read_generic, telemetry_from_machines

TICK_S, HORIZON_S, N_TICKS = 0.3, 2.7, 9
NODE = NodeSpec("n0", "x86_64", "on-demand", 16, 64, 0.36)


@pytest.mark.parametrize(
    ("span_s", "tick_s", "expected"),
    [(2.7, 0.3, 9), (0.9, 0.3, 3), (14_400, 300, 48), (3600, 300, 12), (1000, 300, 4), (299, 300, 1), (1e-9, 300, 1),
     (0.0, 300, 0), (-5.0, 300, 0), (86_400 * 365, 30, 1_051_200)],
)
def test_count_ticks__counts_the_ticks_that_start_before_the_span(span_s: float, tick_s: float, expected: int) -> None:
    """Decimal ticks are counted as written; a partial last tick counts; nothing before 0."""
    assert count_ticks(span_s, tick_s) == expected


def test_tick_grid__times_are_the_twins_products_and_the_checks_are_one() -> None:
    """The grid's times are ``k * tick_s`` for k < n; a bad tick or horizon is one SettingError."""
    grid = TickGrid(HORIZON_S, TICK_S)
    assert grid.n_ticks == N_TICKS
    assert grid.times_s().tolist() == [k * TICK_S for k in range(N_TICKS)]
    for bad in (0, -0.3, float("nan"), float("inf"), True, "0.3"):
        with pytest.raises(SettingError, match="tick_s must be a finite number > 0"):
            TickGrid(HORIZON_S, bad)  # type: ignore[arg-type]
    with pytest.raises(SettingError, match="horizon_s must be a finite number > 0"):
        TickGrid(0.0, TICK_S)


def _scenario(tmp_path: Path, telemetry: dict) -> Path:
    data = {
        "schema_version": 2,
        "name": "decimal-ticks",
        "horizon_s": HORIZON_S,
        "queue_ttl_s": None,
        "interference": "none",
        "spot": {"interruptions": False},
        "fleet": {"nodes": [{"node_id": "n0", "arch": "x86_64", "instance": "on-demand", "cpu_cores": 16,
                             "mem_gb": 64, "price_per_hour_usd": 0.36}]},
        "telemetry": telemetry,
        "workload": {"source": "jobs", "jobs": [
            {"job_id": "j", "arrival_s": 0, "duration_s": 0.1, "workload": "batch", "cpu_cores": 1, "mem_gb": 1}]},
    }
    path = tmp_path / "decimal-ticks.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text("cpu,mem\n" + "".join(f"{10 + k},{20 + k}\n" for k in range(20)))
    return path


def test_readers__a_generic_trace_and_the_constant_reader_give_9_ticks(tmp_path: Path) -> None:
    """The trace mapping, Telemetry.constant, and both scenario readers build 9 rows for 2.7 s."""
    series = read_generic(_trace(tmp_path), cpu="cpu", mem="mem", tick_s=TICK_S)
    assert telemetry_from_machines(series, HORIZON_S).n_ticks == N_TICKS
    assert Telemetry.constant(1, 10, 20, HORIZON_S, TICK_S).n_ticks == N_TICKS
    generic = {"reader": "generic", "path": "trace.csv", "options": {"cpu": "cpu", "mem": "mem", "tick_s": TICK_S},
               "mapping": {"kind": "per-machine"}}
    constant = {"reader": "constant", "cpu_pct": 10, "mem_pct": 20, "tick_s": TICK_S}
    for telemetry in (generic, constant):
        scenario = load_scenario(_scenario(tmp_path, telemetry))
        assert scenario.telemetry.n_ticks == N_TICKS
        assert scenario.make_spec(np.random.default_rng(0)).grid.n_ticks == N_TICKS


def _decimal_spec(jobs: tuple[JobSpec, ...], cpu_pct: float = 10.0) -> TwinSpec:
    telemetry = Telemetry.constant(1, cpu_pct, 20, HORIZON_S, TICK_S)
    return TwinSpec((NODE,), jobs, telemetry, EpisodeSettings(HORIZON_S, queue_ttl_s=None))


def test_twin__fires_exactly_the_9_ticks() -> None:
    """A job deferred at every event is asked at each tick it fires: 0, 0.3, ..., 2.4, never at 2.7 - 1 ulp."""
    twin = DigitalTwin(_decimal_spec((JobSpec("j", 0.0, 1.0, "batch", 1, 1),)))
    twin.reset(np.random.default_rng(0))
    asked_at = []
    while not twin.done:
        asked_at.append(twin.time_s)
        twin.defer()
    assert asked_at == [k * TICK_S for k in range(N_TICKS)]
    assert twin.hindsight().tick_times_s.tolist() == asked_at


def test_twin__samples_the_sla_at_the_9_ticks_only() -> None:
    """LC job k runs across tick k (k = 1..9) on an overloaded node: ticks 1..8 mark it; tick 9 is not one."""
    jobs = tuple(JobSpec(f"lc{k}", k * TICK_S - 0.1, 0.15, "latency-critical", 1, 1) for k in range(1, N_TICKS + 1))
    twin = DigitalTwin(_decimal_spec(jobs, cpu_pct=95.0), record_events=True)
    twin.reset(np.random.default_rng(0))
    while not twin.done:
        twin.place(0)
    marked = [(t, job) for t, event, job, _ in twin.event_log if event == "sla-violation"]
    assert marked == [(k * TICK_S, f"lc{k}") for k in range(1, N_TICKS)]


def test_env_and_oracle__say_9_ticks(tmp_path: Path) -> None:
    """The env's views (n_ticks, the tick index of every decision) and the oracle's instance use the grid."""
    constant = {"reader": "constant", "cpu_pct": 10, "mem_pct": 20, "tick_s": TICK_S}
    env = ClusterSchedulingEnv(_scenario(tmp_path, constant))
    env.reset(seed=0)
    ticks = []
    while True:
        view = env.cluster_view()
        assert view.grid.n_ticks == N_TICKS
        ticks.append(view.tick_index)
        _, _, terminated, truncated, _ = env.step(env.n_nodes)  # defer
        if terminated or truncated:
            break
    assert ticks == list(range(N_TICKS))
    instance = OracleInstance.from_hindsight(hindsight_of(env))
    assert len(instance.tick_times_s) == N_TICKS and instance.sla_allowed_cpu_m.shape[0] == N_TICKS
    assert instance.grid == TickGrid(HORIZON_S, TICK_S)
    cells = grid_bounds(instance, 1)  # the relaxation's cells: one per tick, then the horizon
    assert cells.tolist() == [*instance.tick_times_s.tolist(), HORIZON_S]
    assert solve_oracle(hindsight_of(env), replayed_rounds=0).proven_optimal
