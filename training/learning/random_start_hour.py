"""Domain randomisation of the clock: every training episode starts at a random hour of day.

The twin never reads the hour of day: it only labels the observation's clock features
(``hour_sin``, ``hour_cos``; :class:`aco_env.ClusterSchedulingEnv`). A scenario fixes it at time 0
(``start_hour``), so a policy trained on one scenario sees a few hours only (``fleet5-synthetic``:
6 to 10) and reads the clock as a proxy for whatever else those hours had in common. Played at
another hour it extrapolates: the model trained without this deferred 88 % of the first
latency-critical requests of ``fleet5-azure-llm`` (hour 18) with the on-demand GPU node idle, and
placed every one of them at once when the same episode was labelled hour 7
(docs/results.md, "Generalisation"). Drawing the hour per training episode keeps the feature
(it is honest information and a scenario's later terms may depend on it) but leaves nothing to
learn from it that the episode does not also say.

The hour of episode ``seed`` is :func:`episode_start_hour`: a generator of its own, so the
episode's other draws are those of ``reset(seed)`` without randomisation.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

_STREAM = 0x5C10C
"""Mixed into the seed: the clock's generator is never the episode's own."""
HOURS_PER_DAY = 24.0


def episode_start_hour(seed: int) -> float:
    """The hour of day at time 0 of episode ``seed``: uniform in [0, 24), the same for the same seed.

    >>> episode_start_hour(0) == episode_start_hour(0), 0.0 <= episode_start_hour(7) < 24.0
    (True, True)
    """
    return float(np.random.default_rng((seed, _STREAM)).uniform(0.0, HOURS_PER_DAY))


class StartHours:
    """One env's start hours, episode after episode: a seeded reset's is the seed's, the next ones follow from it.

    A reset with a seed draws that seed's hour (:func:`episode_start_hour`); a reset without one
    (a vector env's automatic resets) the next episode's from a generator that seed started, so
    a seeded sequence of episodes has the same hours every time.
    """

    def __init__(self) -> None:
        self._hours = np.random.default_rng(_STREAM)

    def __call__(self, seed: int | None) -> float:
        """The start hour of the episode a reset with ``seed`` (``None``: none) begins."""
        if seed is not None:
            self._hours = np.random.default_rng((seed, _STREAM, 1))
            return episode_start_hour(seed)
        return float(self._hours.uniform(0.0, HOURS_PER_DAY))


class RandomStartHour(gym.Wrapper):
    """Resets ``env`` with ``options={"start_hour": h}``, ``h`` drawn per episode (:class:`StartHours`).

    Options given to ``reset`` are passed on, their ``start_hour`` replaced.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._hours = StartHours()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """The env's reset with this episode's start hour."""
        return self.env.reset(seed=seed, options={**(options or {}), "start_hour": self._hours(seed)})
