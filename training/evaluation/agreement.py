"""How an episode compares with its planted schedule: the optimum, and per-step agreement with the planted action.

On a planted scenario (:mod:`digital_twin.planted`) every episode comes with a schedule proven
optimal, and the env names the current job's planted node
(:meth:`aco_env.ClusterSchedulingEnv.planted_action`, hindsight). Playing an episode,
:class:`PlantedTracker` compares each action with it; :class:`PlantedScore` is the result:

* ``optimum_usd``: the proven optimum of the episode (the gap ``objective / optimum - 1`` is exact);
* ``agreement``: the share of the agent's decisions (env steps, invalid actions included) whose
  action is the planted action of that decision;
* ``on_trajectory``: the share of its decisions taken while still on the planted trajectory,
  i.e. every earlier valid action was the planted one. An invalid action changes nothing, so it
  does not leave the trajectory (it counts as a disagreement).

Agreement is a diagnostic, not optimality: several schedules can be optimal (identical nodes,
equal-cost swaps, a job deferred and started later at the same instant), so an agent at the
optimum may disagree, and one decision off the trajectory puts every later state off it.

>>> tracker = PlantedTracker(optimum_usd=4.5)
>>> for action, planted, valid in [(0, 0, True), (5, 1, False), (1, 1, True), (2, 0, True), (0, 0, True)]:
...     tracker.record(action, planted, valid)
>>> score = tracker.score()
>>> score.agreement, score.on_trajectory  # 3 of 5 agreed; the first 4 were taken on the trajectory
(0.6, 0.8)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym

from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import planted_of


@dataclass(frozen=True)
class PlantedScore:
    """One episode against its planted schedule.

    Attributes:
        optimum_usd: The episode's proven optimum (USD).
        agreement: Share in [0, 1] of the decisions whose action was the planted action.
        on_trajectory: Share in [0, 1] of the decisions taken on the planted trajectory.
    """

    optimum_usd: float
    agreement: float
    on_trajectory: float

    KEYS: ClassVar[tuple[str, ...]] = ("planted_optimum_usd", "planted_agreement", "planted_on_trajectory")
    """Their names in a results.json row, in field order."""

    def metrics(self) -> dict[str, float]:
        """The three numbers under their results.json names."""
        values = (self.optimum_usd, self.agreement, self.on_trajectory)
        return {key: float(value) for key, value in zip(self.KEYS, values, strict=True)}


class PlantedTracker:
    """Counts, decision by decision, agreement with the planted action and whether the trajectory still holds.

    Attributes:
        on_trajectory: The state of the next decision is on the planted trajectory (every
            valid action so far was the planted one).
    """

    def __init__(self, optimum_usd: float) -> None:
        self.optimum_usd = optimum_usd
        self.on_trajectory = True
        self._decisions = 0
        self._agreed = 0
        self._on_trajectory = 0

    def record(self, action: int | None, planted: int, valid: bool) -> None:
        """One decision: the action taken (``None``: not an action index), the planted one, and whether it was valid."""
        agreed = action == planted
        self._decisions += 1
        self._agreed += agreed
        self._on_trajectory += self.on_trajectory
        if valid and not agreed:
            self.on_trajectory = False

    def score(self) -> PlantedScore:
        """The shares so far (both 1 for an episode without decisions: nothing disagreed)."""
        if not self._decisions:
            return PlantedScore(self.optimum_usd, 1.0, 1.0)
        return PlantedScore(self.optimum_usd, self._agreed / self._decisions, self._on_trajectory / self._decisions)


def planted_tracker(env: gym.Env) -> PlantedTracker | None:
    """A tracker for the episode ``env`` was just reset to, or ``None`` when it has no planted schedule."""
    base = env.unwrapped
    episode = planted_of(base) if isinstance(base, ClusterSchedulingEnv) else None
    return None if episode is None else PlantedTracker(episode.optimum_usd)
