"""Node power curves: the PowerCurve contract, the bundled SPECpower table and the SPECpower CSV reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from digital_twin.energy import CLOUDSIM_CLASSES, SPECPOWER_CURVES, PowerCurve, read_specpower_csv, specpower_curve
from digital_twin.energy.power_curves import SPECPOWER_COLUMNS
from digital_twin.errors import SpecError, TraceError
from tests.digital_twin.energy.files import POWER_MODELS, real, write

HEADER = "cloudsim_class,server," + ",".join(SPECPOWER_COLUMNS) + "\n"
RAMP = ",".join(str(w) for w in range(100, 210, 10))


def specpower_file(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    return write(tmp_path / "specpower.csv", header + "".join(row + "\n" for row in rows))


def test_specpower_curve__matches_cloudsims_own_test() -> None:
    """x3550 X5675 at u = 0.87 draws 189 + 0.7 * (205 - 189) W, as CloudSim's unit test asserts."""
    assert specpower_curve("ibm-x3550-x5675").watts_at(0.87) == pytest.approx(189 + 0.7 * (205 - 189))


def test_bundled_table__seven_servers_all_valid_with_idle_and_peak_of_the_source() -> None:
    """The 7 CloudSim servers are bundled, each with its CloudSim class and the published idle and peak."""
    assert len(SPECPOWER_CURVES) == 7 and set(CLOUDSIM_CLASSES) == set(SPECPOWER_CURVES)
    assert (specpower_curve("hp-ml110-g4").idle_w, specpower_curve("hp-ml110-g4").peak_w) == (86.0, 117.0)
    assert (specpower_curve("ibm-x3550-x5670").idle_w, specpower_curve("ibm-x3550-x5670").peak_w) == (66.0, 247.0)
    for curve in SPECPOWER_CURVES.values():
        assert curve.points_u.size == 11 and not curve.watts.flags.writeable


def test_bundled_table__equals_the_real_csv() -> None:
    """Every bundled curve equals the row of its CloudSim class in the real specpower_servers.csv."""
    curves = read_specpower_csv(real(f"{POWER_MODELS}/specpower_servers.csv"))
    assert set(curves) == set(CLOUDSIM_CLASSES.values())
    for key, cloudsim_class in CLOUDSIM_CLASSES.items():
        np.testing.assert_array_equal(curves[cloudsim_class].watts, SPECPOWER_CURVES[key].watts)


def test_specpower_curve__unknown_key_lists_the_known_ones() -> None:
    """An unknown key is a SpecError listing the bundled keys."""
    with pytest.raises(SpecError, match=r"unknown SPECpower curve 'dell'.*hp-ml110-g3"):
        specpower_curve("dell")


def test_watts_at__vectorised_clipped_and_exact_at_the_points() -> None:
    """Arrays keep their shape, u outside [0, 1] is clipped, and the points themselves are hit exactly."""
    curve = specpower_curve("ibm-x3250-x3470")
    np.testing.assert_array_equal(curve.watts_at(curve.points_u), curve.watts)
    u = np.array([[-0.5, 0.0], [1.0, 3.0]])
    assert curve.watts_at(u).tolist() == [[41.6, 41.6], [113.0, 113.0]]
    assert isinstance(curve.watts_at(0.3), float)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(st.floats(0.0, 500.0), min_size=1, max_size=12),
    idle=st.floats(0.0, 300.0),
    pairs=st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)), min_size=1, max_size=20),
)
def test_min_slope__is_below_every_secant_slope(
    steps: list[float], idle: float, pairs: list[tuple[float, float]]
) -> None:
    """For any non-decreasing curve and any u0 < u1, min_slope_w() <= (P(u1) - P(u0)) / (u1 - u0)."""
    points = np.linspace(0.0, 1.0, len(steps) + 1)
    curve = PowerCurve(points, idle + np.concatenate(([0.0], np.cumsum(steps))))
    for u0, u1 in pairs:
        lo, hi = min(u0, u1), max(u0, u1)
        if hi - lo < 1e-6:
            continue
        secant = (curve.watts_at(hi) - curve.watts_at(lo)) / (hi - lo)
        assert curve.min_slope_w() <= secant + 1e-6 * max(1.0, abs(secant))


def test_min_slope__of_the_bundled_curves_on_random_pairs() -> None:
    """The same bound on every bundled curve, on 2,000 seeded random pairs each."""
    rng = np.random.default_rng(0)
    u = np.sort(rng.random((2000, 2)), axis=1)
    u = u[u[:, 1] - u[:, 0] > 1e-9]
    for curve in SPECPOWER_CURVES.values():
        secants = (curve.watts_at(u[:, 1]) - curve.watts_at(u[:, 0])) / (u[:, 1] - u[:, 0])
        assert curve.min_slope_w() <= secants.min() + 1e-9
        assert curve.min_slope_w() > 0


