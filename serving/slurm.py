"""A live Slurm as the cluster of a placement service: its held jobs are placed by the agent.

``aco-env slurm-bridge --agent SPEC`` is an external scheduler for a real slurmctld. Jobs are
submitted held (``sbatch --hold``, or a ``job_submit`` plugin that holds every job). Every poll
the bridge reads the held and running jobs (``squeue --json``) and the nodes (``sinfo --json``),
tells its :class:`~serving.service.PlacementService` what changed since the last poll (jobs
submitted, ended or cancelled; spot nodes down or back), and carries out the agent's decisions:
it pins the job to the node (``scontrol update JobId=J ReqNodeList=NODE``) and, only when the
pin succeeded, releases it (``scontrol release J``). A job the agent defers stays held.

A job whose pin fails stays held and is withdrawn from the live episode (it is offered to the
agent again at the next poll, as a new submission); a job pinned but not released is released
at the next poll. When slurmctld does not answer (a restart), the poll changes nothing and the
next one tries again: the held jobs and the pins are in slurmctld's saved state.

Mapping: a Slurm node is the fleet node of the same name. A job's cpus are its ``cpus``, its
memory ``memory_per_node`` (MB), its GPUs the ``gres:gpu:N`` of ``tres_per_node``, its declared
run time its time limit (minutes; none: the service's default); its workload is
``latency-critical``, ``batch`` or ``stream`` when its ``comment`` says so, else batch. Episode
time starts at the bridge's first poll.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from digital_twin import WORKLOAD_TYPES
from serving.events import ACTIVE, QUEUED, RUNNING, EventBatch, JobRequest
from serving.service import PlacementService

log = logging.getLogger(__name__)
HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})
ENDED_STATES = frozenset({"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
                          "PREEMPTED", "CANCELLED"})  # fmt: skip
_GPUS = re.compile(r"gpu(?::[^:,]+)?:(\d+)")


class SlurmError(RuntimeError):
    """A Slurm command failed (the message names it and quotes its error)."""


@dataclass(frozen=True)
class SlurmJob:
    """What the bridge reads of a ``squeue --json`` job."""

    job_id: int
    name: str
    state: str
    reason: str
    cpus: int
    mem_mb: float
    gpus: int
    time_limit_min: int | None
    comment: str

    @property
    def held(self) -> bool:
        """Pending and held: waiting for the bridge."""
        return self.state == "PENDING" and self.reason in HELD_REASONS

    @classmethod
    def of(cls, item: Mapping[str, object]) -> SlurmJob:
        """From one entry of ``squeue --json``'s ``jobs``."""
        match = _GPUS.search(str(item.get("tres_per_node") or "") + "," + str(item.get("tres_per_job") or ""))
        limit = item.get("time_limit")
        memory = item.get("memory_per_node") or 0
        return cls(
            job_id=int(item["job_id"]),  # type: ignore[call-overload]
            name=str(item.get("name", "")),
            state=str(item.get("job_state", "")),
            reason=str(item.get("state_reason", "")),
            cpus=int(item.get("cpus") or 1),  # type: ignore[call-overload]
            mem_mb=float(memory),  # type: ignore[arg-type]
            gpus=int(match.group(1)) if match else 0,
            time_limit_min=int(limit) if isinstance(limit, int) and 0 < limit < 2**31 - 1 else None,
            comment=str(item.get("comment") or ""),
        )


class SlurmClient:
    """Slurm's client commands, each with a time limit, their failures as :class:`SlurmError`.

    Args:
        env: The environment of the commands (``SLURM_CONF`` for a non-default cluster).
        timeout_s: Each command's time limit.
    """

    def __init__(self, env: Mapping[str, str] | None = None, timeout_s: float = 20.0) -> None:
        self.env = dict(env) if env is not None else None
        self.timeout_s = timeout_s

    def _run(self, *command: str) -> str:
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=self.timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmError(f"{' '.join(command)}: {exc}") from None
        if done.returncode != 0:
            raise SlurmError(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip()[:300]}")
        return done.stdout

    def jobs(self) -> list[SlurmJob]:
        """Every job slurmctld lists (pending, running, recently ended)."""
        return [SlurmJob.of(item) for item in self._json("squeue", "--json")["jobs"]]

    def node_states(self) -> dict[str, str]:
        """``node name -> state`` (``idle``, ``mixed``, ``allocated``, ``down``, ``drained``...)."""
        return {str(node["name"]): str(node.get("state", "")) for node in self._json("sinfo", "--json")["nodes"]}

    def pin(self, job_id: int, node: str) -> None:
        """Restrict a held job to ``node``."""
        self._run("scontrol", "update", f"JobId={job_id}", f"ReqNodeList={node}")

    def release(self, job_id: int) -> None:
        """Release a held job."""
        self._run("scontrol", "release", str(job_id))

    def _json(self, *command: str) -> dict:
        text = self._run(*command)
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SlurmError(f"{' '.join(command)}: not JSON ({exc})") from None
        if not isinstance(document, dict) or document.get("errors"):
            # e.g. slurmctld down: squeue --json exits 0 with an empty job list and the error here
            errors = document.get("errors") if isinstance(document, dict) else document
            raise SlurmError(f"{' '.join(command)}: {str(errors)[:300]}")
        return document


