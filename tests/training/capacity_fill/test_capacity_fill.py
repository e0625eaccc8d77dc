"""Capacity fill: determinism, what the curves mean, bad input named, the CLI, and the real
openb fleet (skipped when the traces are absent)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from digital_twin.errors import SpecError
from digital_twin.gpu_sharing import GpuCluster, read_pod_list, target_workload
from tests.digital_twin.gpu_sharing.helpers import MIXED_PODS, SMALL_CLUSTER, cluster, pods
from tests.paths import TRACES
from training.capacity_fill import check_fillable, markdown_table, run_fill, summarize
from training.cli.main import main

FLEET, PODS = SMALL_CLUSTER, MIXED_PODS
WORKLOAD = target_workload(PODS, FLEET.models)
OPENB = TRACES / "alibaba-gpu-2023"


def test_same_seed_same_fill_and_sane_curves() -> None:
    a, b = run_fill(FLEET, PODS, WORKLOAD, "fgd", 3), run_fill(FLEET, PODS, WORKLOAD, "fgd", 3)
    assert np.array_equal(a.allocation, b.allocation) and np.array_equal(a.frag_rate, b.frag_rate, equal_nan=True)
    assert a.load_pct.tolist() == list(range(131))
    assert a.allocation[0] == 0.0 and (np.diff(a.allocation) >= 0).all()
    assert (a.allocation <= 1).all() and a.failed > 0  # the fill reaches saturation: pods fail
    assert ((a.frag_rate >= 0) & (a.frag_rate <= 1) | np.isnan(a.frag_rate)).all()
    other = run_fill(FLEET, PODS, WORKLOAD, "fgd", 4)
    assert not np.array_equal(a.allocation, other.allocation)


def test_every_policy_sees_the_same_pods_for_a_seed() -> None:
    curves = [run_fill(FLEET, PODS, WORKLOAD, name, 0) for name in ("random", "best-fit")]
    assert curves[0].submitted == curves[1].submitted  # the same draws reach the same load


def test_bad_input_is_named() -> None:
    with pytest.raises(SpecError, match="pod list is empty"):
        check_fillable(FLEET, pods([]))
    with pytest.raises(SpecError, match=r"pod 'p1' asks 16 GPU"):
        check_fillable(FLEET, pods([(1000, 1, 1, 500), (1000, 1, 16, 1000)]))
    with pytest.raises(SpecError, match="no pod in the list asks for a GPU"):
        check_fillable(FLEET, pods([(1000, 1, 0, 0)]))
    with pytest.raises(SpecError, match="no GPU"):
        check_fillable(cluster([0]), PODS)
    with pytest.raises(SpecError, match="unknown GPU-sharing policy 'tetris'"):
        run_fill(FLEET, PODS, WORKLOAD, "tetris", 0)
    with pytest.raises(SpecError, match="max_load"):
        run_fill(FLEET, PODS, WORKLOAD, "random", 0, max_load=0)


def test_summary_and_table() -> None:
    curves = [run_fill(FLEET, PODS, WORKLOAD, "random", s) for s in range(3)]
    summary = summarize(curves, [50, 100])
    values = [c.allocation[100] * 100 for c in curves]
    assert summary["random"]["allocation"]["100"]["mean"] == pytest.approx(np.mean(values))
    assert summary["random"]["allocation"]["100"]["std"] == pytest.approx(np.std(values, ddof=1))
    table = markdown_table(summary, [50, 100])
    assert "| random |" in table and "100 %" in table
    assert math.isnan(summarize(curves, [200])["random"]["allocation"]["200"]["mean"])


def test_cli_writes_json_and_markdown(tmp_path, capsys) -> None:
    (tmp_path / "nodes.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\nn1,64000,131072,8,G2\nn2,32000,65536,0,\n"
    )
    (tmp_path / "pods.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,2000,512,1,250\np1,4000,1024,2,1000\np2,1000,100,0,0\n"
    )
    argv = [
        "capacity-fill",
        "--nodes",
        str(tmp_path / "nodes.csv"),
        "--pods",
        str(tmp_path / "pods.csv"),
        "--seeds",
        "2",
        "--out",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 0
    result = json.loads((tmp_path / "out" / "capacity_fill.json").read_text())
    assert len(result["curves"]) == 12 and set(result["summary"]) == {
        "random",
        "dotproduct",
        "gpu-clustering",
        "gpu-packing",
        "best-fit",
        "fgd",
    }
    assert "| fgd |" in (tmp_path / "out" / "capacity_fill.md").read_text()
    assert main([*argv[:-2], "--max-load", "0.5", "--policies", "fgd", "--out", str(tmp_path / "half")]) == 0
    assert "| 50 % |" in (tmp_path / "half" / "capacity_fill.md").read_text()
    assert main([*argv[:-2], "--ties", "node-order", "--policies", "best-fit", "--out", str(tmp_path / "t")]) == 0
    ordered = json.loads((tmp_path / "t" / "capacity_fill.json").read_text())["settings"]
    assert ordered["ties"] == "node-order" and "--ties node-order" in ordered["command"]
    first_line = (tmp_path / "t" / "capacity_fill.md").read_text().splitlines()[2]
    assert first_line.startswith("Command: `aco-env capacity-fill --nodes nodes.csv") and "(commit " in first_line
    assert main([*argv[:-2], "--loads", "140", "--out", str(tmp_path / "z")]) == 2
    assert "--loads must lie in 0..130" in capsys.readouterr().err
    assert main([*argv[:-2], "--policies", "fgd,tetris", "--out", str(tmp_path / "x")]) == 2
    assert "unknown policy ['tetris']" in capsys.readouterr().err
    (tmp_path / "big.csv").write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nhuge,1000,1,16,1000\n")
    assert main([*argv[:3], "--pods", str(tmp_path / "big.csv"), "--out", str(tmp_path / "y")]) == 1
    assert "pod 'huge' asks 16 GPU" in capsys.readouterr().err


def test_the_full_openb_fleet_starts_filling() -> None:
    if not (OPENB / "openb_pod_list_default.csv").is_file():
        pytest.skip("alibaba-gpu-2023 not present (set ACO_ENV_TRACES to the traces folder)")
    fleet = GpuCluster.from_node_csv(OPENB / "openb_node_list_all_node.csv")
    table = read_pod_list(OPENB / "openb_pod_list_default.csv")
    assert (fleet.num_nodes, fleet.capacity_milli // 1000, len(table)) == (1523, 6212, 8152)
    workload = target_workload(table, fleet.models)
    for name in ("best-fit", "fgd"):
        curve = run_fill(fleet, table, workload, name, 0, max_load=0.1)
        assert curve.allocation[10] == pytest.approx(0.1, abs=0.01)  # nothing fails at 10 % load
    multi = read_pod_list(OPENB / "openb_pod_list_multigpu50.csv")  # the five-column files load too
    assert len(multi) == 9061 and set(multi.gpu_spec) == {""}
