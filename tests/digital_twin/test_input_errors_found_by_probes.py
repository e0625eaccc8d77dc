"""Bad input a fault probe found ending in "unexpected ... (a bug)": each is now one line naming the file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
from digital_twin import TraceError
from digital_twin.fleet_spot_gpu2026 import SPOT_GPU_2026_MODELS, fleet_from_spot_gpu_2026_csv
from digital_twin.scenario import ScenarioError, load_scenario


@pytest.mark.parametrize("seed", [-1, -(2**70)])
def test_scenario_seed__a_negative_seed_is_refused_naming_the_file_and_key(seed: int, tmp_path: Path) -> None:
    """`seed: -1` was a ValueError from NumPy at the first episode; now the loader names the file and `seed`."""
    path = tmp_path / "negative-seed.yaml"
    path.write_text(scenarios.path_of("toy3").read_text().replace("seed: 0", f"seed: {seed}"))
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    assert str(raised.value) == f"{path}: seed: must be an integer >= 0, got {seed}"


def test_spot_gpu_node_list__a_400_digit_cpu_num_is_refused_naming_the_line_and_column(tmp_path: Path) -> None:
    """A count beyond any float (an OverflowError before) is a TraceError at the row, naming the column."""
    path = tmp_path / "nodes.csv"
    model = next(iter(SPOT_GPU_2026_MODELS))
    path.write_text(f"gpu_model,gpu_capacity_num,cpu_num,node_name\n{model},1,{'9' * 400},node-a\n")
    with pytest.raises(TraceError) as raised:
        fleet_from_spot_gpu_2026_csv(path)
    assert str(raised.value) == f"{path}:2: column 'cpu_num' is too large to be a count (400 digits)"
