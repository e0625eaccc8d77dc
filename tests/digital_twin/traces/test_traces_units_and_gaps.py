"""Unit slips are refused with the option that fixes them; mostly filled episodes are logged once.

A percent trace whose every value lies in [0, 1] is almost surely fractions (and a fraction
trace above 1 percent): read as is, every background load would be off by 100 times, so the
readers refuse and say which option to set. A node whose episode replays mostly gap-filled
ticks is logged once per load of the data, as is every documented cleaning.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import yaml

import scenarios
from digital_twin.errors import TraceError
from digital_twin.scenario import load_scenario
from digital_twin.traces import (
    OffsetScaleBias,
    TraceCleaning,
    TraceSeries,
    read_alibaba_dc_mean,
    read_alibaba_machine_usage,
    read_generic,
    telemetry_from_aggregate,
    telemetry_from_machines,
)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --- units ---------------------------------------------------------------------------------


def test_generic__percent_file_holding_fractions_is_refused_naming_the_option(tmp_path: Path) -> None:
    """units='percent' with every value in [0, 1] is refused; units='fraction' reads it x 100."""
    path = write(tmp_path / "u.csv", "t,cpu,mem\n0,0.4,0.8\n300,0.5,0.9\n")
    with pytest.raises(TraceError, match=r"u\.csv: every value of columns 'cpu' and 'mem' lies in \[0, 1\].*"
                                         r"looks like fractions.*pass units='fraction'"):
        read_generic(path, cpu="cpu", mem="mem", time="t")
    series = read_generic(path, cpu="cpu", mem="mem", time="t", units="fraction")
    np.testing.assert_allclose(series.values_pct[:, 0], [[40.0, 80.0], [50.0, 90.0]])


def test_generic__check_units_false_reads_a_genuinely_idle_trace(tmp_path: Path) -> None:
    """The refusal can be waived for a trace that really stays under 1 %."""
    path = write(tmp_path / "idle.csv", "cpu,mem\n0.4,0.8\n0.5,0.9\n")
    series = read_generic(path, cpu="cpu", mem="mem", check_units=False)
    np.testing.assert_allclose(series.values_pct[:, 0, 0], [0.4, 0.5])


def test_generic__all_zero_percent_trace_is_accepted(tmp_path: Path) -> None:
    """Zeros read the same in either unit, so they are not refused."""
    path = write(tmp_path / "zero.csv", "cpu,mem\n0,0\n0,0\n")
    assert read_generic(path, cpu="cpu", mem="mem").values_pct.max() == 0.0


def test_generic__fraction_file_holding_percent_says_so(tmp_path: Path) -> None:
    """units='fraction' with values like 40 is refused with a hint to read it as percent."""
    path = write(tmp_path / "f.csv", "cpu,mem\n40,80\n50,90\n")
    with pytest.raises(TraceError, match=r"value 40 is outside \[0, 1\].*looks like percent.*units='percent'"):
        read_generic(path, cpu="cpu", mem="mem", units="fraction")


def test_alibaba_readers__fraction_files_are_refused(tmp_path: Path) -> None:
    """Both Alibaba 2018 readers (percent by format) refuse files of fractions, naming the fix."""
    mean = write(tmp_path / "mean.csv", "cpu_util_percent,mem_util_percent\n0.4,0.8\n0.5,0.9\n")
    with pytest.raises(TraceError, match=r"mean\.csv: every value .* lies in \[0, 1\].*units='fraction'"):
        read_alibaba_dc_mean(mean)
    raw = write(tmp_path / "mu.csv", "m_1,0,0.4,0.8,,,,,\nm_1,300,0.5,0.9,,,,,\n")
    with pytest.raises(TraceError, match=r"mu\.csv: every value .* lies in \[0, 1\]"):
        read_alibaba_machine_usage(raw)


# --- mostly filled episodes ------------------------------------------------------------------


def _half_filled(n_ticks: int = 10, filled_from: int = 3) -> TraceSeries:
    """Two machines; machine 'b' is filled (not observed) from tick ``filled_from`` on."""
    filled = np.zeros((n_ticks, 2, 2), dtype=bool)
    filled[filled_from:, 1] = True
    return TraceSeries(np.full((n_ticks, 2, 2), 50.0), 300.0, ("a", "b"), "trace.csv", filled=filled)


def test_mapping__mostly_filled_node_is_logged_once_naming_it(caplog: pytest.LogCaptureFixture) -> None:
    """A node replaying 70 % filled ticks is named in one WARNING; the other node is not."""
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        telemetry_from_machines(_half_filled(), 3000.0)
    assert len(caplog.records) == 1
    record = caplog.records[0]
    assert record.cleaning == TraceCleaning("trace.csv", "mostly-filled", 1)
    assert "node 1 (machine 'b') 70%" in record.getMessage() and "node 0" not in record.getMessage()


def test_mapping__aggregate_node_reading_a_filled_stretch_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """With an aggregate series, the node whose offset lands in the filled stretch is named."""
    series = _half_filled(n_ticks=20, filled_from=10).select(["b"])
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        telemetry_from_aggregate(series, [OffsetScaleBias(0), OffsetScaleBias(10)], 3000.0)
    assert [r.cleaning.rule for r in caplog.records] == ["mostly-filled"]
    assert "node 1 (offset 10) 100%" in caplog.records[0].getMessage()


def test_mapping__little_filling_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    """A node with half or less of its ticks filled gives no record."""
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        telemetry_from_machines(_half_filled(filled_from=5), 3000.0)
    assert caplog.records == []


def test_scenario__cleaning_notes_appear_once_per_load(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Filling and mostly-filled notes are logged when the data is first read, not per episode."""
    trace = write(tmp_path / "mu.csv", "m_1,0,10,20,,,,,\nm_1,600,12,22,,,,,\nm_1,9000,30,40,,,,,\n")
    data = yaml.safe_load((scenarios.CATALOGUE_DIR / "toy3.yaml").read_text())
    data["telemetry"] = {
        "reader": "alibaba2018-machines",
        "path": str(trace),
        "options": {"on_long_gap": "fill", "tick_s": 600},
        "mapping": {"kind": "per-machine", "machines": ["m_1"] * 3},
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data))
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        scenario = load_scenario(path)
        for seed in range(3):
            scenario.make_spec(np.random.default_rng(seed))
        scenario.with_settings(cost_model="active-nodes").make_spec(np.random.default_rng(0))
    assert sorted(r.cleaning.rule for r in caplog.records) == ["long-gap", "mostly-filled"]
