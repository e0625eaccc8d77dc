"""GPU power: the board-power table covers the fleets' models, the idle/busy assumptions, the CSV reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from digital_twin.energy import (
    DEFAULT_GPU_TDP_W,
    GPU_IDLE_FRACTION,
    GPU_TDP_W,
    GpuBoardRow,
    GpuPower,
    gpu_power,
    gpu_tdp_w,
    read_gpu_board_power_csv,
    uses_default_gpu_power,
)
from digital_twin.errors import SpecError, TraceError
from digital_twin.fleet import ALIBABA_GPU_MODELS, default_fleet
from tests.digital_twin.energy.files import POWER_MODELS, real, write

HEADER = "gpu_model,form_factor,memory_gb,tdp_watts,source_row_name\n"
UNDISCLOSED = {"G1", "G2", "G3", "GPU-series-1", "GPU-series-2"}
"""Internal codes of the Alibaba traces with no public specs: they must fall back to the default."""


def test_table__every_fleet_gpu_model_is_known_or_an_undisclosed_code() -> None:
    """The default fleet's and the Alibaba 2023 fleet's GPU models have a board power, except the undisclosed codes."""
    models = set(ALIBABA_GPU_MODELS) | {n.gpu_model for n in default_fleet() if n.gpu_model}
    assert {m for m in models if uses_default_gpu_power(m)} <= UNDISCLOSED
    assert {"A100", "V100M16", "V100M32", "A10", "T4", "P100"} <= set(GPU_TDP_W)
    assert all(gpu_tdp_w(m) == DEFAULT_GPU_TDP_W == 200.0 for m in UNDISCLOSED)


def test_table__values_appear_in_the_real_board_power_csv() -> None:
    """Every bundled board power is a TDP the public table gives for that family (or the analogue named)."""
    rows = read_gpu_board_power_csv(real(f"{POWER_MODELS}/gpu_board_power.csv"))
    by_family: dict[str, set[float]] = {}
    for row in rows:
        by_family.setdefault(row.model.removeprefix("NVIDIA "), set()).add(row.tdp_watts)
    family = {"A800-SXM4-80GB": "A100", "H800": "H100", "A10": "A10G", "V100M16": "V100", "V100M32": "V100"}
    for model, tdp in GPU_TDP_W.items():
        name = family.get(model, model.split("-")[0])
        assert tdp in by_family[name], (model, tdp, by_family.get(name))
    assert by_family["(any GPU; default)"] == {DEFAULT_GPU_TDP_W}


def test_gpu_power__busy_is_tdp_and_idle_a_fixed_fraction() -> None:
    """A known model is busy at its TDP and idle at GPU_IDLE_FRACTION of it; another fraction can be passed."""
    power = gpu_power("A100")
    assert (power.busy_w, power.idle_w, power.model) == (400.0, 400.0 * GPU_IDLE_FRACTION, "A100")
    assert gpu_power("T4", idle_fraction=0.0).idle_w == 0.0
    assert gpu_power("G2").busy_w == DEFAULT_GPU_TDP_W and uses_default_gpu_power("G2")


def test_node_watts__linear_in_busy_gpus_and_clipped_to_the_count() -> None:
    """Node GPU power runs from count * idle to count * busy, fractions in between, vectorised."""
    power = GpuPower(50.0, 250.0, "x")
    assert power.node_watts(4, 0) == 200.0 and power.node_watts(4, 4) == 1000.0
    assert power.node_watts(4, 0.5) == 300.0 and power.node_watts(4, 9) == 1000.0
    np.testing.assert_array_equal(power.node_watts(np.array([2, 4]), np.array([1.0, 2.0])), [300.0, 600.0])


@pytest.mark.parametrize(
    ("idle", "busy", "match"),
    [
        (100.0, 50.0, "idle_w <= busy_w"),
        (-1.0, 50.0, "0 <= idle_w"),
        (0.0, float("inf"), "finite"),
        (True, 2.0, "finite"),
    ],
)
def test_gpu_power__refuses_bad_values(idle: float, busy: float, match: str) -> None:
    """Busy below idle, a negative or infinite value, a bool: SpecError naming the model."""
    with pytest.raises(SpecError, match=f"'bad'.*{match}"):
        GpuPower(idle, busy, "bad")
    with pytest.raises(SpecError, match=r"idle_fraction must be in \[0, 1\]"):
        GpuPower.from_tdp(300.0, "bad", idle_fraction=1.5)


def test_read_gpu_board_power_csv__reads_empty_optional_fields_as_none(tmp_path: Path) -> None:
    """Empty form_factor and memory_gb read as None; the rows come back in file order."""
    path = write(tmp_path / "gpus.csv", HEADER + "NVIDIA T4,PCIe,16,70,T4\n(default),,,200,Any\n")
    assert read_gpu_board_power_csv(path) == [
        GpuBoardRow("NVIDIA T4", "PCIe", 16.0, 70.0),
        GpuBoardRow("(default)", None, None, 200.0),
    ]


def test_read_gpu_board_power_csv__the_real_file_keeps_disagreeing_rows() -> None:
    """The real table has 20 rows; both A100 80 GB PCIe figures (250 and 300 W) are kept for the caller."""
    rows = read_gpu_board_power_csv(real(f"{POWER_MODELS}/gpu_board_power.csv"))
    assert len(rows) == 20
    assert {r.tdp_watts for r in rows if r.model == "NVIDIA A100" and r.form_factor == "PCIe"} == {250.0, 300.0}


@pytest.mark.parametrize(
    ("body", "header", "match"),
    [
        ("T4,PCIe,16,70,T4\n", HEADER.replace("tdp_watts", "tdp"), r"missing column\(s\) 'tdp_watts'"),
        ("T4,PCIe,16,,T4\n", HEADER, r"line 2, column 'tdp_watts': missing value"),
        ("T4,PCIe,16,70,T4\nK80,,12,-300,K80\n", HEADER, r"line 3, column 'tdp_watts': value -300"),
        ("T4,PCIe,16,0.07,T4\n", HEADER, r"line 2, column 'tdp_watts'.*kilowatts or milliwatts"),
        ("T4,PCIe,16,70000,T4\n", HEADER, r"line 2, column 'tdp_watts'.*kilowatts or milliwatts"),
        ("T4,PCIe,-16,70,T4\n", HEADER, r"line 2, column 'memory_gb'"),
        (",PCIe,16,70,T4\n", HEADER, r"line 2, column 'gpu_model': missing value"),
        ("T4,PCIe,16,seventy,T4\n", HEADER, r"line 2, column 'tdp_watts': non-numeric value 'seventy'"),
    ],
    ids=["missing-column", "empty-tdp", "negative", "kW", "mW", "negative-memory", "no-model", "text"],
)
def test_read_gpu_board_power_csv__bad_files_name_file_line_and_column(
    tmp_path: Path, body: str, header: str, match: str
) -> None:
    """Each malformed table is a TraceError naming the file, line and column."""
    path = write(tmp_path / "gpus.csv", header + body)
    with pytest.raises(TraceError, match=match) as info:
        read_gpu_board_power_csv(path)
    assert str(path) in str(info.value)
