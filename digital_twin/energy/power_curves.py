"""A node's wall power as a function of its cpu utilisation, and the SPECpower curves CloudSim uses.

* :class:`PowerCurve`: watts as a piecewise-linear, non-decreasing function of utilisation
  ``u`` in [0, 1], with :meth:`~PowerCurve.linear` and :meth:`~PowerCurve.from_specpower`
  constructors.
* :data:`SPECPOWER_CURVES`: the 7 SPECpower_ssj2008 servers of CloudSim, by short key
  (``"ibm-x3550-x5675"``); :func:`specpower_curve` looks one up with a helpful error.
* :func:`read_specpower_csv`: curves from a CSV with CloudSim's 11 points per server.

Units: utilisation is a fraction of the node's cores (0 = idle, 1 = every core busy); power is
average wall (AC) power in watts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import overload

import numpy as np

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.traces._checks import require_finite, require_range
from digital_twin.traces._io import FLOAT, TEXT, check_file, read_csv

SPECPOWER_COLUMNS = tuple(f"watts_{10 * k}pct" for k in range(11))
"""The 11 power columns of a SPECpower CSV: wall watts at 0 %, 10 %, ..., 100 % load."""
MAX_PLAUSIBLE_NODE_W = 50_000.0
"""Largest wall power (W) a reader accepts for one node; a larger value is likely milliwatts."""
MIN_PLAUSIBLE_PEAK_W = 1.0
"""Smallest full-load power (W) a reader accepts; a smaller one is likely kilowatts."""


@dataclass(frozen=True, eq=False)
class PowerCurve:
    """A node's wall power (W) as a piecewise-linear function of its cpu utilisation ``u``.

    Between two points the power is interpolated linearly, as CloudSim's
    ``PowerModelSpecPower.getPower`` does between its 10 % points.

    Attributes:
        points_u: ``(n_points,)`` float64, ``n_points >= 2``: utilisations, strictly increasing
            from exactly 0 to exactly 1. Stored read-only.
        watts: ``(n_points,)`` float64: wall power (W) at each point, finite, >= 0 and
            non-decreasing in ``u`` (more load never draws less power). Stored read-only.
        name: What the curve is (``"ibm-x3550-x5675"``), for messages.

    Raises:
        SpecError: Bad shapes or values; a curve whose power falls as ``u`` rises names the
            first point where it falls (``i`` indexes ``points_u``).

    >>> curve = PowerCurve.linear(100.0, 200.0)
    >>> curve.watts_at(0.25), curve.idle_w, curve.peak_w
    (125.0, 100.0, 200.0)
    """

    points_u: np.ndarray  # (n_points,)
    watts: np.ndarray  # (n_points,) W
    name: str = "power curve"

    def __post_init__(self) -> None:
        points = np.array(self.points_u, dtype=np.float64)
        watts = np.array(self.watts, dtype=np.float64)
        _check_curve(f"power curve {short_repr(self.name)}", points, watts)
        points.setflags(write=False)
        watts.setflags(write=False)
        object.__setattr__(self, "points_u", points)
        object.__setattr__(self, "watts", watts)

    @classmethod
    def linear(cls, idle_w: float, peak_w: float, name: str = "linear") -> PowerCurve:
        """The straight line from ``idle_w`` at ``u = 0`` to ``peak_w`` at ``u = 1``.

        Raises:
            SpecError: ``peak_w < idle_w``, or a negative or non-finite value.
        """
        return cls(np.array([0.0, 1.0]), np.array([idle_w, peak_w], dtype=np.float64), name)

    @classmethod
    def from_specpower(cls, watts_11: Sequence[float], name: str = "specpower") -> PowerCurve:
        """A curve from the 11 SPECpower values: wall watts at 0 % (active idle), 10 %, ..., 100 % load.

        >>> PowerCurve.from_specpower(range(100, 210, 10)).watts_at(0.55)
        155.0

        Raises:
            SpecError: Not exactly 11 values, or values a :class:`PowerCurve` refuses.
        """
        watts = np.asarray(watts_11, dtype=np.float64)
        if watts.shape != (11,):
            raise SpecError(
                f"power curve {short_repr(name)}: SPECpower needs 11 values (0, 10, ..., 100 %), "
                f"got shape {watts.shape}"
            )
        return cls(np.arange(11) / 10.0, watts, name)

    @property
    def idle_w(self) -> float:
        """Power (W) at ``u = 0``: the idle but powered-on node."""
        return float(self.watts[0])

    @property
    def peak_w(self) -> float:
        """Power (W) at ``u = 1``: every core busy."""
        return float(self.watts[-1])

    @overload
    def watts_at(self, u: float) -> float: ...

    @overload
    def watts_at(self, u: np.ndarray) -> np.ndarray: ...

    def watts_at(self, u: float | np.ndarray) -> float | np.ndarray:
        """Wall power (W) at utilisation ``u``, vectorised (``np.interp`` between the points).

        ``u`` is clipped to [0, 1]: a node's cpu demand is capped at its cores, so a utilisation
        above 1 (a sum of demands that oversubscribes the node) draws the full-load power, and
        one below 0 (round-off) draws the idle power. NaN stays NaN.

        Args:
            u: A utilisation, or an array of any shape of them.

        Returns:
            A float for a scalar ``u``, else a float64 array of ``u``'s shape.

        >>> curve = PowerCurve.linear(100.0, 200.0)
        >>> curve.watts_at(np.array([-0.1, 0.5, 1.7])).tolist()
        [100.0, 150.0, 200.0]
        """
        watts = np.interp(np.clip(u, 0.0, 1.0), self.points_u, self.watts)
        return float(watts) if np.ndim(u) == 0 else np.asarray(watts, dtype=np.float64)

    def min_slope_w(self) -> float:
        """The least slope of any segment, W per unit utilisation (>= 0).

        A lower bound on the marginal power of added load: for ``u0 < u1`` the secant slope
        ``(P(u1) - P(u0)) / (u1 - u0)`` is a weighted mean of the slopes of the segments the
        interval crosses (weights = the length of ``[u0, u1]`` inside each segment), so it is at
        least the least of them. Adding ``du`` of load therefore costs at least
        ``min_slope_w() * du`` watts wherever the node stands, whatever the curve's shape
        (concave or not). With clipping, load above ``u = 1`` adds nothing, so the bound holds
        only for the part of the load that stays within the node's cores.

        >>> curve = PowerCurve.from_specpower([58.4, 98, 109, 118, 128, 140, 153, 170, 189, 205, 222])
        >>> round(curve.min_slope_w(), 6)  # 109 -> 118 W from u = 0.2 to 0.3
        90.0
        """
        slopes = np.diff(self.watts) / np.diff(self.points_u)
        return float(max(slopes.min(), 0.0))

    def scaled(self, idle_w: float | None = None, peak_w: float | None = None) -> PowerCurve:
        """The same shape stretched between new idle and peak powers (e.g. for modern hardware).

        Each point keeps its fraction of the dynamic range: ``new(u) = idle' + (P(u) - idle) /
        (peak - idle) * (peak' - idle')``. A flat curve (``peak == idle``) has no shape to keep
        and becomes the straight line from ``idle'`` to ``peak'``.

        Args:
            idle_w: New power at ``u = 0`` (W); ``None`` keeps :attr:`idle_w`.
            peak_w: New power at ``u = 1`` (W); ``None`` keeps :attr:`peak_w`.

        Raises:
            SpecError: A new value is negative or not finite, or ``peak_w < idle_w``.

        >>> PowerCurve.from_specpower(range(100, 210, 10)).scaled(idle_w=50.0, peak_w=250.0).watts_at(0.5)
        150.0
        """
        new_idle = self.idle_w if idle_w is None else float(idle_w)
        new_peak = self.peak_w if peak_w is None else float(peak_w)
        if not (math.isfinite(new_idle) and math.isfinite(new_peak) and 0.0 <= new_idle <= new_peak):
            raise SpecError(
                f"power curve {short_repr(self.name)}: scaled needs 0 <= idle_w <= peak_w (finite W), "
                f"got idle_w={new_idle:g}, peak_w={new_peak:g}"
            )
        span = self.peak_w - self.idle_w
        shape = (self.watts - self.idle_w) / span if span > 0 else self.points_u
        name = f"{self.name} scaled to {new_idle:g}-{new_peak:g} W"
        return PowerCurve(self.points_u, new_idle + shape * (new_peak - new_idle), name)


def _check_curve(where: str, points: np.ndarray, watts: np.ndarray) -> None:
    """Refuse a curve :class:`PowerCurve` does not describe, naming the first bad point."""
    if points.ndim != 1 or watts.shape != points.shape or points.size < 2:
        raise SpecError(
            f"{where}: points_u and watts must be 1-D of one length >= 2, got shapes {points.shape} and {watts.shape}"
        )
    if not np.isfinite(points).all() or points[0] != 0.0 or points[-1] != 1.0:
        raise SpecError(f"{where}: points_u must run from exactly 0 to exactly 1, got {short_repr(points.tolist())}")
    if (bad := np.flatnonzero(np.diff(points) <= 0)).size:
        i = int(bad[0]) + 1
        raise SpecError(
            f"{where}: points_u must strictly increase, but point {i} (u = {points[i]:g}) is not above "
            f"u = {points[i - 1]:g}"
        )
    if (bad := np.flatnonzero(~(np.isfinite(watts) & (watts >= 0)))).size:
        i = int(bad[0])
        raise SpecError(f"{where}: watts must be finite and >= 0, got {watts[i]:g} at point {i} (u = {points[i]:g})")
    if (bad := np.flatnonzero(np.diff(watts) < 0)).size:
        i = int(bad[0]) + 1
        raise SpecError(
            f"{where}: power must not fall as utilisation rises, but point {i} (u = {points[i]:g}) has "
            f"{watts[i]:g} W, below {watts[i - 1]:g} W at u = {points[i - 1]:g}"
        )


# SPECpower_ssj2008 results as CloudSim encodes them: the `power` arrays of CloudSim's
# PowerModelSpecPower* classes (org.cloudbus.cloudsim.power.models; CloudSim Plus carries the same
# numbers), whose javadoc asks users to cite A. Beloglazov and R. Buyya, Concurrency and
# Computation: Practice and Experience 24(13):1397-1420, 2012. They were not re-checked against
# SPEC's pages. Caveats: the hardware is old (2-core Pentium D to 6-core Westmere, 2009-2011;
# idle/peak from 0.26 to 0.74): scale before using for modern servers (PowerCurve.scaled). The
# ML110 G3 and G4 classes cite the same SPEC result yet differ, so one citation is wrong. The
# curves are not all concave: the two x3550 rows jump by ~40 W from 0 % to 10 % load, then rise
# almost linearly, so a linear idle-to-peak model is ~23 W low at 10 % on them.
_SPECPOWER: tuple[tuple[str, str, tuple[float, ...]], ...] = (
    # key, CloudSim class (server, cpu), wall watts at 0, 10, ..., 100 % load
    ("hp-ml110-g3", "PowerModelSpecPowerHpProLiantMl110G3PentiumD930",  # 1 x Pentium D930, 2 cores
     (105, 112, 118, 125, 131, 137, 147, 153, 157, 164, 169)),
    ("hp-ml110-g4", "PowerModelSpecPowerHpProLiantMl110G4Xeon3040",  # 1 x Xeon 3040, 2 cores
     (86, 89.4, 92.6, 96, 99.5, 102, 106, 108, 112, 114, 117)),
    ("hp-ml110-g5", "PowerModelSpecPowerHpProLiantMl110G5Xeon3075",  # 1 x Xeon 3075, 2 cores
     (93.7, 97, 101, 105, 110, 116, 121, 125, 129, 133, 135)),
    ("ibm-x3250-x3470", "PowerModelSpecPowerIbmX3250XeonX3470",  # 1 x Xeon X3470, 4 cores
     (41.6, 46.7, 52.3, 57.9, 65.4, 73, 80.7, 89.5, 99.6, 105, 113)),
    ("ibm-x3250-x3480", "PowerModelSpecPowerIbmX3250XeonX3480",  # 1 x Xeon X3480, 4 cores
     (42.3, 46.7, 49.7, 55.4, 61.8, 69.3, 76.1, 87, 96.1, 106, 113)),
    ("ibm-x3550-x5670", "PowerModelSpecPowerIbmX3550XeonX5670",  # 2 x Xeon X5670, 12 cores
     (66, 107, 120, 131, 143, 156, 173, 191, 211, 229, 247)),
    ("ibm-x3550-x5675", "PowerModelSpecPowerIbmX3550XeonX5675",  # 2 x Xeon X5675, 12 cores
     (58.4, 98, 109, 118, 128, 140, 153, 170, 189, 205, 222)),
)
SPECPOWER_CURVES = MappingProxyType({key: PowerCurve.from_specpower(w, key) for key, _, w in _SPECPOWER})
"""Short key (``"hp-ml110-g4"``) -> the server's SPECpower curve, as CloudSim encodes it (read-only)."""
CLOUDSIM_CLASSES = MappingProxyType({key: cls for key, cls, _ in _SPECPOWER})
"""Short key -> the CloudSim class that holds the curve (the ``cloudsim_class`` of a SPECpower CSV)."""


