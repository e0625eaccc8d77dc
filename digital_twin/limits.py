"""Stated limits on the sizes a scenario may ask for, checked before anything is allocated.

A scenario's numbers decide how much memory an episode takes: ``horizon_s / tick_s``
telemetry ticks, times the fleet's nodes; the jobs a generator draws or a file holds; the
nodes a fleet generates. A slip (``tick_s: 1.0e-6``, a rate in jobs per hour read as jobs per
second) would otherwise ask for hundreds of GiB, hang, or fail deep inside numpy with a
traceback. Each size is checked against a :class:`Limits` first, and an error says which
limit and how to raise it.

The defaults are generous: every bundled scenario and the real traces the project reads stay
far below them, more than ten times (``spotgpu4278-alibaba2026`` has the most nodes, 4,278, with
150 daily ticks and 7,255 jobs; ``fleet500-synthetic`` has 500 nodes, 72 ticks and about 5,400
synthetic arrivals; the largest node list read has 4,278 rows; the Azure VM trace has 8,640
ticks). A scenario file raises a limit with a top-level mapping::

    limits: {max_ticks: 5000000, max_jobs: 2000000}

Two limits guard the scenario file itself and are checked before its text is parsed, so only
the caller can raise them (``load_scenario(path, limits=Limits(max_scenario_bytes=...))``):
a file cannot vouch for its own size.

Two limits bound every data file a scenario reads (traces, job files, node lists), before
anything is allocated for it: ``max_trace_bytes`` (checked by ``stat`` before the file is opened,
and counted again while a ``.gz``/``.bz2``/``.xz`` file is decompressed, in chunks) and
``max_decompression_ratio`` (a decompression bomb, a few MB that expand to GB, is refused after
its first hundred MB). A scenario's readers apply its limits (:func:`applied_limits`, set while its
data is read); a reader called directly applies :func:`limits_in_force`, the defaults unless a
caller set others.

Example:
    >>> Limits().check("max_ticks", 48, "horizon_s / tick_s = 48 ticks")
    >>> try:
    ...     Limits(max_ticks=10).check("max_ticks", 48, "horizon_s / tick_s = 48 ticks")
    ... except ValueError as exc:
    ...     print(exc)
    horizon_s / tick_s = 48 ticks is above limits.max_ticks = 10; raise it with `limits: {max_ticks: N}` in the scenario
"""

from __future__ import annotations

import dataclasses
import math
from contextvars import ContextVar
from dataclasses import dataclass

from digital_twin.errors import SpecError, short_repr

FILE_LIMITS = ("max_scenario_bytes", "max_yaml_nodes")
"""Limits checked before a scenario file is parsed (the file cannot raise them)."""


@dataclass(frozen=True)
class Limits:
    """Largest sizes a scenario may ask for (each an integer >= 1)."""

    max_scenario_bytes: int = 4 * 1024 * 1024
    """Size of a scenario file in bytes (4 MiB; the bundled files are under 3 KB), checked by
    ``stat`` before the file is read."""
    max_yaml_nodes: int = 1_000_000
    """YAML values (scalars, lists, mappings) in a scenario once aliases (``*name``) are
    expanded; a few anchors for reuse stay far below, an alias bomb ("billion laughs") does
    not."""
    max_nodes: int = 100_000
    """Nodes in the fleet, and rows read from a node list (the Alibaba GPU 2023 list has 1,523, the spot-GPU 2026
    table 4,278)."""
    max_jobs: int = 1_000_000
    """Jobs in an episode: the job budget, a job file's jobs, and the arrivals the synthetic
    generator draws (``base_rate_per_s x (1 + diurnal_amplitude) x horizon_s``, all drawn
    before the budget applies)."""
    max_horizon_s: int = 315_360_000
    """The episode horizon in seconds (ten years; public traces span days to a few years). Spot
    interruptions are drawn over all of it, however coarse the telemetry ticks."""
    max_ticks: int = 1_000_000
    """Telemetry ticks over the horizon (:mod:`digital_twin.tick_grid`), checked as
    ``horizon_s / tick_s <= max_ticks`` (a year of 30 s ticks)."""
    max_telemetry_cells: int = 10_000_000
    """Telemetry ticks x nodes (160 MB of float64 cpu and mem values)."""
    max_trace_bytes: int = 1024**3
    """Bytes of one data file (a trace, a job file, a node list) once decompressed (1 GiB; the
    largest trace the project reads has 2 MB): checked by ``stat`` before the file is opened, and
    counted while a compressed file is decompressed."""
    max_decompression_ratio: int = 100
    """Decompressed bytes per compressed byte of a ``.gz``, ``.bz2`` or ``.xz`` data file, checked
    as it is decompressed once past its first MiB (CSV traces compress 5 to 20 times; a
    decompression bomb, zeros compressed a thousand times, is refused after about 100 MiB)."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SpecError(f"limits.{field.name} must be an integer >= 1, got {short_repr(value)}")

    def check(self, name: str, value: float, what: str) -> None:
        """Raise unless ``value <= self.<name>``.

        Args:
            name: A field of this class, e.g. ``"max_ticks"``.
            value: The size asked for (may be a float, e.g. an expected job count).
            what: How the size arose, e.g. ``"horizon_s / tick_s = 1e+18 ticks"``.

        Raises:
            SpecError: ``"<what> is above limits.<name> = <limit>; raise it with ..."``.
        """
        limit = getattr(self, name)
        if not value <= limit:  # also refuses NaN
            raise SpecError(f"{what} is above limits.{name} = {limit:,}; {self.how_to_raise(name)}")

    @staticmethod
    def how_to_raise(name: str) -> str:
        """The sentence that says where the limit ``name`` is set."""
        if name in FILE_LIMITS:
            return f"raise it with load_scenario(path, limits=Limits({name}=N))"
        return f"raise it with `limits: {{{name}: N}}` in the scenario"


_IN_FORCE: ContextVar[Limits | None] = ContextVar("digital_twin_limits", default=None)


def limits_in_force() -> Limits:
    """The limits the data readers apply here: those of :func:`applied_limits`, else the defaults."""
    return _IN_FORCE.get() or Limits()


def applied_limits(limits: Limits) -> AppliedLimits:
    """Make ``limits`` the ones the data readers apply while the block runs (this thread or task only).

    >>> with applied_limits(Limits(max_trace_bytes=10)):
    ...     limits_in_force().max_trace_bytes
    10
    >>> limits_in_force().max_trace_bytes == Limits().max_trace_bytes
    True
    """
    return AppliedLimits(limits)


class AppliedLimits:
    """:func:`applied_limits`'s context manager (a class: entered at every env reset, where a generator costs more)."""

    __slots__ = ("_limits", "_token")

    def __init__(self, limits: Limits) -> None:
        self._limits = limits

    def __enter__(self) -> Limits:
        self._token = _IN_FORCE.set(self._limits)
        return self._limits

    def __exit__(self, *exc_info: object) -> None:
        _IN_FORCE.reset(self._token)


def count(value: float) -> str:
    """A size for a message: ``1,234`` up to a trillion, ``1.23e+18`` beyond (or ``inf``).

    >>> count(12345), count(1e18), count(2.5)
    ('12,345', '1e+18', '2.5')
    """
    if not math.isfinite(value):
        return str(value)
    if value >= 1e12:
        return f"{value:.3g}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"
