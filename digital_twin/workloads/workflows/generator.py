"""Drawing workflows: arrivals, each workflow's shape and DAG, task attributes, weights and deadlines."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.jobs import JobSpec
from digital_twin.workflows import WorkflowSpec
from digital_twin.workload import Workload
from digital_twin.workloads._common import check_int, check_positive
from digital_twin.workloads.workflows.config import WorkflowConfig
from digital_twin.workloads.workflows.shapes import (
    CHAIN,
    FORK_JOIN,
    LAYERED,
    MAP_REDUCE,
    Dag,
    chain_dag,
    critical_path_s,
    fork_join_dag,
    layered_dag,
    map_reduce_dag,
)


class _Sizes(NamedTuple):
    """One workflow's drawn sizes; its shape's builder reads the ones it needs."""

    chain_tasks: int
    width: int
    layers: int
    reduces: int
    merge: bool


_BUILDERS: dict[str, Callable[[_Sizes, WorkflowConfig, np.random.Generator], Dag]] = {
    CHAIN: lambda sizes, config, rng: chain_dag(sizes.chain_tasks),
    FORK_JOIN: lambda sizes, config, rng: fork_join_dag(sizes.width),
    LAYERED: lambda sizes, config, rng: layered_dag(
        _integers(rng, config.width_range, sizes.layers).tolist(), config.max_parents, rng
    ),
    MAP_REDUCE: lambda sizes, config, rng: map_reduce_dag(sizes.width, sizes.reduces, sizes.merge),
}
"""Each shape's DAG from its workflow's sizes (``layered`` draws its layer widths and parents)."""


def generate_workflows(
    config: WorkflowConfig,
    rng: np.random.Generator,
    horizon_s: float,
    limit: int | None = None,
) -> Workload:
    """Draw synthetic workflows arriving on ``[0, horizon_s)``.

    Args:
        config: Generator parameters.
        rng: The only source of randomness.
        horizon_s: Length of the arrival window in seconds (> 0).
        limit: Keep at most this many tasks (>= 0; ``None`` = all): the longest run of whole
            workflows, in arrival order, whose tasks fit (a workflow that does not fit ends it).

    Returns:
        The tasks sorted by arrival, with one :class:`WorkflowSpec` per kept workflow.

    Raises:
        SpecError: A bad argument.

    >>> config = WorkflowConfig(count=2, shape_mix=(("fork-join", 1.0),), width_range=(2, 2))
    >>> jobs = generate_workflows(config, np.random.default_rng(0), 600.0)
    >>> [(job.job_id, job.parents) for job in jobs[:4]]  # doctest: +NORMALIZE_WHITESPACE
    [('wf0-t0', ()), ('wf0-t1', ('wf0-t0',)), ('wf0-t2', ('wf0-t0',)),
     ('wf0-t3', ('wf0-t1', 'wf0-t2'))]
    >>> len(jobs), sorted(jobs.workflows)
    (8, ['wf0', 'wf1'])
    >>> jobs == generate_workflows(config, np.random.default_rng(0), 600.0)
    True
    """
    if not isinstance(rng, np.random.Generator):
        raise SpecError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    check_positive("horizon_s", horizon_s)
    if limit is not None:
        check_int("limit", limit, 0)
    arrival = _arrivals(config, rng, horizon_s)
    dags = _draw_dags(config, rng, arrival.size)
    n_tasks = sum(len(dag) for dag in dags)
    tasks = _TaskColumns(
        duration_s=_durations(config, rng, n_tasks),
        cpu_cores=_choose(rng, config.cpu_cores_choices, config.cpu_cores_probs, n_tasks),
        mem_gb=_choose(rng, config.mem_gb_choices, config.mem_gb_probs, n_tasks),
        preemptible=rng.random(n_tasks) < config.preemptible_prob,
    )
    weight = _choose(rng, config.weight_choices, config.weight_probs, arrival.size)

    sizes = np.array([len(dag) for dag in dags], dtype=np.int64)
    kept = sizes.size if limit is None else int(np.cumsum(sizes).searchsorted(limit, side="right"))
    firsts = np.cumsum(sizes) - sizes  # each workflow's first task in the task columns
    jobs: list[JobSpec] = []
    workflows: list[WorkflowSpec] = []
    for k in range(kept):
        workflow_id = f"{config.id_prefix}{k}"
        mine = slice(int(firsts[k]), int(firsts[k] + sizes[k]))
        deadline = None
        if config.deadline_slack is not None:
            path_s = critical_path_s(dags[k], tasks.duration_s[mine].tolist())
            deadline = float(arrival[k]) + config.deadline_slack * path_s
        workflows.append(WorkflowSpec(workflow_id, float(weight[k]), deadline))
        jobs.extend(_workflow_tasks(config, workflow_id, float(arrival[k]), dags[k], tasks, mine.start))
    return Workload.of(jobs, workflows)


class _TaskColumns(NamedTuple):
    """Every task's drawn attributes, workflow after workflow (each workflow's tasks in DAG order)."""

    duration_s: np.ndarray  # (n_tasks,) float64
    cpu_cores: np.ndarray  # (n_tasks,) float64
    mem_gb: np.ndarray  # (n_tasks,) float64
    preemptible: np.ndarray  # (n_tasks,) bool


def _workflow_tasks(
    config: WorkflowConfig, workflow_id: str, arrival_s: float, dag: Dag, tasks: _TaskColumns, first: int
) -> list[JobSpec]:
    """The jobs of one workflow, whose tasks are the columns' rows ``first, first + 1, ...``."""
    task_ids = [f"{workflow_id}-t{i}" for i in range(len(dag))]
    return [
        JobSpec(
            task_ids[i],
            arrival_s,
            float(tasks.duration_s[first + i]),
            config.workload,
            float(tasks.cpu_cores[first + i]),
            float(tasks.mem_gb[first + i]),
            priority=config.priority,
            preemptible=bool(tasks.preemptible[first + i]),
            workflow=workflow_id,
            parents=tuple(task_ids[p] for p in parents),
        )
        for i, parents in enumerate(dag)
    ]


