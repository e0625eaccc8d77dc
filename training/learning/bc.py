"""Behaviour cloning from the one-step placement env's labels.

Labels come from ``aco_env/Placement-v2`` (:class:`aco_env.PlacementEnv`): each sample is a
decision state of the scenario and the actions that are optimal *given a cheapest-fit
continuation with the true future*: every action is scored by replaying the rest of the episode
in the twin under cheapest-fit, with the true future arrivals, telemetry and spot interruptions,
and the lowest objectives win. They are not the oracle's plan (which optimises every decision of
the episode jointly). The policy's action distribution is trained by cross-entropy on the
lowest-index such action, with the action mask applied for MaskablePPO policies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from aco_env import PlacementEnv
from digital_twin.scenario import Scenario
from training.progress import Progress


@dataclass(frozen=True)
class Labels:
    """``n`` decision states and their labelled actions.

    Attributes:
        observations: Observation dict, each value ``(n, ...)`` float32.
        actions: ``(n,)`` int64, the lowest-index action that is optimal given a cheapest-fit
            continuation with the true future.
        masks: ``(n, N + 1)`` bool action masks.
    """

    observations: dict[str, np.ndarray]
    actions: np.ndarray  # (n,)
    masks: np.ndarray  # (n, N + 1)


def collect_labels(scenario: str | Scenario, samples: int, seed: int, progress: bool = True) -> Labels:
    """Sample ``samples`` decision states (seeds ``seed, seed + 1, ...``) with their labelled actions.

    ``progress`` shows a bar on a terminal, otherwise one line ``BC labels: N states in T s`` at the end.
    """
    env = PlacementEnv(scenario)
    observations: list[dict[str, np.ndarray]] = []
    actions = []
    with Progress(samples, "BC labels", "state", enabled=progress) as bar:
        for k in range(samples):
            obs, info = env.reset(seed=seed + k)
            observations.append(obs)
            actions.append(min(info["optimal_actions"]))
            bar.update()
    return stack_labels(observations, actions)


def stack_labels(observations: list[dict[str, np.ndarray]], actions: list[int]) -> Labels:
    """Labels from per-state observation dicts and actions (the masks are the observations' ``action_mask``)."""
    stacked = {key: np.stack([o[key] for o in observations]) for key in observations[0]}
    return Labels(stacked, np.array(actions, dtype=np.int64), stacked["action_mask"].astype(bool))


def fit_policy(
    policy: torch.nn.Module,
    labels: Labels,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
    masked: bool,
) -> dict[str, float]:
    """Cross-entropy training of ``policy``'s action distribution; returns the final loss and accuracy.

    Args:
        policy: An SB3 ``ActorCriticPolicy`` (MaskablePPO's when ``masked``).
        labels: From :func:`collect_labels`.
        epochs: Passes over the labels.
        batch_size: Minibatch size.
        learning_rate: Adam's learning rate.
        seed: Seeds the minibatch order.
        masked: Pass the action masks to the distribution (MaskablePPO).
    """
    rng = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    n = len(labels.actions)
    policy.set_training_mode(True)
    loss_value, accuracy = float("nan"), float("nan")
    for _ in range(epochs):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            index = order[start : start + batch_size]
            obs, _ = policy.obs_to_tensor({k: v[index] for k, v in labels.observations.items()})
            target = torch.as_tensor(labels.actions[index])
            if masked:
                distribution = policy.get_distribution(obs, action_masks=labels.masks[index])
            else:
                distribution = policy.get_distribution(obs)
            loss = -distribution.log_prob(target).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    policy.set_training_mode(False)
    with torch.no_grad():
        obs, _ = policy.obs_to_tensor(labels.observations)
        distribution = (
            policy.get_distribution(obs, action_masks=labels.masks) if masked else policy.get_distribution(obs)
        )
        target = torch.as_tensor(labels.actions)
        loss_value = float(-distribution.log_prob(target).mean())
        accuracy = float((distribution.mode() == target).float().mean())
    return {"loss": loss_value, "accuracy": accuracy}
