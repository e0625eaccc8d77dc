"""What ``aco-env sweep`` varies: a search space over :class:`~training.learning.config.TrainConfig` fields.

A :class:`SweepSpec` holds the options every trial shares (``--set KEY=VALUE``), the grid axes
(``--grid KEY=V1,V2,...``: every combination is tried), the random axes (``--random
KEY=LOW:HIGH[:log]`` or ``--random KEY=V1,V2,...``: each sample draws a value), the seeds (a
grid axis of its own: every combination is trained once per seed) and the number of samples.
Keys and values are read and checked by :mod:`training.scale.sweeps.keys`.

The random axes are drawn here, not by Tune: sample ``k`` (``0 <= k < samples``) draws one
value per random key from ``numpy.random.default_rng(search_seed)``, and every seed (and grid
point) of the sample trains with those same values. (Tune would draw afresh for each grid point,
so the seeds of one sample would differ in their values and no mean over seeds could be taken.)
In Tune's space the sample is a grid axis ``sample`` from which each random key reads its value.

Every trial's config is checked here (:func:`check_spec`), against TrainConfig's types and bounds,
with a :class:`~training.errors.UsageError` naming the key, before Ray starts. The spec is stored as
``SWEEP_DIR/sweep.json``; :meth:`SweepSpec.param_space` turns it into Ray Tune's search space
(importing Ray only there).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from training.errors import UsageError
from training.learning.config import TrainConfig
from training.scale.sweeps.keys import FIELD_TYPES, HP_PREFIX, check_key, coerce, parse_values

SCHEDULERS = ("fifo", "asha")
"""``--scheduler``: fifo runs every trial to the end; asha stops the worse ones at its rungs."""
TRIAL_DEFAULTS: dict[str, Any] = {"progress_bar": False}
"""Options of every trial unless the sweep sets them: no progress bars from trials running side by side."""
SAMPLE = "sample"
"""The trial parameter holding the index of its random draw (:meth:`SweepSpec.draws`), when there are several."""


@dataclass(frozen=True)
class RandomAxis:
    """One ``--random`` key: a number drawn from ``[low, high]`` (log-uniformly if ``log``), or one of ``choices``.

    An integer field draws integers, ``high`` included.
    """

    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()

    def bounds(self) -> tuple[Any, ...]:
        """The values a check should try: ``low`` and ``high``, or every choice."""
        return self.choices or (self.low, self.high)

    def draw(self, rng: np.random.Generator) -> Any:
        """One value: a choice, an integer in ``[low, high]`` (both integers), or a float in ``[low, high)``."""
        if self.choices:
            return self.choices[int(rng.integers(len(self.choices)))]
        assert self.low is not None and self.high is not None  # a range axis has both (parse_random)
        if isinstance(self.low, int) and isinstance(self.high, int):
            if not self.log:
                return int(rng.integers(self.low, self.high + 1))
            return min(int(math.exp(rng.uniform(math.log(self.low), math.log(self.high + 1)))), self.high)
        if self.log:
            return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))
        return float(rng.uniform(self.low, self.high))


@dataclass(frozen=True)
class SweepSpec:
    """A sweep's trials: shared options, grid axes, random axes, seeds, samples, the scheduler.

    Attributes:
        base: TrainConfig values every trial shares (``--set``, ``--scenario``, ...), JSON types.
        grid: Key -> the values every combination takes, in order (JSON types).
        random: Key -> the distribution each sample draws from.
        seeds: Each combination is trained once per seed (``TrainConfig.seed``).
        samples: Draws of the random axes (without any: repeats of the grid), each trained at every
            grid point and seed.
        scheduler: ``fifo`` or ``asha`` (:data:`SCHEDULERS`).
        grace_period: ASHA: training steps every trial gets before it may be stopped (0 = a quarter of
            ``timesteps``).
        search_seed: Seeds the draws of the random axes (:meth:`draws`): the same spec, the same trials.
    """

    base: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    random: dict[str, RandomAxis] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)
    samples: int = 1
    scheduler: str = "fifo"
    grace_period: int = 0
    search_seed: int = 0

    @property
    def trials(self) -> int:
        """How many trials the sweep runs: grid combinations x seeds x samples."""
        return math.prod(len(values) for values in self.grid.values()) * len(self.seeds) * self.samples

    @property
    def swept(self) -> list[str]:
        """The keys that vary between trials, ``seed`` last (the columns of the summary)."""
        return [*self.grid, *([SAMPLE] if self.samples > 1 else []), *self.random, "seed"]

    def base_config(self) -> TrainConfig:
        """The TrainConfig of the shared options (grid and random keys at TrainConfig's defaults)."""
        return trial_config({**TRIAL_DEFAULTS, **self.base}, {})

    @property
    def asha_grace_steps(self) -> int:
        """ASHA's grace period in training steps (``grace_period``, or a quarter of the timesteps when 0)."""
        return self.grace_period or max(self.base_config().timesteps // 4, 1)

    def points(self) -> Iterator[dict[str, Any]]:
        """Every grid combination x seed, each random key at each of its bounds (the points the checks try)."""
        keys = [*self.grid, *self.random, "seed"]
        axes = [*self.grid.values(), *(axis.bounds() for axis in self.random.values()), self.seeds]
        for values in itertools.product(*axes):
            yield dict(zip(keys, values, strict=True))

    def draws(self) -> list[dict[str, Any]]:
        """Each sample's values of the random keys (``samples`` dicts, empty without random keys)."""
        rng = np.random.default_rng(self.search_seed)
        return [{key: axis.draw(rng) for key, axis in self.random.items()} for _ in range(self.samples)]

    def param_space(self) -> dict[str, Any]:
        """Ray Tune's search space: grid axes, ``sample`` (with several), random keys read from it, ``seed``.

        Imports ray.tune; Tune's ``num_samples`` is 1 with this space (the samples are its axis).
        """
        from ray import tune

        space: dict[str, Any] = {key: tune.grid_search(values) for key, values in self.grid.items()}
        draws = self.draws()
        if self.samples > 1:
            space[SAMPLE] = tune.grid_search(list(range(self.samples)))
        for key in self.random:
            space[key] = tune.sample_from(functools.partial(_drawn, draws=draws, key=key))
        space["seed"] = tune.grid_search(list(self.seeds))
        return space

    def to_json(self) -> str:
        """The spec as JSON (``SWEEP_DIR/sweep.json``)."""
        return json.dumps(dataclasses.asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> SweepSpec:
        """The spec :meth:`to_json` wrote.

        Raises:
            ValueError: Not a sweep spec.
        """
        document = json.loads(text)
        if not isinstance(document, dict) or not {"base", "grid", "random", "seeds"} <= set(document):
            raise ValueError("not a sweep spec (base, grid, random, seeds)")
        random = {key: RandomAxis(**{**axis, "choices": tuple(axis["choices"])})
                  for key, axis in document["random"].items()}
        return cls(**{**document, "random": random, "seeds": tuple(document["seeds"])})


def trial_config(base: Mapping[str, Any], point: Mapping[str, Any]) -> TrainConfig:
    """The TrainConfig of one trial: ``base`` with the swept values of ``point`` (``hp.NAME`` into hyperparameters).

    ``point``'s ``sample`` (the index of the random draw, :data:`SAMPLE`) names the trial only.

    Raises:
        ValueError: A value TrainConfig rejects.
    """
    values: dict[str, Any] = {}
    hyperparameters: dict[str, Any] = {}
    for key, value in {**base, **point}.items():
        if key == SAMPLE:
            continue
        if key.startswith(HP_PREFIX):
            hyperparameters[key.removeprefix(HP_PREFIX)] = value
        else:
            values[key] = _typed(key, value)
    return TrainConfig(**values, hyperparameters=hyperparameters)


def check_spec(spec: SweepSpec) -> None:
    """Every trial's config is a valid TrainConfig: each grid combination, random key at both bounds, seed.

    Raises:
        UsageError: Naming the key whose value TrainConfig rejects.
    """
    if not spec.seeds:
        raise UsageError("--seeds: give at least one seed")
    if spec.scheduler not in SCHEDULERS:
        raise UsageError(f"--scheduler {spec.scheduler}: expected one of {', '.join(SCHEDULERS)}")
    both = set(spec.grid) & set(spec.random)
    if both:
        raise UsageError(f"{sorted(both)[0]}: a key is either a --grid or a --random axis, not both")
    for key in [*spec.base, *spec.grid, *spec.random]:
        check_key(key)
    if "seed" in {*spec.grid, *spec.random, *spec.base}:
        raise UsageError("seed: give the seeds with --seeds (a grid axis of its own)")
    for point in spec.points():
        try:
            trial_config({**TRIAL_DEFAULTS, **spec.base}, point)
        except ValueError as exc:
            key = _key_in_message(str(exc), [*spec.base, *point])
            raise UsageError(f"{key}: {exc}") from None


def parse_random(key: str, text: str) -> RandomAxis:
    """``LOW:HIGH``, ``LOW:HIGH:log`` (a number range) or ``V1,V2,...`` (choices) for ``--random KEY=...``.

    >>> parse_random("learning_rate", "1e-5:1e-3:log")
    RandomAxis(low=1e-05, high=0.001, log=True, choices=())

    Raises:
        UsageError: Not a range of numbers of the key's type (LOW < HIGH, both > 0 with log).
    """
    parts = text.split(":")
    if len(parts) == 1:
        return RandomAxis(choices=tuple(parse_values(key, text)))
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "log"):
        raise UsageError(f"--random {key}={text}: expected LOW:HIGH, LOW:HIGH:log or V1,V2,... (choices)")
    low, high = (coerce(key, yaml.safe_load(part)) for part in parts[:2])
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)):
        raise UsageError(f"--random {key}={text}: LOW and HIGH must be numbers")
    log = len(parts) == 3
    if not low < high or (log and low <= 0):
        raise UsageError(f"--random {key}={text}: expected LOW < HIGH{' and LOW > 0 (log)' if log else ''}")
    return RandomAxis(low=low, high=high, log=log)


def _drawn(spec: Any, draws: Sequence[Mapping[str, Any]], key: str) -> Any:
    """Tune's ``sample_from`` of a random key: its value in the trial's sample (``spec.config.sample``)."""
    return draws[spec.config.get(SAMPLE, 0)][key]


def _typed(key: str, value: Any) -> Any:
    """A JSON value as the TrainConfig field takes it (lists as tuples, paths as Path)."""
    kind = FIELD_TYPES[key]
    if typing.get_origin(kind) is tuple:
        return tuple(value)
    return Path(value) if kind is Path else value


def _key_in_message(message: str, keys: Sequence[str]) -> str:
    """The sweep key a TrainConfig error is about (its messages start with the field's name)."""
    return next((key for key in keys if message.startswith(key)), keys[0] if keys else "config")


__all__ = [
    "SAMPLE",
    "SCHEDULERS",
    "TRIAL_DEFAULTS",
    "RandomAxis",
    "SweepSpec",
    "check_spec",
    "parse_random",
    "trial_config",
]
