"""A load test of the placement service on loopback: concurrent clients submit and finish jobs over HTTP.

:func:`run_load` starts ``aco-env serve`` in a child process (127.0.0.1) and ``clients`` threads, each
with its own HTTP client (httpx). A client submits a job (1 or 2 cores, 1 to 4 GB, seeded), and
finishes it once it runs: at once when the answer placed it, or when a later answer (to anyone's
request) does; a job still queued after ``patience_s`` is cancelled. Bounded in work (``placements``)
and in time (``time_limit_s``: the clients stop submitting then). It measures the round-trip time
of every submission at the client, the service's own scheduling latency and the agent's decision
time, and checks the run from the service's journal, independently of the twin: no node's running
jobs ever asked for more cpu, memory or GPUs than it has, every job was placed at most once
(there are no outages), and every placement a client was told of is the service's record.
``aco-env bench --only serve`` runs it for each agent (docs/serving.md has the numbers).
"""

from __future__ import annotations

import json
import logging
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

import scenarios
from digital_twin import NodeSpec
from serving.events import EventBatch, JobRequest
from serving.live import LiveCluster
from serving.server import LOOPBACK


@dataclass
class LoadReport:
    """What a load run measured and checked (JSON-ready through :meth:`as_dict`)."""

    agent: str
    clients: int
    placements: int
    submissions: int
    cancelled: int
    requests: int
    wall_s: float
    round_trip_ms: np.ndarray  # (submissions,) client-side, POST /jobs
    scheduling_ms: np.ndarray  # (submissions,) the service's scheduling_latency_ms
    agent_ms: np.ndarray  # (decisions,) the agent's decision time
    capacity_exceeded: int
    placed_twice: int
    lost: int

    def as_dict(self) -> dict[str, Any]:
        """The counts, and p50/p99 of each latency in ms."""
        out: dict[str, Any] = {key: getattr(self, key) for key in (
            "agent", "clients", "placements", "submissions", "cancelled", "requests", "wall_s",
            "capacity_exceeded", "placed_twice", "lost")}  # fmt: skip
        out["placements_per_s"] = self.placements / self.wall_s if self.wall_s else 0.0
        for name in ("round_trip_ms", "scheduling_ms", "agent_ms"):
            values = getattr(self, name)
            out[f"{name}_p50"] = float(np.percentile(values, 50)) if len(values) else None
            out[f"{name}_p99"] = float(np.percentile(values, 99)) if len(values) else None
        return out


class _Shared:
    """What the clients share: every decision they were told of, and the counters."""

    def __init__(self, target: int) -> None:
        self.lock = threading.Lock()
        self.told: dict[str, list[str]] = defaultdict(list)  # job -> nodes the answers placed it on
        self.seen: set[tuple[str, float]] = set()
        self.target = target
        self.placed = 0
        self.requests = 0

    def record(self, answer: dict[str, Any]) -> None:
        """Count a request and the placements its answer tells (each once: a group's answers repeat them)."""
        with self.lock:
            self.requests += 1
            for decision in answer.get("decisions", ()):
                key = (decision["job_id"], decision["time_s"])
                if decision["node_id"] is not None and key not in self.seen:
                    self.seen.add(key)
                    self.told[decision["job_id"]].append(decision["node_id"])
                    self.placed += 1

    def node_of(self, job_id: str) -> str | None:
        with self.lock:
            nodes = self.told.get(job_id)
            return nodes[-1] if nodes else None


def _client(url: str, index: int, shared: _Shared, deadline: float, patience_s: float, out: dict[str, list]) -> None:
    """One client: submit, wait until placed, finish; until the target or the deadline."""
    rng = np.random.default_rng(index)
    with httpx.Client(base_url=url, timeout=120) as http:
        k = 0
        while shared.placed < shared.target and time.monotonic() < deadline:
            job_id = f"c{index}-{k}"
            k += 1
            body = {"job_id": job_id, "cpu_cores": int(rng.integers(1, 3)), "mem_gb": int(rng.integers(1, 5)),
                    "duration_s": 60, "workload": "batch"}  # fmt: skip
            started = time.perf_counter()
            answer = http.post("/jobs", json=body).json()
            out["round_trip_ms"].append((time.perf_counter() - started) * 1e3)
            out["scheduling_ms"].append(answer["scheduling_latency_ms"])
            shared.record(answer)
            waited = time.monotonic()
            while shared.node_of(job_id) is None and time.monotonic() - waited < patience_s:
                time.sleep(0.002)
            verb = "finish" if shared.node_of(job_id) is not None else "cancel"
            out["cancelled"].append(verb == "cancel")
            shared.record(http.post(f"/jobs/{job_id}/{verb}", json={}).json())


def run_load(
    agent: str, state: Path, scenario: str = "fleet5-synthetic", clients: int = 32, placements: int = 20_000,
    time_limit_s: float = 1800.0, patience_s: float = 2.0,
) -> LoadReport:  # fmt: skip
    """Run the load test (see the module docstring) against ``aco-env serve`` in a child process; check it.

    ``state``: the service's state file (its journal, written when it stops), read for the checks.
    """
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    shared = _Shared(placements)
    outs: list[dict[str, list]] = [defaultdict(list) for _ in range(clients)]
    with ServiceProcess(agent, scenario, state) as server:
        started = time.monotonic()
        deadline = started + time_limit_s
        threads = [threading.Thread(target=_client, args=(server.url, k, shared, deadline, patience_s, outs[k]))
                   for k in range(clients)]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
    journal = json.loads(state.read_text())["batches"]
    exceeded, twice, final = check_journal(journal, scenarios.load(scenario).fleet)
    lost = sum(final.get(job) != nodes[-1] for job, nodes in shared.told.items())
    merged = {name: [x for out in outs for x in out[name]] for name in ("round_trip_ms", "scheduling_ms", "cancelled")}
    agent_ms = [d[2] for entry in journal for d in entry["decisions"] if len(d) > 2]
    return LoadReport(
        agent, clients, shared.placed, len(merged["round_trip_ms"]), sum(merged["cancelled"]), shared.requests, wall,
        np.array(merged["round_trip_ms"]), np.array(merged["scheduling_ms"]), np.array(agent_ms), exceeded, twice, lost,
    )  # fmt: skip


