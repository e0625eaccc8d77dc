"""The EIA-930 carbon reader: its documented cleaning on the real 2022 files and on small files with known answers."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from digital_twin.energy import EIA_EMISSION_FACTORS, EIA_SOURCES, CarbonIntensity, read_eia_carbon_csv
from digital_twin.errors import SpecError, TraceError
from digital_twin.traces import TraceCleaning
from tests.digital_twin.energy.files import EIA, real, write

HEADER = "timestamp," + ",".join(EIA_SOURCES) + ",avg_CI\n"
GEN = (100, 0, 0, 0, 100, 0, 0, 0)
"""A plain hour's mix: 100 MWh of wind and 100 of gas."""


def stamp(hour: int) -> str:
    return str(pd.Timestamp("2022-01-01", tz="UTC") + pd.Timedelta(hours=hour))


def eia_file(tmp_path: Path, rows: Sequence[Any], start_hour: int = 0) -> Path:
    """An EIA file, one hour per row: ``(mix, avg_CI)``, ``None`` (an empty row) or a raw ``"values"`` text."""
    lines = []
    for k, row in enumerate(rows):
        if row is None:
            values = "," * 8
        elif isinstance(row, str):
            values = row
        else:
            values = ",".join(str(v) for v in (*row[0], row[1]))
        lines.append(f"{stamp(start_hour + k)},{values}\n")
    return write(tmp_path / "XX_NG_&_avgCI.csv", HEADER + "".join(lines))


def cleanings(caplog: pytest.LogCaptureFixture) -> dict[str, int]:
    """Rule -> count of the cleaning records logged by the reader."""
    records = [r for r in caplog.records if r.name == "digital_twin.energy.eia930"]
    found = [getattr(r, "cleaning", None) for r in records]
    assert all(isinstance(c, TraceCleaning) for c in found)
    return {c.rule: c.count for c in found if c is not None}


