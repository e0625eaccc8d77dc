"""The spot-GPU 2026 node table reader: units and assumptions, bad files named by file and line, the real table."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from digital_twin.errors import TraceError
from digital_twin.fleet_spot_gpu2026 import (
    INSTANCE,
    MEM_GB_PER_VCPU,
    SPOT_GPU_2026_MODELS,
    fleet_from_spot_gpu_2026_csv,
)
from digital_twin.scenario import ScenarioError, load_scenario
from tests.paths import TRACES

HEADER = "gpu_model,gpu_capacity_num,cpu_num,node_name\n"
NODE_TABLE = TRACES / "alibaba-spot-gpu-2026" / "node_info_df.csv"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nodes.csv"
    path.write_text(text)
    return path


def test_reader__units_prices_and_vram_from_the_stated_assumptions(tmp_path: Path) -> None:
    """cpu_num cores, cpu_num x MEM_GB_PER_VCPU GB, price = GPUs x the model's per-GPU price, all on-demand."""
    path = _write(tmp_path, HEADER + "H800,8,192,7\nA10,1,128,9\n")
    h800, a10 = fleet_from_spot_gpu_2026_csv(path)
    assert (h800.node_id, h800.cpu_cores, h800.mem_gb, h800.gpu_count) == ("7", 192, 192 * MEM_GB_PER_VCPU, 8)
    assert h800.price_per_hour_usd == pytest.approx(8 * SPOT_GPU_2026_MODELS["H800"].price_per_gpu_hour_usd)
    assert h800.gpu_vram_gb == 80 and a10.gpu_vram_gb == 24 and a10.gpu_model == "A10"
    assert {n.instance for n in (h800, a10)} == {INSTANCE} and not h800.is_spot
    assert h800.interruption_prob_per_hour == 0.0 and h800.arch == "gpu-node"


def test_reader__columns_in_any_order_and_limit(tmp_path: Path) -> None:
    """The header decides the columns; ``limit`` keeps the first rows."""
    path = _write(tmp_path, "node_name,cpu_num,gpu_model,gpu_capacity_num\n1,128,A10,1\n2,128,A10,1\n3,128,A10,1\n")
    assert [n.node_id for n in fleet_from_spot_gpu_2026_csv(path, limit=2)] == ["1", "2"]


def test_every_model__has_a_positive_price_vram_and_a_named_source() -> None:
    """Each assumption is stated: price and VRAM positive, the source given in words."""
    for model in SPOT_GPU_2026_MODELS.values():
        assert model.price_per_gpu_hour_usd > 0 and model.vram_gb > 0 and len(model.source) > 20


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("gpu_model,gpu_capacity_num,node_name\nA10,1,0\n", r"nodes\.csv: missing column\(s\) \['cpu_num'\]"),
        (HEADER + "A10,one,128,0\n", r"nodes\.csv:2: column 'gpu_capacity_num' must be an integer, got 'one'"),
        (HEADER + "A10,1,12.5,0\n", r"nodes\.csv:2: column 'cpu_num' must be an integer"),
        (HEADER + "A10,1,128,0\nA10,0,128,1\n", r"nodes\.csv:3: column 'gpu_capacity_num' must be > 0, got 0"),
        (HEADER + "A10,1,-4,0\n", r"nodes\.csv:2: column 'cpu_num' must be > 0, got -4"),
        (HEADER + "A10,1,128,5\nA10,1,128,5\n", r"nodes\.csv:3: duplicate node_name '5' \(first on line 2\)"),
        (HEADER + "B200,8,128,0\n", r"nodes\.csv:2: unknown gpu_model 'B200'; known: \["),
        (HEADER + "A10,1,128,\n", r"nodes\.csv:2: column 'node_name' is empty"),
        (HEADER + "A10,1,128\n", r"nodes\.csv:2: the row has 3 fields, the header has 4"),
        (HEADER, r"nodes\.csv: the node table has no rows"),
    ],
)
def test_bad_tables__name_the_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    """Each bad table raises TraceError naming the file and the line (header = line 1)."""
    with pytest.raises(TraceError, match=message):
        fleet_from_spot_gpu_2026_csv(_write(tmp_path, content))


