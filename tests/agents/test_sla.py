"""agents.sla.sla_marks against the twin's own SLA marks and a recomputation from the view."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from aco_env.registration import PLANTED5_ID
from agents.sla import sla_marks


def test_sla_marks__recomputed_from_the_view_at_every_decision() -> None:
    """Per node: the latency-critical jobs there (and the job, if latency-critical) where it lifts the node over."""
    env = gym.make(PLANTED5_ID)
    env.reset(seed=0)
    marked_somewhere = False
    terminated = truncated = False
    while not (terminated or truncated):
        view = env.unwrapped.cluster_view()
        cores = np.array([node.cpu_cores for node in view.fleet])
        after = view.utilization_pct + 100.0 * view.job.cpu_cores / cores
        there = view.running_by_type[:, 0] + (view.job.workload == "latency-critical")
        expected = np.where(after > view.settings.sla_threshold_pct + 1e-9, there, 0.0)
        np.testing.assert_array_equal(sla_marks(view), expected)
        marked_somewhere |= bool(expected.any())
        mask = env.unwrapped.action_masks()
        _, _, terminated, truncated, _ = env.step(int(np.flatnonzero(mask)[0]))  # first-fit
    assert marked_somewhere  # first-fit fills nodes over the threshold: the counts are not all 0


def test_sla_marks__a_placement_it_counts_is_marked_by_the_twin_at_the_next_tick() -> None:
    """Placing a latency-critical job where ``sla_marks`` counts it: the twin's SLA count grows by that much or less."""
    env = gym.make(PLANTED5_ID)
    env.reset(seed=0)
    checked = 0
    terminated = truncated = False
    while not (terminated or truncated) and checked < 3:
        view = env.unwrapped.cluster_view()
        marks = np.where(env.unwrapped.action_masks()[:-1], sla_marks(view), 0.0)
        if view.job.workload == "latency-critical" and marks.any():
            twin = env.unwrapped.known_twin()  # the present, continued with the jobs known now
            node = int(np.argmax(marks))
            before = twin.metrics()["sla_violations"]
            twin.place(node)
            while not twin.done and twin.tick_index == view.tick_index:
                twin.defer()  # nothing else starts before the next tick
            assert 1 <= twin.metrics()["sla_violations"] - before <= marks[node]
            checked += 1
        mask = env.unwrapped.action_masks()
        _, _, terminated, truncated, _ = env.step(int(np.flatnonzero(mask)[0]))
    assert checked > 0


def test_sla_marks__an_ended_episode_has_no_job() -> None:
    """A view without a job (an ended episode) is refused, naming why."""
    env = gym.make(PLANTED5_ID)
    env.reset(seed=0)
    view = env.unwrapped.cluster_view()
    with pytest.raises(ValueError, match="no job"):
        sla_marks(dataclasses.replace(view, job=None))
