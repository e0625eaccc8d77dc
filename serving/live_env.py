"""The env an agent is bound to in a live service: a :class:`aco_env.TwinEnv` on the live twin.

Agents are built for an env and read it (``env.unwrapped.cluster_view()``, ``fleet``,
``action_masks()``, ``known_twin()``) and the observation it encodes. :class:`LiveEnv` is that env
for a live cluster: the same class family, the same observation encoder and the same view code
as the training env (:class:`aco_env.ClusterSchedulingEnv`), standing at whichever decision the
live twin poses (:meth:`LiveEnv.attach`). It is not stepped by a training loop: the cluster's
events move it (:class:`serving.live.LiveCluster`), so ``reset`` and ``step`` refuse.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aco_env import TwinEnv
from digital_twin import DigitalTwin


class LiveEnv(TwinEnv):
    """A :class:`aco_env.TwinEnv` whose twin is the live cluster's, at its current decision.

    Built like the training env, ``LiveEnv(scenario, config)``: the same spaces, masks and
    observation encoding for the scenario's fleet.
    """

    def attach(self, twin: DigitalTwin) -> None:
        """Make ``twin`` (standing at a decision, or over) the state this env shows."""
        self._start_episode(twin)

    def observation(self) -> dict[str, np.ndarray]:
        """The observation of the current decision, as the training env encodes it."""
        return self._observation()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Refused: a live env's episode is the cluster's (start a new one with ``LiveCluster.restart``)."""
        raise NotImplementedError("a LiveEnv follows a live cluster; LiveCluster.restart starts a new episode")

    def step(self, action: object) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Refused: the cluster's events move a live env (``LiveCluster.apply``)."""
        raise NotImplementedError("a LiveEnv follows a live cluster; LiveCluster.apply moves it")