def _arrivals(config: WorkflowConfig, rng: np.random.Generator, horizon_s: float) -> np.ndarray:
    """``(n_workflows,)`` float64 sorted arrival times in ``[0, horizon_s)``."""
    n = config.count if config.count is not None else int(rng.poisson(config.rate_per_s * horizon_s))
    # A uniform in [0, 1) times horizon_s can round up to horizon_s itself.
    return np.minimum(np.sort(rng.random(n)) * horizon_s, math.nextafter(horizon_s, 0.0))


def _draw_dags(config: WorkflowConfig, rng: np.random.Generator, n: int) -> list[Dag]:
    """``n`` workflows' DAGs: every workflow's shape and sizes at once, then each DAG in turn."""
    shapes = [shape for shape, _ in config.shape_mix]
    shape = _choose_index(rng, [w for _, w in config.shape_mix], n)
    sizes = zip(
        _integers(rng, config.chain_tasks_range, n).tolist(),
        _integers(rng, config.width_range, n).tolist(),
        _integers(rng, config.layers_range, n).tolist(),
        _integers(rng, config.reduces_range, n).tolist(),
        (rng.random(n) < config.merge_prob).tolist(),
        strict=True,
    )
    return [_BUILDERS[shapes[s]](_Sizes(*drawn), config, rng) for s, drawn in zip(shape.tolist(), sizes, strict=True)]


def _durations(config: WorkflowConfig, rng: np.random.Generator, n: int) -> np.ndarray:
    """``(n,)`` float64 lognormal durations in seconds, clipped to the config's bounds."""
    z = rng.standard_normal(n)
    # math.exp, not np.exp: numpy's exp kernel depends on the CPU's SIMD width, and a seed must
    # give the same workflows on any machine.
    spread = np.array([math.exp(config.duration_sigma * x) for x in z.tolist()], dtype=np.float64)
    return np.clip(config.median_duration_s * spread, config.min_duration_s, config.max_duration_s)


def _integers(rng: np.random.Generator, bounds: tuple[int, int], n: int) -> np.ndarray:
    """``(n,)`` int64 uniform in ``bounds`` (both included)."""
    return rng.integers(bounds[0], bounds[1] + 1, size=n)


def _choose(rng: np.random.Generator, choices: Sequence[float], probs: Sequence[float] | None, n: int) -> np.ndarray:
    """``(n,)`` float64 draws from ``choices`` with relative frequencies ``probs`` (``None``: uniform)."""
    return np.array(choices, dtype=np.float64)[_choose_index(rng, probs or [1.0] * len(choices), n)]


def _choose_index(rng: np.random.Generator, weights: Sequence[float], n: int) -> np.ndarray:
    """``(n,)`` int64 indices drawn in proportion to ``weights``, one uniform each (inverse CDF)."""
    cdf = np.cumsum(weights, dtype=np.float64)
    cdf /= cdf[-1]  # the last entry exactly 1, above every uniform in [0, 1)
    return cdf.searchsorted(rng.random(n), side="right")
