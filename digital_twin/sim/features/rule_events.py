"""What a start and an end do to the placement rules' state (compiled with the twin).

:mod:`digital_twin.sim.event_handlers` calls these only when the episode has rules
(``TwinConstants.rules`` is not ``None``); :mod:`digital_twin.sim.features.rule_checks` holds the checks.
"""

from __future__ import annotations

from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.features.rule_checks import count_running, preference_weight
from digital_twin.sim.state import TwinState


def rules_at_start(s: TwinState, c: TwinConstants, j: int, i: int) -> float:
    """Job ``j`` starts on node ``i``: it joins its tallies; returns the preference weight its placement breaks.

    The weight is judged before ``j`` counts (a job never breaks a rule against itself).
    """
    rules = c.rules
    assert rules is not None
    weight = preference_weight(s.rule_counts, rules, j, i)
    count_running(s.rule_counts, rules, j, i, 1)
    if rules.dynamic:
        tallies_moved(s, c)  # a start can raise a spread's minimum elsewhere
    return weight


def rules_at_end(s: TwinState, c: TwinConstants, j: int, i: int) -> None:
    """Job ``j``'s run on node ``i`` ends: it leaves its tallies."""
    rules = c.rules
    assert rules is not None
    count_running(s.rule_counts, rules, j, i, -1)
    if rules.dynamic:
        tallies_moved(s, c)  # an end can lift an anti-affinity or a cap beyond its node


def tallies_moved(s: TwinState, c: TwinConstants) -> None:
    """The tallies changed: any node may now fit a parked job (every node counts as gained).

    ``s.tallies_moved`` stays set until the next pass has looked at the parked jobs
    (:func:`digital_twin.sim.event_loop.handle_events_at`), so a start in one pass wakes the jobs
    parked before it at the next.
    """
    if not s.tallies_moved:
        s.tallies_moved = True
        s.gained_nodes.extend(range(c.n_nodes))
