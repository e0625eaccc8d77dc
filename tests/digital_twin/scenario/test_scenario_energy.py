"""The scenario's ``energy`` section: curves per node, regions with carbon series, and clear errors."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import yaml

import scenarios
from digital_twin.energy import specpower_curve
from digital_twin.energy.model import DEFAULT_G_PER_KWH
from digital_twin.scenario.schema import ScenarioError

BASE = {
    "schema_version": 2,
    "name": "energy-test",
    "horizon_s": 3600,
    "fleet": {"nodes": [
        {"node_id": "a", "arch": "x86_64", "instance": "on-demand", "cpu_cores": 24, "mem_gb": 64,
         "price_per_hour_usd": 1.0},
        {"node_id": "g", "arch": "gpu-node", "instance": "spot", "cpu_cores": 8, "mem_gb": 64,
         "price_per_hour_usd": 2.0, "gpu_count": 2, "gpu_model": "T4", "interruption_prob_per_hour": 0.1},
    ]},
    "telemetry": {"reader": "constant", "cpu_pct": 20, "mem_pct": 30, "tick_s": 300},
    "workload": {"source": "synthetic", "options": {"base_rate_per_s": 0.002}},
}


def _load(tmp_path: Path, energy: object, **top: object) -> scenarios.Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**BASE, **top, "energy": energy}, sort_keys=False))
    return scenarios.load(path)


def test_energy_section__curves_regions_and_node_regions(tmp_path: Path) -> None:
    (tmp_path / "ci.csv").write_text("time_s,g_per_kwh\n0,100\n3600,300\n")
    scenario = _load(tmp_path, {
        "power": {"default": {"curve": "ibm-x3550-x5675", "cores": 12}, "g": {"idle_w": 50, "peak_w": 150}},
        "gpu_idle_fraction": 0.2,
        "regions": {"flat": {"g_per_kwh": 250}, "file": {"reader": "csv", "path": "ci.csv"}},
        "node_regions": {"g": "file"},
    })
    model = scenario.energy
    assert model is not None and model.regions == ("flat", "file")
    a, g = model.nodes
    assert a.region == "flat" and g.region == "file"
    assert a.curve.watts_at(1.0) == pytest.approx(specpower_curve("ibm-x3550-x5675").peak_w * 2)  # 24 of 12 cores
    assert g.curve.watts_at(0.5) == 100.0 and g.gpu is not None and g.gpu.idle_w == pytest.approx(0.2 * 70.0)
    assert model.carbon["file"].at(4000.0) == 300.0
    spec = scenario.make_spec(np.random.default_rng(0))
    assert spec.energy is model
    pickle.loads(pickle.dumps(scenario))


def test_energy_section__absent_means_the_default_model(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(BASE))
    spec = scenarios.load(path).make_spec(np.random.default_rng(0))
    assert spec.energy is None and spec.energy_model.carbon["default"].at(0.0) == DEFAULT_G_PER_KWH


def test_energy_section__accounting_off_turns_the_setting_off_and_refuses_weights(tmp_path: Path) -> None:
    assert not _load(tmp_path, {"accounting": False}).settings.energy_accounting
    with pytest.raises(ScenarioError, match=r"energy\.accounting: energy_accounting is false, but the weights"):
        _load(tmp_path, {"accounting": False}, weights={"carbon_usd_per_kg": 0.1})


@pytest.mark.parametrize(
    ("energy", "message"),
    [
        ({"power": {"default": {"curve": "nope"}}}, r"energy\.power\.default\.curve: unknown curve 'nope'"),
        ({"power": {"a": {"points_u": [0, 1], "watts": [10, 5]}}}, r"energy\.power\.a\.points_u: .*must not fall"),
        ({"power": {"a": {"points_u": [0, "x"], "watts": [1, 2]}}}, r"energy\.power\.a\.points_u: must be a list of "),
        ({"power": {"a": {"idle_w": 10}}}, r"energy\.power\.a\.peak_w: is required"),
        ({"power": {"zz": {"idle_w": 1, "peak_w": 2}}}, r"energy\.power: no node 'zz' in the fleet"),
        ({"regions": {"r": {"g_per_kwh": -5}}}, r"energy\.regions\.r\.g_per_kwh: .*not a finite number >= 0"),
        ({"regions": {"r": {"g_per_kwh": 5000}}}, r"energy\.regions\.r\.g_per_kwh: .*unit"),
        ({"regions": {"r": {"reader": "parquet", "path": "x"}}}, r"energy\.regions\.r\.reader: must be one of"),
        ({"regions": {"r": {"reader": "csv", "path": "missing.csv"}}}, r"energy\.regions\.r: .*missing\.csv"),
        ({"node_regions": {"a": "mars"}}, r"energy\.node_regions: node 'a': no region 'mars'"),
        ({"gpu_idle_fraction": 2}, r"energy\.gpu_idle_fraction: must be in \[0, 1\]"),
        ({"colour": "green"}, r"energy: unknown key\(s\) \['colour'\]"),
    ],
)
def test_energy_section__bad_input_names_the_file_and_key(tmp_path: Path, energy: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as raised:
        _load(tmp_path, energy).make_spec(np.random.default_rng(0))
    assert "s.yaml" in str(raised.value)
