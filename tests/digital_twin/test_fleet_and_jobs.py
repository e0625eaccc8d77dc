"""Fleet builders and JobSpec/NodeSpec validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from digital_twin import (
    JobSpec,
    NodeSpec,
    SpecError,
    TraceError,
    default_fleet,
    fleet_from_alibaba_gpu_csv,
    fleet_from_dicts,
    generate_fleet,
    job_from_dict,
)
from tests.paths import TRACES


def test_default_fleet__matches_the_design_table() -> None:
    """The five nodes' sizes, prices, GPUs and interruption rates are docs/model.md's ("The twin", Fleet)."""
    rows = [
        (
            n.node_id,
            n.arch,
            n.instance,
            n.cpu_cores,
            n.mem_gb,
            n.gpu_count,
            n.price_per_hour_usd,
            n.interruption_prob_per_hour,
        )
        for n in default_fleet()
    ]
    assert rows == [
        ("node-cpu-01", "x86_64", "on-demand", 32, 128, 0, 0.48, 0.0),
        ("node-arm-02", "arm64", "spot", 16, 64, 0, 0.12, 0.15),
        ("node-api-03", "x86_64", "on-demand", 8, 32, 0, 0.18, 0.0),
        ("node-gpu-04", "gpu-node", "on-demand", 16, 128, 4, 3.20, 0.0),
        ("node-gpu-05", "gpu-node", "spot", 16, 128, 4, 1.10, 0.20),
    ]
    assert all(n.gpu_model == "A100" and n.gpu_vram_gb == 80 for n in default_fleet()[3:])


def test_node_spec__is_frozen() -> None:
    """NodeSpec cannot be changed after construction."""
    with pytest.raises(AttributeError):
        default_fleet()[0].cpu_cores = 1  # type: ignore[misc]  # the point of the test


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"cpu_cores": 0}, "cpu_cores must be a positive"),
        ({"mem_gb": -1}, "mem_gb must be a positive"),
        ({"arch": "riscv"}, "arch 'riscv'"),
        ({"instance": "reserved"}, "instance 'reserved'"),
        ({"gpu_count": 2}, "gpu_model must be given"),
        ({"interruption_prob_per_hour": 0.5}, "on-demand node cannot"),
        ({"price_per_hour_usd": float("nan")}, "price_per_hour_usd"),
    ],
)
def test_node_spec__rejects_bad_values_with_the_node_name(changes: dict, message: str) -> None:
    """Each bad field raises SpecError naming the node and the field."""
    base = {
        "node_id": "bad-node",
        "arch": "x86_64",
        "instance": "on-demand",
        "cpu_cores": 4,
        "mem_gb": 8,
        "price_per_hour_usd": 0.1,
    }
    with pytest.raises(SpecError, match=message) as info:
        NodeSpec(**(base | changes))
    assert "bad-node" in str(info.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"cpu_cores": 0}, "cpu_cores must be a finite number > 0"),
        ({"mem_gb": -2}, "mem_gb must be"),
        ({"duration_s": 0}, "duration_s must be"),
        ({"arrival_s": -1}, "arrival_s must be"),
        ({"workload": "interactive"}, "workload 'interactive'"),
        ({"priority": 0}, "priority must be an integer in 1..100"),
        ({"priority": 101}, "priority must be an integer in 1..100"),
        ({"priority": 5.5}, "priority must be an integer"),
        ({"gpu_count": -1}, "gpu_count must be"),
        ({"required_arch": "sparc"}, "required_arch 'sparc'"),
        ({"allowed_gpu_models": ()}, "allowed_gpu_models is empty"),
        ({"allowed_gpu_models": "A100"}, "allowed_gpu_models must be a tuple"),
        ({"preemptible": "yes"}, "preemptible must be"),
        ({"deadline_s": float("inf")}, "deadline_s must be"),
    ],
)
def test_job_spec__rejects_bad_values_with_the_job_id(changes: dict, message: str) -> None:
    """Each bad field raises SpecError naming the job and the field."""
    base = {"job_id": "bad-job", "arrival_s": 0.0, "duration_s": 60.0, "workload": "batch", "cpu_cores": 1, "mem_gb": 1}
    with pytest.raises(SpecError, match=message) as info:
        JobSpec(**(base | changes))
    assert "bad-job" in str(info.value)


def test_job_from_dict__unknown_keys_are_errors() -> None:
    """A misspelt key is reported, not dropped."""
    with pytest.raises(SpecError, match=r"jobs\[3\]: unknown key\(s\) \['cpus'\]"):
        job_from_dict(
            {"job_id": "x", "arrival_s": 0, "duration_s": 1, "workload": "batch", "cpus": 1, "mem_gb": 1}, "jobs[3]"
        )


def test_fleet_from_dicts__builds_and_names_the_bad_entry() -> None:
    """An inline list builds a fleet; a bad entry is named by its index."""
    fleet = fleet_from_dicts(
        [
            {
                "node_id": "a",
                "arch": "x86_64",
                "instance": "on-demand",
                "cpu_cores": 4,
                "mem_gb": 8,
                "price_per_hour_usd": 0.2,
            },
        ]
    )
    assert fleet[0].node_id == "a"
    with pytest.raises(SpecError, match=r"fleet\[1\]: unknown key"):
        fleet_from_dicts(
            [
                {
                    "node_id": "a",
                    "arch": "x86_64",
                    "instance": "on-demand",
                    "cpu_cores": 4,
                    "mem_gb": 8,
                    "price_per_hour_usd": 0.2,
                },
                {"node_id": "b", "arch": "x86_64", "instance": "on-demand", "cores": 4},
            ]
        )
    with pytest.raises(SpecError, match="duplicate node_id 'a'"):
        fleet_from_dicts(
            [
                {
                    "node_id": "a",
                    "arch": "x86_64",
                    "instance": "on-demand",
                    "cpu_cores": 1,
                    "mem_gb": 1,
                    "price_per_hour_usd": 0,
                }
            ]
            * 2
        )


def test_generate_fleet__is_seeded_and_counts_types() -> None:
    """Same seed, same fleet; the counts per type are honoured."""
    types = {"cpu": default_fleet()[0], "gpu": default_fleet()[4]}
    one = generate_fleet(types, {"cpu": 3, "gpu": 2}, np.random.default_rng(7), price_jitter=0.1)
    two = generate_fleet(types, {"cpu": 3, "gpu": 2}, np.random.default_rng(7), price_jitter=0.1)
    other = generate_fleet(types, {"cpu": 3, "gpu": 2}, np.random.default_rng(8), price_jitter=0.1)
    assert one == two and one != other
    assert sorted(n.node_id for n in one) == ["cpu-0", "cpu-1", "cpu-2", "gpu-0", "gpu-1"]
    assert all(0.9 * 1.10 <= n.price_per_hour_usd <= 1.1 * 1.10 for n in one if n.arch == "gpu-node")


def test_fleet_from_alibaba_gpu_csv__reads_units_and_models(tmp_path: Path) -> None:
    """cpu_milli/1000 cores, memory_mib/1024 GB, GPU price and VRAM from the model table."""
    path = tmp_path / "nodes.csv"
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\nn-0,96000,786432,8,V100M32\nn-1,32000,131072,0,\n")
    gpu_node, cpu_node = fleet_from_alibaba_gpu_csv(path)
    assert (gpu_node.cpu_cores, gpu_node.mem_gb, gpu_node.gpu_count) == (96, 768, 8)
    assert gpu_node.price_per_hour_usd == pytest.approx(8 * 3.20) and gpu_node.gpu_vram_gb == 32
    assert cpu_node.arch == "x86_64" and cpu_node.gpu_count == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("sn,cpu,memory_mib,gpu,model\nn-0,1,1,0,\n", r"missing column\(s\) \['cpu_milli'\]"),
        ("sn,cpu_milli,memory_mib,gpu,model\nn-0,abc,1,0,\n", r"nodes.csv:2: cpu_milli"),
        ("sn,cpu_milli,memory_mib,gpu,model\nn-0,1000,1024,2,H100\n", r"nodes.csv:2: unknown GPU model 'H100'"),
        ("sn,cpu_milli,memory_mib,gpu,model\nn-0,-1000,1024,0,\n", r"nodes.csv:2: .*cpu_cores must be"),
        ("sn,cpu_milli,memory_mib,gpu,model\n", "no rows"),
    ],
)
def test_fleet_from_alibaba_gpu_csv__bad_files_name_file_and_row(tmp_path: Path, content: str, message: str) -> None:
    """Bad node lists raise TraceError naming the file and row."""
    path = tmp_path / "nodes.csv"
    path.write_text(content)
    with pytest.raises(TraceError, match=message):
        fleet_from_alibaba_gpu_csv(path)


def test_fleet_from_alibaba_gpu_csv__missing_file() -> None:
    """A missing file is a TraceError naming it."""
    with pytest.raises(TraceError, match=r"no-such\.csv: cannot open"):
        fleet_from_alibaba_gpu_csv("no-such.csv")


def test_fleet_from_alibaba_gpu_csv__real_node_lists() -> None:
    """Both real node lists load (skipped when the traces are absent)."""
    folder = TRACES / "alibaba-gpu-2023"
    if not folder.exists():
        pytest.skip("Alibaba GPU 2023 trace not present (set ACO_ENV_TRACES)")
    gpu_nodes = fleet_from_alibaba_gpu_csv(folder / "openb_node_list_gpu_node.csv")
    all_nodes = fleet_from_alibaba_gpu_csv(folder / "openb_node_list_all_node.csv")
    assert len(gpu_nodes) == 1213 and all(n.gpu_count > 0 for n in gpu_nodes)
    assert len(all_nodes) == 1523 and sum(n.gpu_count == 0 for n in all_nodes) == 310
