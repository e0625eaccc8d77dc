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
and test seeds. An iteration's episodes are played side by side in one batched env
(:class:`aco_env.vector_env.BatchedClusterEnv`, an expert per env): the student acts on them with
one forward pass per step, and the labels are kept episode by episode, in episode order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from aco_env.vector_env import BatchedClusterEnv
from agents import make_agent
from digital_twin import NEXT_EVENT
from digital_twin.scenario import Scenario
from training.evaluation.protocol import IMITATION, first_seed
from training.learning.bc import fit_policy
from training.learning.experts import AUTO_EXPERT, expert_for
from training.learning.labels import Labels, stack_labels
from training.learning.random_start_hour import episode_start_hour
from training.progress import Progress

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
        deferral: The envs' deferral rule (:mod:`digital_twin.sim.deferral`): the student's, as in RL.
    """

    expert: str = AUTO_EXPERT
    iterations: int = 6
    episodes: int = 16
    epochs: int = 10
    batch_size: int = 256
    learning_rate: float = 1e-3
    random_start_hour: bool = False
    deferral: str = NEXT_EVENT


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
    observations: list[dict[str, np.ndarray]] = []
    actions: list[int] = []
    rounds: list[DaggerRound] = []
    labels = Labels({}, np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=bool))
    # every episode of every iteration in the imitation range (a clear error if not)
    episode_seed = first_seed(IMITATION, settings.iterations * settings.episodes, offset=seed)
    with Progress(settings.iterations * settings.episodes, "DAgger", "episode", enabled=progress) as bar:
        for iteration in range(settings.iterations):
            started, before = time.perf_counter(), len(actions)
            first = iteration * settings.episodes  # episode k plays task (first + k) % len(tasks)
            played = [tasks[(first + k) % len(tasks)] for k in range(settings.episodes)]
            batch = BatchedClusterEnv(
                played, settings.episodes, autoreset_mode=AutoresetMode.DISABLED, deferral=settings.deferral,
                reset_options=_start_hours if settings.random_start_hour else None,
            )  # fmt: skip
            pairs = zip(played, batch.envs, strict=True)
            experts = [make_agent(expert_for(settings.expert, task), env) for task, env in pairs]
            seeds = list(range(episode_seed, episode_seed + settings.episodes))
            _label_batch(batch, experts, model if iteration > 0 else None, seeds, observations, actions)
            episode_seed += settings.episodes
            bar.update(settings.episodes, note=f"iteration {iteration}")
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
                "DAgger iteration %d: %d new labels, %d in all, accuracy %.3f", iteration, rounds[-1].new_labels,
                len(actions), stats["accuracy"],
            )
    return labels, rounds


def _start_hours(env: int, seed: int | None) -> dict[str, Any]:
    """The reset options of an episode of ``seed``: its start hour (:func:`episode_start_hour`)."""
    del env
    assert seed is not None  # every DAgger episode is reset with its seed
    return {"start_hour": episode_start_hour(seed)}


def _label_batch(
    batch: BatchedClusterEnv,
    experts: Sequence[Any],
    student: Any | None,
    seeds: list[int],
    observations: list[dict[str, np.ndarray]],
    actions: list[int],
) -> None:
    """Play one episode per env of ``batch`` (env ``b`` with seed ``seeds[b]``), labelling each state.

    The student's sampled actions are played (the expert's when ``student`` is None), one forward
    pass per step for the envs still playing; each env's labels are appended episode after episode.
    """
    observation, _ = batch.reset(seed=seeds)
    for expert, seed in zip(experts, seeds, strict=True):
        expert.reset(seed)
    playing = np.ones(batch.num_envs, dtype=bool)
    episodes: list[list[tuple[dict[str, np.ndarray], int]]] = [[] for _ in seeds]
    while playing.any():
        chosen = np.full(batch.num_envs, batch.n_nodes, dtype=np.int64)  # an ended episode's action: any
        for b in np.flatnonzero(playing).tolist():
            row = {key: values[b] for key, values in observation.items()}  # views of this step's fresh copy
            # the expert reads its env's own observation; the student learns from the batch's (padded) row
            own_label = int(experts[b].predict(batch.env_observation(b, observation))[0])
            chosen[b] = label = batch.batch_action(b, own_label)
            episodes[b].append((row, label))
        if student is not None:
            rows = np.flatnonzero(playing)
            batch_obs = {key: values[rows] for key, values in observation.items()}
            masks = observation["action_mask"][rows].astype(bool)
            chosen[rows] = np.asarray(student.predict(batch_obs, action_masks=masks, deterministic=False)[0])
        observation, _, terminated, truncated, _ = batch.step(chosen)
        playing &= ~(terminated | truncated)
    for episode in episodes:
        for own, label in episode:
            observations.append(own)
            actions.append(label)
