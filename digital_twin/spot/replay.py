"""Replayed spot capacity: spot nodes go down and come back where availability traces say.

A *group* of ``k`` spot nodes is mapped to one trace of ``N`` instances
(:class:`~digital_twin.traces.spot_availability.SpotTrace`); node ``r`` of the group
(``0 <= r < k``, in the order given) is up during a tick iff ``count * k > r * N``: with
``k == N`` node ``r`` is up iff more than ``r`` instances are; with ``k == 1`` it is up iff any
instance is; with ``N == 1`` the whole group goes down and comes back together (the
correlated loss of one zone's capacity of one instance type).

An episode replays the traces from ``start_s`` seconds into them (the same offset for every
trace): episode time ``t`` is trace time ``start_s + t``. A maximal run of down ticks
``[a, b)`` of a node is an outage: an interruption at ``a * gap - start_s`` (0 when the node is
down at the start) and a recovery at ``b * gap - start_s`` (``inf`` when the trace ends down).
The outages are given to the twin as fixed interruptions with their recoveries
(:attr:`~digital_twin.spec.TwinSpec.fixed_recoveries_s`): the oracle sees all of them, an
online agent only those that have come (:meth:`~digital_twin.DigitalTwin.known_spec`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.spot.poisson import Interruptions, Recoveries
from digital_twin.traces.spot_availability import SpotTrace


@dataclass(frozen=True)
class SpotGroup:
    """Spot nodes replaying one trace.

    Attributes:
        trace: The availability trace.
        nodes: Fleet indices of the group's nodes, in the order of their thresholds (``r``).
    """

    trace: SpotTrace
    nodes: tuple[int, ...]

    def up_ticks(self, first: int, last: int) -> np.ndarray:
        """``(k, last - first)`` bool: node ``r`` of the group up during ticks ``first..last-1``."""
        counts = self.trace.counts[first:last]
        k, n = len(self.nodes), self.trace.instances
        return counts[None, :] * k > (np.arange(k) * n)[:, None]


@dataclass(frozen=True)
class SpotReplay:
    """Every spot node's availability from a trace.

    Attributes:
        groups: The node groups and their traces (each spot node in exactly one group).
        n_nodes: Fleet size.
        start_s: Offset into the traces, seconds; ``None``: drawn per episode
            (:meth:`draw_start_s`).
    """

    groups: tuple[SpotGroup, ...]
    n_nodes: int
    start_s: float | None = None

    def __post_init__(self) -> None:
        mapped = [i for group in self.groups for i in group.nodes]
        if len(set(mapped)) != len(mapped):
            twice = sorted({i for i in mapped if mapped.count(i) > 1})
            raise SpecError(f"spot replay: node(s) {twice} are mapped to more than one trace")
        if any(not 0 <= i < self.n_nodes for i in mapped):
            raise SpecError(f"spot replay: a node index is outside 0..{self.n_nodes - 1}")

    def latest_start_s(self, horizon_s: float) -> float:
        """The largest offset at which every trace covers the episode ``[0, horizon_s)``.

        Raises:
            SpecError: A trace is shorter than the episode (names it and its span).
        """
        shortest = min(self.groups, key=lambda group: group.trace.span_s).trace
        if shortest.span_s < horizon_s:
            raise SpecError(
                f"{shortest.path}: the spot trace covers {shortest.span_s:g} s "
                f"({shortest.n_ticks} ticks of {shortest.gap_s:g} s), shorter than the horizon of {horizon_s:g} s"
            )
        return shortest.span_s - horizon_s

    def draw_start_s(self, rng: np.random.Generator, horizon_s: float) -> float:
        """The episode's offset: ``start_s`` when fixed, else uniform in ``[0, latest_start_s]``.

        Raises:
            SpecError: A fixed ``start_s`` leaves a trace shorter than the episode.
        """
        latest = self.latest_start_s(horizon_s)
        if self.start_s is None:
            return float(rng.uniform(0.0, latest))
        if self.start_s > latest:
            raise SpecError(f"spot replay: start_s = {self.start_s:g} s leaves a trace shorter than the episode "
                            f"(the latest start is {latest:g} s)")
        return self.start_s

    def outages(self, start_s: float, horizon_s: float) -> tuple[Interruptions, Recoveries]:
        """Per node, its interruptions in ``[0, horizon_s)`` and their ends, replayed from ``start_s``."""
        times: list[tuple[float, ...]] = [()] * self.n_nodes
        ends: list[tuple[float, ...]] = [()] * self.n_nodes
        for group in self.groups:
            trace = group.trace
            first = int(start_s // trace.gap_s)
            up = group.up_ticks(first, trace.n_ticks)  # to the trace's end: an outage's end is exact
            for row, node in enumerate(group.nodes):
                times[node], ends[node] = _down_runs(up[row], first, trace.gap_s, start_s, horizon_s)
        return tuple(times), tuple(ends)


def _down_runs(
    up: np.ndarray, first: int, gap_s: float, start_s: float, horizon_s: float
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The outages of one node whose ticks ``first, first + 1, ...`` (to the trace's end) are ``up``."""
    down = np.concatenate(([False], ~up, [False])).astype(np.int8)
    edges = np.diff(down)
    begins = np.flatnonzero(edges == 1) + first
    stops = np.flatnonzero(edges == -1) + first
    times: list[float] = []
    ends: list[float] = []
    for a, b in zip(begins.tolist(), stops.tolist(), strict=True):
        at = max(0.0, a * gap_s - start_s)
        end = math.inf if b == first + len(up) else b * gap_s - start_s
        if at < horizon_s and end > 0.0:
            times.append(at)
            ends.append(end)
    return tuple(times), tuple(ends)