def test_scaled__keeps_the_shape_between_new_idle_and_peak() -> None:
    """Scaling maps idle and peak to the new values and keeps each point's fraction of the range."""
    curve = specpower_curve("ibm-x3550-x5675")
    scaled = curve.scaled(idle_w=100.0, peak_w=400.0)
    assert (scaled.idle_w, scaled.peak_w) == (100.0, 400.0)
    fraction = (curve.watts - curve.idle_w) / (curve.peak_w - curve.idle_w)
    np.testing.assert_allclose((scaled.watts - 100.0) / 300.0, fraction)
    assert curve.scaled().watts.tolist() == pytest.approx(curve.watts.tolist())
    assert PowerCurve.linear(50.0, 50.0).scaled(peak_w=150.0).watts_at(0.5) == 100.0
    with pytest.raises(SpecError, match="0 <= idle_w <= peak_w"):
        curve.scaled(idle_w=300.0, peak_w=200.0)


@pytest.mark.parametrize(
    ("points", "watts", "match"),
    [
        ([0.0, 0.5, 0.4, 1.0], [1, 2, 3, 4], r"strictly increase, but point 2 \(u = 0.4\)"),
        ([0.1, 1.0], [1, 2], "from exactly 0 to exactly 1"),
        ([0.0, 0.9], [1, 2], "from exactly 0 to exactly 1"),
        ([0.0, 1.0], [1, 2, 3], "1-D of one length"),
        ([0.0], [1], "1-D of one length"),
        ([0.0, 0.5, 1.0], [10, -1, 20], r"finite and >= 0, got -1 at point 1"),
        ([0.0, 0.5, 1.0], [10, np.nan, 20], r"finite and >= 0, got nan at point 1"),
        ([0.0, 0.5, 1.0], [10, 30, 20], r"'bent'.*point 2 \(u = 1\) has 20 W, below 30 W at u = 0.5"),
    ],
)
def test_power_curve__refuses_bad_curves_naming_the_first_bad_point(
    points: list[float], watts: list[float], match: str
) -> None:
    """Unsorted or short points, negative or NaN watts, and a non-monotone curve are SpecErrors."""
    with pytest.raises(SpecError, match=match):
        PowerCurve(np.array(points), np.array(watts, dtype=float), "bent")


def test_from_specpower__needs_eleven_values() -> None:
    """from_specpower refuses anything but 11 values."""
    with pytest.raises(SpecError, match="11 values"):
        PowerCurve.from_specpower([1.0] * 10)


def test_read_specpower_csv__reads_a_small_file(tmp_path: Path) -> None:
    """Curves are keyed by cloudsim_class, in file order, other columns ignored."""
    path = specpower_file(tmp_path, f"B,srv,{RAMP}", f"A,srv,{RAMP}")
    curves = read_specpower_csv(path)
    assert list(curves) == ["B", "A"] and curves["A"].watts_at(0.55) == pytest.approx(155.0)


@pytest.mark.parametrize(
    ("rows", "header", "match"),
    [
        ((f"A,srv,{RAMP}",), HEADER.replace("watts_50pct", "w50"), r"missing column\(s\) 'watts_50pct'"),
        (("A,srv,100,110,,130,140,150,160,170,180,190,200",), HEADER, r"line 2, column 'watts_20pct': missing value"),
        (("A,srv,100,110,NaN,130,140,150,160,170,180,190,200",), HEADER, r"line 2, column 'watts_20pct': missing"),
        ((f"A,srv,{RAMP}", "B,srv,-1,110,120,130,140,150,160,170,180,190,200"), HEADER, r"line 3, column 'watts_0pct'"),
        (("A,srv,100,110,120,130,125,150,160,170,180,190,200",), HEADER, r"line 2, column 'watts_40pct': 125 W is"),
        (("A,srv,0.1,0.11,0.12,0.13,0.14,0.15,0.16,0.17,0.18,0.19,0.2",), HEADER, "looks like kilowatts"),
        (("A,srv,1e5,1e5,1e5,1e5,1e5,1e5,1e5,1e5,1e5,1e5,1e5",), HEADER, "milliwatts"),
        ((f"A,srv,{RAMP}", f"A,other,{RAMP}"), HEADER, r"line 3, column 'cloudsim_class': 'A' repeats line 2"),
        ((f",srv,{RAMP}",), HEADER, r"line 2, column 'cloudsim_class': missing value"),
        ((f"A,srv,{RAMP}", f"B,srv,{RAMP},extra"), HEADER, r"line 3 has 14 fields, expected 13"),
        (("A,srv,100,110",), HEADER, r"line 2 has 4 field\(s\), expected 13"),
    ],
    ids=[
        "missing-column", "empty", "nan", "negative", "non-monotone", "kW", "mW", "duplicate", "no-name", "long-row",
        "short-row",
    ],
)
def test_read_specpower_csv__bad_files_name_file_line_and_column(
    tmp_path: Path, rows: tuple[str, ...], header: str, match: str
) -> None:
    """Each malformed file is a TraceError whose message names the file and the line and column at fault."""
    path = specpower_file(tmp_path, *rows, header=header)
    with pytest.raises(TraceError, match=match) as info:
        read_specpower_csv(path)
    assert str(path) in str(info.value)
