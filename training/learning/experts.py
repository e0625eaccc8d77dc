"""Which expert labels a task's states for imitation (DAgger, behaviour cloning); no torch here.

:mod:`training.learning.train_checks` checks a run's expert before anything heavy loads, and
:mod:`training.learning.imitation` runs it.
"""

from __future__ import annotations

from digital_twin.scenario import Scenario

AUTO_EXPERT = "auto"
"""The expert name that picks per task: ``planted`` on planted scenarios (proven optimal labels along the
planted schedule), ``lookahead`` elsewhere (:func:`expert_for`)."""


def expert_for(expert: str, scenario: Scenario) -> str:
    """The agent that labels ``scenario``'s states: ``expert``, or for :data:`AUTO_EXPERT` the best kind for it.

    >>> import scenarios
    >>> expert_for("auto", scenarios.load("planted5")), expert_for("auto", scenarios.load("toy3"))
    ('planted', 'lookahead')
    >>> expert_for("aco", scenarios.load("planted5"))
    'aco'
    """
    if expert != AUTO_EXPERT:
        return expert
    return "planted" if scenario.planted else "lookahead"
