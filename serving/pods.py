"""Kubernetes pods and nodes as the twin's jobs and nodes (for :mod:`serving.kube`).

A pod is a job: its cpu and memory are its containers' requests (the larger of their sum and any
init container's, as kube-scheduler counts them), its GPUs the ``nvidia.com/gpu`` request or
limit, its priority ``spec.priority`` clamped to the twin's 1..100; the rest comes from
annotations (``aco-env.io/workload``: latency-critical, batch or stream, default batch;
``aco-env.io/duration-s``: the declared run time; ``aco-env.io/preemptible``: true or false;
``aco-env.io/deadline-s``). A pod without requests asks for a millicore and a MiB (the twin
needs some).

A node is a fleet node of the same name. Its labels are the fleet's (``kubernetes.io/hostname``,
``kubernetes.io/arch``: ``arm64`` for arm64 nodes, else ``amd64``; ``aco-env.io/instance``:
on-demand or spot) overlaid by the labels sent in the node object; its taints and
``spec.unschedulable`` are the node object's. A pod's ``nodeSelector`` must match the labels,
its tolerations must tolerate every ``NoSchedule`` and ``NoExecute`` taint.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from digital_twin import DigitalTwin, NodeSpec
from serving.events import EventError, JobRequest

_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
_SUFFIX = {
    None: 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
}  # fmt: skip
GPU = "nvidia.com/gpu"
ANNOTATION = "aco-env.io/"


def quantity(value: object, where: str) -> float:
    """A Kubernetes resource quantity (``"500m"``, ``"2"``, ``"1.5Gi"``, ``4``) as a number of base units.

    >>> quantity("500m", "cpu"), quantity("1Gi", "memory"), quantity(2, "cpu")
    (0.5, 1073741824.0, 2.0)

    Raises:
        EventError: Not a quantity (``where`` named).
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    else:
        match = _QUANTITY.match(str(value).strip()) if isinstance(value, str) else None
        if match is None:
            raise EventError(where, f"{value!r} is not a Kubernetes quantity (e.g. 500m, 2, 1Gi)")
        number = float(match.group(1)) * _SUFFIX[match.group(2)]
    if not number >= 0 or number == float("inf"):
        raise EventError(where, f"{value!r} must be a finite quantity >= 0")
    return number


@dataclass(frozen=True)
class Pod:
    """What the mapping reads of a ``v1.Pod``."""

    name: str
    cpu_cores: float
    mem_gb: float
    gpus: int
    priority: int
    annotations: dict[str, str]
    node_selector: dict[str, str]
    tolerations: tuple[dict[str, Any], ...]

    @classmethod
    def of(cls, pod: dict[str, Any]) -> Pod:
        """Read a pod object.

        Raises:
            EventError: A field of the wrong type or an unreadable quantity (its path named).
        """
        metadata, spec = _mapping(pod, "metadata", "pod"), _mapping(pod, "spec", "pod")
        name = metadata.get("name") or metadata.get("generateName") or metadata.get("uid")
        if not isinstance(name, str) or not name:
            raise EventError("pod.metadata.name", "the pod needs a name")
        namespace = metadata.get("namespace") or "default"
        containers = _containers(spec, "containers")
        init = _containers(spec, "initContainers")
        cpu = max(sum(_request(c, "cpu", w) for c, w in containers), *(_request(c, "cpu", w) for c, w in init), 0.0)
        mem = max(
            sum(_request(c, "memory", w) for c, w in containers), *(_request(c, "memory", w) for c, w in init), 0.0
        )
        gpus = sum(_request(c, GPU, w) for c, w in containers)
        if gpus != int(gpus):
            raise EventError("pod.spec.containers", f"{GPU} must be whole GPUs, got {gpus:g}")
        priority = spec.get("priority", 50)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise EventError("pod.spec.priority", f"must be an integer, got {priority!r}")
        return cls(
            name=f"{namespace}/{name}",
            cpu_cores=max(cpu, 0.001),
            mem_gb=max(mem / 2.0**30, 2.0**-10),
            gpus=int(gpus),
            priority=min(100, max(1, priority)),
            annotations={str(k): str(v) for k, v in _mapping(metadata, "annotations", "pod.metadata").items()},
            node_selector={str(k): str(v) for k, v in _mapping(spec, "nodeSelector", "pod.spec").items()},
            tolerations=tuple(_list(spec, "tolerations", "pod.spec")),
        )


