"""The interference entries of a scenario resolved for one episode's jobs: lanes and aggressors.

:func:`compile_interference` gives :class:`~digital_twin.sim.tables.interference.InterferenceTables`: per job,
the entries whose victim selector picks it (they decide its *lane*, with whether it is that
entry's aggressor too) and the entries whose aggressor selector picks it.

Example:
    >>> from digital_twin import JobSpec
    >>> from digital_twin.placement.rules import PlacementRules
    >>> rules = PlacementRules.parse({"interference": [{
    ...     "victim": {"match_labels": {"workload": "latency-critical"}},
    ...     "aggressor": {"match_labels": {"workload": "batch"}}, "slowdown": 0.5}]})
    >>> jobs = [JobSpec("a", 0, 60, "latency-critical", 1, 1), JobSpec("b", 0, 60, "batch", 1, 1)]
    >>> tables = compile_interference(rules, [{"workload": j.workload} for j in jobs])
    >>> tables.lane_of, tables.victim_entries, tables.aggressor_entries
    ([1, 0], [(), ((0, 0.5, 0),)], [(), (0,)])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from digital_twin.placement.rules import PlacementRules
from digital_twin.sim.tables.interference import InterferenceTables


def compile_interference(rules: PlacementRules, labels: Sequence[Mapping[str, str]]) -> InterferenceTables | None:
    """The tables of ``rules.interference`` for jobs with ``labels`` (``None``: no entries)."""
    entries = rules.interference
    if not entries:
        return None
    lanes: dict[tuple[tuple[int, float, int], ...], int] = {(): 0}
    lane_of, aggressor_entries, max_slowdown = [], [], []
    for job in labels:
        aggressor = tuple(e for e, entry in enumerate(entries) if entry.aggressor.matches(job))
        victim = tuple(
            (e, entry.slowdown, int(e in aggressor)) for e, entry in enumerate(entries) if entry.victim.matches(job)
        )
        lane_of.append(lanes.setdefault(victim, len(lanes)))
        aggressor_entries.append(aggressor)
        max_slowdown.append(sum(slowdown for _, slowdown, _ in victim))
    return InterferenceTables(
        n_entries=len(entries),
        n_lanes=len(lanes),
        lane_of=lane_of,
        victim_entries=list(lanes),
        aggressor_entries=aggressor_entries,
        max_slowdown=max_slowdown,
    )
