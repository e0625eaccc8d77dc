"""A seeded synthetic workflow generator: Poisson-arriving DAGs of four shapes from the literature.

Each workflow is a DAG of tasks (:mod:`digital_twin.workflows`), one of four shapes, drawn in
proportion to ``shape_mix``. Tasks are numbered so that every parent comes before its children:

* ``chain``: ``n`` tasks, each the parent of the next (``t0 -> t1 -> ... -> t{n-1}``); ``n`` from
  ``chain_tasks_range``. Pegasus's pipelines (Bharathi et al., "Characterization of Scientific
  Workflows", WORKS 2008).
* ``fork-join``: one task, a fan-out of ``w`` tasks that each depend on it, and one join that
  depends on all of them (``w + 2`` tasks); ``w`` from ``width_range``. Bharathi et al.'s data
  distribution followed by aggregation.
* ``layered``: ``L`` layers (from ``layers_range``) of widths drawn from ``width_range``. Each task
  after the first layer draws 1..``max_parents`` parents uniformly from the previous layer; each
  task of the previous layer left without a child is then adopted by a task of the next layer
  (:func:`~digital_twin.workloads.workflows.shapes.layered_dag` says how). So every task after
  the first layer has a parent, every task before the last has a child, and no task has more than
  ``max_parents`` parents unless the previous layer is wider than ``max_parents`` x its own. A
  layered workflow may fall apart into independent sub-DAGs. The layer-by-layer random DAGs of
  DAG-scheduling studies (as Suter's DAGGEN draws them, here without edges that skip a layer).
* ``map-reduce``: ``m`` maps (from ``width_range``), then ``r`` reduces (from ``reduces_range``),
  each depending on every map, then with probability ``merge_prob`` one merge depending on every
  reduce. The stage structure of the TPC-H query DAGs that Decima schedules (Mao et al.,
  "Learning Scheduling Algorithms for Data Processing Clusters", SIGCOMM 2019).

Workflows arrive as a Poisson process of rate ``rate_per_s`` on ``[0, horizon_s)``, drawn as a
Poisson count and that many sorted uniform times (the same process); with ``count`` set, exactly
``count`` workflows arrive at sorted uniform times. Every task of a workflow arrives with it: the
twin submits a task once its parents have completed. Task durations are lognormal (median
``median_duration_s``, log-standard-deviation ``duration_sigma``) clipped to ``[min_duration_s,
max_duration_s]``; cores and memory are drawn independently from small discrete sets. No task
declares a duration (a scenario's estimate model fills them, :mod:`digital_twin.declared_durations`).
Each workflow draws its weight from ``weight_choices``; with ``deadline_slack`` set its deadline is
``arrival + deadline_slack x`` its critical path (the longest chain of task durations: its
makespan on an empty cluster wide enough to run every ready task at once). Workflow ``k`` (0-based, in arrival order) is
``f"{id_prefix}{k}"`` and its task ``i`` is ``f"{id_prefix}{k}-t{i}"``.

Everything random comes from the ``numpy.random.Generator`` passed in, in a fixed order (arrivals,
shapes and sizes, each workflow's DAG, task attributes, weights), all drawn before ``limit``
applies: the same config, seed and horizon give identical workflows, and a ``limit`` keeps the
first workflows of the unlimited run.

* :mod:`digital_twin.workloads.workflows.config`: :class:`WorkflowConfig`, the generator's checked parameters.
* :mod:`digital_twin.workloads.workflows.shapes`: the shapes' DAGs (:func:`chain_dag`, ...) and
  :func:`critical_path_s`.
* :mod:`digital_twin.workloads.workflows.generator`: :func:`generate_workflows`.
"""

from digital_twin.workloads.workflows.config import WorkflowConfig
from digital_twin.workloads.workflows.generator import generate_workflows
from digital_twin.workloads.workflows.shapes import (
    CHAIN,
    FORK_JOIN,
    LAYERED,
    MAP_REDUCE,
    SHAPES,
    Dag,
    chain_dag,
    critical_path_s,
    fork_join_dag,
    layered_dag,
    map_reduce_dag,
)

__all__ = [
    "CHAIN",
    "FORK_JOIN",
    "LAYERED",
    "MAP_REDUCE",
    "SHAPES",
    "Dag",
    "WorkflowConfig",
    "chain_dag",
    "critical_path_s",
    "fork_join_dag",
    "generate_workflows",
    "layered_dag",
    "map_reduce_dag",
]