def read_logged(
    caplog: pytest.LogCaptureFixture, path: Path, **kwargs: Any
) -> tuple[CarbonIntensity, dict[str, int]]:
    """Read ``path`` and return the series with the reader's cleaning counts."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        ci = read_eia_carbon_csv(path, **kwargs)
    return ci, cleanings(caplog)


# The published files (README of the EIA folder): hours filled or reported per rule, and avg_CI statistics.
REAL = {
    "BPAT": ({}, 54.7, 22.2, 113.7),
    "CISO": ({"empty-row": 3}, 256.2, 74.1, 449.0),
    "ERCO": ({}, 347.2, 110.7, 516.7),
    "PJM": ({"empty-row": 23, "implausible-generation": 5, "frozen-rows": 10}, 362.6, 272.5, 449.2),
}


@pytest.mark.parametrize("grid", sorted(REAL))
def test_real_files__cleaning_counts_and_statistics_match_the_readme(
    grid: str, caplog: pytest.LogCaptureFixture
) -> None:
    """8,760 hours; the documented empty, partial-data and frozen hours are counted; mean, min and max as published
    (PJM's minimum once its 5 false-low hours are filled)."""
    expected, mean, low, high = REAL[grid]
    ci, counts = read_logged(caplog, real(f"{EIA}/{grid}_NG_&_avgCI.csv"))
    assert counts == expected
    assert ci.n_ticks == 8760 and ci.tick_s == 3600.0 and ci.start_s == 0.0
    assert ci.filled is not None
    assert int(ci.filled.sum()) == expected.get("empty-row", 0) + expected.get("implausible-generation", 0)
    assert ci.g_per_kwh.mean() == pytest.approx(mean, abs=0.5)
    assert ci.g_per_kwh.min() == pytest.approx(low, abs=0.05) and ci.g_per_kwh.max() == pytest.approx(high, abs=0.05)


@pytest.mark.parametrize("grid", sorted(REAL))
def test_real_files__recomputing_from_the_mix_gives_back_avg_ci(grid: str) -> None:
    """The documented emission factors reproduce the avg_CI column (to round-off) in every file."""
    path = real(f"{EIA}/{grid}_NG_&_avgCI.csv")
    column = read_eia_carbon_csv(path).g_per_kwh
    recomputed = read_eia_carbon_csv(path, emission_factors=EIA_EMISSION_FACTORS).g_per_kwh
    np.testing.assert_allclose(recomputed, column, rtol=0, atol=1e-9)


def test_real_files__a_week_from_june_first_is_that_slice() -> None:
    """start and hours pick a window: time 0 is 2022-06-01 00:00 UTC, i.e. hour 151 x 24 of the year."""
    path = real(f"{EIA}/CISO_NG_&_avgCI.csv")
    year = read_eia_carbon_csv(path)
    week = read_eia_carbon_csv(path, start="2022-06-01 00:00", hours=168)
    first = 151 * 24
    np.testing.assert_array_equal(week.g_per_kwh, year.g_per_kwh[first : first + 168])
    assert week.filled is not None and year.filled is not None
    np.testing.assert_array_equal(week.filled, year.filled[first : first + 168])
    assert "2022-06-01 00:00:00+00:00" in week.name


def test_empty_rows__filled_by_linear_interpolation_and_flagged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Empty hours take the straight line between their valid neighbours; an empty first hour holds the next value."""
    path = eia_file(tmp_path, [None, (GEN, 100.0), (GEN, 200.0), None, None, (GEN, 500.0)])
    ci, counts = read_logged(caplog, path)
    assert ci.g_per_kwh.tolist() == [100.0, 100.0, 200.0, 300.0, 400.0, 500.0]
    assert ci.filled is not None and ci.filled.tolist() == [True, False, False, True, True, False]
    assert counts == {"empty-row": 3}


def test_implausible_hours__partial_generation_is_treated_as_missing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An hour with under 10 % of the median total generation is filled like an empty one; 10 % itself is kept."""
    rows = [(GEN, 300.0), ((1, 0, 0, 0, 1, 0, 0, 0), 42.0), (GEN, 500.0), ((10, 0, 0, 0, 10, 0, 0, 0), 250.0)]
    ci, counts = read_logged(caplog, eia_file(tmp_path, rows))
    assert ci.g_per_kwh.tolist() == [300.0, 400.0, 500.0, 250.0]
    assert counts == {"implausible-generation": 1}
    ci, counts = read_logged(caplog, eia_file(tmp_path, rows), max_drop=0.999)
    assert ci.g_per_kwh[1] == 42.0 and counts == {}


def test_frozen_rows__reported_and_kept(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Runs of identical consecutive rows are reported with their row count and kept as they are."""
    same = (GEN, 250.5)
    rows = [(GEN, 100.0), same, same, same, (GEN, 100.0), same, same]
    ci, counts = read_logged(caplog, eia_file(tmp_path, rows))
    assert counts == {"frozen-rows": 5}
    assert ci.g_per_kwh.tolist() == [100.0, 250.5, 250.5, 250.5, 100.0, 250.5, 250.5]
    assert "2 run(s)" in caplog.records[0].getMessage()


def test_emission_factors__recompute_from_the_mix(tmp_path: Path) -> None:
    """With factors given, the intensity is the generation-weighted mean factor, not the avg_CI column."""
    path = eia_file(tmp_path, [(GEN, 999.0), ((0, 0, 0, 0, 0, 300, 100, 0), 999.0)])
    assert read_eia_carbon_csv(path, emission_factors=EIA_EMISSION_FACTORS).g_per_kwh.tolist() == pytest.approx(
        [(11 * 100 + 490 * 100) / 200, (820 * 300 + 12 * 100) / 400]
    )


def test_start__rotates_the_file_so_the_window_can_wrap(tmp_path: Path) -> None:
    """The hours before start follow the last hour; a window past the end continues from the first."""
    path = eia_file(tmp_path, [(GEN, float(100 + k)) for k in range(5)])
    ci = read_eia_carbon_csv(path, start="2022-01-01T03:00:00Z", hours=4)
    assert ci.g_per_kwh.tolist() == [103.0, 104.0, 100.0, 101.0]
    assert read_eia_carbon_csv(path, start="2022-01-01 04:00+01:00").g_per_kwh[0] == 103.0


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([(GEN, 100.0), "100,,0,0,100,0,0,0,100"], r"line 3, column 'SUN': missing value \(a row holds all 9"),
        ([(GEN, 100.0), ((100, 0, 0, 0, -5, 0, 0, 0), 100.0)], r"line 3, column 'NG': value -5"),
        ([(GEN, -1.0)], r"line 2, column 'avg_CI': value -1"),
        ([(GEN, 100.0), (GEN, 2500.0)], r"line 3, column 'avg_CI': value 2500.*g/MWh"),
        ([(GEN, 0.25), (GEN, 0.3)], "looks like kg/kWh"),
        ([(GEN, 100.0), ((100, 0, 0, 0, "inf", 0, 0, 0), 100.0)], r"line 3, column 'NG': infinite value"),
        ([None, None], "no row reports any generation"),
        ([((0,) * 8, 100.0), ((0,) * 8, 100.0)], "no row reports any generation"),
        ([(GEN, 100.0), ("100,0,0,0,100,0,0,0,one hundred")], r"line 3, column 'avg_CI': non-numeric"),
    ],
    ids=[
        "partial-row", "negative-gen", "negative-ci", "g-per-MWh", "kg-per-kWh", "inf", "all-empty", "all-zero", "text",
    ],
)
def test_bad_values__name_file_line_and_column(tmp_path: Path, rows: list[Any], match: str) -> None:
    """Partly empty rows, negative, infinite or implausible values, no data at all: TraceError naming the place."""
    path = eia_file(tmp_path, rows)
    with pytest.raises(TraceError, match=match) as info:
        read_eia_carbon_csv(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("hours", "match"),
    [
        ([0, 1, 3], r"line 4, column 'timestamp': 7200 s after line 3"),
        ([0, 1, 1], r"line 4, column 'timestamp': the same time as line 3"),
        ([0, 2, 1], r"line 3, column 'timestamp': 7200 s after line 2"),
        ([1, 0], r"line 3, column 'timestamp': earlier than line 2"),
    ],
    ids=["gap", "duplicate", "unsorted", "reversed"],
)
def test_irregular_timestamps__name_the_line(tmp_path: Path, hours: list[int], match: str) -> None:
    """Times must step by exactly one hour: a gap, a duplicate or a step back names the line."""
    text = HEADER + "".join(f"{stamp(h)},100,0,0,0,100,0,0,0,250\n" for h in hours)
    with pytest.raises(TraceError, match=match):
        read_eia_carbon_csv(write(tmp_path / "ci.csv", text))


def test_missing_column__is_named(tmp_path: Path) -> None:
    """A file without avg_CI names the column."""
    path = write(tmp_path / "ci.csv", HEADER.replace(",avg_CI", "") + f"{stamp(0)},100,0,0,0,100,0,0,0\n")
    with pytest.raises(TraceError, match=r"missing column\(s\) 'avg_CI'"):
        read_eia_carbon_csv(path)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"start": "2022-01-01 00:30"}, "not an hour of the file, which runs from 2022-01-01 00:00:00"),
        ({"start": "2023-01-01 00:00"}, "not an hour of the file"),
        ({"start": "June"}, "is not a time"),
        ({"start": ""}, "is not a time"),
        ({"hours": 0}, r"hours must be a whole number in \[1, 3\]"),
        ({"hours": 4}, r"hours must be a whole number in \[1, 3\]"),
        ({"hours": 1.5}, "hours must be a whole number"),
        ({"emission_factors": {"NG": 490.0}}, "emission_factors must map exactly"),
        ({"emission_factors": {**EIA_EMISSION_FACTORS, "NG": -1.0}}, "finite g/kWh >= 0"),
        ({"max_drop": 1.0}, r"max_drop must be a number in \(0, 1\)"),
    ],
)
def test_bad_options__are_spec_errors(tmp_path: Path, kwargs: dict[str, Any], match: str) -> None:
    """A start that is not one of the file's hours, a window out of range, bad factors or threshold: SpecError."""
    path = eia_file(tmp_path, [(GEN, 100.0)] * 3)
    with pytest.raises(SpecError, match=match):
        read_eia_carbon_csv(path, **kwargs)


def test_read_eia_carbon_csv__hour_end_labels_shift_the_series_one_hour_later(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """With hour_label end, the hour starting at `start` is the row labelled an hour later; bad labels are refused."""
    rows = ["timestamp,WND,SUN,WAT,OIL,NG,COL,NUC,OTH,avg_CI"]
    for h in range(4):
        rows.append(f"2022-01-01 0{h}:00:00+00:00,1,0,0,0,1,0,0,0,{100 + 10 * h}")
    path = tmp_path / "X_NG_&_avgCI.csv"
    path.write_text("\n".join(rows) + "\n")
    start = read_eia_carbon_csv(path, start="2022-01-01 01:00")
    end = read_eia_carbon_csv(path, start="2022-01-01 01:00", hour_label="end")
    assert start.g_per_kwh.tolist() == [110.0, 120.0, 130.0, 100.0]
    assert end.g_per_kwh.tolist() == [120.0, 130.0, 100.0, 110.0]
    with pytest.raises(SpecError, match="hour_label"):
        read_eia_carbon_csv(path, hour_label="middle")
