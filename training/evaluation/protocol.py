"""The evaluation protocol: which episode seeds serve which purpose, written once.

Every episode the project plays for a purpose is seeded from one of four named, disjoint ranges
of env seeds (:class:`SeedRange`), and only from here:

============  ===================  ===========================================================
range         seeds                what plays them
============  ===================  ===========================================================
training      0 .. 4,999           training envs (env ``rank`` of a run seeded ``s``: ``s + rank``)
validation    5,000 .. 19,999      learning curves, model selection, sweeps, every
                                   "what was tried" comparison (``aco-env evaluate --split validation``)
imitation     20,000 .. 49,999     DAgger's expert-labelled episodes (training data too)
test          100,000 .. 109,999   published tables only (``aco-env evaluate --split test``, the
                                   final evaluation of ``aco-env train`` / ``aco-env run``)
============  ===================  ===========================================================

The rules: a number in a published table (README, docs/results.md's headline tables) is measured
on **test** seeds, with at least :data:`HEADLINE_EPISODES` episodes per agent from the range's
start; anything that chooses (a recipe, a checkpoint, a hyper-parameter, a row of "what was
tried") is measured on **validation** seeds, never on test seeds. The validation range holds
the old evaluation block 10,000 - 10,019, which served model selection before this protocol.
Within a range, a run seeded ``s`` starts at ``start + s`` (:func:`seeds` with ``offset=s``), so
runs with different seeds play different episodes of the same purpose.

Seeds beyond these ranges are not forbidden (``aco-env evaluate --seed`` takes any), but they
belong to no purpose. RLlib's sub-envs draw their first seed from a ``SeedSequence`` of the
run's seed (:func:`training.scale.rllib.env.sub_env_seed`), kept out of the held-out ranges
by :func:`outside_held_out`.

>>> seeds(TEST, 3)
(100000, 100001, 100002)
>>> seeds(VALIDATION, 2, offset=7)
(5007, 5008)
>>> split_of(range(100_000, 100_100))
'test'
>>> split_of([4_999, 5_000]) is None
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SeedRange:
    """A named range of env seeds ``start, start + 1, ..., stop - 1`` reserved for one purpose.

    Attributes:
        name: The range's name (``--split`` takes it for validation and test).
        start: Its first seed.
        stop: One past its last seed (exclusive, as ``range``).
        purpose: What plays its seeds, one line.
    """

    name: str
    start: int
    stop: int
    purpose: str

    def __len__(self) -> int:
        """How many seeds the range holds."""
        return self.stop - self.start

    def __contains__(self, seed: object) -> bool:
        """Whether ``seed`` (an int) is one of the range's seeds."""
        return isinstance(seed, int) and self.start <= seed < self.stop

    def overlaps(self, other: SeedRange) -> bool:
        """Whether the two ranges share a seed."""
        return self.start < other.stop and other.start < self.stop

    def __str__(self) -> str:
        return f"{self.name} seeds {self.start:,}..{self.stop - 1:,}"


TRAINING = SeedRange("training", 0, 5_000, "training envs: env rank r of a run seeded s starts at seed s + r")
"""Training envs' first episodes (later episodes continue each env's generator)."""
VALIDATION = SeedRange(
    "validation", 5_000, 20_000, "learning curves, model selection, sweeps, what-was-tried comparisons"
)
"""Everything that chooses: curves, checkpoints, recipes, hyper-parameters, "what was tried" rows."""
IMITATION = SeedRange("imitation", 20_000, 50_000, "DAgger's expert-labelled episodes (training data)")
"""DAgger's episodes: training data, labelled by an expert."""
TEST = SeedRange("test", 100_000, 110_000, "published tables only")
"""Published tables only; never used to choose anything."""

RANGES: tuple[SeedRange, ...] = (TRAINING, VALIDATION, IMITATION, TEST)
"""Every range, in seed order."""
SPLITS: dict[str, SeedRange] = {seed_range.name: seed_range for seed_range in RANGES}
"""The ranges by name."""
EVALUATION_SPLITS: tuple[str, ...] = (VALIDATION.name, TEST.name)
"""The ranges an evaluation may play (``aco-env evaluate --split``)."""
HELD_OUT: tuple[SeedRange, ...] = (VALIDATION, TEST)
"""The ranges no training episode may start from."""
HEADLINE_EPISODES = 100
"""A published headline table plays at least this many test seeds per agent, from the range's start."""


