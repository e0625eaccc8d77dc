"""The placement rules that depend on what runs where, judged at each decision (compiled with the twin).

:mod:`digital_twin.sim.tables.rule_tables` turns a scenario's rules into :class:`RuleTables`; the
rules about the node alone (node affinity, node selector, ``NoSchedule`` taints, nodes without
a required constraint's topology key) are folded into each job's static candidates there, and
this module judges the rest against *tallies*. A tally counts running jobs per domain of one
topology key (a domain is a value of that node label: a node, a rack, a zone); a job adds 1 to
each tally in its ``updates`` while it runs (:func:`count_running`). A :data:`Check` of job
``j`` on node ``i`` reads the tally's count ``n`` in ``i``'s domain:

* ``ANTI``: broken when ``n > 0`` (pod anti-affinity: a selected job runs in the domain);
* ``CAP``: broken when ``n + own > limit`` (``max_per_domain``; ``own`` is 1 when ``j`` is
  itself selected);
* ``SKEW``: broken when ``n + own - min(count of the eligible domains) > limit`` (``max_skew``).

A node outside every domain of the key (it lacks the label) breaks no check. Required checks
take nodes out of the fit (:func:`breaks_required`); each broken preferred check adds its
weight to the ``preferences`` term when the job starts (:func:`preference_weight`), as does
the job's static preference weight on the node (preferred node affinity, ``PreferNoSchedule``
taints). A scenario without rules has no tables (``TwinConstants.rules`` is ``None``) and
none of this runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

ANTI: Final = 0
CAP: Final = 1
SKEW: Final = 2

Check = tuple[int, int, int, int, tuple[int, ...]]
"""``(kind, tally, own, limit, eligible domains)``: ``kind`` one of ANTI, CAP, SKEW; ``own`` 0 or 1;
``limit`` ``max_per_domain`` or ``max_skew`` (unused by ANTI); ``eligible`` the domains a SKEW's
minimum runs over (empty otherwise)."""


@dataclass(frozen=True, slots=True, eq=False)
class RuleTables:
    """An episode's placement rules as tables (``M`` jobs, ``N`` nodes, ``T`` tallies).

    Attributes:
        required: ``(M,)`` per job, the checks a node must not break.
        preferred: ``(M,)`` per job, ``(check, weight)``: what breaking each one counts.
        static_preference: ``(M,)`` per job, ``(N,)`` the weight placing it on each node counts
            whatever runs (jobs without such rules share one list of zeros).
        updates: ``(M,)`` per job, the tallies it counts in while it runs.
        domain_of: ``(T, N)`` per tally, each node's domain (``-1``: the node lacks the key).
        n_domains: ``(T,)`` the number of domains of each tally's key.
        dynamic: Whether any job has a check: starts and ends then change fits beyond the node.
    """

    required: list[tuple[Check, ...]]
    preferred: list[tuple[tuple[Check, float], ...]]
    static_preference: list[list[float]]
    updates: list[tuple[int, ...]]
    domain_of: list[list[int]]
    n_domains: list[int]
    dynamic: bool

    def empty_counts(self) -> list[list[int]]:
        """``(T, domains)`` zeros: the tallies when nothing runs."""
        return [[0] * n for n in self.n_domains]


def breaks(counts: list[list[int]], tables: RuleTables, check: Check, i: int) -> bool:
    """Whether placing the check's job on node ``i`` now breaks ``check`` (see the module docstring)."""
    kind, tally, own, limit, eligible = check
    domain = tables.domain_of[tally][i]
    if domain < 0:
        return False
    per_domain = counts[tally]
    n = per_domain[domain]
    if kind == ANTI:
        return n > 0
    if kind == CAP:
        return n + own > limit
    least = n
    for e in eligible:
        if per_domain[e] < least:
            least = per_domain[e]
    return n + own - least > limit


def breaks_required(counts: list[list[int]], tables: RuleTables, j: int, i: int) -> bool:
    """Whether job ``j`` on node ``i`` now breaks one of its required checks."""
    for check in tables.required[j]:  # noqa: SIM110  (a plain loop: compiled, it makes no generator)
        if breaks(counts, tables, check, i):
            return True
    return False


def preference_weight(counts: list[list[int]], tables: RuleTables, j: int, i: int) -> float:
    """What placing job ``j`` on node ``i`` now counts in the ``preferences`` term (0: no preference broken)."""
    weight = tables.static_preference[j][i]
    for check, check_weight in tables.preferred[j]:
        if breaks(counts, tables, check, i):
            weight += check_weight
    return weight


def count_running(counts: list[list[int]], tables: RuleTables, j: int, i: int, delta: int) -> None:
    """Add ``delta`` (+1 at a start, -1 at an end) for job ``j`` on node ``i`` to each tally it counts in."""
    domain_of = tables.domain_of
    for tally in tables.updates[j]:
        domain = domain_of[tally][i]
        if domain >= 0:
            counts[tally][domain] += delta
