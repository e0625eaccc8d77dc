"""A Kubernetes scheduler extender: kube-scheduler asks the agent to filter and score nodes for a pod.

The request and response bodies are the kube-scheduler extender API's
(``k8s.io/kube-scheduler/extender/v1``), field for field in their JSON names: ``ExtenderArgs``
(``pod``, ``nodes``, ``nodenames``), ``ExtenderFilterResult`` (``nodes``, ``nodenames``,
``failedNodes``, ``failedAndUnresolvableNodes``, ``error``) and ``HostPriorityList`` (``host``,
``score``). The pod and node objects are read where the mapping needs them (:mod:`serving.pods`)
and kept as sent otherwise.

``POST /scheduler/filter`` keeps the nodes where the pod fits now in the live twin (up, room, arch,
GPU model and VRAM) and whose labels and taints admit it; every other node is listed with the
reason (``failedAndUnresolvableNodes`` when preempting pods would not help: not in the fleet, a
node selector or an untolerated taint). ``POST /scheduler/prioritize`` scores the node the agent
picks ``10`` (``MaxExtenderPriority``) and the others ``0``. Neither changes the live cluster: the
pod is placed by kube-scheduler's own binder, and the cluster is told of it like of any job
(``POST /events``). docs/serving.md: the KubeSchedulerConfiguration and how the scores combine.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from serving.events import EventError
from serving.pods import Pod, admits, node_labels, pod_job, why_not_now
from serving.service import PlacementService

MAX_EXTENDER_PRIORITY = 10
"""kube-scheduler's ``extenderv1.MaxExtenderPriority``: the highest score an extender gives."""


class NodeList(BaseModel):
    """``v1.NodeList``: ``items`` are ``v1.Node`` objects."""

    model_config = ConfigDict(extra="allow")
    items: list[dict[str, Any]] = Field(default_factory=list)


class ExtenderArgs(BaseModel):
    """``extenderv1.ExtenderArgs``: the pod and its candidate nodes (objects, or names when nodeCacheCapable)."""

    model_config = ConfigDict(extra="forbid")
    pod: dict[str, Any]
    nodes: NodeList | None = None
    nodenames: list[str] | None = None


class ExtenderFilterResult(BaseModel):
    """``extenderv1.ExtenderFilterResult``."""

    nodes: NodeList | None = None
    nodenames: list[str] | None = None
    failedNodes: dict[str, str] = Field(default_factory=dict)  # noqa: N815  (the upstream JSON name)
    failedAndUnresolvableNodes: dict[str, str] = Field(default_factory=dict)  # noqa: N815
    error: str = ""


class HostPriority(BaseModel):
    """``extenderv1.HostPriority``: a node's score, 0..``MaxExtenderPriority``."""

    host: str
    score: int = Field(ge=0, le=MAX_EXTENDER_PRIORITY)


def candidates(args: ExtenderArgs) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The candidate node names, and the node objects sent (by name; empty when only names were sent)."""
    objects: dict[str, dict[str, Any]] = {}
    if args.nodes is not None:
        for k, item in enumerate(args.nodes.items):
            name = (item.get("metadata") or {}).get("name")
            if not isinstance(name, str) or not name:
                raise EventError(f"nodes.items[{k}].metadata.name", "every node needs a name")
            objects[name] = item
        return list(objects), objects
    return list(args.nodenames or ()), objects


def filter_nodes(service: PlacementService, args: ExtenderArgs) -> ExtenderFilterResult:
    """``filter``: the candidates the pod fits on now, and a reason for each of the others."""
    pod = Pod.of(args.pod)
    names, objects = candidates(args)
    cluster = service.cluster
    with service.locked():
        probe = cluster.probe(pod_job(pod, service.default_duration_s))
    index = cluster.known.node_index
    never = probe.twin.candidate_masks([len(probe.twin.spec.jobs) - 1])[0]  # the probe's job is the last
    passed, failed, unresolvable = [], {}, {}
    for name in names:
        labels, taints, unschedulable = node_labels(cluster.known.fleet, index.get(name), objects.get(name))
        refusal = admits(pod, labels, taints, unschedulable)
        if name not in index:
            unresolvable[name] = "not in the twin's fleet (aco-env serve --fleet names the nodes it places on)"
        elif refusal is not None:
            unresolvable[name] = refusal
        elif not never[index[name]]:
            unresolvable[name] = "the pod never fits this node (its size, arch or GPUs)"
        elif not probe.mask[index[name]]:
            failed[name] = why_not_now(probe.twin, pod, index[name])
        else:
            passed.append(name)
    if args.nodes is not None:
        return ExtenderFilterResult(
            nodes=NodeList(items=[objects[name] for name in passed]),
            failedNodes=failed,
            failedAndUnresolvableNodes=unresolvable,
        )
    return ExtenderFilterResult(nodenames=passed, failedNodes=failed, failedAndUnresolvableNodes=unresolvable)


def prioritize(service: PlacementService, args: ExtenderArgs) -> list[HostPriority]:
    """``prioritize``: the agent's node scores ``MaxExtenderPriority``, every other candidate 0."""
    pod = Pod.of(args.pod)
    names, _ = candidates(args)
    cluster = service.cluster
    with service.locked():
        probe = cluster.probe(pod_job(pod, service.default_duration_s))
    chosen = None if probe.choice is None else cluster.known.fleet[probe.choice].node_id
    return [HostPriority(host=name, score=MAX_EXTENDER_PRIORITY if name == chosen else 0) for name in names]


def add_routes(app: FastAPI, service: PlacementService, dependencies: list[Any]) -> None:
    """Add ``POST /scheduler/filter`` and ``/scheduler/prioritize`` to ``app``."""

    @app.post("/scheduler/filter", response_model=ExtenderFilterResult, response_model_exclude_none=True,
              dependencies=dependencies, tags=["kube-scheduler extender"])  # fmt: skip
    def filter_route(args: ExtenderArgs) -> ExtenderFilterResult:
        return filter_nodes(service, args)

    @app.post("/scheduler/prioritize", response_model=list[HostPriority], dependencies=dependencies,
              tags=["kube-scheduler extender"])  # fmt: skip
    def prioritize_route(args: ExtenderArgs) -> list[HostPriority]:
        return prioritize(service, args)