class SeedRangeError(ValueError):
    """A request for seeds leaves its range."""


def seed_range(split: str | SeedRange) -> SeedRange:
    """The range named ``split`` (or ``split`` itself).

    Raises:
        SeedRangeError: No range has that name.
    """
    if isinstance(split, SeedRange):
        return split
    if split not in SPLITS:
        raise SeedRangeError(f"no seed range {split!r}; the ranges are {', '.join(SPLITS)}")
    return SPLITS[split]


def seeds(split: str | SeedRange, episodes: int, offset: int = 0) -> tuple[int, ...]:
    """``episodes`` consecutive seeds of a range, from ``start + offset``.

    Args:
        split: A range or its name (``"training"``, ``"validation"``, ``"imitation"``, ``"test"``).
        episodes: How many seeds (>= 0; 0 gives ``()``).
        offset: Where in the range they start (>= 0): a run's seed, so runs with other seeds
            play other episodes of the same purpose.

    Raises:
        SeedRangeError: ``offset`` or ``episodes`` is negative, or the last seed would leave
            the range (the message says which seeds fit).
    """
    chosen = seed_range(split)
    if offset < 0 or episodes < 0:
        raise SeedRangeError(f"{chosen.name}: offset and episodes must be >= 0, got {offset} and {episodes}")
    if offset + episodes > len(chosen):
        raise SeedRangeError(
            f"{episodes} episode(s) from offset {offset} leave the {chosen} (offset + episodes must be <= "
            f"{len(chosen):,}); choose a smaller seed or fewer episodes"
        )
    return tuple(range(chosen.start + offset, chosen.start + offset + episodes))


def first_seed(split: str | SeedRange, episodes: int, offset: int = 0) -> int:
    """The first of :func:`seeds` (what :func:`training.evaluation.evaluator.evaluate` takes), checked the same way.

    >>> first_seed("test", 100), first_seed(VALIDATION, 5, offset=1)
    (100000, 5001)
    """
    chosen = seeds(split, episodes, offset)
    return chosen[0] if chosen else seed_range(split).start + offset


def wrapped_offset(split: str | SeedRange, offset: int, count: int) -> int:
    """``offset`` folded into the range so that ``count`` seeds from it fit (for resumed runs).

    A resumed training run is offset by its seed plus the steps it has made (so it does not
    replay its first episodes), which can exceed the range; folding keeps it inside.

    >>> wrapped_offset(TRAINING, 3, 16), wrapped_offset(TRAINING, 5_000, 16)
    (3, 15)
    """
    room = len(seed_range(split)) - count + 1
    if room < 1:
        raise SeedRangeError(f"{count} seeds do not fit the {seed_range(split)}")
    return offset % room


def split_of(played: Iterable[int]) -> str | None:
    """The name of the range holding every seed of ``played``; ``None`` when none does (or it is empty)."""
    values = list(played)
    for chosen in RANGES:
        if values and all(seed in chosen for seed in values):
            return chosen.name
    return None


def outside_held_out(seed: int) -> int:
    """``seed``, moved past the held-out ranges when it falls in one (a training seed drawn at random).

    >>> outside_held_out(7), outside_held_out(5_001), outside_held_out(100_002)
    (7, 20001, 110002)
    """
    for held_out in HELD_OUT:
        if seed in held_out:
            return held_out.stop + (seed - held_out.start)
    return seed


def check_disjoint(ranges: Iterable[SeedRange] = RANGES) -> None:
    """Raise when two of ``ranges`` share a seed, or one is empty.

    Raises:
        SeedRangeError: Naming the two ranges.
    """
    checked: list[SeedRange] = []
    for current in ranges:
        if len(current) < 1:
            raise SeedRangeError(f"the {current.name} range is empty")
        for earlier in checked:
            if current.overlaps(earlier):
                raise SeedRangeError(f"the {earlier} and the {current} overlap")
        checked.append(current)
