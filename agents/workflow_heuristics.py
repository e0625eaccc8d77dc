"""DAG-aware heuristics from the workflow-scheduling literature, written from their descriptions.

Each ranks the ready tasks (the current job and the queue) by a priority and places the
current one by first-fit, unless that would take the room of a ready task of higher priority
that fits now: then it defers (the env asks that task in the same pass, and this one again
after the next event). This is list scheduling with backfilling: a task of lower priority
runs when it blocks nothing above it. Priorities (higher first; ties to the earlier queue
position), from :class:`~aco_env.ClusterView`'s ``tasks`` (what each workflow declared at its
submission; an independent job is a one-task workflow of weight 1):

* ``critical-path``: the task's critical path to its workflow's end, the upward rank of HEFT
  (Topcuoglu et al., 2002) without communication costs;
* ``max-children``: its children, then its critical path (Maximum Children, MC);
* ``wscpt``: its workflow's weight / its critical path (Weighted Shortest Critical Path Time);
* ``mc-wscpt``: ``max-children`` while the queue is short, ``wscpt`` once it holds more than
  ``queue_threshold`` tasks (default: the fleet's node count), the hybrid MC-WSCPT rule.

The hybrid's direction is ours to state (the description says only that the queue size
chooses): with little queued, releasing the most children keeps the fleet busy; with a long
queue, capacity is scarce and the weighted shortest critical paths finish the most weight
first. "Fits now" for a queued task is by free cpu, memory and GPUs on an up node of its arch
and GPU model (placement rules are not checked: the env's mask decides when it is asked).
On a workload of independent jobs every rule ranks by duration or not at all, and
``critical-path`` places longest first.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from aco_env import ClusterView
from aco_env.fit_rules import first_fit
from agents.base import register_agent
from agents.view_agent import ViewAgent
from digital_twin import JobSpec
from digital_twin.workflows.task_features import TaskFeatures


class PriorityListAgent(ViewAgent):
    """First-fit in the order of a priority over the ready tasks (module docstring); subclasses rank."""

    name = "priority-list"

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        job = view.job
        assert job is not None
        node = first_fit(valid)
        if view.tasks is None or not len(view.queue):
            return node
        priority = self._priorities(view, view.tasks)
        above = [k for k in range(1, len(priority)) if priority[k] > priority[0]]
        if not above:
            return node
        free = np.stack([view.free_cpu_cores, view.free_mem_gb, view.free_gpus.astype(float)])
        taken = free.copy()
        taken[:, node] -= (job.cpu_cores, job.mem_gb, job.gpu_count)
        for k in above:
            other = view.queue[k - 1]
            if self._fits(other, free, view.up) and not self._fits(other, taken, view.up):
                return None  # placing the current task would block a ready task of higher priority
        return node

    def _priorities(self, view: ClusterView, tasks: TaskFeatures) -> np.ndarray:
        """``(K,)`` the priority of the view's job (row 0) and queued tasks (higher first)."""
        raise NotImplementedError

    def _fits(self, job: JobSpec, free: np.ndarray, up: np.ndarray) -> bool:
        """Whether ``job`` fits on some up node of its arch and GPU model, with ``free`` ``(3, N)`` resources."""
        for i, node in enumerate(self.fleet):
            if not up[i] or (job.required_arch is not None and node.arch != job.required_arch):
                continue
            if job.gpu_count and (node.gpu_vram_gb < job.gpu_vram_gb or (
                    job.allowed_gpu_models is not None and node.gpu_model not in job.allowed_gpu_models)):
                continue
            if free[0, i] >= job.cpu_cores and free[1, i] >= job.mem_gb and free[2, i] >= job.gpu_count:
                return True
        return False


def critical_path_first(tasks: TaskFeatures) -> np.ndarray:
    """``(K,)`` the upward rank: longer critical paths first."""
    return tasks.critical_path_s


def most_children_first(tasks: TaskFeatures) -> np.ndarray:
    """``(K,)`` children, the critical path breaking ties (scaled below 1)."""
    return tasks.children + tasks.critical_path_s / (float(tasks.critical_path_s.max()) + 1.0)


def weighted_shortest_critical_path_first(tasks: TaskFeatures) -> np.ndarray:
    """``(K,)`` workflow weight per second of critical path."""
    return tasks.weight / tasks.critical_path_s


class CriticalPathAgent(PriorityListAgent):
    """Longest critical path to the workflow's end first (HEFT's upward rank)."""

    name = "critical-path"

    def _priorities(self, view: ClusterView, tasks: TaskFeatures) -> np.ndarray:
        return critical_path_first(tasks)


class MaxChildrenAgent(PriorityListAgent):
    """Most children first, then the longest critical path."""

    name = "max-children"

    def _priorities(self, view: ClusterView, tasks: TaskFeatures) -> np.ndarray:
        return most_children_first(tasks)


class WscptAgent(PriorityListAgent):
    """Highest workflow weight per second of critical path first."""

    name = "wscpt"

    def _priorities(self, view: ClusterView, tasks: TaskFeatures) -> np.ndarray:
        return weighted_shortest_critical_path_first(tasks)


class McWscptAgent(PriorityListAgent):
    """``max-children`` while at most ``queue_threshold`` tasks are queued, ``wscpt`` beyond."""

    name = "mc-wscpt"

    def __init__(self, env: gym.Env[Any, Any], queue_threshold: int | None = None) -> None:
        super().__init__(env)
        if queue_threshold is not None and (
            isinstance(queue_threshold, bool) or not isinstance(queue_threshold, int) or queue_threshold < 0
        ):
            raise ValueError(f"queue_threshold must be an integer >= 0, got {queue_threshold!r}")
        self.queue_threshold = self.n_nodes if queue_threshold is None else queue_threshold

    def _priorities(self, view: ClusterView, tasks: TaskFeatures) -> np.ndarray:
        if len(view.queue) > self.queue_threshold:
            return weighted_shortest_critical_path_first(tasks)
        return most_children_first(tasks)


for _cls in (CriticalPathAgent, MaxChildrenAgent, WscptAgent, McWscptAgent):
    register_agent(_cls.name, _cls)
