"""The Kubernetes scheduler extender: kube-scheduler's request shapes in, the upstream types' JSON out."""

from __future__ import annotations

import pytest

from serving.pods import quantity

FILTER_RESULT_FIELDS = {"nodes", "nodenames", "failedNodes", "failedAndUnresolvableNodes", "error"}
"""``extenderv1.ExtenderFilterResult``'s JSON names."""
NODE_NAMES = ["node-cpu-01", "node-arm-02", "node-api-03", "node-gpu-04", "node-gpu-05"]


def pod(name: str, cpu: str = "500m", memory: str = "1Gi", gpus: int = 0, **spec: object) -> dict:
    """A ``v1.Pod`` as kube-scheduler sends it (metadata, spec.containers[].resources, the rest of spec)."""
    resources: dict = {"requests": {"cpu": cpu, "memory": memory}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": f"uid-{name}",
            "annotations": {"aco-env.io/duration-s": "600"},
        },
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": resources}], **spec},
        "status": {"phase": "Pending"},
    }


def node(name: str, labels: dict | None = None, taints: list | None = None) -> dict:
    """A ``v1.Node`` (metadata.labels, spec.taints, status.allocatable)."""
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi"}}}  # fmt: skip


def test_extender__filter_answers_extender_filter_result_with_node_names(serve) -> None:
    """With nodeCacheCapable (names only) the answer has the upstream field names and keeps the nodes it fits on."""
    served = serve("fleet5-synthetic", "first-fit")
    response = served.client.post("/scheduler/filter", json={"pod": pod("web"), "nodenames": NODE_NAMES})
    assert response.status_code == 200
    answer = response.json()
    assert set(answer) <= FILTER_RESULT_FIELDS and "nodenames" in answer
    assert answer["nodenames"] == NODE_NAMES and answer["failedNodes"] == {} and answer["error"] == ""


def test_extender__a_pod_that_fits_nowhere_is_filtered_with_a_reason(serve) -> None:
    """A pod larger than every node fails on every node, each with a reason saying why."""
    served = serve("fleet5-synthetic", "first-fit")
    answer = served.client.post(
        "/scheduler/filter", json={"pod": pod("huge", cpu="64"), "nodenames": NODE_NAMES}
    ).json()
    assert answer["nodenames"] == []
    failed = {**answer["failedNodes"], **answer["failedAndUnresolvableNodes"]}
    assert set(failed) == set(NODE_NAMES)
    assert all("never fits" in reason for reason in failed.values())


def test_extender__a_full_node_is_filtered_as_resolvable_with_the_shortfall(serve) -> None:
    """A node the live cluster filled is a failedNode (preemption could help) naming the missing cpu."""
    served = serve("fleet5-synthetic", "first-fit")
    client = served.client
    assert (
        client.post("/jobs", json={"cpu_cores": 30, "mem_gb": 8, "required_arch": "x86_64", "time_s": 1}).json()[
            "node_id"
        ]
        == "node-cpu-01"
    )
    answer = client.post("/scheduler/filter", json={"pod": pod("web", cpu="4"), "nodenames": NODE_NAMES}).json()
    assert "node-cpu-01" not in answer["nodenames"]
    assert answer["failedNodes"]["node-cpu-01"] == "insufficient cpu: needs 4 cores, 2 free"


def test_extender__labels_taints_and_node_objects(serve) -> None:
    """Node objects (nodeCacheCapable false) come back as a NodeList; selectors and taints filter, with reasons."""
    served = serve("fleet5-synthetic", "first-fit")
    nodes = [
        node("node-cpu-01", {"zone": "a"}),
        node("node-arm-02", {"zone": "a"}, [{"key": "spot", "value": "true", "effect": "NoSchedule"}]),
        node("node-api-03", {"zone": "b"}),
        node("elsewhere", {"zone": "a"}),
    ]
    body = {"pod": pod("web", nodeSelector={"zone": "a"}), "nodes": {"items": nodes}}
    answer = served.client.post("/scheduler/filter", json=body).json()
    assert [item["metadata"]["name"] for item in answer["nodes"]["items"]] == ["node-cpu-01"]
    unresolvable = answer["failedAndUnresolvableNodes"]
    assert "taint spot=true:NoSchedule" in unresolvable["node-arm-02"]
    assert "zone=a" in unresolvable["node-api-03"]
    assert "not in the twin's fleet" in unresolvable["elsewhere"]
    tolerated = pod("web", nodeSelector={"zone": "a"}, tolerations=[{"key": "spot", "operator": "Exists"}])
    answer = served.client.post("/scheduler/filter", json={"pod": tolerated, "nodes": {"items": nodes}}).json()
    assert [item["metadata"]["name"] for item in answer["nodes"]["items"]] == ["node-cpu-01", "node-arm-02"]


def test_extender__prioritize_scores_the_agents_node_highest(serve) -> None:
    """HostPriorityList: the node the agent picks scores 10 (MaxExtenderPriority), the others 0; nothing is placed."""
    served = serve("fleet5-synthetic", "cheapest")
    answer = served.client.post("/scheduler/prioritize", json={"pod": pod("web"), "nodenames": NODE_NAMES}).json()
    assert all(set(item) == {"host", "score"} for item in answer)
    assert {item["host"]: item["score"] for item in answer} == {
        "node-cpu-01": 0, "node-arm-02": 10, "node-api-03": 0, "node-gpu-04": 0, "node-gpu-05": 0,
    }  # fmt: skip
    assert served.client.get("/metrics").json()["decisions"] == 0
    gpu = served.client.post(
        "/scheduler/prioritize", json={"pod": pod("train", gpus=2), "nodenames": NODE_NAMES}
    ).json()
    assert [item["host"] for item in gpu if item["score"] == 10] == ["node-gpu-05"]  # the cheaper GPU node


def test_extender__a_malformed_pod_is_a_422_naming_the_field(serve) -> None:
    """An unreadable quantity or a pod without a name is refused with the field's path."""
    served = serve("fleet5-synthetic", "first-fit")
    bad = pod("web", cpu="lots")
    response = served.client.post("/scheduler/filter", json={"pod": bad, "nodenames": NODE_NAMES})
    assert response.status_code == 422 and "cpu" in str(response.json()["detail"][0]["loc"])
    response = served.client.post("/scheduler/filter", json={"pod": {"spec": {}}, "nodenames": NODE_NAMES})
    assert response.status_code == 422 and "name" in str(response.json()["detail"][0]["loc"])


@pytest.mark.parametrize(
    ("text", "value"), [("100m", 0.1), ("2", 2.0), ("1.5Gi", 1.5 * 2**30), ("1e3", 1000.0), ("1M", 1e6)]
)
def test_quantity__reads_kubernetes_quantities(text: str, value: float) -> None:
    """Kubernetes quantities: milli, plain, binary and decimal suffixes, exponents."""
    assert quantity(text, "x") == pytest.approx(value)
