"""The evaluation protocol: disjoint named seed ranges, checked requests, and every user of seeds drawing from it."""

from __future__ import annotations

import pytest

from training.evaluation.protocol import (
    HEADLINE_EPISODES,
    IMITATION,
    RANGES,
    TEST,
    TRAINING,
    VALIDATION,
    SeedRange,
    SeedRangeError,
    check_disjoint,
    first_seed,
    outside_held_out,
    seeds,
    split_of,
    wrapped_offset,
)


def test_protocol__the_ranges_do_not_overlap() -> None:
    """No seed belongs to two purposes; the check itself finds an overlap and names both ranges."""
    check_disjoint(RANGES)
    names = [seed_range.name for seed_range in RANGES]
    assert names == ["training", "validation", "imitation", "test"]
    for index, one in enumerate(RANGES):
        for other in RANGES[index + 1 :]:
            assert set(range(one.start, one.stop)).isdisjoint(range(other.start, other.stop))
    with pytest.raises(SeedRangeError, match=r"validation seeds 5,000\.\.19,999 and the clash"):
        check_disjoint([*RANGES, SeedRange("clash", 19_999, 20_001, "overlaps validation and imitation")])


def test_protocol__ranges_hold_their_historical_uses() -> None:
    """Training envs 0.., validation 5,000.. (with the old 10,000 block), imitation 20,000.., test 100,000.."""
    assert (TRAINING.start, VALIDATION.start, IMITATION.start, TEST.start) == (0, 5_000, 20_000, 100_000)
    assert all(seed in VALIDATION for seed in range(10_000, 10_020))
    assert len(TEST) >= HEADLINE_EPISODES and seeds(TEST, HEADLINE_EPISODES)[-1] == 100_099


def test_seeds__consecutive_from_the_offset_and_refused_past_the_range() -> None:
    """A request inside its range gives consecutive seeds; one that leaves it is an error saying what fits."""
    assert seeds("validation", 3, offset=2) == (5_002, 5_003, 5_004)
    assert seeds(TEST, 0) == () and first_seed(TEST, 1, offset=len(TEST) - 1) == 109_999
    with pytest.raises(SeedRangeError, match=r"leave the test seeds 100,000..109,999 .*<= 10,000"):
        seeds(TEST, 2, offset=len(TEST) - 1)
    with pytest.raises(SeedRangeError, match="must be >= 0"):
        seeds(TEST, 1, offset=-1)
    with pytest.raises(SeedRangeError, match="no seed range 'holdout'"):
        seeds("holdout", 1)


def test_split_of_and_folding__name_the_range_and_keep_inside_it() -> None:
    """split_of names the range of a set of seeds; folding and moving keep training seeds out of held-out ranges."""
    assert split_of([100_000, 100_099]) == "test" and split_of([10_000]) == "validation"
    assert split_of([4_999, 5_000]) is None and split_of([]) is None
    for offset in (0, 4_983, 4_984, 123_456):
        folded = wrapped_offset(TRAINING, offset, 16)
        assert seeds(TRAINING, 16, folded)[-1] in TRAINING
    for seed in (0, 5_000, 19_999, 100_000, 109_999, 2**32 - 1):
        moved = outside_held_out(seed)
        assert moved not in VALIDATION and moved not in TEST
        assert (moved == seed) == (split_of([seed]) not in ("validation", "test"))


@pytest.mark.training
def test_protocol__the_training_layer_takes_its_offsets_from_it() -> None:
    """The final evaluation, the learning curve and DAgger start where the protocol says."""
    from training.learning.config import TrainConfig
    from training.learning.curves import VALIDATION_SEED_OFFSET
    from training.learning.imitation import IMITATION_SEED_OFFSET
    from training.learning.train import EVAL_SEED_OFFSET
    from training.learning.training_envs import training_env_seed

    offsets = (EVAL_SEED_OFFSET, VALIDATION_SEED_OFFSET, IMITATION_SEED_OFFSET)
    assert offsets == (TEST.start, VALIDATION.start, IMITATION.start)
    config = TrainConfig(seed=4_990, n_envs=16)
    for resumed_steps in (0, 100_000, 300_000):
        first = training_env_seed(config, resumed_steps)
        assert first in TRAINING and first + config.n_envs - 1 in TRAINING
