"""Behaviour cloning: fitting a policy's action distribution to labelled states.

:func:`fit_policy` fits any :class:`~training.learning.labels.Labels`: the placement env's (below),
DAgger's (:mod:`training.learning.imitation`) or a planted dataset's
(:func:`training.learning.planted_dataset.load_planted_dataset`, ``aco-env train --bc-dataset``).

:func:`collect_labels` draws labels from ``aco_env/Placement-v6`` (:class:`aco_env.PlacementEnv`): each sample is a
decision state of the scenario and the actions that are optimal *given a cheapest-fit
continuation with the true future*: every action is scored by replaying the rest of the episode
in the twin under cheapest-fit, with the true future arrivals, telemetry and spot interruptions,
and the lowest objectives win. They are not the oracle's plan (which optimises every decision of
the episode jointly). The policy's action distribution is trained by cross-entropy on the
lowest-index such action, with the action mask applied for MaskablePPO policies.
"""

from __future__ import annotations

import numpy as np
import torch

from aco_env import PlacementEnv
from agents.place_or_defer import place_or_defer_rows
from digital_twin.scenario import Scenario
from training.learning.labels import Labels, stack_labels
from training.progress import Progress

__all__ = ["Labels", "collect_labels", "fit_policy", "label_accuracy", "stack_labels"]


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
        labels: The states and their labels (:func:`collect_labels`, a planted dataset's, DAgger's).
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
    return label_accuracy(policy, labels, masked)


def label_accuracy(policy: torch.nn.Module, labels: Labels, masked: bool) -> dict[str, float]:
    """``loss`` (mean cross-entropy of the labels, nats) and ``accuracy`` (share where the policy would play the label).

    The policy's play is its deterministic action among the valid ones
    (:func:`agents.place_or_defer.place_or_defer`), as :class:`agents.sb3_agent.SB3Agent` takes it.

    Args:
        policy: An SB3 ``ActorCriticPolicy`` (MaskablePPO's when ``masked``), not changed.
        labels: The states and their labels.
        masked: Pass the action masks to the distribution (MaskablePPO).
    """
    with torch.no_grad():
        obs, _ = policy.obs_to_tensor(labels.observations)
        distribution = (
            policy.get_distribution(obs, action_masks=labels.masks) if masked else policy.get_distribution(obs)
        )
        target = torch.as_tensor(labels.actions)
        loss_value = float(-distribution.log_prob(target).mean())
        probabilities = np.where(labels.masks, distribution.distribution.probs.cpu().numpy(), 0.0)
        accuracy = float(np.mean(place_or_defer_rows(probabilities) == labels.actions))
    return {"loss": loss_value, "accuracy": accuracy}
