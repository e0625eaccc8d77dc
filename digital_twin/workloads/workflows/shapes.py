"""The four workflow shapes as DAGs, and a DAG's critical path.

A :data:`Dag` holds each task's parents by task index; every parent comes before its children,
so index order is a topological order.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Sequence

import numpy as np

CHAIN = "chain"
FORK_JOIN = "fork-join"
LAYERED = "layered"
MAP_REDUCE = "map-reduce"
SHAPES = (CHAIN, FORK_JOIN, LAYERED, MAP_REDUCE)
"""The DAG shapes, by the name ``shape_mix`` uses."""

Dag = tuple[tuple[int, ...], ...]
"""A workflow's DAG: ``(n_tasks,)`` tuples of each task's parent indices (ascending, each below the task's)."""


def chain_dag(n_tasks: int) -> Dag:
    """A chain of ``n_tasks`` (>= 1): task ``i`` is the parent of ``i + 1``.

    >>> chain_dag(3)
    ((), (0,), (1,))
    """
    return tuple(() if i == 0 else (i - 1,) for i in range(n_tasks))


def fork_join_dag(width: int) -> Dag:
    """Task 0, then ``width`` (>= 1) tasks each depending on it, then one join depending on them all.

    >>> fork_join_dag(2)
    ((), (0,), (0,), (1, 2))
    """
    return ((), *(((0,),) * width), tuple(range(1, width + 1)))


def map_reduce_dag(maps: int, reduces: int, merge: bool) -> Dag:
    """``maps`` tasks, then ``reduces`` tasks each depending on every map, then (``merge``) one merge.

    >>> map_reduce_dag(2, 2, merge=True)
    ((), (), (0, 1), (0, 1), (2, 3))
    """
    all_maps = tuple(range(maps))
    dag: Dag = ((),) * maps + (all_maps,) * reduces
    return (*dag, tuple(range(maps, maps + reduces))) if merge else dag


def layered_dag(widths: Sequence[int], max_parents: int, rng: np.random.Generator) -> Dag:
    """Layers of ``widths`` (each >= 1) tasks; a task's parents are in the previous layer.

    Each task after the first layer draws ``1..min(max_parents, previous width)`` distinct
    parents uniformly. Then each task of the previous layer left without a child is adopted by
    a task of this layer drawn uniformly among those with fewer than ``max_parents`` parents; when
    all have ``max_parents``, it takes the place of a parent (drawn uniformly) that has another
    child, so the cap holds whenever the previous layer is at most ``max_parents`` x this one wide.
    Only a wider previous layer makes some task exceed it.

    >>> layered_dag([2, 1], 1, np.random.default_rng(0))  # one parent each cannot cover two tasks
    ((), (), (0, 1))
    """
    parents: list[list[int]] = [[] for _ in range(widths[0])]
    start = 0  # index of the previous layer's first task
    for previous, width in itertools.pairwise(widths):
        layer = []
        for _ in range(width):
            count = int(rng.integers(1, min(max_parents, previous) + 1))
            layer.append(sorted(start + int(p) for p in rng.permutation(previous)[:count]))
        children = collections.Counter(p for mine in layer for p in mine)
        for orphan in [t for t in range(start, start + previous) if t not in children]:
            _adopt(layer, orphan, max_parents, children, rng)
        parents.extend(layer)
        start += previous
    return tuple(tuple(mine) for mine in parents)


def _adopt(
    layer: list[list[int]], orphan: int, max_parents: int, children: collections.Counter[int], rng: np.random.Generator
) -> None:
    """Make ``orphan`` a parent of a task of ``layer`` (parent lists, changed in place), as :func:`layered_dag` says.

    ``children`` counts each previous-layer task's children in ``layer``, and is kept up to date.
    """
    open_tasks = [mine for mine in layer if len(mine) < max_parents]
    shared = [(mine, p) for mine in layer for p in mine if children[p] > 1]
    if open_tasks or not shared:
        candidates = open_tasks or layer
        adopter = candidates[int(rng.integers(len(candidates)))]
    else:
        adopter, replaced = shared[int(rng.integers(len(shared)))]
        adopter.remove(replaced)
        children[replaced] -= 1
    adopter.append(orphan)
    adopter.sort()
    children[orphan] += 1


def critical_path_s(dag: Dag, duration_s: Sequence[float]) -> float:
    """The longest chain of durations (seconds) through ``dag``: its least makespan; 0 for no task."""
    finish: list[float] = []
    for parents, duration in zip(dag, duration_s, strict=True):
        finish.append(duration + max((finish[p] for p in parents), default=0.0))
    return max(finish, default=0.0)
