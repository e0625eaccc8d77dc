"""The labels and taints of an episode's nodes and the labels of its jobs, from :class:`PlacementRules`.

Node labels, in order of precedence (later wins): the built-ins ``node`` (the node id),
``arch``, ``instance`` and ``gpu_model`` (nodes with GPUs); ``zone`` and ``rack`` from the
rules' ``topology``; then each ``nodes`` entry in order, matched against the labels so far.
Job labels: the built-ins ``job`` (the job id), ``workload`` and ``gpus`` (its GPU count, so
``{key: gpus, operator: Gt, values: [0]}`` selects GPU jobs); then each ``job_labels``
entry in order. A listed value is cycled over the jobs the entry matches, in arrival order
(the k-th matching job gets ``values[k % len(values)]``), so a workload of many jobs can be
split into groups (replicas of a few services) without naming each job.

Example:
    >>> from digital_twin import default_fleet
    >>> from digital_twin.placement.rules import PlacementRules
    >>> rules = PlacementRules.parse({"topology": {"zones": ["a", "b"]}})
    >>> [labels["zone"] for labels in node_labels(rules, default_fleet())]
    ['a', 'b', 'a', 'b', 'a']
"""

from __future__ import annotations

from collections.abc import Sequence

from digital_twin.fleet import NodeSpec
from digital_twin.jobs import JobSpec
from digital_twin.placement.rules import PlacementRules, Taint

NodeLabels = dict[str, str]


def builtin_node_labels(node: NodeSpec) -> NodeLabels:
    """``node``, ``arch``, ``instance`` and (with GPUs) ``gpu_model``."""
    labels = {"node": node.node_id, "arch": node.arch, "instance": node.instance}
    if node.gpu_model is not None:
        labels["gpu_model"] = node.gpu_model
    return labels


def node_labels(rules: PlacementRules, fleet: Sequence[NodeSpec]) -> tuple[NodeLabels, ...]:
    """``(N,)`` each node's labels (see the module docstring for the order)."""
    return _nodes(rules, fleet)[0]


def node_taints(rules: PlacementRules, fleet: Sequence[NodeSpec]) -> tuple[tuple[Taint, ...], ...]:
    """``(N,)`` each node's taints, from every ``nodes`` entry that matches it, in entry order."""
    return _nodes(rules, fleet)[1]


def _nodes(
    rules: PlacementRules, fleet: Sequence[NodeSpec]
) -> tuple[tuple[NodeLabels, ...], tuple[tuple[Taint, ...], ...]]:
    labels = [builtin_node_labels(node) for node in fleet]
    taints: list[list[Taint]] = [[] for _ in fleet]
    topology = rules.topology
    if topology is not None:
        n_zones = len(topology.zones)
        for k, node_labels_k in enumerate(labels):
            zone = topology.zones[k % n_zones]
            node_labels_k["zone"] = zone
            node_labels_k["rack"] = f"{zone}-r{(k // n_zones) % topology.racks_per_zone}"
    for entry in rules.nodes:
        for k, node_labels_k in enumerate(labels):
            if entry.match.matches(node_labels_k):
                node_labels_k.update(entry.labels)
                taints[k].extend(entry.taints)
    return tuple(labels), tuple(tuple(t) for t in taints)


def job_labels(rules: PlacementRules, jobs: Sequence[JobSpec]) -> tuple[NodeLabels, ...]:
    """``(M,)`` each job's labels, ``jobs`` in arrival order (see the module docstring)."""
    labels = [{"job": job.job_id, "workload": job.workload, "gpus": str(job.gpu_count)} for job in jobs]
    for entry in rules.job_labels:
        k = 0
        for job_labels_j in labels:
            if entry.match.matches(job_labels_j):
                for key, values in entry.values:
                    job_labels_j[key] = values[k % len(values)]
                k += 1
    return tuple(labels)
