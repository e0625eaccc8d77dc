"""DAgger: imitation of an expert in the states the student itself visits.

Behaviour cloning from an expert's own episodes teaches a policy the states the expert
reaches; a student that errs once is then in states it never saw, and errors compound. DAgger
(Ross, Gordon and Bagnell, 2011) labels the student's own states instead:

1. Iteration 0 plays the expert (every state it visits is labelled with its action).
2. Each later iteration plays the current student (sampling its actions, with the mask) and
   asks the expert what it would do in every state the student visits.
3. After each iteration the policy is fitted by masked cross-entropy on all labels so far
   (:func:`training.learning.bc.fit_policy`).

The expert must label any state the student visits. The default is ``lookahead``
(:mod:`agents.lookahead`), an online agent that plans by rollouts in sampled futures; its labels
are noisy (4 sampled futures; ties between deferring and placing), so the student does not
reach 100 % accuracy on them and need not. On planted scenarios the expert may be ``planted``
(:mod:`agents.planted`): the planted schedule's action where it is valid (proven optimal on the
planted trajectory), else the valid node of least completion cost. It reads the episode's
future: a hindsight expert is fine for labelling the states a policy trains on, never as the
policy that is evaluated (the student only ever sees observations). The ``oracle`` cannot be
the expert: it replays its own plan and cannot label the states the student visits.

Episodes are seeded ``IMITATION_SEED_OFFSET + seed + k`` (k = 0, 1, ... over all iterations):
the protocol's imitation range (:mod:`training.evaluation.protocol`), away from the validation
and test seeds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aco_env import ClusterSchedulingEnv, EnvConfig
from agents import make_agent
from digital_twin import NEXT_EVENT
from digital_twin.scenario import Scenario
from training.evaluation.protocol import IMITATION, first_seed
from training.learning.bc import fit_policy
from training.learning.labels import Labels, stack_labels
from training.learning.random_start_hour import episode_start_hour
from training.progress import Progress

AUTO_EXPERT = "auto"
"""The expert name that picks per task: ``planted`` on planted scenarios (proven optimal labels along the
planted schedule), ``lookahead`` elsewhere (:func:`expert_for`)."""
IMITATION_SEED_OFFSET = IMITATION.start
"""DAgger's episodes are seeded from ``IMITATION.start + seed`` on (:data:`training.evaluation.protocol.IMITATION`)."""

logger = logging.getLogger("training")


@dataclass(frozen=True)
class DaggerRound:
    """One DAgger iteration.

    Attributes:
        iteration: 0 for the expert's own episodes, then 1, 2, ...
        new_labels: States labelled in this iteration.
        labels: All labels so far (what the policy was fitted on).
        loss: Masked cross-entropy on all labels after fitting (nats).
        accuracy: Fraction of all labels where the policy's most likely action is the expert's.
        seconds: Wall time of the iteration (playing, labelling, fitting).
    """

    iteration: int
    new_labels: int
    labels: int
    loss: float
    accuracy: float
    seconds: float


@dataclass(frozen=True)
class DaggerSettings:
    """How to imitate.

    Attributes:
        expert: A registered agent that labels any state: online (``lookahead``) or ``planted`` on
            planted scenarios (hindsight, for labels only); :data:`AUTO_EXPERT` (the default) picks
            per task (:func:`expert_for`).
        iterations: DAgger iterations (>= 1; the first plays the expert).
        episodes: Episodes per iteration (>= 1).
        epochs: Passes over all labels after each iteration.
        batch_size: Minibatch size of the fit.
        learning_rate: Adam's learning rate of the fit.
        random_start_hour: Episode ``seed`` starts at the hour of day
            :func:`~training.learning.random_start_hour.episode_start_hour` of ``seed`` (the
            clock features only) instead of its scenario's.
        deferral: The envs' deferral rule (:mod:`digital_twin.deferral`): the student's, as in RL.
    """

    expert: str = AUTO_EXPERT
    iterations: int = 6
    episodes: int = 16
    epochs: int = 10
    batch_size: int = 256
    learning_rate: float = 1e-3
    random_start_hour: bool = False
    deferral: str = NEXT_EVENT


