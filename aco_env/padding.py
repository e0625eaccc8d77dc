"""Padded observations: a fleet of ``n`` nodes shown as one of ``N >= n`` (fleets of several sizes in one space).

A padded observation has the ``nodes`` and ``history`` rows ``n..N-1`` all zeros (a real node's
``cpu_rel`` is > 0, so a reader can tell them apart: :class:`agents.set_policy.SetHeads` leaves
them out of its pools), those nodes invalid in ``action_mask``, and the defer action at ``N``.
In padded actions, ``N`` is the fleet's defer ``n`` and ``n..N-1`` are no action of the fleet.
:class:`aco_env.vector_env.BatchedClusterEnv` pads the smaller fleets of a batch this way; a
learned agent pads its env's observations to its model's fleet size
(:class:`agents.sb3_agent.SB3Agent`).
"""

from __future__ import annotations

import numpy as np

NODE_ROW_KEYS = ("nodes", "history")
"""Observation keys with one row per node."""


def padded_observation(observation: dict[str, np.ndarray], n_nodes: int) -> dict[str, np.ndarray]:
    """``observation`` (``n <= n_nodes`` nodes) padded to ``n_nodes``: fresh arrays; itself when ``n`` is ``n_nodes``.

    >>> obs = {"nodes": np.ones((2, 3)), "history": np.ones((2, 1)), "action_mask": np.array([1.0, 0.0, 1.0])}
    >>> padded = padded_observation(obs, 3)
    >>> padded["nodes"].shape, padded["action_mask"].tolist()
    ((3, 3), [1.0, 0.0, 0.0, 1.0])
    """
    n = len(observation["nodes"])
    if n == n_nodes:
        return observation
    padded = dict(observation)
    for key in NODE_ROW_KEYS:
        rows = observation[key]
        padded[key] = np.zeros((n_nodes, *rows.shape[1:]), dtype=rows.dtype)
        padded[key][:n] = rows
    padded["action_mask"] = padded_mask(observation["action_mask"], n_nodes)
    return padded


def padded_mask(mask: np.ndarray, n_nodes: int) -> np.ndarray:
    """An ``(n + 1,)`` action mask as the ``(n_nodes + 1,)`` one of the padded fleet (a fresh array)."""
    padded = np.zeros(n_nodes + 1, dtype=mask.dtype)
    write_padded_mask(mask, padded)
    return padded


def write_padded_mask(mask: np.ndarray, out: np.ndarray) -> None:
    """Write an ``(n + 1,)`` action mask into ``out``, the padded fleet's ``(N + 1,)`` one, in place.

    Its nodes go to ``out[:n]`` and its defer to ``out[N]``; ``out[n:N]``, the padded nodes, are
    left as they are (zeros: invalid).
    """
    n = len(mask) - 1
    out[:n] = mask[:n]
    out[-1] = mask[n]


def own_observation(observation: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """The fleet's own observation (``n`` nodes) of a padded one: views of its rows and a fresh mask; itself unpadded.

    >>> obs = padded_observation({"nodes": np.ones((2, 3)), "history": np.ones((2, 1)),
    ...                           "action_mask": np.array([1.0, 0.0, 1.0])}, 4)
    >>> own = own_observation(obs, 2)
    >>> own["nodes"].shape, own["action_mask"].tolist()
    ((2, 3), [1.0, 0.0, 1.0])
    """
    n_nodes = len(observation["nodes"])
    if n == n_nodes:
        return observation
    own = dict(observation)
    for key in NODE_ROW_KEYS:
        own[key] = observation[key][:n]
    own["action_mask"] = np.append(observation["action_mask"][:n], observation["action_mask"][n_nodes])
    return own


def own_action(action: int, n: int, n_nodes: int) -> int:
    """A padded fleet's action (of ``n_nodes + 1``) as the fleet's own (of ``n + 1``); a padded node as ``n + 1``.

    ``n + 1`` is out of the fleet's range, so the env takes it as an invalid action.

    >>> [own_action(a, 3, 5) for a in range(6)]
    [0, 1, 2, 4, 4, 3]
    """
    if n == n_nodes or action < n:
        return action
    return n if action == n_nodes else n + 1


def padded_action(action: int, n: int, n_nodes: int) -> int:
    """A fleet's own action (of ``n + 1``) as the padded fleet's: its defer ``n`` is ``n_nodes``.

    >>> [padded_action(a, 3, 5) for a in range(4)]
    [0, 1, 2, 5]
    """
    return n_nodes if action == n else action
