"""Co-location interference: declared slowdowns between jobs sharing a node (compiled with the twin).

A scenario's ``placement.interference`` entries (:class:`digital_twin.placement.rules.Interference`)
each name a *victim* and an *aggressor* selector and a ``slowdown``. While a job the victim
selector picks runs on a node where at least one *other* running job is picked by the
aggressor selector, that entry slows it: the job progresses at

    rate = base rate / (1 + sum of the slowdowns of its entries whose aggressor is present)

nominal seconds per second, the base rate being the node's processor-sharing rate
(:mod:`digital_twin.sim.tables.contention`; 1 without contention). Presence counts, not numbers: two
replay buffers beside a service slow it as much as one (a simple, stated choice). The slowdown
models what cpu sharing does not: memory bandwidth, caches, the network (a latency-critical
service beside a "replay buffer" memory hog loses its P99).

Jobs with the same victim entries, and the same aggressor entries among those, progress at one
rate on a node: they form a *lane*. A node keeps one work clock per lane with jobs
(:mod:`digital_twin.sim.event_handlers`; clock ``q = lane * N + node``), exactly as it keeps one
under contention alone, so the twin stays event-driven and exact: rates change only at ticks
and at a start or an end on the node, where every lane's clock is settled at its old rate.
Without entries there is one lane, clock ``q`` is the node, and none of this runs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, eq=False)
class InterferenceTables:
    """An episode's interference entries resolved per job (``M`` jobs, ``L`` lanes, ``E`` entries).

    Attributes:
        n_entries: ``E``.
        n_lanes: ``L`` (lane 0: victim of nothing).
        lane_of: ``(M,)`` each job's lane.
        victim_entries: ``(L,)`` per lane, ``(entry, slowdown, own)``: the entries its jobs are
            victims of, ``own`` 1 when they are that entry's aggressors too (a job never slows
            itself: another aggressor must run beside it).
        aggressor_entries: ``(M,)`` per job, the entries it is an aggressor of.
        max_slowdown: ``(M,)`` per job, the sum of its entries' slowdowns (its slowest factor is
            ``1 / (1 + max_slowdown)``).
    """

    n_entries: int
    n_lanes: int
    lane_of: list[int]
    victim_entries: list[tuple[tuple[int, float, int], ...]]
    aggressor_entries: list[tuple[int, ...]]
    max_slowdown: list[float]


def lane_factor(aggressors: list[int], tables: InterferenceTables, lane: int, i: int, n_nodes: int) -> float:
    """The factor ``1 / (1 + slowdowns present)`` of ``lane``'s jobs on node ``i``.

    ``aggressors``: ``(E * N,)`` running aggressors per entry and node (index ``entry * N + node``).
    """
    total = 0.0
    for entry, slowdown, own in tables.victim_entries[lane]:
        if aggressors[entry * n_nodes + i] > own:
            total += slowdown
    return 1.0 / (1.0 + total)


def count_aggressor(
    aggressors: list[int], tables: InterferenceTables, j: int, i: int, n_nodes: int, delta: int
) -> None:
    """Add ``delta`` (+1 at a start, -1 at an end) for job ``j`` on node ``i`` to each entry it is an aggressor of."""
    for entry in tables.aggressor_entries[j]:
        aggressors[entry * n_nodes + i] += delta
