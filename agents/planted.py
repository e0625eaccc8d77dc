"""The ``planted`` expert: on a planted episode, the planted schedule's node for each job (hindsight).

A planted episode (:mod:`digital_twin.planted`) comes with a schedule proven optimal: each job
on its planted node from its arrival. The expert reads it from the env
(:meth:`aco_env.ClusterSchedulingEnv.planted_action`), so it knows the future: it is registered
with ``hindsight=True``, for evaluation (its objective is the proven optimum), for labelling
training states (DAgger, ``aco-env export-planted``) and never as an online policy.

Its rule at each decision:

1. the planted node of the current job, when it is valid and the job there puts no
   latency-critical job over the SLA threshold (always, on the planted trajectory: the episode
   then ends at the optimum, exactly);
2. otherwise (a state off the planted trajectory, where other jobs took its room) the
   fallback: the valid node where the job's completion costs least
   (:func:`digital_twin.planted.completion_usd`: its prorated price for its nominal duration,
   plus the QoS penalty of a latency-critical job on a spot node), plus the SLA penalty of the
   latency-critical jobs the placement puts over the threshold (:func:`agents.sla.sla_marks`);
   ties to the lowest index. A heuristic, not a proven optimum: it ignores the room the job
   takes from later jobs. A learner imitates these labels wherever it leaves the trajectory, so
   the fallback prices what the placement costs now, the SLA marks included;
3. defer when no node is valid.

Example:
    >>> import gymnasium as gym
    >>> import aco_env  # registers the env ids
    >>> from agents import make_agent
    >>> env = gym.make("aco_env/Planted5-v6")
    >>> obs, _ = env.reset(seed=0)
    >>> expert = make_agent("planted", env)
    >>> expert.reset(seed=0)
    >>> int(expert.predict(obs)[0]) == planted_action_of(env)
    True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from aco_env import ClusterSchedulingEnv, ClusterView
from aco_env.hindsight import planted_action_of, planted_of, scenario_of
from agents.base import register_agent
from agents.charges import Charges
from agents.sla import sla_marks
from agents.view_agent import ViewAgent
from digital_twin.planted import PlantedEpisode, completion_usd, energy_floor
from digital_twin.sim.constants import TwinConstants


class PlantedAgent(ViewAgent):
    """The planted node when valid and free of SLA marks, else the valid node of least cost, else defer.

    Args:
        env: The (possibly wrapped) env of a planted scenario; ``env.unwrapped`` must offer
            ``planted()`` and ``planted_action()`` (:class:`aco_env.ClusterSchedulingEnv`).

    Raises:
        ValueError: The env's scenario is not planted (there is no planted schedule to follow).
        TypeError: The env has no planted accessors (e.g. the one-step placement env).
    """

    name = "planted"

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        base = env.unwrapped
        if not isinstance(base, ClusterSchedulingEnv):
            raise TypeError(f"the planted expert needs aco_env.ClusterSchedulingEnv, got {type(base).__name__}")
        if not scenario_of(base).planted:
            raise ValueError(
                f"the planted expert needs a planted scenario (workload source: planted, e.g. planted5); "
                f"{base.scenario_name!r} is not planted"
            )
        self._planted_source = base
        self._fallback_costs: _CompletionCosts | None = None

    def _reset(self, seed: int | None) -> None:
        del seed  # deterministic
        self._fallback_costs = None

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        planted = planted_action_of(self._planted_source)
        if planted is not None and planted == len(view.action_mask) - 1:  # the schedule has the job wait
            return None
        marks = sla_marks(view)
        if planted is not None and view.action_mask[planted] and not marks[planted]:
            return planted
        assert view.job is not None  # act() checked
        completion = self._costs().of(view.job.job_id)
        sla = Charges(view.settings.weights).sla(marks)
        return int(min(valid.tolist(), key=lambda node: (completion[node] + sla[node], node)))

    def _costs(self) -> _CompletionCosts:
        """The completion costs of the env's current episode (built at the episode's first fallback)."""
        episode = planted_of(self._planted_source)
        assert episode is not None  # the scenario is planted (checked at construction)
        if self._fallback_costs is None or self._fallback_costs.episode is not episode:
            self._fallback_costs = _CompletionCosts(episode)
        return self._fallback_costs


class _CompletionCosts:
    """Per job of one planted episode, its completion cost on each node it fits (USD), computed when first asked."""

    def __init__(self, episode: PlantedEpisode) -> None:
        self.episode = episode
        self._constants = TwinConstants.of(episode.spec)
        self._energy = energy_floor(episode.spec, self._constants)
        self._index = {job_id: j for j, job_id in enumerate(self._constants.job_ids)}
        self._costs: dict[int, dict[int, float]] = {}

    def of(self, job_id: str) -> dict[int, float]:
        """``{node: USD}`` over the nodes the job fits (every valid node is one of them)."""
        j = self._index[job_id]
        if j not in self._costs:
            self._costs[j] = completion_usd(self._constants, j, self._energy)
        return self._costs[j]


def make_planted(env: gym.Env[Any, Any]) -> PlantedAgent:
    """Factory registered as ``"planted"``."""
    return PlantedAgent(env)


register_agent("planted", make_planted, hindsight=True)
