"""The synthetic workflow generator: each shape's structure, determinism, limit, deadlines, bad options."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import networkx as nx
import numpy as np
import pytest

from digital_twin.errors import SpecError
from digital_twin.jobs import JobSpec
from digital_twin.workload import Workload
from digital_twin.workloads import WorkflowConfig, generate_workflows
from digital_twin.workloads.workflows import SHAPES, layered_dag

HORIZON_S = 6 * 3600.0


def one_shape(shape: str, **options: Any) -> WorkflowConfig:
    """A config that draws only ``shape``, with a busy arrival rate so every test sees many workflows."""
    return WorkflowConfig(shape_mix=((shape, 1.0),), rate_per_s=1 / 300, **options)


def workflow_graphs(jobs: Workload) -> Iterator[tuple[str, nx.DiGraph, list[JobSpec]]]:
    """``(workflow id, DAG of its task ids, its tasks)`` per workflow, in arrival order."""
    tasks: dict[str, list[JobSpec]] = {}
    for job in jobs:
        assert job.workflow is not None
        tasks.setdefault(job.workflow, []).append(job)
    for workflow_id, mine in tasks.items():
        graph = nx.DiGraph()
        graph.add_nodes_from(job.job_id for job in mine)
        graph.add_edges_from((parent, job.job_id) for job in mine for parent in job.parents)
        yield workflow_id, graph, mine


def draw(config: WorkflowConfig, seed: int = 0, limit: int | None = None) -> Workload:
    return generate_workflows(config, np.random.default_rng(seed), HORIZON_S, limit)


def test_chain__each_workflow_is_a_path() -> None:
    """A chain's tasks form one directed path whose length is in chain_tasks_range."""
    graphs = list(workflow_graphs(draw(one_shape("chain", chain_tasks_range=(2, 6)))))
    assert len(graphs) > 20
    for _, graph, _ in graphs:
        assert 2 <= graph.number_of_nodes() <= 6
        assert nx.is_isomorphic(graph, nx.path_graph(graph.number_of_nodes(), create_using=nx.DiGraph))


def test_fork_join__one_source_one_sink_and_a_fan_out_of_the_drawn_width() -> None:
    """One source, one sink, and w tasks between them, each a child of the source and a parent of the sink."""
    graphs = list(workflow_graphs(draw(one_shape("fork-join", width_range=(1, 5)))))
    widths = set()
    for _, graph, _ in graphs:
        sources = [t for t in graph if graph.in_degree(t) == 0]
        sinks = [t for t in graph if graph.out_degree(t) == 0]
        assert len(sources) == len(sinks) == 1
        middle = set(graph) - {sources[0], sinks[0]}
        assert set(graph.successors(sources[0])) == middle == set(graph.predecessors(sinks[0]))
        assert graph.number_of_edges() == 2 * len(middle)
        widths.add(len(middle))
    assert widths == {1, 2, 3, 4, 5}


def test_layered__every_edge_joins_adjacent_layers_and_no_task_is_stranded() -> None:
    """Parents lie in the layer just above; tasks below the first layer have a parent, above the last a child."""
    config = one_shape("layered", width_range=(1, 6), layers_range=(2, 5), max_parents=2)
    for _, graph, _ in workflow_graphs(draw(config)):
        depth = {t: 0 for t in graph}
        for task in nx.topological_sort(graph):
            for child in graph.successors(task):
                depth[child] = max(depth[child], depth[task] + 1)
        n_layers = max(depth.values()) + 1
        assert 2 <= n_layers <= 5
        for layer in range(n_layers):
            assert 1 <= sum(1 for d in depth.values() if d == layer) <= 6
        for parent, child in graph.edges:
            assert depth[child] == depth[parent] + 1
        for task, d in depth.items():
            assert (graph.in_degree(task) >= 1) == (d > 0)
            assert (graph.out_degree(task) >= 1) == (d < n_layers - 1)


