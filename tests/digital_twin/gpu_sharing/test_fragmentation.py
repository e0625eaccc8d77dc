"""FGD's fragmentation measure: hand-computed cases from the paper's definitions, and an
independent brute-force recomputation on random small nodes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from digital_twin.errors import SpecError, TraceError
from digital_twin.gpu_sharing import (
    ClusterState,
    TaskTypes,
    fragmentation_rate,
    node_fragmentation,
    read_pod_list,
    target_workload,
    task_fragmentation,
)
from tests.digital_twin.gpu_sharing.helpers import brute_node_frag, cluster, pods, random_state


def _types(rows: list[tuple[int, int, int]], probs: list[float], allowed: list[list[bool]] | None = None) -> TaskTypes:
    arr = np.array(rows, dtype=np.int64)
    return TaskTypes(
        cpu_milli=arr[:, 0],
        num_gpu=arr[:, 1],
        gpu_milli=arr[:, 2],
        allowed=np.array(allowed or [[True, True, True]] * len(rows)),
        prob=np.array(probs),
    )


HAND = _types([(1000, 1, 500), (1000, 2, 1000), (1000, 0, 0)], [0.5, 0.25, 0.25])


def test_hand_computed_node() -> None:
    # GPUs free [300, 1000]: the 500-milli task runs (fragment: the 300 GPU); the 2-GPU task
    # cannot (all 1300 are fragments); for the CPU-only task all 1300 are fragments.
    per_type = task_fragmentation(np.array([8000]), np.array([[300, 1000]]), np.array([0]), HAND)
    assert per_type.tolist() == [[300.0, 1300.0, 1300.0]]
    assert node_fragmentation(np.array([8000]), np.array([[300, 1000]]), np.array([0]), HAND)[0] == pytest.approx(800.0)


def test_a_task_that_cannot_run_makes_every_unallocated_gpu_a_fragment() -> None:
    short_cpu = task_fragmentation(np.array([500]), np.array([[300, 1000]]), np.array([0]), HAND)
    assert short_cpu[0, 0] == 1300.0  # CPU too small for the 500-milli task
    only_b = _types([(1000, 1, 500)], [1.0], [[False, True, False]])
    assert task_fragmentation(np.array([8000]), np.array([[300, 1000]]), np.array([0]), only_b)[0, 0] == 1300.0
    assert task_fragmentation(np.array([8000]), np.array([[300, 1000]]), np.array([1]), only_b)[0, 0] == 300.0


def test_full_and_empty_nodes() -> None:
    frag = task_fragmentation(np.array([8000, 8000]), np.array([[0, 0], [1000, 1000]]), np.array([0, 0]), HAND)
    assert frag[0].tolist() == [0.0, 0.0, 0.0]  # nothing unallocated, nothing fragmented
    assert frag[1].tolist() == [0.0, 0.0, 2000.0]  # idle: only the CPU-only task sees fragments


@pytest.mark.parametrize("seed", range(5))
def test_matches_brute_force_on_random_nodes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gpus = rng.choice([0, 1, 2, 4, 8], size=12).tolist()
    c = cluster(
        gpus,
        cpu=rng.integers(4000, 64000, size=12).tolist(),
        models=[int(rng.integers(0, 2)) if g else 2 for g in gpus],
    )
    counts = rng.choice([0, 1, 1, 1, 2, 4, 8], 40).tolist()
    shares = rng.choice([100, 250, 500, 700, 1000], 40).tolist()
    table = pods(
        [
            (int(rng.integers(0, 32000)), 1, k, 0 if k == 0 else (m if k == 1 else 1000))
            for k, m in zip(counts, shares, strict=True)
        ],
        specs=rng.choice(["", "A", "B", "A|B"], 40).tolist(),
    )
    state = ClusterState(c, target_workload(table, c.models))
    random_state(state, rng)
    expected = [
        brute_node_frag(int(state.cpu_free[n]), state.gpu_free[n].tolist(), int(c.model_index[n]), state.workload)
        for n in range(c.num_nodes)
    ]
    assert state.node_frag == pytest.approx(expected)
    unallocated = state.gpu_free.sum()
    assert fragmentation_rate(state) == pytest.approx(sum(expected) / unallocated)


def test_target_workload_is_the_popularity_distribution() -> None:
    table = pods([(1000, 1, 1, 500)] * 6 + [(2000, 1, 0, 0)] * 3 + [(1000, 1, 2, 1000)])
    full = target_workload(table, ("A", "B"))
    assert full.prob.tolist() == pytest.approx([0.6, 0.3, 0.1])
    assert full.num_gpu.tolist() == [1, 0, 2]
    cut = target_workload(table, ("A", "B"), popularity=0.9)  # the two types covering 90 %
    assert cut.prob.tolist() == pytest.approx([6 / 9, 3 / 9])
    with pytest.raises(SpecError, match="popularity"):
        target_workload(table, ("A",), popularity=0.0)
    with pytest.raises(SpecError, match="empty"):
        target_workload(pods([]), ("A",))


def test_rate_is_nan_without_unallocated_gpu_and_needs_a_workload() -> None:
    state = ClusterState(cluster([0, 0]), target_workload(pods([(1000, 1, 0, 0)]), ("A", "B")))
    assert math.isnan(fragmentation_rate(state))
    with pytest.raises(ValueError, match="target workload"):
        fragmentation_rate(ClusterState(cluster([1])))
    with pytest.raises(SpecError, match="the workload knows 1 GPU models, the cluster 2"):
        ClusterState(cluster([1]), target_workload(pods([(1000, 1, 1, 500)]), ("A",)))


def test_pod_list_errors_name_file_and_line(tmp_path) -> None:
    good = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,1000,10,1,500,V100M16|A10\np1,10,1,0,0,\n"
    (tmp_path / "ok.csv").write_text(good)
    table = read_pod_list(tmp_path / "ok.csv")
    assert table.gpu_spec == ("A10|V100M16", "") and table.gpu_milli.tolist() == [500, 0]
    cases = {
        "name,cpu_milli,memory_mib,num_gpu\np0,1,1,1\n": "missing column",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n": "no rows",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,500\np1,x,1,0,0\n": r"bad.csv:3: cpu_milli",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,2,500\n": r"bad.csv:2: inconsistent GPU request",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,1500\n": r"bad.csv:2: inconsistent",
    }
    for text, message in cases.items():
        (tmp_path / "bad.csv").write_text(text)
        with pytest.raises(TraceError, match=message):
            read_pod_list(tmp_path / "bad.csv")
    with pytest.raises(TraceError, match="no such"):
        read_pod_list(tmp_path / "absent.csv")
