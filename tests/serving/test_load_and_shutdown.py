"""Concurrent clients against ``aco-env serve`` in a child process: invariants under load, and a graceful stop."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest

import scenarios
from serving.loadtest import ServiceProcess, check_journal, run_load
from tests.hang_guard import HANG_GUARD_S

pytestmark = pytest.mark.subprocess  # each test starts aco-env serve as a child process


def test_load__no_placement_lost_or_doubled_and_no_node_over_capacity(tmp_path: Path) -> None:
    """16 clients, 400 placements (bounded): the journal never puts more on a node than it has, nothing is lost."""
    report = run_load("first-fit", tmp_path / "state.json", clients=16, placements=400, time_limit_s=300)
    assert report.placements >= 400
    assert report.capacity_exceeded == 0 and report.placed_twice == 0 and report.lost == 0
    assert report.submissions == len(report.round_trip_ms) and report.requests >= 2 * report.submissions


def test_shutdown__sigterm_mid_load_loses_no_accepted_job(tmp_path: Path) -> None:
    """SIGTERM while 8 clients submit: every job the service answered is in its state file and back after a restart."""
    state = tmp_path / "state.json"
    accepted: dict[str, str | None] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def client(index: int, url: str) -> None:
        with httpx.Client(base_url=url, timeout=HANG_GUARD_S) as http:
            for k in range(10_000):
                if stop.is_set():
                    return
                job_id = f"c{index}-{k}"
                try:
                    response = http.post("/jobs", json={"job_id": job_id, "cpu_cores": 0.5, "mem_gb": 1})
                except httpx.TransportError:  # the service stopped accepting: the job was never accepted
                    return
                if response.status_code == 202:
                    with lock:
                        accepted[job_id] = response.json()["node_id"]

    with ServiceProcess("first-fit", "fleet5-synthetic", state) as server:
        threads = [threading.Thread(target=client, args=(k, server.url)) for k in range(8)]
        for thread in threads:
            thread.start()
        while len(accepted) < 100:
            time.sleep(0.01)
        code = server.stop()  # SIGTERM mid-load: requests under way finish, then the journal is written
        stop.set()
        for thread in threads:
            thread.join()
    assert code == 130  # the CLI's exit for SIGTERM, after a graceful stop
    journal = json.loads(state.read_text())["batches"]
    submitted = {job["job_id"] for entry in journal for job in entry["batch"]["submit"]}
    assert len(accepted) >= 100 and set(accepted) <= submitted
    _, _, placed = check_journal(journal, scenarios.load("fleet5-synthetic").fleet)
    assert all(placed.get(job) == node for job, node in accepted.items() if node is not None)
    with ServiceProcess("first-fit", "fleet5-synthetic", state) as again, httpx.Client(base_url=again.url) as http:
        for job_id, node in accepted.items():
            record = http.get(f"/jobs/{job_id}").json()
            assert record["node_id"] == node, (job_id, record)
