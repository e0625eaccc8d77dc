"""Placement rules the oracle's programs can keep: caps on how many jobs of a group one node holds.

A required rule judged when a job starts (:mod:`digital_twin.sim.tables.rule_checks`) is in general not a
constraint on the schedule at every moment (a spread's skew can grow when jobs end). Two kinds
are: on a topology key whose every domain is one node (``topology_key: node``),

* ``max_per_domain: L`` held by every job the constraint counts: no start ever makes the count
  exceed ``L``, and ends only lower it, so at every moment a node runs at most ``L`` of them;
* a required anti-affinity to a job's own group (replicas apart) held by every job of the group:
  at most one of them per node at every moment.

:func:`node_caps` finds them; the programs add one row per node and usage time, like a capacity
(:func:`agents.oracle.milp.rows.capacity_rows`). A bound stays a bound: every schedule the twin
allows keeps these caps at every moment, and the program's runs (their cores) are parts of the
twin's runs. The other required rules are left out (the programs' schedules are a superset).

Example:
    >>> from digital_twin import JobSpec, default_fleet
    >>> from digital_twin.sim.tables.rule_tables import compile_rules
    >>> from digital_twin.placement.rules import PlacementRules
    >>> batch = {"match_labels": {"workload": "batch"}}
    >>> rules = PlacementRules.parse({"rules": [{"topology_spread_constraints": [
    ...     {"max_per_domain": 2, "topology_key": "node", "label_selector": batch}]}]})
    >>> jobs = [JobSpec("a", 0, 60, "batch", 1, 1), JobSpec("b", 0, 60, "stream", 1, 1)]
    >>> [(members.tolist(), cap) for members, cap in node_caps(compile_rules(rules, default_fleet(), jobs))]
    [([True, False], 2)]
"""

from __future__ import annotations

import numpy as np

from digital_twin.sim.tables.rule_checks import ANTI, CAP
from digital_twin.sim.tables.rule_tables import CompiledRules

NodeCap = tuple[np.ndarray, int]
"""``(members, cap)``: ``(J,)`` bool, the jobs counted; at most ``cap`` of them on a node at once."""


def node_caps(placement: CompiledRules) -> tuple[NodeCap, ...]:
    """The caps of ``placement`` that hold at every moment (see the module docstring)."""
    tables = placement.tables
    n_jobs = len(tables.updates)
    caps = []
    for tally, domain_of in enumerate(tables.domain_of):
        if -1 in domain_of or len(set(domain_of)) != len(domain_of):
            continue  # a node outside the key, or a domain of several nodes
        members = np.array([tally in updates for updates in tables.updates], dtype=bool)
        holders = np.zeros(n_jobs, dtype=bool)
        limits = set()
        for j, checks in enumerate(tables.required):
            for kind, checked, own, limit, _ in checks:
                if checked == tally and own == 1 and kind in (ANTI, CAP):
                    holders[j] = True
                    limits.add(1 if kind == ANTI else limit)  # ANTI: no other member beside it
        if members.any() and np.array_equal(members, holders) and len(limits) == 1:
            caps.append((members, limits.pop()))
    return tuple(caps)
