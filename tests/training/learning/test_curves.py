"""The learning curve: the policy on validation seeds every N steps, the baselines as flat reference lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.train_helpers import TINY
from training.evaluation.evaluator import evaluate
from training.evaluation.protocol import TEST, VALIDATION
from training.learning.config import TrainConfig
from training.learning.curves import VALIDATION_SEED_OFFSET
from training.learning.train import EVAL_SEED_OFFSET, train


def _scalars(run_dir: Path, tag: str) -> list[tuple[int, float]]:
    accumulator = EventAccumulator(str(run_dir / "tb_1"))
    accumulator.Reload()
    return [(event.step, event.value) for event in accumulator.Scalars(tag)]


@pytest.mark.training
def test_curve__a_point_at_the_start_and_every_n_steps_with_the_baselines_beside_it(tmp_path: Path) -> None:
    """512 steps, a point every 256: steps 0, 256, 512; ACO's line is its validation-seed mean at every point."""
    options = dict(TINY, curve_every=256, curve_episodes=2, curve_baselines=("aco",), eval_episodes=1)
    run_dir = train(TrainConfig(logdir=tmp_path, eval_agents=("aco",), **options))
    policy = _scalars(run_dir, "eval/maskable-ppo/objective_usd")
    assert [step for step, _ in policy] == [0, 256, 512]
    aco = evaluate("fleet5-synthetic", ["aco"], 2, seed=VALIDATION_SEED_OFFSET, progress=False)
    expected = aco.summary("aco").mean["objective_usd"]
    assert [(step, pytest.approx(value, rel=1e-6)) for step, value in _scalars(run_dir, "eval/aco/objective_usd")] == [
        (step, pytest.approx(expected, rel=1e-6)) for step in (0, 256, 512)
    ]
    assert (run_dir / "learning_curve.png").stat().st_size > 0
    # the final evaluation, on the held-out seeds, is logged apart from the curve
    assert [step for step, _ in _scalars(run_dir, "test/aco/objective_usd")] == [512]


def test_curve__validation_seeds_are_disjoint_from_the_evaluation_seeds() -> None:
    """The curve's validation seeds and the final evaluation's test seeds never meet, whatever the run's seed."""
    validation = set(range(VALIDATION_SEED_OFFSET, VALIDATION_SEED_OFFSET + len(VALIDATION)))
    assert validation.isdisjoint(range(EVAL_SEED_OFFSET, EVAL_SEED_OFFSET + len(TEST)))


def test_curve__auto_interval_gives_eleven_points_and_minus_one_none() -> None:
    assert TrainConfig(timesteps=150_000).curve_interval == 15_000
    assert TrainConfig(curve_every=-1).curve_interval == 0
