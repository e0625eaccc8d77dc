"""The lookahead's clairvoyant twin: the same rollouts from the present, in the true future (hindsight).

At every decision the ``lookahead-clairvoyant`` agent continues the env's own twin into the
episode's *true* spec, both read through the privileged :mod:`aco_env.hindsight`
(``twin_continued_of``, ``hindsight_of``: every job's arrival and true duration, the spot
interruptions drawn for the episode, the whole telemetry): the continued twin is a copy of the
env's twin (:meth:`digital_twin.DigitalTwin.continued_in` is exact). From its snapshot it takes each valid
action and plays the episode to the horizon by the lookahead's rollout rule
(:func:`agents.rollouts.cheapest_charge`), one rollout per action; the action of least final
objective wins, ties to the lowest node. Nothing is sampled: its decisions are a function of
the episode and the decisions before (the seed is not used).

It is a **hindsight** agent (registered ``hindsight=True``), not an online policy. Beside
``lookahead`` (the same planning in sampled futures, :mod:`agents.lookahead`) and ``oracle``
(the plan of an exact program with hindsight) it splits an agent's distance to the oracle:
``lookahead - lookahead-clairvoyant`` is what knowing the future is worth to this planner,
``lookahead-clairvoyant - oracle`` what its planning (one action, then a fixed rule) leaves.
The rollout rule is a heuristic, so neither part is a bound: the clairvoyant agent may end
worse than the online one on an episode.

Its rollout objective is exact about the true future: the one of the action it takes is the
episode's final objective if the episode then follows the rollout rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym

from aco_env import ClusterView
from aco_env.hindsight import hindsight_of, twin_continued_of
from agents.base import register_agent
from agents.lookahead import LookaheadAgent
from digital_twin import DigitalTwin, TwinSpec


class ClairvoyantLookaheadAgent(LookaheadAgent):
    """Rollouts from the present in the episode's true future (see the module docstring).

    Args:
        env: The env (``env.unwrapped`` must offer ``cluster_view()``, ``known_twin()``,
            ``config.deferral``; its future is read with :func:`aco_env.hindsight.hindsight_of`).
        rollout_window_s: As the lookahead's (``None``: to the end of the episode).
        candidates: As the lookahead's (``None``: every fitting node is tried).

    Raises:
        ValueError: A bad ``rollout_window_s`` or ``candidates``.
        TypeError: The env offers no ``known_twin()``.
    """

    name = "lookahead-clairvoyant"

    def __init__(
        self, env: gym.Env[Any, Any], rollout_window_s: float | None = None, candidates: int | None = None
    ) -> None:
        super().__init__(env, samples=1, rollout_window_s=rollout_window_s, candidates=candidates)
        self._hindsight = env  # read through aco_env.hindsight.hindsight_of
        self._truth: TwinSpec | None = None
        self._truth_of: TwinSpec | None = None  # the env's spec _truth was built from (held: its id stays its own)

    def _futures(self, view: ClusterView) -> Iterator[DigitalTwin]:
        """The one future: the episode's own (its spec, with the interruptions drawn for it)."""
        del view  # the present is the env's twin's
        yield twin_continued_of(self._hindsight, self._true_spec())

    def _true_spec(self) -> TwinSpec:
        """The episode's spec with its drawn interruptions given (built again only for another episode)."""
        hindsight = hindsight_of(self._hindsight)
        spec, interruptions = hindsight.spec, hindsight.interruptions_s
        truth = self._truth
        if truth is None or self._truth_of is not spec or truth.fixed_interruptions_s != interruptions:
            truth = hindsight.replayable_spec()
            self._truth, self._truth_of = truth, spec
        return truth


def make_lookahead_clairvoyant(env: gym.Env[Any, Any], **options: Any) -> ClairvoyantLookaheadAgent:
    """Factory registered as ``"lookahead-clairvoyant"`` (a hindsight agent)."""
    return ClairvoyantLookaheadAgent(env, **options)


register_agent("lookahead-clairvoyant", make_lookahead_clairvoyant, hindsight=True)
