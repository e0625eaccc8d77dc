"""The workflow generator's parameters: :class:`WorkflowConfig`, each field checked on construction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from digital_twin._from_mapping import from_mapping
from digital_twin.errors import SpecError, short_repr
from digital_twin.fleet import check_at_most_max_amount
from digital_twin.jobs import BATCH, WORKLOAD_TYPES
from digital_twin.workloads._common import check_fraction, check_int, check_positive
from digital_twin.workloads.workflows.shapes import CHAIN, FORK_JOIN, LAYERED, MAP_REDUCE, SHAPES


@dataclass(frozen=True, slots=True)
class WorkflowConfig:
    """All parameters of the workflow generator (every field has a default).

    Ranges are ``(min, max)`` pairs of integers, both included. Build one from a scenario's
    options with :meth:`from_options`; a bad value raises :class:`SpecError` naming its field.
    """

    rate_per_s: float = 1.0 / 600.0
    """Mean arrival rate of workflows per second (> 0; ignored when ``count`` is set). With the
    other defaults a workflow has 9.5 tasks and asks for about 18,000 core-seconds on average, so
    the default rate (one per 10 min) asks for about 30 cores on average."""
    count: int | None = None
    """Exactly this many workflows (>= 0), at sorted uniform times on ``[0, horizon_s)``;
    ``None`` = a Poisson number at ``rate_per_s``."""
    shape_mix: tuple[tuple[str, float], ...] = ((CHAIN, 1.0), (FORK_JOIN, 1.0), (LAYERED, 1.0), (MAP_REDUCE, 1.0))
    """``(shape, weight)`` pairs: each workflow's shape is drawn in proportion to the weights
    (each >= 0, sum > 0; probabilities are weights). A mapping shape -> weight is accepted and
    converted (as from a scenario file); a shape left out is never drawn."""
    chain_tasks_range: tuple[int, int] = (3, 8)
    """Tasks of a ``chain`` (min >= 1)."""
    width_range: tuple[int, int] = (2, 8)
    """Fan-out of a ``fork-join``, width of each layer of ``layered``, maps of ``map-reduce`` (min >= 1)."""
    layers_range: tuple[int, int] = (2, 5)
    """Layers of ``layered`` (min >= 2)."""
    max_parents: int = 3
    """Most parents a ``layered`` task draws from the previous layer (>= 1)."""
    reduces_range: tuple[int, int] = (1, 4)
    """Reduces of ``map-reduce`` (min >= 1)."""
    merge_prob: float = 0.5
    """Probability in [0, 1] that a ``map-reduce`` ends with a merge task."""
    median_duration_s: float = 300.0
    """Median task duration in seconds (> 0)."""
    duration_sigma: float = 1.0
    """Standard deviation of log-duration (>= 0; 0 = every task lasts the median)."""
    min_duration_s: float = 1.0
    """Durations are clipped to at least this many seconds (> 0)."""
    max_duration_s: float = 86_400.0
    """Durations are clipped to at most this many seconds (>= ``min_duration_s``)."""
    cpu_cores_choices: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0)
    """Cores a task requests, one drawn per task (each > 0)."""
    cpu_cores_probs: tuple[float, ...] | None = None
    """Relative frequencies of ``cpu_cores_choices`` (one each, >= 0, sum > 0); ``None`` = uniform."""
    mem_gb_choices: tuple[float, ...] = (2.0, 4.0, 8.0, 16.0)
    """Memory in GB a task requests, drawn independently of its cores (each > 0)."""
    mem_gb_probs: tuple[float, ...] | None = None
    """Relative frequencies of ``mem_gb_choices``; ``None`` = uniform."""
    workload: str = BATCH
    """Workload type of every task: ``"latency-critical"``, ``"batch"`` or ``"stream"``."""
    priority: int = 50
    """Priority of every task, 1..100."""
    preemptible_prob: float = 0.3
    """Probability in [0, 1] that a task is preemptible."""
    weight_choices: tuple[float, ...] = (1.0, 2.0, 4.0)
    """Workflow weights (:attr:`WorkflowSpec.weight`), one drawn per workflow (each > 0)."""
    weight_probs: tuple[float, ...] | None = (0.6, 0.3, 0.1)
    """Relative frequencies of ``weight_choices``; ``None`` = uniform."""
    deadline_slack: float | None = None
    """Deadline of a workflow = arrival + this x its critical path, in seconds (>= 1: a smaller
    factor gives a deadline no schedule can meet); ``None`` = no deadline."""
    id_prefix: str = "wf"
    """Workflow ``k`` is ``f"{id_prefix}{k}"``, its task ``i`` ``f"{id_prefix}{k}-t{i}"`` (non-empty)."""

    def __post_init__(self) -> None:
        self._check_arrivals()
        self._check_shapes()
        self._check_tasks()
        self._check_workflows()

    @classmethod
    def from_options(cls, options: Mapping[str, Any], where: str = "workflows") -> WorkflowConfig:
        """The config of a mapping of field names (lists become tuples), as a scenario file gives.

        Raises:
            SpecError: ``"<where>: ..."``: not a mapping, an unknown key (naming it and the known
                ones) or a bad value (naming its field).
        """
        if isinstance(options, Mapping):
            options = {key: _tuples(value) for key, value in options.items()}
        return from_mapping(cls, options, where, "workflow generator")

    @property
    def max_tasks_per_workflow(self) -> int:
        """The most tasks one workflow can have, whatever its shape (for size checks before a draw)."""
        widest, deepest = self.width_range[1], self.layers_range[1]
        return max(self.chain_tasks_range[1], widest + 2, widest * deepest, widest + self.reduces_range[1] + 1)

    def _check_arrivals(self) -> None:
        check_positive("rate_per_s", self.rate_per_s)
        if self.count is not None:
            check_int("count", self.count, 0)

    def _check_shapes(self) -> None:
        object.__setattr__(self, "shape_mix", _checked_shape_mix(self.shape_mix))
        for name, low in (("chain_tasks_range", 1), ("width_range", 1), ("layers_range", 2), ("reduces_range", 1)):
            object.__setattr__(self, name, _checked_range(name, getattr(self, name), low))
        check_int("max_parents", self.max_parents, 1)
        check_fraction("merge_prob", self.merge_prob)

    def _check_tasks(self) -> None:
        for name in ("median_duration_s", "min_duration_s", "max_duration_s"):
            check_positive(name, getattr(self, name))
        check_positive("duration_sigma", self.duration_sigma, allow_zero=True)
        if self.max_duration_s < self.min_duration_s:
            raise SpecError(f"max_duration_s ({self.max_duration_s:g}) must be >= min_duration_s "
                            f"({self.min_duration_s:g})")
        for resource in ("cpu_cores", "mem_gb"):
            choices = _checked_choices(f"{resource}_choices", getattr(self, f"{resource}_choices"))
            for value in choices:
                check_at_most_max_amount("workflow config", f"{resource}_choices", value)
            object.__setattr__(self, f"{resource}_choices", choices)
            probs = _checked_probs(f"{resource}_probs", getattr(self, f"{resource}_probs"), len(choices))
            object.__setattr__(self, f"{resource}_probs", probs)
        if self.workload not in WORKLOAD_TYPES:
            raise SpecError(f"workload {short_repr(self.workload)} is not one of {WORKLOAD_TYPES}")
        check_int("priority", self.priority, 1, 100)
        check_fraction("preemptible_prob", self.preemptible_prob)

    def _check_workflows(self) -> None:
        choices = _checked_choices("weight_choices", self.weight_choices)
        object.__setattr__(self, "weight_choices", choices)
        object.__setattr__(self, "weight_probs", _checked_probs("weight_probs", self.weight_probs, len(choices)))
        if self.deadline_slack is not None:
            check_positive("deadline_slack", self.deadline_slack)
            if self.deadline_slack < 1.0:
                raise SpecError(f"deadline_slack must be >= 1 (below, no schedule meets the deadline), "
                                f"got {short_repr(self.deadline_slack)}")
        if not isinstance(self.id_prefix, str) or not self.id_prefix:
            raise SpecError(f"id_prefix must be a non-empty string, got {short_repr(self.id_prefix)}")


def _tuples(value: Any) -> Any:
    """``value`` with its lists (at any depth) turned into tuples."""
    if isinstance(value, list | tuple):
        return tuple(_tuples(v) for v in value)
    return value


def _checked_range(name: str, value: object, low: int) -> tuple[int, int]:
    """``value`` as a ``(min, max)`` tuple of integers with ``low <= min <= max``."""
    if (
        isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and low <= value[0] <= value[1]
    ):
        return (value[0], value[1])
    raise SpecError(f"{name} must be a (min, max) pair of integers with {low} <= min <= max, got {short_repr(value)}")


def _checked_choices(name: str, values: object) -> tuple[float, ...]:
    """``values`` as a non-empty tuple of finite numbers > 0."""
    if not isinstance(values, Sequence) or isinstance(values, str) or not values:
        raise SpecError(f"{name} must be a non-empty list of numbers, got {short_repr(values)}")
    for i, value in enumerate(values):
        check_positive(f"{name}[{i}]", value)
    return tuple(values)


def _checked_probs(name: str, probs: object, n: int) -> tuple[float, ...] | None:
    """``probs`` as a tuple of ``n`` finite weights >= 0 with a positive sum (``None`` passes)."""
    if probs is None:
        return None
    if not isinstance(probs, Sequence) or isinstance(probs, str) or len(probs) != n:
        raise SpecError(f"{name} must be a list of {n} numbers (one per choice), got {short_repr(probs)}")
    for i, prob in enumerate(probs):
        check_positive(f"{name}[{i}]", prob, allow_zero=True)
    if sum(probs) <= 0:
        raise SpecError(f"{name} must not all be 0")
    return tuple(probs)


def _checked_shape_mix(mix: object) -> tuple[tuple[str, float], ...]:
    """``mix`` (pairs or a mapping) as ``(shape, weight)`` pairs of distinct known shapes."""
    pairs = tuple(mix.items()) if isinstance(mix, Mapping) else mix
    if not isinstance(pairs, Sequence) or isinstance(pairs, str) or not pairs:
        raise SpecError(f"shape_mix must be a non-empty mapping shape -> weight, got {short_repr(mix)}")
    checked: dict[str, float] = {}
    for pair in pairs:
        if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
            raise SpecError(f"shape_mix must hold (shape, weight) pairs, got {short_repr(pair)}")
        shape, weight = pair
        if shape not in SHAPES:
            raise SpecError(f"shape_mix: shape {short_repr(shape)} is not one of {SHAPES}")
        if shape in checked:
            raise SpecError(f"shape_mix: shape {short_repr(shape)} is given twice")
        check_positive(f"shape_mix[{shape!r}]", weight, allow_zero=True)
        checked[shape] = weight
    if sum(checked.values()) <= 0:
        raise SpecError("shape_mix: the weights must not all be 0")
    return tuple(checked.items())
