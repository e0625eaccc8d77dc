"""The placement service's HTTP API (FastAPI): jobs and node events in, the agent's placements out.

Routes (the OpenAPI document at ``/openapi.json`` is the full contract, ``/docs`` shows it):

* ``POST /jobs``: submit a job; the answer says where it starts (``SCHEDULED``), or that it waits
  (``QUEUED``: it fits nowhere now, or the agent deferred it) or was refused (``REJECTED``), with
  the scheduling latency. ``GET /jobs/{job_id}``: a job's status.
* ``POST /jobs/{job_id}/finish``, ``/cancel``; ``POST /nodes/{node_id}/telemetry``, ``/down``,
  ``/up``; ``POST /events``: several events of one instant at once. Each answers with the
  decisions the events led to (a finished job frees room for a queued one).
* ``GET /nodes``, ``GET /nodes/{node_id}/forecast`` (also ``/predict/{node_id}``, the reference
  system's name), ``GET /metrics``, ``GET /healthz``; ``POST /episode`` starts a new episode.
* ``POST /scheduler/filter``, ``/scheduler/prioritize``: the Kubernetes scheduler extender
  (:mod:`serving.kube`).

A bearer token, when configured, guards every route but ``/healthz`` and the documentation.
Refused events answer 409 (they contradict the cluster: an unknown job, a node already down) or
422 (malformed), with FastAPI's error shape: ``{"detail": [{"loc": ["body", FIELD...], "msg": ...}]}``.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Request, status
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from serving import kube
from serving.api_models import (
    At,
    BatchOut,
    DecisionOut,
    EpisodeIn,
    EventsIn,
    ForecastOut,
    HealthOut,
    JobOut,
    MetricsOut,
    NodeOut,
    PlacementOut,
    SubmitIn,
    TelemetryIn,
)
from serving.events import REJECTED, RUNNING, Background, EventBatch, EventError
from serving.live import BatchResult
from serving.node_views import forecast, node_rows
from serving.service import PlacementService

_bearer = HTTPBearer(auto_error=False, description="The token given to `aco-env serve --token-file`.")


def create_app(service: PlacementService, token: str | None = None) -> FastAPI:
    """The FastAPI app serving ``service``; ``token``: the bearer token every guarded route needs."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        service.save()  # after the server drained its requests: every accepted job is in the file

    app = FastAPI(
        title="aco-env placement service",
        version="1",
        summary="A trained placement agent on a live cluster's state, the twin's state types in between.",
        lifespan=lifespan,
    )

    def authorised(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
        if token is None:
            return
        if credentials is None or not hmac.compare_digest(credentials.credentials.encode(), token.encode()):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "a valid bearer token is needed",
                                headers={"WWW-Authenticate": "Bearer"})  # fmt: skip

    guarded = [Depends(authorised)]
    app.add_exception_handler(EventError, _refused)  # type: ignore[arg-type]
    _job_routes(app, service, guarded)
    _event_routes(app, service, guarded)
    _view_routes(app, service, guarded)
    kube.add_routes(app, service, guarded)
    return app


async def _refused(request: Request, exc: EventError) -> JSONResponse:
    """A refused event: 409 (a contradiction) or 422 (malformed), the field in ``loc``."""
    code = status.HTTP_409_CONFLICT if exc.conflict else status.HTTP_422_UNPROCESSABLE_CONTENT
    detail = [{"loc": ["body", *exc.field.replace("[", ".").replace("]", "").split(".")], "msg": str(exc),
               "type": "conflict" if exc.conflict else "value_error"}]  # fmt: skip
    return JSONResponse({"detail": detail}, status_code=code)


