"""Hindsight: what an episode holds beyond the present, reached only through this module.

An online agent is handed an env and decides from what is known at decision time: the
observation, :meth:`aco_env.ClusterSchedulingEnv.cluster_view`, ``known_spec()`` and
``known_twin()``. None of the env's public attributes, nor anything those return, refers to a
later job, telemetry tick or spot interruption, or to a job's true duration before it completes
(tested by walking their object graphs). What lies beyond is here, under names that say so:

* :func:`hindsight_of`: the episode's whole future (every job with its true duration, the
  telemetry, the spot interruptions), for the oracle and the clairvoyant lookahead, and
  :func:`twin_continued_of`, the env's own twin continued into a spec (the true one);
* :func:`planted_of` and :func:`planted_action_of`: a planted episode's optimal schedule, for
  evaluation (the proven optimum) and the hindsight expert that labels training states;
* :func:`scenario_of`: the scenario the env draws episodes from (with a trace scenario, its
  whole job list and telemetry).

Agents that call these are registered with ``hindsight=True`` (:mod:`agents.base`) and are
labelled so wherever agents are listed; a check of online agents leaves them out.
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np

from aco_env.env import ClusterSchedulingEnv
from aco_env.twin_env import TwinEnv
from digital_twin import DigitalTwin, HindsightView, TwinSpec
from digital_twin.planted import PlantedEpisode
from digital_twin.planted.replay import START_TOLERANCE_S
from digital_twin.scenario import Scenario


def hindsight_of(env: gym.Env) -> HindsightView:
    """The episode's future (jobs with their true durations, telemetry, spot interruptions): for the oracle.

    Args:
        env: A :class:`aco_env.ClusterSchedulingEnv` (or :class:`aco_env.PlacementEnv`), wrapped or
            not, after ``reset``.
    """
    return _twin_env(env)._require_twin().hindsight()


def twin_continued_of(env: gym.Env, spec: TwinSpec) -> DigitalTwin:
    """The env's own twin at the current decision, continued into ``spec`` (the true future, say).

    :meth:`digital_twin.DigitalTwin.continued_in` of the env's twin, which holds every job's
    true duration: exact, where continuing :meth:`aco_env.TwinEnv.known_twin` (declared
    durations) into the true spec moves the running jobs' ends to rounding. The env is unchanged.
    """
    return _twin_env(env)._require_twin().continued_in(spec)


def planted_of(env: gym.Env) -> PlantedEpisode | None:
    """The episode's planted schedule and certificate; ``None`` when the scenario is not planted.

    The schedule was cut from the episode's whole future (every arrival, the spot
    interruptions): for evaluation (the proven optimum, ``optimum_usd``), hindsight experts that
    label training states (the ``planted`` agent) and datasets, never for an online agent.
    """
    base = _twin_env(env)
    if not isinstance(base, ClusterSchedulingEnv):
        raise TypeError(f"planted episodes are posed by ClusterSchedulingEnv, not {type(base).__name__}")
    base._require_twin()
    return base._planted


def planted_action_of(env: gym.Env) -> int | None:
    """The current job's planted action (hindsight, as :func:`planted_of`); ``None`` off planted or at the end.

    Its planted node, or the defer action (``n_nodes``) while the planted schedule has it wait
    (a priced planted episode starts some jobs after their arrival; at the start instant itself,
    until the completion that frees its node has been processed). On the planted trajectory
    (every earlier valid action was the planted one) it is valid and optimal: following it from
    here attains the proven optimum. Off it, it may not fit.
    """
    planted = planted_of(env)
    twin = _twin_env(env)._require_twin()
    j = twin.current_job_index
    if planted is None or j < 0:
        return None
    start, node = planted.start_of(j), planted.planted_nodes[j]
    if twin.time_s < start - START_TOLERANCE_S:
        return len(planted.spec.fleet)
    if twin.time_s <= start + START_TOLERANCE_S and not twin.can_place(node) and _freed_now(planted, twin, node):
        return len(planted.spec.fleet)  # asked at its start before the completion that frees its node
    return node


def _freed_now(planted: PlantedEpisode, twin: DigitalTwin, node: int) -> bool:
    """A job the schedule runs on ``node`` ends now and still runs there: its completion is due at this instant.

    Off the planted trajectory a full planted node may have no such job (another policy filled
    it), and then the planted action is the node itself (which the planted expert finds full, and
    falls back from), not a wait for a completion that never comes.
    """
    ends = _planted_ends(planted).get(node)
    if ends is None:
        return False
    times, jobs = ends
    low, high = np.searchsorted(times, [twin.time_s - START_TOLERANCE_S, twin.time_s + START_TOLERANCE_S])
    return any(twin.job_node(int(k)) == node for k in jobs[low:high])


@functools.lru_cache(maxsize=8)
def _planted_ends(planted: PlantedEpisode) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per node, the planted end times ``(k,)`` of the jobs the schedule runs there, sorted, and those jobs ``(k,)``."""
    durations = np.asarray(planted.spec.jobs.duration_s, dtype=float)
    nodes = np.asarray(planted.planted_nodes)
    ends = np.array([planted.start_of(k) for k in range(len(nodes))], dtype=float) + durations
    table = {}
    for node in np.unique(nodes):
        jobs = np.flatnonzero(nodes == node)
        order = np.argsort(ends[jobs], kind="stable")
        table[int(node)] = (ends[jobs][order], jobs[order])
    return table


def scenario_of(env: gym.Env) -> Scenario:
    """The scenario the env draws its episodes from (a trace scenario holds its whole trace)."""
    return _twin_env(env)._scenario


def _twin_env(env: gym.Env) -> TwinEnv:
    base = env.unwrapped
    if not isinstance(base, TwinEnv):
        raise TypeError(f"hindsight is read from an aco_env env, not {type(base).__name__}")
    return base