def test_layered_dag__parents_at_most_max_parents_when_the_layers_allow_it() -> None:
    """With every layer no wider than max_parents x the next, no task has more than max_parents parents."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        widths = rng.integers(2, 5, size=4).tolist()  # 4 <= 2 x 2: the orphans fit
        dag = layered_dag(widths, 2, rng)
        assert len(dag) == sum(widths)
        assert all(1 <= len(parents) <= 2 for parents in dag[widths[0]:])


def test_map_reduce__every_reduce_depends_on_every_map_and_a_merge_on_every_reduce() -> None:
    """Maps are the sources, each reduce's parents are all the maps, a merge (when drawn) is the sink of all reduces."""
    config = one_shape("map-reduce", width_range=(2, 6), reduces_range=(1, 3), merge_prob=0.5)
    merges = []
    for _, graph, _ in workflow_graphs(draw(config)):
        maps = {t for t in graph if graph.in_degree(t) == 0}
        reduces = {t for t in graph if set(graph.predecessors(t)) == maps}
        rest = set(graph) - maps - reduces
        assert 2 <= len(maps) <= 6 and 1 <= len(reduces) <= 3
        assert len(rest) <= 1
        for merge in rest:
            assert set(graph.predecessors(merge)) == reduces and graph.out_degree(merge) == 0
        merges.append(len(rest))
    assert set(merges) == {0, 1}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generate_workflows__a_valid_workload_of_dags(seed: int) -> None:
    """Acyclic workflows that Workload.of accepts again, ids by workflow and index, tasks arriving together."""
    jobs = draw(WorkflowConfig(rate_per_s=1 / 200, deadline_slack=2.0), seed)
    assert Workload.of(list(jobs), jobs.workflows.values()) == jobs
    graphs = list(workflow_graphs(jobs))
    assert [w for w, _, _ in graphs] == [f"wf{k}" for k in range(len(graphs))] == list(jobs.workflows)
    for workflow_id, graph, tasks in graphs:
        assert nx.is_directed_acyclic_graph(graph)
        assert nx.is_weakly_connected(graph) or all(t.parents or graph.out_degree(t.job_id) for t in tasks)
        assert [t.job_id for t in tasks] == [f"{workflow_id}-t{i}" for i in range(len(tasks))]
        assert len({t.arrival_s for t in tasks}) == 1
    assert np.all((jobs.arrival_s >= 0) & (jobs.arrival_s < HORIZON_S))
    assert set(jobs.cpu_cores.tolist()) <= {1.0, 2.0, 4.0, 8.0}
    assert {spec.weight for spec in jobs.workflows.values()} <= {1.0, 2.0, 4.0}


def test_generate_workflows__the_mix_draws_every_shape() -> None:
    """With the default uniform mix, each of the four shapes appears (recognised by its structure)."""
    config = WorkflowConfig(rate_per_s=1 / 100, layers_range=(3, 3), chain_tasks_range=(3, 3), width_range=(2, 2))
    seen = set()
    for _, graph, _ in workflow_graphs(draw(config)):
        in_degrees = sorted(d for _, d in graph.in_degree)
        if in_degrees == [0, 1, 1]:
            seen.add("chain")
        elif in_degrees == [0, 1, 1, 2] and graph.number_of_edges() == 4:
            seen.add("fork-join")
        elif graph.number_of_nodes() == 6:  # 3 layers of 2
            seen.add("layered")
        else:
            seen.add("map-reduce")
    assert seen == set(SHAPES)


def test_generate_workflows__same_seed_same_workflows_other_seed_others() -> None:
    """The same config and seed give identical workflows (jobs and specs); another seed gives others."""
    config = WorkflowConfig(deadline_slack=1.5)
    first, again, other = draw(config, 7), draw(config, 7), draw(config, 8)
    assert first == again and first.workflows == again.workflows
    assert first != other


def test_generate_workflows__limit_keeps_whole_workflows_of_the_unlimited_run() -> None:
    """A limit keeps the longest prefix of whole workflows whose tasks fit, identical to the unlimited draw's."""
    config = WorkflowConfig(rate_per_s=1 / 200)
    full = draw(config, 4)
    sizes = [len(tasks) for _, _, tasks in workflow_graphs(full)]
    for limit in (0, sizes[0] - 1, sizes[0], sizes[0] + sizes[1] - 1, 50, len(full)):
        kept = draw(config, 4, limit)
        expected = int(np.searchsorted(np.cumsum(sizes), limit, side="right"))
        assert len(kept) == sum(sizes[:expected]) <= limit
        assert tuple(kept) == tuple(full[: len(kept)])
        assert list(kept.workflows) == list(full.workflows)[:expected]


def test_generate_workflows__a_fixed_count_of_workflows() -> None:
    """With count set, exactly that many workflows arrive (none for 0), whatever the horizon."""
    assert len(draw(WorkflowConfig(count=5)).workflows) == 5
    assert len(generate_workflows(WorkflowConfig(count=3), np.random.default_rng(0), 1.0).workflows) == 3
    empty = draw(WorkflowConfig(count=0))
    assert len(empty) == 0 and empty.workflows == {}


def critical_path_with_networkx(graph: nx.DiGraph, duration: dict[str, float]) -> float:
    """The heaviest source-to-sink path, node weights as the weights of the edges into them (from a virtual start)."""
    weighted = nx.DiGraph()
    weighted.add_edges_from(("start", t, {"w": duration[t]}) for t in graph if graph.in_degree(t) == 0)
    weighted.add_edges_from((u, v, {"w": duration[v]}) for u, v in graph.edges)
    return float(nx.dag_longest_path_length(weighted, weight="w"))


