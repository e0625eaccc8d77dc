"""Classic placement heuristics, registered at import of :mod:`agents`.

Every heuristic picks among the valid nodes of the current decision (``action_mask``) and
defers only when no node is valid. Ties always go to the lowest node index, so every
heuristic except ``random`` is a deterministic function of the state.

| name | rule |
|---|---|
| ``random`` | uniform over the valid nodes (seeded by ``reset(seed)``); never defers by choice |
| ``first-fit`` | the lowest valid index |
| ``best-fit`` | tightest fit: least free cpu cores left after placing, then least free mem GB |
| ``worst-fit`` | most free cpu cores left after placing, then most free mem GB |
| ``cheapest`` | the lowest node price in $/h (the reference's cost-aware greedy) |
| ``cheapest-share`` | the lowest $/h of the job's charged share (GPUs for a GPU job); ``avoid_sla``: SLA-safe first |
| ``round-robin`` | the next valid node after the last one this agent used (cyclic) |
| ``tetris`` | the highest alignment of the job's demand with the node's free resources |

Example:
    >>> import gymnasium as gym
    >>> import aco_env  # registers the env ids
    >>> from agents import make_agent
    >>> env = gym.make("aco_env/Fleet5-v6")
    >>> obs, _ = env.reset(seed=0)
    >>> agent = make_agent("cheapest", env)
    >>> agent.reset(seed=0)
    >>> action, _ = agent.predict(obs)
    >>> env.unwrapped.fleet[int(action)].node_id  # the cheapest node that fits (arm, $0.12/h)
    'node-arm-02'
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from aco_env import ClusterView
from aco_env.fit_rules import cheapest_fit, first_fit
from agents.base import register_agent
from agents.charges import charged_share
from agents.sla import sla_marks
from agents.view_agent import ViewAgent


class RandomAgent(ViewAgent):
    """Uniform over the valid nodes; defers only when none is valid.

    Why no defer by choice: the env asks only when some node fits, and deferring a job that
    fits mostly burns its queue TTL; a baseline that defers at random would measure the cost
    of deferring rather than of placing. Pass ``include_defer=True`` for a uniform choice over
    every valid action of the mask (nodes and defer), e.g. as an RL exploration baseline.
    """

    name = "random"

    def __init__(self, env: gym.Env[Any, Any], include_defer: bool = False) -> None:
        super().__init__(env)
        self.include_defer = include_defer
        self._rng = np.random.default_rng()

    def _reset(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        options = len(valid) + 1 if self.include_defer else len(valid)
        pick = int(self._rng.integers(options))
        return int(valid[pick]) if pick < len(valid) else None


class FirstFitAgent(ViewAgent):
    """The valid node with the lowest index (:func:`aco_env.fit_rules.first_fit`)."""

    name = "first-fit"

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        return first_fit(valid)


class BestFitAgent(ViewAgent):
    """Tightest fit: least free cpu cores left after placing, then least free mem GB."""

    name = "best-fit"

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        job = view.job
        assert job is not None  # act() checked
        cpu_left = view.free_cpu_cores[valid] - job.cpu_cores
        mem_left = view.free_mem_gb[valid] - job.mem_gb
        # lexsort: the last key is the primary one; the index breaks remaining ties.
        return int(valid[np.lexsort((valid, mem_left, cpu_left))[0]])


class WorstFitAgent(ViewAgent):
    """Loosest fit: most free cpu cores left after placing, then most free mem GB."""

    name = "worst-fit"

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        job = view.job
        assert job is not None
        cpu_left = view.free_cpu_cores[valid] - job.cpu_cores
        mem_left = view.free_mem_gb[valid] - job.mem_gb
        return int(valid[np.lexsort((valid, -mem_left, -cpu_left))[0]])


class CheapestAgent(ViewAgent):
    """The valid node with the lowest price in $/h, whole node (:func:`aco_env.fit_rules.cheapest_fit`)."""

    name = "cheapest"

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self._price = [n.price_per_hour_usd for n in self.fleet]  # (N,) $/h

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        return cheapest_fit(valid.tolist(), self._price)


class CheapestShareAgent(ViewAgent):
    """The valid node where the job's share costs least per hour: what the ``prorated`` cost model charges.

    The share is the job's GPUs over the node's for a GPU job, its cores over the node's otherwise
    (:func:`agents.charges.charged_share`). ``cheapest`` ranks whole nodes instead: on a fleet whose
    price per GPU falls with the node's size, it sends a one-GPU job to the smallest GPU node, which
    charges more for that GPU. Under ``active-nodes`` (a busy node costs its whole price) this is
    still the share's price, not what the placement adds. Ties go to the lowest index.

    Args:
        env: The env the agent acts in.
        avoid_sla: Rank first the valid nodes where the placement puts no latency-critical job over
            the SLA threshold now (:func:`agents.sla.sla_marks`), then by the share's price; with
            none, every valid node by price (``cheapest-share[avoid_sla=true]``).
    """

    name = "cheapest-share"

    def __init__(self, env: gym.Env[Any, Any], avoid_sla: bool = False) -> None:
        super().__init__(env)
        self.avoid_sla = avoid_sla

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        job = view.job
        assert job is not None  # a decision always has a job
        nodes = valid.tolist()
        if self.avoid_sla:
            marks = sla_marks(view)
            nodes = [i for i in nodes if not marks[i]] or nodes
        rates = [self.fleet[i].price_per_hour_usd * charged_share(self.fleet[i], job) for i in nodes]
        return nodes[rates.index(min(rates))]


class RoundRobinAgent(ViewAgent):
    """The first valid node after the last one used, wrapping around (starts at node 0)."""

    name = "round-robin"

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self._last = -1

    def _reset(self, seed: int | None) -> None:
        del seed
        self._last = -1

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        after = valid[valid > self._last]
        self._last = int(after[0]) if after.size else int(valid[0])
        return self._last


class TetrisAgent(ViewAgent):
    """Resource alignment (Grandl et al., "Multi-resource packing", SIGCOMM 2014).

    Score = sum over resources r (cpu, mem, GPUs) of ``(demand_r / capacity_r) * (free_r /
    capacity_r)``: the dot product of the demand and free vectors, both normalised by the
    node's capacity so cores, GB and GPUs are comparable. GPUs count only on nodes with GPUs.
    The highest score wins (the node whose free shape best matches the job).
    """

    name = "tetris"

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self._cpu = np.array([n.cpu_cores for n in self.fleet], dtype=float)  # (N,) cores
        self._mem = np.array([n.mem_gb for n in self.fleet], dtype=float)  # (N,) GB
        # 0 GPUs: use 1 to avoid 0/0; the free GPU count is 0 there, so the term is 0.
        self._gpus = np.maximum([n.gpu_count for n in self.fleet], 1).astype(float)  # (N,)

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        job = view.job
        assert job is not None
        cpu, mem, gpus = self._cpu[valid], self._mem[valid], self._gpus[valid]
        score = (
            (job.cpu_cores / cpu) * (view.free_cpu_cores[valid] / cpu)
            + (job.mem_gb / mem) * (view.free_mem_gb[valid] / mem)
            + (job.gpu_count / gpus) * (view.free_gpus[valid] / gpus)
        )
        return int(valid[np.argmax(score)])  # argmax: first maximum = lowest index


HEURISTICS: tuple[type[ViewAgent], ...] = (
    RandomAgent,
    FirstFitAgent,
    BestFitAgent,
    WorstFitAgent,
    CheapestAgent,
    CheapestShareAgent,
    RoundRobinAgent,
    TetrisAgent,
)

for _cls in HEURISTICS:
    register_agent(_cls.name, _cls)
