"""The critic learns: with each task's rewards divided by its first-fit objective, the value head explains returns.

With rewards in raw USD (x 10, the earlier default) SB3's value head, moving its output by about
the learning rate per step under clipped gradients, predicts a constant: explained variance 0.
The runs are seeded, so each gives the same numbers every time on the same versions.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from training.learning.config import TrainConfig
from training.learning.main_job import RUN_ROLLOUT
from training.learning.train import train

ROLLOUTS = 4
"""PPO updates of each run (4 x 8,192 steps)."""


def _explained_variance(run_dir: Path) -> list[float]:
    """``train/explained_variance`` by step, in order (the last update's is logged at the last step)."""
    events = EventAccumulator(str(run_dir / "tb_1"), size_guidance={"scalars": 0})
    events.Reload()
    by_step = {point.step: point.value for point in events.Scalars("train/explained_variance")}
    return [by_step[step] for step in sorted(by_step)]


def _run(tmp_path: Path, **options: object) -> list[float]:
    steps = ROLLOUTS * RUN_ROLLOUT["n_envs"] * RUN_ROLLOUT["n_steps"]
    config = TrainConfig(
        logdir=tmp_path,
        timesteps=steps,
        eval_episodes=0,
        curve_every=-1,
        checkpoint_every=-1,
        progress_bar=False,
        **RUN_ROLLOUT,
        **options,  # type: ignore[arg-type]
    )
    return _explained_variance(train(config))


@pytest.mark.training
def test_critic__explains_the_returns_with_per_task_reward_scales(tmp_path: Path) -> None:
    """RL alone, the defaults: by the last of four updates the value head explains over a third of the returns."""
    explained = _run(tmp_path)
    assert explained[-1] > 0.35, explained


@pytest.mark.training
def test_critic__fits_nothing_with_rewards_in_raw_usd(tmp_path: Path) -> None:
    """The same run with rewards of -USD x 10 and no per-task scale: the value head explains about nothing."""
    explained = _run(tmp_path, reward_reference="", reward_scale=10.0)
    assert max(abs(value) for value in explained) < 0.05, explained