def test_missing_file__names_it(tmp_path: Path) -> None:
    """A missing table is a TraceError naming it."""
    with pytest.raises(TraceError, match=r"no-such\.csv: cannot open node table"):
        fleet_from_spot_gpu_2026_csv(tmp_path / "no-such.csv")


def _scenario(tmp_path: Path, fleet: dict) -> Path:
    """The toy scenario with ``fleet`` as its fleet section (no fixed interruptions, constant telemetry)."""
    data = yaml.safe_load((Path(__file__).parents[2] / "scenarios" / "toy3.yaml").read_text())
    data["fleet"] = fleet
    data["telemetry"] = {"reader": "constant", "cpu_pct": 10, "mem_pct": 10, "tick_s": 300}
    del data["spot"]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_scenario_key__reads_samples_and_rejects_unknown_keys(tmp_path: Path) -> None:
    """``fleet: {alibaba_spot_gpu_2026_csv: {path, per_model, seed}}`` samples per model; unknown keys fail."""
    table = _write(tmp_path, HEADER + "".join(f"{m},8,192,{i}\n" for i, m in enumerate(["H800"] * 3 + ["A10"] * 3)))
    section = {"path": str(table), "per_model": 2, "seed": 1}
    fleet = load_scenario(_scenario(tmp_path, {"alibaba_spot_gpu_2026_csv": section})).fleet
    assert Counter(n.gpu_model for n in fleet) == {"H800": 2, "A10": 2}
    bad = _scenario(tmp_path, {"alibaba_spot_gpu_2026_csv": {**section, "gpu_only": True}})
    with pytest.raises(ScenarioError, match=r"alibaba_spot_gpu_2026_csv: unknown key\(s\) \['gpu_only'\]"):
        load_scenario(bad)


def test_alibaba_gpu_csv_on_demand_only__drops_interruptions_and_keeps_prices(tmp_path: Path) -> None:
    """``on_demand_only: true`` makes the reader's spot models (P100) on-demand at their price; default: spot."""
    nodes = tmp_path / "openb.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn-0,32000,131072,2,P100\nn-1,32000,131072,2,T4\n")
    section = {"path": str(nodes), "gpu_only": False}
    spot = load_scenario(_scenario(tmp_path, {"alibaba_gpu_csv": section})).fleet
    on_demand = load_scenario(_scenario(tmp_path, {"alibaba_gpu_csv": {**section, "on_demand_only": True}})).fleet
    assert spot[0].is_spot and spot[0].interruption_prob_per_hour > 0
    assert not any(n.is_spot or n.interruption_prob_per_hour for n in on_demand)
    assert [n.price_per_hour_usd for n in on_demand] == [n.price_per_hour_usd for n in spot]


def test_real_node_table__whole_fleet() -> None:
    """The shared table: 4,278 nodes, 10,412 GPUs of six models, 632,636 vCPUs (skipped when absent)."""
    if not NODE_TABLE.exists():
        pytest.skip("Alibaba spot-GPU 2026 node table not present (set ACO_ENV_TRACES)")
    fleet = fleet_from_spot_gpu_2026_csv(NODE_TABLE)
    assert len(fleet) == 4278 and sum(n.gpu_count for n in fleet) == 10412
    assert sum(n.cpu_cores for n in fleet) == 632636
    assert Counter(n.gpu_model for n in fleet) == {
        "A10": 2494, "GPU-series-1": 989, "A100-SXM4-80GB": 432, "H800": 219, "GPU-series-2": 122, "A800-SXM4-80GB": 22,
    }
    assert not any(n.is_spot for n in fleet)
