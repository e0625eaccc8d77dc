"""The spot outages of an episode, as the twin holds them: fixed at reset, read when a node goes down.

Which outages an episode has (given by its spec or drawn at reset) and what of them is known
at a decision are :mod:`digital_twin.spot`'s; the twin schedules each interruption at reset, and
when one comes looks up here when its node is up again.
"""

from __future__ import annotations

import bisect

from digital_twin.spot.poisson import Interruptions, Recoveries


class Outages:
    """Per node, its interruption times and when each ends (never changed: copies share it).

    Attributes:
        interruptions_s: Per node, the spot interruption times of this episode, sorted.
        recoveries_s: Per node, when each interruption ends (same shape; ``inf``: not in the episode).
    """

    def __init__(self, interruptions_s: Interruptions, recoveries_s: Recoveries) -> None:
        self.interruptions_s = interruptions_s
        self.recoveries_s = recoveries_s

    @classmethod
    def none(cls, n_nodes: int) -> Outages:
        """No outage on any of ``n_nodes`` nodes."""
        empty: tuple[tuple[float, ...], ...] = tuple(() for _ in range(n_nodes))
        return cls(empty, empty)

    def copy(self) -> Outages:
        """The same object: nothing in it changes."""
        return self

    def __reduce__(self) -> tuple[type[Outages], tuple[Interruptions, Recoveries]]:
        """Pickle by its fields (compiled, the class has no default pickling)."""
        return Outages, (self.interruptions_s, self.recoveries_s)

    def end_s(self, i: int, now_s: float) -> float:
        """When node ``i``'s latest interruption at or before ``now_s`` ends (the node must have one)."""
        return self.recoveries_s[i][bisect.bisect_right(self.interruptions_s[i], now_s) - 1]

    def count(self) -> int:
        """Interruptions in the episode, all nodes."""
        return sum(len(times) for times in self.interruptions_s)