class SlurmBridge:
    """Polls a Slurm and places its held jobs with a placement service.

    Args:
        service: The live cluster (its fleet's node names are the Slurm node names).
        client: The Slurm commands.
        clock: Monotonic seconds (episode time is the clock since the first poll).

    Attributes:
        placed: ``Slurm job id -> node`` of every job the bridge pinned and released.
        failed_pins: Slurm job ids whose pin failed (they stayed held), in order.
    """

    def __init__(
        self, service: PlacementService, client: SlurmClient, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.service = service
        self.client = client
        self._clock = clock
        self._origin: float | None = None
        self._twin_id: dict[int, str] = {}  # Slurm job id -> its job id in the live episode
        self._attempts: dict[int, int] = {}
        self._to_release: dict[int, str] = {}
        self.placed: dict[int, str] = {}
        self.failed_pins: list[int] = []
        self._down: set[str] = set()

    def poll(self) -> bool:
        """One round: read Slurm, apply what changed, pin and release; False when Slurm did not answer."""
        try:
            jobs = {job.job_id: job for job in self.client.jobs()}
            nodes = self.client.node_states()
        except SlurmError as exc:
            log.warning("slurm-bridge: Slurm does not answer, trying again at the next poll: %s", exc)
            return False
        now = self._clock()
        if self._origin is None:
            self._origin = now
        self._release_pending()
        batch = self._changes(jobs, nodes, now - self._origin)
        result = self.service.apply(batch)
        by_twin = {twin: slurm for slurm, twin in self._twin_id.items()}
        for decision in result.decisions:
            if decision.node_id is not None:
                self._pin_and_release(by_twin[decision.job_id], decision.node_id, result.time_s)
        return True

    def _changes(self, jobs: Mapping[int, SlurmJob], nodes: Mapping[str, str], time_s: float) -> EventBatch:
        """The batch of what changed since the last poll."""
        cluster = self.service.cluster
        submit: list[JobRequest] = []
        finish: list[str] = []
        cancel: list[str] = []
        for slurm_id, twin_id in list(self._twin_id.items()):
            record = cluster.jobs.get(twin_id)
            job = jobs.get(slurm_id)
            if record is None or record.status not in ACTIVE:
                continue
            if record.status == RUNNING and (job is None or job.state in ENDED_STATES):
                (cancel if job is not None and job.state == "CANCELLED" else finish).append(twin_id)
            elif record.status == QUEUED and (job is None or not job.held):
                cancel.append(twin_id)  # gone, or released by someone else: no longer the agent's to place
        for job in jobs.values():
            if job.held and not self._is_active(job.job_id):
                attempt = self._attempts.get(job.job_id, 0) + 1
                self._attempts[job.job_id] = attempt
                self._twin_id[job.job_id] = twin_id = f"slurm-{job.job_id}" + (f"#{attempt}" if attempt > 1 else "")
                submit.append(self._request(job, twin_id))
        down = self._spot_changes(nodes)
        return EventBatch(time_s, tuple(submit), tuple(finish), tuple(cancel), down=down[0], up=down[1])

    def _is_active(self, slurm_id: int) -> bool:
        twin_id = self._twin_id.get(slurm_id)
        record = self.service.cluster.jobs.get(twin_id) if twin_id is not None else None
        return record is not None and record.status in ACTIVE

    def _request(self, job: SlurmJob, twin_id: str) -> JobRequest:
        workload = job.comment if job.comment in WORKLOAD_TYPES else "batch"
        declared = job.time_limit_min * 60.0 if job.time_limit_min else self.service.default_duration_s
        return JobRequest(twin_id, workload, float(max(job.cpus, 1)), max(job.mem_mb, 1.0) / 1024.0, declared, job.gpus)

    def _spot_changes(self, nodes: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Spot nodes that went down (``down``, ``drained``, ``fail``) or came back since the last poll."""
        fleet = self.service.cluster.known.fleet
        now_down = {node.node_id for node in fleet if node.is_spot and _is_down(nodes.get(node.node_id, "down"))}
        went_down, came_up = tuple(sorted(now_down - self._down)), tuple(sorted(self._down - now_down))
        self._down = now_down
        return went_down, came_up

    def _pin_and_release(self, slurm_id: int, node: str, time_s: float) -> None:
        """Pin, then release only if the pin held; a failed pin withdraws the job from the episode."""
        try:
            self.client.pin(slurm_id, node)
        except SlurmError as exc:
            log.warning("slurm-bridge: job %d stays held: pinning it to %s failed: %s", slurm_id, node, exc)
            self.failed_pins.append(slurm_id)
            self.service.apply(EventBatch(time_s, cancel=(self._twin_id[slurm_id],)))
            return
        self._to_release[slurm_id] = node
        self._release_pending()

    def _release_pending(self) -> None:
        for slurm_id, node in list(self._to_release.items()):
            try:
                self.client.release(slurm_id)
            except SlurmError as exc:
                log.warning("slurm-bridge: job %d pinned to %s; releasing it failed (retried next poll): %s",
                            slurm_id, node, exc)  # fmt: skip
                continue
            del self._to_release[slurm_id]
            self.placed[slurm_id] = node

    def run(self, interval_s: float = 1.0, stop: Callable[[], bool] = lambda: False) -> None:
        """Poll every ``interval_s`` until ``stop()`` (or Ctrl-C)."""
        while not stop():
            started = self._clock()
            self.poll()
            time.sleep(max(0.0, interval_s - (self._clock() - started)))


def _is_down(state: str) -> bool:
    return any(word in state.lower() for word in ("down", "drain", "fail", "not_responding"))


def slurm_node_names(service: PlacementService) -> Sequence[str]:
    """The node names the bridge expects Slurm to have (the fleet's)."""
    return [node.node_id for node in service.cluster.known.fleet]
