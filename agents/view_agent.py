"""A base class for agents that decide from the env's public :class:`aco_env.ClusterView`.

Template method: :meth:`ViewAgent.predict` does the bookkeeping
(read the view, find the valid nodes, shape the action like SB3 does) and calls one hook,
:meth:`ViewAgent._choose`, that subclasses override; :meth:`ViewAgent.reset` calls
:meth:`ViewAgent._reset`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from aco_env import ClusterView
from agents.base import AgentState
from digital_twin import NodeSpec


@runtime_checkable
class ViewSource(Protocol):
    """What a :class:`ViewAgent` reads of its env's ``unwrapped`` (:class:`aco_env.TwinEnv` s have both)."""

    @property
    def fleet(self) -> Sequence[NodeSpec]:
        """The nodes, in action order."""
        ...

    def cluster_view(self) -> ClusterView:
        """The current decision as online agents may see it."""
        ...


class ViewAgent:
    """An agent bound to one env, deciding from ``env.unwrapped.cluster_view()``.

    The observation passed to :meth:`predict` is not decoded: the env's cluster view carries
    the same state exactly (unnormalised; a test checks the two agree), so every agent of this
    family sees the same facts, and nothing of the future.
    The observation only decides the output shape: a batched observation (a leading axis of
    size 1, as from a one-env ``VecEnv``) gets an action of shape ``(1,)``, otherwise ``()``.

    Args:
        env: The (possibly wrapped) env; its ``unwrapped`` must offer ``cluster_view()`` and
            ``fleet`` (:class:`aco_env.ClusterSchedulingEnv` does).

    Attributes:
        name: The registered name of the agent.
        env: The env the agent acts in.
        n_nodes: N; the defer action is ``N``.
    """

    name = "view-agent"

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        base = env.unwrapped
        if not isinstance(base, ViewSource):
            raise TypeError(
                f"{type(self).__name__} needs an env with cluster_view() and fleet "
                f"(aco_env.ClusterSchedulingEnv), got {type(base).__name__}"
            )
        self.env = env
        self._source = base
        self.fleet = tuple(base.fleet)
        self.n_nodes = len(self.fleet)

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; ``seed`` seeds the agent's generator (``None``: fresh entropy)."""
        self._reset(seed)

    def predict(
        self,
        observation: dict[str, np.ndarray],
        state: AgentState = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, AgentState]:
        """The action for the env's current decision: int64 array of shape ``()`` (or ``(1,)``).

        Raises:
            ValueError: The observation is a batch of more than one env (the agent is bound to one).
        """
        del state, episode_start, deterministic  # not recurrent; randomness is the seeded generator
        batch = _batch_size(observation)
        if batch is not None and batch != 1:
            raise ValueError(f"{self.name} is bound to one env but got a batch of {batch} observations")
        node = self.act(self._source.cluster_view())
        action = np.array(self.n_nodes if node is None else node, dtype=np.int64)
        return (action.reshape(1) if batch is not None else action), None

    def act(self, view: ClusterView) -> int | None:
        """The node for ``view.job`` (``view.action_mask`` is True there), or ``None`` to defer.

        Defers when no node is valid (the env only asks when one is, but a caller may not).
        """
        if view.job is None:
            return None
        valid = np.flatnonzero(view.action_mask[: self.n_nodes])
        if valid.size == 0:
            return None
        return self._choose(view, valid)

    # ------------------------------------------------------------------ hooks
    def _reset(self, seed: int | None) -> None:
        """Hook: reset episode state (default: nothing)."""
        del seed

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        """Hook: pick one of ``valid`` (``(K,)`` int64 node indices, ascending, K >= 1)."""
        raise NotImplementedError


def _batch_size(observation: object) -> int | None:
    """The leading batch size of a batched observation, or ``None`` for a single one."""
    if isinstance(observation, dict) and "action_mask" in observation:
        mask = np.asarray(observation["action_mask"])
        return int(mask.shape[0]) if mask.ndim == 2 else None
    return None