def expert_for(expert: str, scenario: Scenario) -> str:
    """The agent that labels ``scenario``'s states: ``expert``, or for :data:`AUTO_EXPERT` the best kind for it.

    >>> import scenarios
    >>> expert_for("auto", scenarios.load("planted5")), expert_for("auto", scenarios.load("toy3"))
    ('planted', 'lookahead')
    >>> expert_for("aco", scenarios.load("planted5"))
    'aco'
    """
    if expert != AUTO_EXPERT:
        return expert
    return "planted" if scenario.planted else "lookahead"


def dagger(
    model: Any, scenario: Scenario | Sequence[Scenario], settings: DaggerSettings, seed: int, progress: bool = True
) -> tuple[Labels, list[DaggerRound]]:
    """Fit ``model.policy`` (a MaskablePPO model's) to the expert by DAgger; returns the labels and the rounds.

    Args:
        model: A MaskablePPO model (its ``predict`` takes ``action_masks``); trained in place.
        scenario: The scenario the episodes are drawn from, or several: episode k is drawn from
            the k-th, cycling (a task distribution).
        settings: Expert, iterations, episodes and the fit's options.
        seed: The run's seed: episodes ``IMITATION_SEED_OFFSET + seed + k``; the fit's minibatch order.
        progress: A bar on a terminal, otherwise one line per iteration in the log.
    """
    tasks = [scenario] if isinstance(scenario, Scenario) else list(scenario)
    envs = [ClusterSchedulingEnv(task, config=EnvConfig(deferral=settings.deferral)) for task in tasks]
    experts = [make_agent(expert_for(settings.expert, task), env) for task, env in zip(tasks, envs, strict=True)]
    env = envs[0]
    observations: list[dict[str, np.ndarray]] = []
    actions: list[int] = []
    rounds: list[DaggerRound] = []
    labels = Labels({}, np.zeros(0, dtype=np.int64), np.zeros((0, env.action_space.n), dtype=bool))
    # every episode of every iteration in the imitation range (a clear error if not)
    episode_seed = first_seed(IMITATION, settings.iterations * settings.episodes, offset=seed)
    with Progress(settings.iterations * settings.episodes, "DAgger", "episode", enabled=progress) as bar:
        for iteration in range(settings.iterations):
            started, before = time.perf_counter(), len(actions)
            for k in range(settings.episodes):
                task = (iteration * settings.episodes + k) % len(envs)
                student = model if iteration > 0 else None
                options = {"start_hour": episode_start_hour(episode_seed)} if settings.random_start_hour else None
                _label_episode(envs[task], experts[task], student, episode_seed, observations, actions, options)
                episode_seed += 1
                bar.update(note=f"iteration {iteration}")
            labels = stack_labels(observations, actions)
            stats = fit_policy(
                model.policy,
                labels,
                settings.epochs,
                settings.batch_size,
                settings.learning_rate,
                seed + iteration,
                masked=True,
            )
            rounds.append(
                DaggerRound(
                    iteration,
                    len(actions) - before,
                    len(actions),
                    stats["loss"],
                    stats["accuracy"],
                    time.perf_counter() - started,
                )
            )
            logger.info(
                "DAgger iteration %d: %d new labels, %d in all, accuracy %.3f",
                iteration,
                rounds[-1].new_labels,
                len(actions),
                stats["accuracy"],
            )
    return labels, rounds


def _label_episode(
    env: ClusterSchedulingEnv,
    expert: Any,
    student: Any | None,
    seed: int,
    observations: list[dict[str, np.ndarray]],
    actions: list[int],
    options: dict[str, float] | None = None,
) -> None:
    """Play one episode, labelling each state: the student's sampled actions (the expert's when ``student`` is None).

    ``options`` go to the env's ``reset``.
    """
    observation, _ = env.reset(seed=seed, options=options)
    expert.reset(seed)
    while True:
        label = int(expert.predict(observation)[0])
        observations.append(observation)
        actions.append(label)
        action = label
        if student is not None:
            mask = observation["action_mask"].astype(bool)
            action = int(student.predict(observation, action_masks=mask, deterministic=False)[0])
        observation, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return
