"""The HTTP API: answers, refusals that name the field, the bearer token, and no 5xx for any valid-shaped request."""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="the property-based API test needs schemathesis (test extra)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402

JOB = {"cpu_cores": 4, "mem_gb": 8, "duration_s": 600}


def test_api__submit_answers_like_the_reference_system(serve) -> None:
    """POST /jobs with the reference's field names answers status, node_id and scheduling_latency_ms."""
    served = serve("fleet5-synthetic", "first-fit")
    body = {"workload_type": "latency-critical", "cpu_cores_min": 2.0, "memory_gb_min": 4.0, "priority": 90}
    response = served.client.post("/jobs", json=body)
    assert response.status_code == 202
    answer = response.json()
    assert answer["status"] == "SCHEDULED" and answer["node_id"] == "node-cpu-01"  # first-fit: the first node
    assert answer["scheduling_latency_ms"] > 0
    assert served.client.get(f"/jobs/{answer['job_id']}").json()["status"] == "running"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**JOB, "cpu_cores": -1}, "cpu_cores"),
        ({**JOB, "mem_gb": "lots"}, "mem_gb"),
        ({**JOB, "workload": "gaming"}, "workload"),
        ({**JOB, "priority": 101}, "priority"),
        ({**JOB, "cpu_cores": 1e300}, "cpu_cores"),
        ({**JOB, "gpus": 1}, "gpus"),  # a typo of gpu_count: refused, not ignored
        ({"mem_gb": 8}, "cpu_cores"),
        ({**JOB, "time_s": -5}, "time_s"),
        ({**JOB, "required_arch": "riscv"}, "required_arch"),
    ],
)
def test_api__malformed_submission_is_a_422_naming_the_field(serve, body: dict, field: str) -> None:
    """A malformed job is refused with 422, its error located at the field; nothing is placed."""
    served = serve("fleet5-synthetic", "first-fit")
    response = served.client.post("/jobs", json=body)
    assert response.status_code == 422
    assert field in response.json()["detail"][0]["loc"]
    assert served.client.get("/metrics").json()["decisions"] == 0


def test_api__contradictions_are_a_409_and_change_nothing(serve) -> None:
    """Finishing an unknown job, a node down twice, a duplicate id or time going back: 409, naming what."""
    served = serve("fleet5-synthetic", "first-fit")
    client = served.client
    assert client.post("/jobs", json={**JOB, "job_id": "a", "time_s": 10}).status_code == 202
    cases = [
        ("/jobs/nope/finish", {"time_s": 20}, "finish"),
        ("/jobs", {**JOB, "job_id": "a", "time_s": 20}, "job_id"),
        ("/jobs", {**JOB, "time_s": 5}, "time_s"),
        ("/nodes/node-cpu-01/down", {"time_s": 20}, "down"),  # on-demand: the twin takes spot outages only
    ]
    for path, body, field in cases:
        response = client.post(path, json=body)
        assert response.status_code in (409, 422), (path, response.text)
        assert field in response.json()["detail"][0]["loc"], response.text
    assert client.post("/nodes/node-arm-02/down", json={"time_s": 20}).status_code == 200
    response = client.post("/nodes/node-arm-02/down", json={"time_s": 21})
    assert response.status_code == 409 and "down already" in response.text
    assert client.post("/events", json={"time_s": 1e9}).status_code == 409  # past the horizon
    assert client.get("/metrics").json()["jobs"] == {"running": 1}


def test_api__a_finished_job_frees_room_for_a_queued_one(serve) -> None:
    """A job that fits nowhere waits (QUEUED); the answer to the finish that frees room places it."""
    served = serve("fleet5-synthetic", "first-fit")
    client = served.client
    big = {"cpu_cores": 32, "mem_gb": 100, "required_arch": "x86_64"}
    assert client.post("/jobs", json={**big, "job_id": "first", "time_s": 1}).json()["node_id"] == "node-cpu-01"
    assert client.post("/jobs", json={**big, "job_id": "second", "time_s": 2}).json()["status"] == "QUEUED"
    answer = client.post("/jobs/first/finish", json={"time_s": 3}).json()
    assert [(d["job_id"], d["node_id"]) for d in answer["decisions"]] == [("second", "node-cpu-01")]
    nodes = {node["node_id"]: node for node in client.get("/nodes").json()}
    assert nodes["node-cpu-01"]["running"] == ["second"] and nodes["node-cpu-01"]["free_cpu_cores"] == 0
    forecast = client.get("/nodes/node-cpu-01/forecast").json()
    assert [r["job_id"] for r in forecast["releases"]] == ["second"]


def test_api__the_bearer_token_guards_every_route_but_healthz(serve) -> None:
    """With a token, requests without it (or with another) get 401; /healthz and the OpenAPI document stay open."""
    served = serve("fleet5-synthetic", "first-fit", token="s3cret")
    import httpx

    bare = httpx.Client(base_url=served.url)
    assert bare.get("/healthz").status_code == 200
    assert bare.get("/openapi.json").status_code == 200
    assert bare.post("/jobs", json=JOB).status_code == 401
    assert bare.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert served.client.post("/jobs", json=JOB).status_code == 202


@pytest.mark.heavy
def test_api__no_request_the_openapi_document_allows_gets_a_5xx(serve) -> None:
    """schemathesis draws valid and invalid requests for every route of the OpenAPI document: none gets a 5xx."""
    served = serve("fleet5-synthetic", "first-fit")
    schema = schemathesis.openapi.from_url(f"{served.url}/openapi.json")
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @settings(max_examples=20, deadline=None, derandomize=True, database=None,
                      suppress_health_check=list(HealthCheck))  # fmt: skip
            @given(case=operation.as_strategy(generation_mode=mode))
            def call(case: schemathesis.Case) -> None:
                response = case.call(base_url=served.url)
                if response.status_code >= 500:
                    failures.append(f"{case.method} {case.formatted_path} {case.body!r}: {response.status_code}")

            try:
                call()
            except Unsatisfiable:  # no invalid request of this route exists (e.g. GET /healthz: nothing to break)
                assert mode == GenerationMode.NEGATIVE, operation.label
    assert failures == []
