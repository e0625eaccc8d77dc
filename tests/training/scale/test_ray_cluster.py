"""A real Ray cluster on this machine: `aco-env evaluate --backend ray --address` on it writes serial's results.

The cluster is two nodes of one CPU each, a head and a worker, each a ``ray start --block``
process started here as the leader of its own process group (a new session), on the loopback
address (Ray advertises the machine's address for it; only this machine takes part). Stopping it
signals exactly those two groups: SIGTERM, a bounded wait, then SIGKILL for anything left, so
only this cluster stops, even when the test fails (``ray stop`` would stop every Ray on the
machine, other tests' included). The cluster has its own temp dir, its own authentication
token and no dashboard, and Ray binds every port it can on port 0 (the kernel picks a free one
as it binds, so no port is picked here and released before Ray binds it) and says which it
took: the head's GCS port is read from its log. The one port ``ray start --head`` needs given
(its Ray Client server's, where 0 is refused) is held by this test from before the head starts
until the cluster stops (:func:`held_port`). So the cluster cannot collide with another Ray on
this machine, nor take a port another program picks: the test is safe under pytest-xdist. The
module's two tests share one cluster (one worker runs both): a cluster takes seconds to start.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.paths import ROOT
from training.evaluation.results import without_timing

pytestmark = [
    pytest.mark.ray, pytest.mark.subprocess,  # a Ray cluster of its own, in child processes
    pytest.mark.xdist_group("ray-cluster"),  # one worker runs both tests on the one cluster (--dist loadgroup)
]

START_TIMEOUT_S = HANG_GUARD_S
"""Longest wait for a node to start (a loaded 2-core machine takes ~10 s)."""
STOP_TIMEOUT_S = 30.0
"""Longest wait for a node to stop after SIGTERM before it is killed."""
FOUR_AGENTS = "first-fit,cheapest,aco,random"
STARTED = re.compile(r"Ray runtime started")
"""What ``ray start`` prints once its node runs."""
HEAD_PORT = re.compile(r"ray start --address='[^']*:(\d+)'")
"""The line of the head's log that names the port it bound (``--port=0``) for other nodes to join (with the
machine's address, which Ray advertises even for a node on the loopback address)."""
DYNAMIC_PORTS = ["--dashboard-agent-listen-port=0", "--min-worker-port=0", "--max-worker-port=0"]
"""The ports ``ray start`` would take from fixed defaults, on port 0 (the others are 0 by default)."""

pytest.importorskip("ray", reason="the ray extra is not installed")


@dataclass(frozen=True)
class Cluster:
    """A running two-node cluster.

    Attributes:
        address: The head's ``HOST:PORT`` (what ``--address`` takes).
        env: The environment a process needs to connect (the cluster's token).
    """

    address: str
    env: dict[str, str]


@contextlib.contextmanager
def held_port() -> Iterator[int]:
    """A loopback port held for the ``with`` block by a socket bound with ``SO_REUSEPORT``, not listening.

    While it is bound the kernel never hands the port out (to ``bind`` on port 0, nor to an outgoing
    connection), and a program binding it without ``SO_REUSEPORT`` is refused; a gRPC server, as
    Ray's client server is, sets ``SO_REUSEPORT`` and listens on it beside this socket, which takes
    no connection (it does not listen).
    """
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def start_node(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``ray start --block ARGS`` in a new session, its output in ``log`` (returns at once: see :func:`wait_for`)."""
    ray = str(Path(sys.executable).parent / "ray")
    with log.open("wb") as out:
        return subprocess.Popen([ray, "start", "--block", *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def wait_for(process: subprocess.Popen[bytes], log: Path, ready: re.Pattern[str] = STARTED) -> re.Match[str]:
    """The match of ``ready`` in a node's log, once the node prints it.

    Raises:
        RuntimeError: The node exited, or did not print ``ready`` within :data:`START_TIMEOUT_S`
            (the process is left for the caller to stop).
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    while (found := ready.search(log.read_text(errors="replace"))) is None:
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{process.args} did not start (exit {process.returncode}):\n{tail}")
        time.sleep(0.2)
    return found


def stop_node(process: subprocess.Popen[bytes]) -> None:
    """Stop a node's whole process group: SIGTERM, wait at most :data:`STOP_TIMEOUT_S`, then SIGKILL what is left."""
    group = process.pid  # the leader of its own session: its group id is its pid
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_TIMEOUT_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)  # what outlived the leader, or a leader that did not stop
    process.wait(timeout=STOP_TIMEOUT_S)