def _job_routes(app: FastAPI, service: PlacementService, guarded: list[Any]) -> None:
    """``POST /jobs``, ``GET /jobs/{job_id}``."""

    @app.post("/jobs", response_model=PlacementOut, status_code=status.HTTP_202_ACCEPTED, dependencies=guarded)
    def submit(body: SubmitIn) -> PlacementOut:
        received = time.perf_counter()
        job_id = body.job_id or service.new_job_id()
        result = service.apply(EventBatch(body.time_s, (body.request(job_id, service.default_duration_s),)))
        record = next(r for r in result.changed if r.job_id == job_id)
        state: Literal["SCHEDULED", "QUEUED", "REJECTED"] = (
            "SCHEDULED" if record.status == RUNNING else "REJECTED" if record.status == REJECTED else "QUEUED"
        )
        return PlacementOut(
            status=state, node_id=record.node_id, scheduling_latency_ms=(time.perf_counter() - received) * 1e3,
            job_id=job_id, time_s=result.time_s, decisions=[DecisionOut.of(d) for d in result.decisions],
        )  # fmt: skip

    @app.get("/jobs/{job_id}", response_model=JobOut, dependencies=guarded)
    def job(job_id: str) -> JobOut:
        record = service.job(job_id)
        if record is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no job {job_id!r} in this episode")
        return JobOut.of(record)


def _event_routes(app: FastAPI, service: PlacementService, guarded: list[Any]) -> None:
    """``POST /jobs/{name}/finish``, ``/cancel``; ``POST /nodes/{name}/down``, ``/up``, ``/telemetry``; ``/events``."""

    def event_route(path: str, make: Callable[[str, Any], EventBatch], body_type: type) -> None:
        def route(name: str, body: Any) -> BatchOut:
            return _batch_out(service.apply(make(name, body)))

        route.__annotations__ = {"name": str, "body": body_type, "return": BatchOut}  # resolved, for FastAPI
        route.__name__ = path.strip("/").replace("/", "_").replace("{", "").replace("}", "")
        app.post(path, response_model=BatchOut, dependencies=guarded)(route)

    event_route("/jobs/{name}/finish", lambda name, b: EventBatch(b.time_s, finish=(name,)), At)
    event_route("/jobs/{name}/cancel", lambda name, b: EventBatch(b.time_s, cancel=(name,)), At)
    event_route("/nodes/{name}/down", lambda name, b: EventBatch(b.time_s, down=(name,)), At)
    event_route("/nodes/{name}/up", lambda name, b: EventBatch(b.time_s, up=(name,)), At)
    event_route(
        "/nodes/{name}/telemetry",
        lambda name, b: EventBatch(b.time_s, telemetry=(Background(name, b.cpu_pct, b.mem_pct),)),
        TelemetryIn,
    )

    @app.post("/events", response_model=BatchOut, dependencies=guarded)
    def events(body: EventsIn) -> BatchOut:
        return _batch_out(service.apply(body.batch(service.new_job_id, service.default_duration_s)))


def _view_routes(app: FastAPI, service: PlacementService, guarded: list[Any]) -> None:
    """``GET /healthz``, ``/nodes``, ``/nodes/{node_id}/forecast`` (``/predict/``), ``/metrics``; ``POST /episode``."""

    @app.get("/healthz", response_model=HealthOut)
    def healthz() -> HealthOut:
        cluster = service.cluster
        return HealthOut(status="ok", agent=cluster.agent_spec, scenario=cluster.scenario.name, time_s=cluster.time_s)

    @app.get("/nodes", response_model=list[NodeOut], dependencies=guarded)
    def nodes() -> list[NodeOut]:
        with service.locked() as cluster:
            return [NodeOut(**row) for row in node_rows(cluster)]

    @app.get("/nodes/{node_id}/forecast", response_model=ForecastOut, dependencies=guarded)
    @app.get("/predict/{node_id}", response_model=ForecastOut, dependencies=guarded, include_in_schema=False)
    def node_forecast(node_id: str) -> ForecastOut:
        with service.locked() as cluster:
            if node_id not in cluster.known.node_index:
                raise HTTPException(status.HTTP_404_NOT_FOUND, f"no node {node_id!r} in the fleet")
            return ForecastOut(**forecast(cluster, node_id))

    @app.get("/metrics", response_model=MetricsOut, dependencies=guarded)
    def metrics() -> MetricsOut:
        return MetricsOut(**service.metrics())

    @app.post("/episode", response_model=HealthOut, dependencies=guarded)
    def episode(body: EpisodeIn) -> HealthOut:
        service.restart(body.seed)
        return healthz()


def _batch_out(result: BatchResult) -> BatchOut:
    return BatchOut(
        time_s=result.time_s,
        decisions=[DecisionOut.of(d) for d in result.decisions],
        changed=[JobOut.of(r) for r in result.changed],
    )