def specpower_curve(key: str) -> PowerCurve:
    """The bundled SPECpower curve named ``key`` (see :data:`SPECPOWER_CURVES`).

    >>> specpower_curve("ibm-x3550-x5675").watts_at(0.87)  # CloudSim's own test: 189 + 0.7 * (205 - 189)
    200.2

    Raises:
        SpecError: Unknown key; the message lists the known ones.
    """
    if key not in SPECPOWER_CURVES:
        raise SpecError(f"unknown SPECpower curve {short_repr(key)}; known: {sorted(SPECPOWER_CURVES)}")
    return SPECPOWER_CURVES[key]


def read_specpower_csv(path: str | Path) -> dict[str, PowerCurve]:
    """Read SPECpower curves from a CSV, one server per row, keyed by its ``cloudsim_class``.

    Format: a header naming at least ``cloudsim_class`` and ``watts_0pct``, ``watts_10pct``,
    ..., ``watts_100pct`` (wall watts at 0 %, ..., 100 % load); other columns (``server``,
    ``cpu_model``, ``spec_result_url``, ...) are read, so a ragged row is caught, but not used.
    Every row needs every column.

    Returns:
        ``cloudsim_class`` -> its curve (named after the class), in file order.

    Raises:
        TraceError: Naming the file, line and column: a missing file or column, an empty,
            non-numeric, NaN or negative value, a value above :data:`MAX_PLAUSIBLE_NODE_W`
            (milliwatts?), a 100 % value below :data:`MIN_PLAUSIBLE_PEAK_W` (kilowatts?), power
            that falls as load rises, an empty or repeated ``cloudsim_class``.
    """
    path = check_file(path)
    frame, where = read_csv(path, dtypes={"cloudsim_class": TEXT, **dict.fromkeys(SPECPOWER_COLUMNS, FLOAT)})
    columns = []
    for column in SPECPOWER_COLUMNS:
        values = require_finite(frame, column, where)
        require_range(frame, column, values, where, 0.0, MAX_PLAUSIBLE_NODE_W, " (watts per server: milliwatts?)")
        columns.append(values)
    watts = np.column_stack(columns)  # (n_rows, 11)
    records = frame.index.to_numpy(np.int64)
    if (low := np.flatnonzero(watts[:, -1] < MIN_PLAUSIBLE_PEAK_W)).size:
        raise TraceError(
            f"{path}: {where(int(records[low[0]]))}, column 'watts_100pct': {watts[low[0], -1]:g} W at full "
            f"load is below {MIN_PLAUSIBLE_PEAK_W:g} W: the file looks like kilowatts (the format is watts)"
        )
    falls = np.argwhere(np.diff(watts, axis=1) < 0)
    if falls.size:
        row, col = (int(x) for x in falls[0])
        raise TraceError(
            f"{path}: {where(int(records[row]))}, column {SPECPOWER_COLUMNS[col + 1]!r}: {watts[row, col + 1]:g} W "
            f"is below {watts[row, col]:g} W at {SPECPOWER_COLUMNS[col]!r}: power must not fall as load rises"
        )
    curves: dict[str, PowerCurve] = {}
    first_record: dict[str, int] = {}
    for row, (record, name) in enumerate(zip(records, frame["cloudsim_class"], strict=True)):
        if not isinstance(name, str) or not name.strip():
            raise TraceError(f"{path}: {where(int(record))}, column 'cloudsim_class': missing value")
        if name in curves:
            raise TraceError(
                f"{path}: {where(int(record))}, column 'cloudsim_class': {short_repr(name)} repeats "
                f"{where(first_record[name])}"
            )
        curves[name] = PowerCurve.from_specpower(watts[row], name)
        first_record[name] = int(record)
    return curves
