"""A real Slurm on loopback for integration tests: one slurmctld, one slurmd per node, a private munged.

Debian's slurmctld, slurmd, slurm-client and munge (``.ci/run`` installs them); every daemon binds
127.0.0.1, keeps its files under one temporary folder, and is stopped by its pid (SIGTERM, then
SIGKILL after 10 s). Nodes are sized like the fleet they stand for; sizes are bookkeeping
(``SlurmdParameters=config_overrides``: every job shares the real cores). Held jobs are placed by
an external scheduler: pinned with ``scontrol update ReqNodeList`` and released.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from digital_twin import NodeSpec
from tests.hang_guard import HANG_GUARD_S

DAEMONS = ("slurmctld", "slurmd", "munged", "mungekey", "squeue", "sinfo", "scontrol", "sbatch")


def missing_programs() -> list[str]:
    """The Slurm and munge programs not installed (empty: a loopback Slurm can start)."""
    return [name for name in DAEMONS if shutil.which(name) is None and not Path(f"/usr/sbin/{name}").exists()]


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class LoopbackSlurm:
    """A Slurm of ``fleet``'s nodes on 127.0.0.1 (started by :meth:`start`, stopped by :meth:`stop`).

    Its files are in a short temporary folder (slurmd's sockets live there: a Unix socket's path
    is at most 108 bytes), removed by :meth:`stop`.

    Attributes:
        root: The folder of its config, state, logs and job output.
        env: The environment for client commands (``SLURM_CONF`` set).
        pids: The daemons' pids, by name.
    """

    def __init__(self, fleet: Sequence[NodeSpec]) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="aco-slurm-"))
        root = self.root
        self.fleet = tuple(fleet)
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.pids: dict[str, int] = {}
        # munged runs as the munge user: its folder must be reachable by it (pytest's folders are root's alone)
        self.munge = Path(tempfile.mkdtemp(prefix="aco-env-munge-"))

    def _write_config(self) -> None:
        root = self.root
        for folder in ("state", "out", "gpus", *(f"spool/{node.node_id}" for node in self.fleet)):
            (root / folder).mkdir(parents=True, exist_ok=True)
        most_gpus = max((int(node.gpu_count) for node in self.fleet), default=0)
        for k in range(most_gpus):  # a GRES needs one file per GPU: empty files stand for the devices
            (root / "gpus" / f"gpu{k}").touch()
        ports = _free_ports(len(self.fleet) + 1)
        nodes = []
        for node, port in zip(self.fleet, ports[1:], strict=True):
            gres = f" Gres=gpu:{node.gpu_count}" if node.gpu_count else ""
            nodes.append(f"NodeName={node.node_id} NodeAddr=127.0.0.1 NodeHostname=localhost Port={port} "
                         f"CPUs={int(node.cpu_cores)} RealMemory={int(node.mem_gb * 1024)}{gres} "
                         "State=UNKNOWN")  # fmt: skip
        (root / "gres.conf").write_text("".join(
            f"NodeName={node.node_id} Name=gpu File={root}/gpus/gpu[0-{int(node.gpu_count) - 1}]\n"
            for node in self.fleet if node.gpu_count
        ))  # fmt: skip
        self.conf.write_text("\n".join([
            "ClusterName=acoenv", "SlurmctldHost=localhost(127.0.0.1)", f"SlurmctldPort={ports[0]}",
            "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={self.munge}/munge.socket", f"StateSaveLocation={root}/state",
            f"SlurmdSpoolDir={root}/spool/%n", f"SlurmctldPidFile={root}/slurmctld.pid",
            f"SlurmdPidFile={root}/slurmd-%n.pid", f"SlurmctldLogFile={root}/slurmctld.log",
            f"SlurmdLogFile={root}/slurmd-%n.log", "ProctrackType=proctrack/pgid", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/filetxt", f"JobCompLoc={root}/jobcomp.txt", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory", "SlurmdParameters=config_overrides", "GresTypes=gpu",
            "ReturnToService=2", "MpiDefault=none", "MinJobAge=3600", "SchedulerParameters=sched_interval=1",
            "MessageTimeout=3",  # a client gives up on a stopped slurmctld after 3 s, not the default 10
            *nodes, "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP", "",
        ]))  # fmt: skip

    def start(self) -> None:
        """Write the config, start munged, slurmctld and the slurmds; wait until every node is idle."""
        self._write_config()
        self._start_munge()
        self.start_controller()
        for node in self.fleet:
            self._spawn(f"slurmd-{node.node_id}", ["slurmd", "-f", str(self.conf), "-N", node.node_id],
                        self.root / f"slurmd-{node.node_id}.pid")  # fmt: skip
        self.wait_idle()

    def _start_munge(self) -> None:
        munge = self.munge
        key = munge / "munge.key"
        subprocess.run(["mungekey", "-c", "-f", "-k", str(key)], check=True, capture_output=True)
        shutil.chown(munge, "munge", "munge")
        munge.chmod(0o755)  # munged wants its socket's folder searchable by all, writable by it alone
        shutil.chown(key, "munge", "munge")
        key.chmod(0o600)
        command = ["runuser", "-u", "munge", "--", "munged", f"--socket={munge}/munge.socket", f"--key-file={key}",
                   f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log",
                   f"--seed-file={munge}/seed"]  # fmt: skip
        self._spawn("munged", command, munge / "munged.pid")

    def start_controller(self) -> None:
        """Start slurmctld (again, after :meth:`stop_controller`: its state is kept in the state folder)."""
        self._spawn("slurmctld", ["slurmctld", "-f", str(self.conf)], self.root / "slurmctld.pid")

    def stop_controller(self) -> None:
        """Stop slurmctld alone (by its pid), as a crash or an upgrade would."""
        self._stop("slurmctld")

    def _spawn(self, name: str, command: list[str], pid_file: Path) -> None:
        pid_file.unlink(missing_ok=True)
        subprocess.run(command, check=True, capture_output=True, env=self.env, timeout=HANG_GUARD_S)  # daemonises
        for _ in range(500):
            if pid_file.exists() and pid_file.read_text().strip():
                self.pids[name] = int(pid_file.read_text().split()[0])
                return
            time.sleep(0.02)
        raise RuntimeError(f"{name} did not write {pid_file} within 10 s")

    def wait_idle(self, timeout_s: float = HANG_GUARD_S) -> None:
        """Until ``sinfo`` lists every node idle (or mixed/allocated: up and answering)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            done = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, env=self.env)
            states = dict(line.split() for line in done.stdout.splitlines() if line.strip())
            if len(states) == len(self.fleet) and all(s in ("idle", "mix", "alloc") for s in states.values()):
                return
            time.sleep(0.2)
        raise RuntimeError(f"Slurm nodes not idle within {timeout_s:g} s: {done.stdout or done.stderr}")

    def submit_held(
        self, name: str, cpus: int, mem_mb: int, gpus: int, minutes: int, sleep_s: float, comment: str = "batch"
    ) -> int:
        """``sbatch --hold`` a job that sleeps and prints its node (``comment``: its workload); its Slurm job id."""
        command = ["sbatch", "--hold", "--parsable", "-J", name, "-c", str(cpus), f"--mem={mem_mb}M",
                   f"--comment={comment}",
                   "-t", str(minutes), "-o", str(self.root / "out" / "%j.out"),
                   "--wrap", f"sleep {sleep_s}; echo $SLURMD_NODENAME"]  # fmt: skip
        if gpus:
            command[3:3] = [f"--gres=gpu:{gpus}"]
        done = subprocess.run(command, capture_output=True, text=True, env=self.env, check=True)
        return int(done.stdout.strip().split(";")[0])

    def completed_nodes(self) -> dict[int, str]:
        """``job id -> node`` of every finished job, from the jobcomp log (Slurm's own record)."""
        path = self.root / "jobcomp.txt"
        found = {}
        for line in path.read_text().splitlines() if path.exists() else []:
            fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
            if fields.get("JobState") == "COMPLETED":
                found[int(fields["JobId"])] = fields["NodeList"]
        return found

    def squeue(self) -> list[dict]:
        """``squeue --json``'s jobs."""
        done = subprocess.run(["squeue", "--json"], capture_output=True, text=True, env=self.env, check=True)
        return json.loads(done.stdout)["jobs"]

    def _stop(self, name: str) -> None:
        pid = self.pids.pop(name, None)
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10  # it dies when next scheduled: wait for that (bounded)
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop every daemon by its pid (slurmds, slurmctld, munged)."""
        for name in [n for n in self.pids if n.startswith("slurmd-")] + ["slurmctld", "munged"]:
            self._stop(name)
        shutil.rmtree(self.munge, ignore_errors=True)
        shutil.rmtree(self.root, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Running and not a zombie (this machine's init reaps stopped daemons late)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"