_CLI = "import sys; from training.cli.main import main; sys.exit(main(sys.argv[1:]))"
"""The ``aco-env`` command, run by the interpreter of this process (a child's command line, not an import)."""


class ServiceProcess:
    """``aco-env serve`` in a child process on a free loopback port, stopped by SIGTERM to its pid.

    Attributes:
        url: ``http://127.0.0.1:PORT``.
        process: The child.
    """

    def __init__(self, agent: str, scenario: str, state: Path, *extra: str) -> None:
        with socket.socket() as probe:
            probe.bind((LOOPBACK, 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://{LOOPBACK}:{self.port}"
        self.command = [sys.executable, "-c", _CLI, "serve", "--agent", agent, "--fleet", scenario,
                        "--port", str(self.port), "--state", str(state), *extra]  # fmt: skip

    def __enter__(self) -> ServiceProcess:
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(600):  # up to 60 s for the model to load and the socket to open
            if self.process.poll() is not None:
                raise RuntimeError(f"aco-env serve exited {self.process.returncode}: {self.process.stderr.read()}")  # type: ignore[union-attr]
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("aco-env serve did not answer /healthz within 60 s")

    def stop(self) -> int:
        """SIGTERM, then wait (SIGKILL after 60 s); the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.communicate()
        return self.process.returncode

    def __exit__(self, *exc: object) -> None:
        self.stop()


def check_journal(journal: list[dict[str, Any]], nodes: tuple[NodeSpec, ...]) -> tuple[int, int, dict[str, str]]:
    """Replay a journal's placements and ends on the fleet's sizes.

    Independent of the twin: the running jobs of each node are summed from the journal alone.
    Returns (moments a node's jobs asked for more than it has, jobs placed twice, ``job -> node``
    of the last placement of every job).
    """
    fleet = {node.node_id: node for node in nodes}
    used: dict[str, np.ndarray] = {name: np.zeros(3) for name in fleet}
    running: dict[str, tuple[str, np.ndarray]] = {}
    asks: dict[str, np.ndarray] = {}
    placed: set[str] = set()
    exceeded = twice = 0
    last: dict[str, str] = {}
    for entry in journal:
        batch = entry["batch"]
        for job in batch["submit"]:
            asks[job["job_id"]] = np.array([job["cpu_cores"], job["mem_gb"], job["gpu_count"]], dtype=float)
        for job_id in [*batch["finish"], *batch["cancel"]]:
            if job_id in running:
                node, ask = running.pop(job_id)
                used[node] -= ask
        for job_id, node, *_ in entry["decisions"]:
            if node is None:
                continue
            last[job_id] = node
            twice += job_id in placed
            placed.add(job_id)
            running[job_id] = (node, asks[job_id])
            used[node] += asks[job_id]
            spec = fleet[node]
            exceeded += bool((used[node] > np.array([spec.cpu_cores, spec.mem_gb, spec.gpu_count]) + 1e-9).any())
    return exceeded, twice, last


def in_process_latency(agent: str, scenario: str = "fleet5-synthetic", jobs: int = 200) -> dict[str, Any]:
    """The reference system's latency setting: ``jobs`` submissions one after another, in-process, no HTTP.

    Each is a batch job of 0.1 core and 0.2 GB, preemptible (as the reference's benchmark), a
    tenth of a second after the previous one; none ends, so ``jobs`` are running at the end.
    Returns p50 and p99 of the wall time of each :meth:`LiveCluster.apply` (the twin's continuation
    and the agent's decision), ms.
    """
    live = LiveCluster(scenarios.load(scenario), agent)
    times = []
    for k in range(jobs):
        request = JobRequest(f"j{k}", "batch", 0.1, 0.2, 600.0, preemptible=True)
        started = time.perf_counter()
        live.apply(EventBatch(0.1 * (k + 1), submit=(request,)))
        times.append((time.perf_counter() - started) * 1e3)
    return {"agent": agent, "jobs": jobs, "apply_ms_p50": float(np.percentile(times, 50)),
            "apply_ms_p99": float(np.percentile(times, 99))}  # fmt: skip


def bench_serve(
    agents: tuple[str, ...] = ("first-fit", "aco"),
    clients: int = 32,
    placements: int = 20_000,
    model: str | None = None,
) -> dict[str, Any]:
    """``aco-env bench --only serve``: :func:`run_load` per agent, and per ``sb3:`` model.

    ``model``: an ``sb3:`` spec; default: the ``make run`` model when the repository ships one
    (``models/make-run/model.zip``).
    """
    shipped = Path("models/make-run/model.zip")
    model = model or (f"sb3:{shipped}" if shipped.exists() else None)  # config.json beside it names the algorithm
    chosen = (*agents, model) if model else agents
    in_process = [in_process_latency(agent) for agent in chosen]
    with tempfile.TemporaryDirectory() as folder:
        runs = [run_load(agent, Path(folder) / f"state-{k}.json", clients=clients, placements=placements).as_dict()
                for k, agent in enumerate(chosen)]  # fmt: skip
    return {"in_process": in_process, "runs": runs, "clients": clients, "placements": placements}