def test_generate_workflows__deadline_is_arrival_plus_slack_times_critical_path() -> None:
    """Each workflow's deadline is its arrival plus deadline_slack times its critical path of task durations."""
    jobs = draw(WorkflowConfig(rate_per_s=1 / 200, deadline_slack=2.5), 5)
    for workflow_id, graph, tasks in workflow_graphs(jobs):
        path_s = critical_path_with_networkx(graph, {t.job_id: t.duration_s for t in tasks})
        assert jobs.workflows[workflow_id].deadline_s == pytest.approx(tasks[0].arrival_s + 2.5 * path_s, rel=1e-12)
    assert all(spec.deadline_s is None for spec in draw(WorkflowConfig(), 5).workflows.values())


def test_workflow_config__from_options_accepts_scenario_values() -> None:
    """Lists become tuples and a mapping is accepted as the shape mix, as a scenario file writes them."""
    config = WorkflowConfig.from_options(
        {"shape_mix": {"chain": 3, "layered": 1}, "width_range": [2, 4], "cpu_cores_choices": [1, 2]}
    )
    assert config.shape_mix == (("chain", 3), ("layered", 1))
    assert config.width_range == (2, 4) and config.cpu_cores_choices == (1, 2)
    assert hash(config) == hash(dataclasses.replace(config))


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"rate": 1.0}, "unknown key(s) ['rate']"),
        ({"rate_per_s": 0}, "rate_per_s"),
        ({"count": -1}, "count"),
        ({"shape_mix": {"diamond": 1.0}}, "shape_mix"),
        ({"shape_mix": {"chain": 0.0}}, "shape_mix"),
        ({"shape_mix": [["chain", 1.0], ["chain", 2.0]]}, "shape_mix"),
        ({"chain_tasks_range": [0, 3]}, "chain_tasks_range"),
        ({"width_range": [5, 2]}, "width_range"),
        ({"layers_range": [1, 3]}, "layers_range"),
        ({"reduces_range": [1]}, "reduces_range"),
        ({"max_parents": 0}, "max_parents"),
        ({"merge_prob": 1.5}, "merge_prob"),
        ({"median_duration_s": -1.0}, "median_duration_s"),
        ({"duration_sigma": float("nan")}, "duration_sigma"),
        ({"min_duration_s": 10.0, "max_duration_s": 5.0}, "max_duration_s"),
        ({"cpu_cores_choices": []}, "cpu_cores_choices"),
        ({"cpu_cores_probs": [1.0]}, "cpu_cores_probs"),
        ({"mem_gb_choices": [4.0, 0.0]}, "mem_gb_choices[1]"),
        ({"mem_gb_probs": [0, 0, 0, 0]}, "mem_gb_probs"),
        ({"workload": "interactive"}, "workload"),
        ({"priority": 101}, "priority"),
        ({"preemptible_prob": -0.1}, "preemptible_prob"),
        ({"weight_choices": [1.0, -2.0]}, "weight_choices[1]"),
        ({"weight_probs": [1.0, 1.0]}, "weight_probs"),
        ({"deadline_slack": 0.5}, "deadline_slack"),
        ({"id_prefix": ""}, "id_prefix"),
    ],
)
def test_workflow_config__bad_option_refused_naming_the_key(options: dict[str, object], named: str) -> None:
    """Each bad option raises a SpecError that says where it is and names the key."""
    with pytest.raises(SpecError, match=r"^workflows: .*") as caught:
        WorkflowConfig.from_options(options)
    assert named in str(caught.value)


@pytest.mark.parametrize(("horizon_s", "limit"), [(0.0, None), (float("inf"), None), (60.0, -1), (60.0, 1.5)])
def test_generate_workflows__bad_argument_refused(horizon_s: float, limit: object) -> None:
    """A non-positive or infinite horizon and a negative or fractional limit are refused."""
    with pytest.raises(SpecError):
        generate_workflows(WorkflowConfig(), np.random.default_rng(0), horizon_s, limit)  # type: ignore[arg-type]  # a bad limit on purpose


def test_generate_workflows__needs_a_numpy_generator() -> None:
    """The legacy global RandomState is refused: every draw comes from the Generator passed in."""
    with pytest.raises(SpecError, match=r"numpy\.random\.Generator"):
        generate_workflows(WorkflowConfig(), np.random.RandomState(0), 60.0)  # type: ignore[arg-type]  # the wrong kind on purpose
