"""The placement rules' state: the tallies of running jobs per domain, and what a start and an end do to them.

:mod:`digital_twin.sim.tables.rule_checks` holds the tables and the checks (read by the event
loop's fit test and by the views); this feature keeps the tallies they check against.
"""

from __future__ import annotations

from typing import Final

from digital_twin.objective import PENALTY_INDEX
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import CoreState, Feature
from digital_twin.sim.tables.rule_checks import RuleTables, count_running, preference_weight

_PREFERENCES: Final = PENALTY_INDEX["preferences"]


class RuleState(Feature):
    """The tallies of an episode with placement rules.

    Attributes:
        counts: Per tally of the rules, its running jobs per domain.
        moved: Whether a start or an end changed ``counts`` since the last pass began (every node
            is then among the nodes that gained room: :meth:`tallies_moved`).
    """

    def __init__(self, counts: list[list[int]], moved: bool) -> None:
        self.counts = counts
        self.moved = moved

    @classmethod
    def of(cls, c: TwinConstants) -> RuleState | None:
        """Empty tallies; ``None`` without rules."""
        return None if c.rules is None else cls(c.rules.empty_counts(), False)

    def copy(self) -> RuleState:
        """An independent copy."""
        return RuleState([per_domain.copy() for per_domain in self.counts], self.moved)

    def __reduce__(self) -> tuple[type[RuleState], tuple[object, ...]]:
        """Pickle by its fields (compiled, the class has no default pickling)."""
        return RuleState, (self.counts, self.moved)

    def tallies_moved(self, s: CoreState, c: TwinConstants) -> None:
        """The tallies changed: any node may now fit a parked job (every node counts as gained).

        ``moved`` stays set until the next pass has looked at the parked jobs
        (:func:`digital_twin.sim.event_loop.handle_events_at`), so a start in one pass wakes the
        jobs parked before it at the next.
        """
        if not self.moved:
            self.moved = True
            s.gained_nodes.extend(range(c.n_nodes))

    # ------------------------------------------------------------------ hooks
    def on_start(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        """Job ``j`` joins its tallies; the ``preferences`` term counts the weight its placement breaks.

        The weight is judged before ``j`` counts (a job never breaks a rule against itself).
        """
        tables = _tables(c)
        s.counts[_PREFERENCES] += preference_weight(self.counts, tables, j, i)
        count_running(self.counts, tables, j, i, 1)
        if tables.dynamic:
            self.tallies_moved(s, c)  # a start can raise a spread's minimum elsewhere

    def on_end(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        """Job ``j`` leaves its tallies."""
        tables = _tables(c)
        count_running(self.counts, tables, j, i, -1)
        if tables.dynamic:
            self.tallies_moved(s, c)  # an end can lift an anti-affinity or a cap beyond its node


def _tables(c: TwinConstants) -> RuleTables:
    """The episode's rules (it has some: the feature is on)."""
    tables = c.rules
    assert tables is not None
    return tables
