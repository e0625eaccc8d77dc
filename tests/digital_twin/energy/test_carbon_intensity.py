"""Carbon intensity: the step function, its wrap-around, exact integrals, and the generic CSV reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from digital_twin.energy import CarbonIntensity, read_carbon_csv
from digital_twin.errors import SpecError, TraceError
from tests.digital_twin.energy.files import write


def test_at__steps_at_tick_boundaries_and_wraps_both_ways() -> None:
    """Tick k holds [start + k tick, start + (k + 1) tick); times past the end or before the start wrap."""
    ci = CarbonIntensity(np.array([10.0, 20.0, 30.0]), tick_s=60.0, start_s=100.0)
    assert [ci.at(t) for t in (100.0, 159.999, 160.0, 279.0, 280.0, 99.0, 100.0 + 180.0 * 5)] == [
        10.0, 10.0, 20.0, 30.0, 10.0, 30.0, 10.0,
    ]
    np.testing.assert_array_equal(ci.at(np.array([[100.0], [220.0]])), [[10.0], [30.0]])


def test_integral__exact_against_a_brute_force_sum_on_random_intervals() -> None:
    """On 500 seeded random whole-second intervals (some spanning several periods), the integral equals
    the sum of the per-second values."""
    rng = np.random.default_rng(7)
    values = rng.uniform(0.0, 800.0, size=24)
    ci = CarbonIntensity(values, tick_s=30.0, start_s=45.0)
    t0 = rng.integers(-2000, 3000, size=500)
    t1 = t0 + rng.integers(0, 2500, size=500)
    exact = ci.g_per_kwh_integral(t0.astype(float), t1.astype(float))
    for a, b, got in zip(t0, t1, exact, strict=True):
        brute = ci.at(np.arange(a, b) + 0.5).sum()  # one value per second, read mid-second
        assert got == pytest.approx(brute, rel=1e-9, abs=1e-6)


def test_integral__scalars_give_floats_and_fractional_ends_are_exact() -> None:
    """A sub-tick interval integrates to value * length; a scalar call returns a float."""
    ci = CarbonIntensity(np.array([100.0, 300.0]), tick_s=3600.0)
    result = ci.g_per_kwh_integral(3000.0, 4000.0)
    assert isinstance(result, float) and result == pytest.approx(600 * 100.0 + 400 * 300.0)
    assert ci.g_per_kwh_integral(0.0, 10 * 7200.0) == pytest.approx(10 * 3600.0 * 400.0)
    assert ci.mean_g_per_kwh(0.0, 7200.0) == 200.0 and ci.mean_g_per_kwh(5.0, 5.0) == 100.0


def test_grams__a_kilowatt_hour_at_the_intensity() -> None:
    """1 kW for 1 h at c g/kWh emits c g; vectorised over powers."""
    ci = CarbonIntensity(np.array([100.0, 300.0]), tick_s=3600.0)
    assert ci.grams(0.0, 3600.0, 1000.0) == pytest.approx(100.0)
    np.testing.assert_allclose(ci.grams(0.0, 7200.0, np.array([500.0, 2000.0])), [200.0, 800.0])


def test_constant__holds_everywhere() -> None:
    """The constant fallback has one value at every time."""
    ci = CarbonIntensity.constant(420.0)
    assert ci.at(-1e7) == ci.at(3.3e8) == 420.0
    assert ci.g_per_kwh_integral(-50.0, 1e6) == pytest.approx(420.0 * (1e6 + 50.0))


@pytest.mark.parametrize(
    ("values", "kwargs", "match"),
    [
        ([100.0, -1.0], {}, r"tick 1: -1 g/kWh is not a finite number >= 0"),
        ([100.0, np.nan], {}, r"tick 1: nan g/kWh"),
        ([np.inf], {}, r"tick 0: inf g/kWh"),
        ([], {}, "at least one value"),
        ([[1.0, 2.0]], {}, "1-D"),
        ([450_000.0], {}, r"above 2000.*g/MWh"),
        ([1.0], {"tick_s": 0.0}, "tick_s must be a finite number > 0"),
        ([1.0], {"start_s": float("nan")}, "start_s must be a finite number"),
    ],
)
def test_carbon_intensity__refuses_bad_series(values: list[float], kwargs: dict[str, Any], match: str) -> None:
    """Negative, NaN, infinite or implausibly large values, empty series, bad tick or start: SpecError."""
    with pytest.raises(SpecError, match=match):
        CarbonIntensity(np.array(values), **kwargs)


def test_integral__refuses_reversed_or_non_finite_intervals() -> None:
    """t1 < t0 or a NaN time is a SpecError, not a silent negative or NaN."""
    ci = CarbonIntensity.constant(100.0)
    with pytest.raises(SpecError, match="before its start"):
        ci.g_per_kwh_integral(np.array([0.0, 10.0]), np.array([5.0, 5.0]))
    with pytest.raises(SpecError, match="finite seconds"):
        ci.at(float("nan"))


def test_read_carbon_csv__time_s_form(tmp_path: Path) -> None:
    """time_s rows give the tick (inferred) and the start; values are read in order."""
    path = write(tmp_path / "ci.csv", "time_s,g_per_kwh\n600,100\n1500,200\n2400,300\n")
    ci = read_carbon_csv(path)
    assert (ci.tick_s, ci.start_s, ci.g_per_kwh.tolist()) == (900.0, 600.0, [100.0, 200.0, 300.0])
    assert ci.at(0.0) == 300.0  # before the start: wraps to the last tick


def test_read_carbon_csv__timestamp_form_converts_offsets_to_utc(tmp_path: Path) -> None:
    """ISO timestamps with offsets are one hour apart in UTC; time 0 is the first row."""
    text = "timestamp,g_per_kwh,note\n2022-06-01T02:00+02:00,100,a\n2022-06-01 01:00,200,b\n2022-06-01T02:00Z,300,c\n"
    ci = read_carbon_csv(write(tmp_path / "ci.csv", text))
    assert (ci.tick_s, ci.start_s, ci.n_ticks) == (3600.0, 0.0, 3)
    assert "2022-06-01T02:00+02:00" in ci.name


def test_read_carbon_csv__one_row_needs_a_tick(tmp_path: Path) -> None:
    """A one-row file cannot show its tick: tick_s must be given."""
    path = write(tmp_path / "ci.csv", "time_s,g_per_kwh\n0,100\n")
    with pytest.raises(TraceError, match="pass tick_s"):
        read_carbon_csv(path)
    assert read_carbon_csv(path, tick_s=3600.0).at(1e6) == 100.0


@pytest.mark.parametrize(
    ("text", "kwargs", "match"),
    [
        ("time,g_per_kwh\n0,1\n", {}, "no time column"),
        ("time_s,timestamp,g_per_kwh\n0,2022-01-01,1\n", {}, "both 'time_s' and 'timestamp'"),
        ("time_s,gco2\n0,100\n", {}, r"missing column\(s\) 'g_per_kwh'"),
        ("time_s;g_per_kwh\n0;100\n", {}, "wrong delimiter"),
        ("time_s,g_per_kwh\n0,100\n3600,\n", {}, r"line 3, column 'g_per_kwh': missing value"),
        ("time_s,g_per_kwh\n0,100\n3600,-5\n", {}, r"line 3, column 'g_per_kwh': value -5"),
        ("time_s,g_per_kwh\n0,100\n3600,450000\n", {}, r"line 3, column 'g_per_kwh'.*g/MWh"),
        ("time_s,g_per_kwh\n0,0.4\n3600,0.35\n", {}, "looks like kg/kWh"),
        ("time_s,g_per_kwh\n0,100\n3600,100\n10800,100\n", {}, r"line 4, column 'time_s': 7200 s after line 3"),
        ("time_s,g_per_kwh\n0,100\n3600,100\n3600,100\n", {}, r"line 4, column 'time_s': the same time as line 3"),
        ("time_s,g_per_kwh\n0,100\n3600,100\n1800,100\n", {}, r"line 4, column 'time_s': earlier than line 3"),
        ("time_s,g_per_kwh\n0,100\n1800,100\n", {"tick_s": 3600.0}, r"line 3.*expected one tick of 3600 s"),
        ("timestamp,g_per_kwh\n2022-01-01 00:00,100\n2022-13-01 00:00,100\n", {}, r"line 3.*'2022-13-01 00:00' is not"),
        ("timestamp,g_per_kwh\n2022-01-01 00:00,100\n,100\n", {}, r"line 3, column 'timestamp': missing timestamp"),
    ],
    ids=[
        "no-time", "two-times", "missing-column", "semicolons", "empty", "negative", "g-per-MWh", "kg-per-kWh",
        "gap", "duplicate", "unsorted", "wrong-tick", "bad-timestamp", "empty-timestamp",
    ],
)
def test_read_carbon_csv__bad_files_name_file_line_and_column(
    tmp_path: Path, text: str, kwargs: dict[str, Any], match: str
) -> None:
    """Each malformed file is a TraceError naming the file and the line and column at fault."""
    path = write(tmp_path / "ci.csv", text)
    with pytest.raises(TraceError, match=match) as info:
        read_carbon_csv(path, **kwargs)
    assert str(path) in str(info.value)