def pod_job(pod: Pod, default_duration_s: float) -> JobRequest:
    """The twin's job for ``pod`` (annotations give its workload, declared run time, preemptibility, deadline)."""
    notes = pod.annotations

    def number(key: str, default: float | None) -> float | None:
        text = notes.get(ANNOTATION + key)
        if text is None:
            return default
        try:
            return float(text)
        except ValueError:
            raise EventError(f"pod.metadata.annotations.{ANNOTATION}{key}", f"{text!r} is not a number") from None

    preemptible = notes.get(ANNOTATION + "preemptible", "false").lower()
    if preemptible not in ("true", "false"):
        raise EventError(f"pod.metadata.annotations.{ANNOTATION}preemptible", f"{preemptible!r}: true or false")
    duration = number("duration-s", default_duration_s)
    assert duration is not None
    return JobRequest(
        f"probe:{pod.name}", notes.get(ANNOTATION + "workload", "batch"), pod.cpu_cores, pod.mem_gb, duration,
        pod.gpus, priority=pod.priority, preemptible=preemptible == "true", deadline_s=number("deadline-s", None),
    )  # fmt: skip


def node_labels(
    fleet: Sequence[NodeSpec], index: int | None, node: dict[str, Any] | None
) -> tuple[dict[str, str], list[dict[str, Any]], bool]:
    """A node's labels (the fleet's, overlaid by the object's), taints and ``spec.unschedulable``."""
    labels: dict[str, str] = {}
    if index is not None:
        spec = fleet[index]
        labels = {
            "kubernetes.io/hostname": spec.node_id,
            "kubernetes.io/arch": "arm64" if spec.arch == "arm64" else "amd64",
            "aco-env.io/instance": spec.instance,
        }
    if node is None:
        return labels, [], False
    metadata, node_spec = node.get("metadata") or {}, node.get("spec") or {}
    labels.update({str(k): str(v) for k, v in (metadata.get("labels") or {}).items()})
    taints = [t for t in node_spec.get("taints") or [] if isinstance(t, dict)]
    return labels, taints, bool(node_spec.get("unschedulable", False))


def admits(pod: Pod, labels: dict[str, str], taints: list[dict[str, Any]], unschedulable: bool) -> str | None:
    """``None`` when the node's labels and taints admit the pod, else why not."""
    if unschedulable:
        return "the node is cordoned (spec.unschedulable)"
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return f"node selector {key}={value} does not match (the node has {key}={labels.get(key)!r})"
    for taint in taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(
            _tolerates(t, taint) for t in pod.tolerations
        ):
            return f"taint {taint.get('key')}={taint.get('value', '')}:{taint.get('effect')} is not tolerated"
    return None


def why_not_now(twin: DigitalTwin, pod: Pod, node: int) -> str:
    """Why the pod does not fit on ``node`` now, from the probe twin's node state."""
    spec = twin.spec.fleet[node]
    free_cpu, free_mem, free_gpus = (float(a[node]) for a in twin.node_free())
    if not twin.node_up()[node]:
        return "the node is down"
    if pod.gpus > spec.gpu_count:
        return f"needs {pod.gpus} GPUs, the node has {spec.gpu_count}"
    if pod.cpu_cores > free_cpu + 1e-9:
        return f"insufficient cpu: needs {pod.cpu_cores:g} cores, {free_cpu:g} free"
    if pod.mem_gb > free_mem + 1e-9:
        return f"insufficient memory: needs {pod.mem_gb:g} GB, {free_mem:g} free"
    if pod.gpus > free_gpus:
        return f"insufficient GPUs: needs {pod.gpus}, {free_gpus:g} free"
    return "the twin's placement rules keep the pod off this node now"


def _tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """Kubernetes' toleration matching: key (empty with Exists: every key), operator, value, effect."""
    if toleration.get("effect") not in (None, "", taint.get("effect")):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return toleration.get("key") in (None, "", taint.get("key"))
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", "")


def _mapping(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.get(key) if isinstance(parent, dict) else None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise EventError(f"{where}.{key}", f"expected an object, got {type(value).__name__}")
    return value


def _list(parent: dict[str, Any], key: str, where: str) -> list[Any]:
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise EventError(f"{where}.{key}", "expected a list of objects")
    return value


def _containers(spec: dict[str, Any], key: str) -> list[tuple[dict[str, Any], str]]:
    return [(c, f"pod.spec.{key}[{k}]") for k, c in enumerate(_list(spec, key, "pod.spec"))]


def _request(container: dict[str, Any], resource: str, where: str) -> float:
    """The container's request of ``resource`` (its limit when it states no request, as Kubernetes defaults it)."""
    resources = _mapping(container, "resources", where)
    requests, limits = (
        _mapping(resources, "requests", f"{where}.resources"),
        _mapping(resources, "limits", f"{where}.resources"),
    )
    value = requests.get(resource, limits.get(resource))
    return 0.0 if value is None else quantity(value, f"{where}.resources.requests.{resource}")
