"""Learning curves: the policy scored on fixed validation seeds while it trains, beside the baselines.

:class:`LearningCurve` evaluates the policy being trained (its deterministic action) every
``every`` steps on ``episodes`` validation seeds and logs ``eval/<algo>/objective_usd`` (and
the rejected-jobs count) at the step count. The baselines (``aco``, ``first-fit``, ... by
default) are played once on the same seeds when training starts and logged at every point,
so TensorBoard draws them as flat reference lines; a custom-scalars layout puts every
``eval/*/objective_usd`` on one chart (TensorBoard's "Custom Scalars" tab).

The validation seeds (:data:`VALIDATION_SEED_OFFSET` + seed + k: the protocol's validation
range, :mod:`training.evaluation.protocol`) are disjoint from the final evaluation's test seeds
and from the training episodes (drawn from the envs' own generators, seeded in the training
range): the curve may guide a user's choices without touching the test seeds.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.logger import TensorBoardOutputFormat

from aco_env import ClusterSchedulingEnv, EnvConfig
from aco_env.metrics import EVAL_PREFIX
from agents.algorithms import ALGORITHMS
from agents.sb3_agent import SB3Agent
from digital_twin import NEXT_EVENT
from digital_twin.scenario import Scenario
from training.evaluation.evaluator import evaluate
from training.evaluation.protocol import VALIDATION, seeds
from training.evaluation.rollout import play_episode
from training.learning.callbacks import StepGridCallback

VALIDATION_SEED_OFFSET = VALIDATION.start
"""Validation seeds start at ``VALIDATION.start + seed`` (:data:`training.evaluation.protocol.VALIDATION`)."""
CURVE_METRICS = ("objective_usd", "rejected_jobs")
"""The episode metrics each curve point logs (means over the validation episodes)."""

CurvePointHook = Callable[[int, dict[str, float]], None]
"""Called with each curve point as it is logged: (environment steps, metric -> mean over the validation episodes)."""


class LearningCurve(StepGridCallback):
    """Logs ``eval/<name>/<metric>`` for the training policy every ``every`` steps, and the baselines.

    Args:
        scenario: The run's scenario (loaded).
        name: The trained agent's name in the tags (the algorithm, e.g. ``maskable-ppo``).
        algo: Key of :data:`agents.algorithms.ALGORITHMS` (how the policy acts on a mask).
        every: Environment steps between points (>= 1); the grid is absolute, as checkpoints'.
        episodes: Validation episodes per point (>= 1).
        seed: The run's seed; the validation seeds are ``VALIDATION_SEED_OFFSET + seed + k``.
        baselines: Registered agents played once on the same seeds and drawn at every point.
        on_point: Called with each of the policy's points once it is logged (``aco-env sweep``
            reports them to Ray Tune); what it raises ends the training.
        deferral: The policy's deferral rule (:mod:`digital_twin.sim.deferral`), as in its training envs.
    """

    def __init__(
        self,
        scenario: Scenario,
        name: str,
        algo: str,
        every: int,
        episodes: int,
        seed: int,
        baselines: Sequence[str] = ("aco", "first-fit"),
        on_point: CurvePointHook | None = None,
        deferral: str = NEXT_EVENT,
    ) -> None:
        super().__init__(every)
        if every < 1 or episodes < 1:
            raise ValueError(f"every and episodes must be >= 1, got {every} and {episodes}")
        self.scenario = scenario
        self.name = name
        self.algorithm = ALGORITHMS[algo]
        self.seeds = list(seeds(VALIDATION, episodes, offset=seed))
        self.baselines = tuple(baselines)
        self.reference: dict[str, dict[str, float]] = {}  # baseline -> metric -> mean
        self.points: list[tuple[int, dict[str, float]]] = []  # (step, metric -> mean) of the policy
        self.on_point = on_point
        self._env = ClusterSchedulingEnv(scenario, config=EnvConfig(deferral=deferral))

    def _on_training_start(self) -> None:
        super()._on_training_start()
        if self.baselines and not self.reference:
            with _global_generators_kept():
                played = evaluate(self.scenario, list(self.baselines), len(self.seeds), self.seeds[0], progress=False)
            for baseline in played.agents:
                mean = played.summary(baseline).mean
                self.reference[baseline] = {m: float(mean[m]) for m in CURVE_METRICS if mean.get(m) is not None}
            _write_layout(self.logger, [self.name, *self.reference])
        if self.model.num_timesteps == 0:
            self._record_point()  # the starting policy: the first point of the curve

    def _on_grid_point(self) -> None:
        self._record_point()

    def _record_point(self) -> None:
        """Play the current policy on the validation seeds and log it with the baselines."""
        agent = SB3Agent(self.model, self.algorithm, self._env, self.name)
        with _global_generators_kept():  # each episode seeds torch's generator (SB3Agent.reset), which PPO samples from
            episodes = [play_episode(self._env, agent, seed).metrics for seed in self.seeds]
        point = {m: float(np.mean([e[m] for e in episodes])) for m in CURVE_METRICS}
        self.points.append((int(self.model.num_timesteps), point))
        for agent_name, values in [(self.name, point), *self.reference.items()]:
            for metric, value in values.items():
                self.logger.record(f"{EVAL_PREFIX}{agent_name}/{metric}", value)
        self.logger.dump(int(self.model.num_timesteps))
        if self.on_point is not None:
            self.on_point(*self.points[-1])


@contextmanager
def _global_generators_kept() -> Iterator[None]:
    """Torch's, numpy's and Python's global generators afterwards as they were before.

    Training draws from them (actions, minibatch order); a curve point played in between
    leaves them untouched, so a run learns the same with or without its curve.
    """
    numpy_state, python_state = np.random.get_state(), random.getstate()
    with torch.random.fork_rng(devices=[]):
        try:
            yield
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)


def _write_layout(logger: Any, agents: Sequence[str]) -> None:
    """A TensorBoard custom-scalars layout: every agent's ``objective_usd`` on one chart."""
    layout = {
        "learning curve (validation seeds)": {
            "objective_usd": ["Multiline", [f"{EVAL_PREFIX}{agent}/objective_usd" for agent in agents]],
            "rejected_jobs": ["Multiline", [f"{EVAL_PREFIX}{agent}/jobs_rejected" for agent in agents]],
        }
    }
    for output in logger.output_formats:
        if isinstance(output, TensorBoardOutputFormat):
            output.writer.add_custom_scalars(layout)
            output.writer.flush()