def group_alive(group: int, grace_s: float = 10.0) -> bool:
    """Whether any process is left in process group ``group`` after up to ``grace_s`` seconds.

    A process killed a moment ago stays in its group until it is reaped, which a loaded machine
    may take a little while to do: the group is polled until it is empty or the grace is over.
    """
    deadline = time.monotonic() + grace_s
    while True:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.1)


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Cluster]:
    """A head and a worker node of one CPU each for the module's tests, stopped and its temp dir removed at the end."""
    temp_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",  # this cluster's own token: nothing else on the machine can use it, nor it theirs
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",  # stop at SIGTERM (nothing to drain in a test)
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    env.pop("RAY_ADDRESS", None)
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats", *DYNAMIC_PORTS]
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        with held_port() as client:
            nodes.append(start_node(
                ["--head", "--port=0", f"--temp-dir={temp_dir}", "--include-dashboard=false",
                 f"--ray-client-server-port={client}", *common],
                env, temp_dir / "head.log",
            ))
            address = f"127.0.0.1:{wait_for(nodes[0], temp_dir / 'head.log', HEAD_PORT)[1]}"
            nodes.append(start_node([f"--address={address}", *common], env, temp_dir / "worker.log"))
            wait_for(nodes[1], temp_dir / "worker.log")
            yield Cluster(address, env)
    finally:
        for node in reversed(nodes):  # the worker first, then the head
            stop_node(node)
        leftovers = [node.pid for node in nodes if group_alive(node.pid)]
        shutil.rmtree(temp_dir, ignore_errors=True)
        assert not leftovers, f"processes of the test cluster still run in groups {leftovers}"


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "training.cli.main", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**env, "PYTHONPATH": str(ROOT)}, timeout=HANG_GUARD_S)


def test_ray_cluster__evaluate_with_address_writes_the_results_of_serial(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    """Acceptance: 4 agents x 10 seeds of the default scenario on 2 nodes: serial's results.json except timings."""
    common = ["evaluate", "--agents", FOUR_AGENTS, "--episodes", "10", "--no-progress"]
    on_cluster = cli(*common, "--backend", "ray", "--address", ray_cluster.address, "--out", str(tmp_path / "ray"),
                     env=ray_cluster.env)
    assert on_cluster.returncode == 0, on_cluster.stderr
    assert f"backend: ray, cluster at {ray_cluster.address}, 2 node(s), 2 CPU(s)" in on_cluster.stderr
    serial = cli(*common, "--backend", "serial", "--out", str(tmp_path / "serial"), env=dict(os.environ))
    assert serial.returncode == 0, serial.stderr
    documents = [json.loads((tmp_path / kind / "results.json").read_text()) for kind in ("ray", "serial")]
    assert list(documents[0]["agents"]) == FOUR_AGENTS.split(",") and documents[0]["seeds"] == list(range(10))
    assert without_timing(documents[0]) == without_timing(documents[1])


def test_ray_cluster__sweep_with_address_runs_its_trials_there(ray_cluster: Cluster, tmp_path: Path) -> None:
    """`aco-env sweep --address`: 2 tiny trials (1 point x 2 seeds) on the cluster, a run directory each, best.json."""
    out = tmp_path / "sweep"
    result = cli("sweep", "--seeds", "0,1", "--timesteps", "64", "--set", "n_steps=64", "--set", "batch_size=64",
                 "--set", "n_epochs=1", "--set", "eval_episodes=0", "--set", "curve_episodes=1",
                 "--set", "curve_every=-1", "--address", ray_cluster.address, "--out", str(out), env=ray_cluster.env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"backend: ray, cluster at {ray_cluster.address}, 2 node(s), 2 CPU(s)" in result.stderr
    run_dirs = sorted((out / "runs").iterdir())
    assert len(run_dirs) == 2 and all((run_dir / "model.zip").is_file() for run_dir in run_dirs), run_dirs
    best = json.loads((out / "best.json").read_text())
    assert Path(best["run_dir"]) in run_dirs and best["config"]["timesteps"] == 64
