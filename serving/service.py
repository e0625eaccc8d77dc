"""The live cluster behind a lock, with its journal: what the HTTP app and the Slurm bridge call.

:class:`PlacementService` serialises every change (one batch at a time: the twin has one
present), names jobs submitted without an id, keeps a journal of every batch applied and the
decisions it led to, and writes that journal to its state file on :meth:`PlacementService.save`
(a temporary file renamed into place). A service started on an existing state file replays it,
the decisions as recorded (the agent is not asked again), so no accepted job is lost across a
restart.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from serving.events import ACTIVE, RUNNING, EventBatch, EventError, JobRecord
from serving.live import BatchResult, Decide, LiveCluster

JOURNAL_FORMAT = "aco-env-live-journal"
JOURNAL_VERSION = 1


class StateFileError(ValueError):
    """A state file that cannot be read or replayed (the message names the file and the key or batch)."""


class PlacementService:
    """A :class:`LiveCluster` made safe to share between request threads.

    Args:
        cluster: The live cluster.
        default_duration_s: The run time declared for jobs submitted without one, seconds.
        state_path: Where :meth:`save` writes the journal; replayed now if the file exists.
    """

    def __init__(
        self, cluster: LiveCluster, default_duration_s: float = 3600.0, state_path: Path | None = None
    ) -> None:
        self.cluster = cluster
        self.default_duration_s = default_duration_s
        self.state_path = state_path
        self._lock = threading.Lock()
        self._waiting_lock = threading.Lock()
        self._waiting: list[_Ticket] = []  # clock-timed batches waiting for the lock (applied as one group)
        self._journal: list[dict[str, Any]] = []
        self._next_id = 0
        if state_path is not None and state_path.exists():
            self._replay(state_path)

    @contextmanager
    def locked(self) -> Iterator[LiveCluster]:
        """The cluster, held by this thread alone (for reads that must see one instant)."""
        with self._lock:
            yield self.cluster

    def new_job_id(self) -> str:
        """A job id not used in this episode (``job-<n>``)."""
        with self._lock:
            while f"job-{self._next_id}" in self.cluster.jobs:
                self._next_id += 1
            self._next_id += 1
            return f"job-{self._next_id - 1}"

    def apply(self, batch: EventBatch, decide: Decide | None = None) -> BatchResult:
        """Apply ``batch`` (see :meth:`LiveCluster.apply`) and journal it.

        Batches on the service's clock (``time_s`` ``None``) that wait while another is applied
        are applied together, as one batch at the clock's instant (a group commit: the cost of a
        batch is mostly the episode's size, not the batch's); each caller gets the group's result.
        A group that is refused is applied batch by batch, so each caller gets its own answer.

        Raises:
            EventError: Refused; nothing changed.
        """
        if batch.time_s is not None or decide is not None:
            with self._lock:
                return self._apply(batch, decide)
        ticket = _Ticket(batch)
        with self._waiting_lock:
            self._waiting.append(ticket)
        with self._lock:
            if not ticket.done.is_set():
                with self._waiting_lock:
                    group, self._waiting = self._waiting, []
                try:
                    self._apply_group(group)
                finally:  # an unexpected error reaches every caller of the group, none waits for ever
                    for waiting in group:
                        if not waiting.done.is_set():
                            waiting.finish(None, RuntimeError("the group of batches this one was in failed"))
        return ticket.outcome()

    def _apply(self, batch: EventBatch, decide: Decide | None = None) -> BatchResult:
        result = self.cluster.apply(batch, decide)
        entry = batch.as_dict()
        entry["time_s"] = result.time_s
        self._journal.append(
            {"batch": entry, "decisions": [[d.job_id, d.node_id, d.latency_ms] for d in result.decisions]}
        )
        return result

    def _apply_group(self, group: list[_Ticket]) -> None:
        """Apply the batches of ``group`` as one; when that is refused, one by one."""
        if len(group) > 1:
            merged = EventBatch(None, *(tuple(x for t in group for x in getattr(t.batch, name)) for name in _LISTS))
            try:
                result = self._apply(merged)
            except EventError:
                pass
            else:
                for ticket in group:
                    ticket.finish(result, None)
                return
        for ticket in group:
            try:
                ticket.finish(self._apply(ticket.batch), None)
            except EventError as exc:
                ticket.finish(None, exc)

    def restart(self, seed: int) -> None:
        """Start a new, empty episode (the journal starts over)."""
        with self._lock:
            self.cluster.restart(seed)
            self._journal = []
            self._next_id = 0

    # ------------------------------------------------------------------ the state file
    def save(self, path: Path | None = None) -> Path | None:
        """Write the journal to ``path`` (default: the state path) through a temporary file; ``None``: nowhere to."""
        path = path or self.state_path
        if path is None:
            return None
        with self._lock:
            document = {
                "format": JOURNAL_FORMAT,
                "version": JOURNAL_VERSION,
                "scenario": self.cluster.scenario.name,
                "agent": self.cluster.agent_spec,
                "seed": self.cluster.seed,
                "batches": self._journal,
            }
            text = json.dumps(document)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w") as stream:
                stream.write(text)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return path

    def _replay(self, path: Path) -> None:
        """Rebuild the episode of a state file, its decisions as recorded."""
        try:
            document = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StateFileError(f"{path}: cannot read the state file ({exc})") from None
        if not isinstance(document, dict) or document.get("format") != JOURNAL_FORMAT:
            raise StateFileError(f'{path}: not an {JOURNAL_FORMAT} file (it needs "format": "{JOURNAL_FORMAT}")')
        if document.get("scenario") != self.cluster.scenario.name:
            raise StateFileError(
                f"{path}: scenario: the file is of {document.get('scenario')!r}, the service serves "
                f"{self.cluster.scenario.name!r}"
            )
        self.cluster.restart(int(document.get("seed", 0)))
        for k, entry in enumerate(document.get("batches", [])):
            try:
                batch = EventBatch.from_dict(entry["batch"])
                self.apply(batch, _recorded(entry["decisions"], self.cluster))
            except (KeyError, TypeError, ValueError) as exc:
                raise StateFileError(f"{path}: batches[{k}]: {exc}") from None

    # ------------------------------------------------------------------ views
    def journal(self) -> list[dict[str, Any]]:
        """Copies of the journal's entries.

        Each is ``{"batch": EventBatch.as_dict(), "decisions": [[job_id, node_id, latency_ms], ...]}``.
        """
        with self._lock:
            return [dict(entry) for entry in self._journal]

    def job(self, job_id: str) -> JobRecord | None:
        """A copy of the job's record (``None``: no such job)."""
        with self._lock:
            record = self.cluster.jobs.get(job_id)
            return None if record is None else JobRecord(**vars(record))

    def metrics(self) -> dict[str, Any]:
        """Counters and the agent's decision latency percentiles (every decision of the episode)."""
        with self._lock:
            cluster = self.cluster
            counts: dict[str, int] = {}
            for record in cluster.jobs.values():
                counts[record.status] = counts.get(record.status, 0) + 1
            latencies = np.array([d.latency_ms for d in cluster.decisions])
            placements = sum(d.node_id is not None for d in cluster.decisions)
            return {
                "agent": cluster.agent_spec,
                "scenario": cluster.scenario.name,
                "time_s": cluster.time_s,
                "jobs": counts,
                "decisions": len(cluster.decisions),
                "placements": placements,
                "deferrals": len(cluster.decisions) - placements,
                "invalid_actions": cluster.invalid_actions,
                "agent_latency_ms_p50": float(np.percentile(latencies, 50)) if len(latencies) else None,
                "agent_latency_ms_p99": float(np.percentile(latencies, 99)) if len(latencies) else None,
            }

    def running_on(self, node_id: str) -> list[JobRecord]:
        """Copies of the records of the jobs running on ``node_id``."""
        with self._lock:
            return [
                JobRecord(**vars(r)) for r in self.cluster.jobs.values() if r.status == RUNNING and r.node_id == node_id
            ]

    def active_jobs(self) -> int:
        """Jobs queued or running."""
        with self._lock:
            return sum(record.status in ACTIVE for record in self.cluster.jobs.values())


_LISTS = ("submit", "finish", "cancel", "telemetry", "down", "up")
"""The event lists of an :class:`EventBatch`, in field order after ``time_s``."""


class _Ticket:
    """A batch waiting to be applied in a group, and its outcome once it is."""

    def __init__(self, batch: EventBatch) -> None:
        self.batch = batch
        self.done = threading.Event()
        self._result: BatchResult | None = None
        self._error: Exception | None = None

    def finish(self, result: BatchResult | None, error: Exception | None) -> None:
        self._result, self._error = result, error
        self.done.set()

    def outcome(self) -> BatchResult:
        self.done.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


def _recorded(decisions: list[list[Any]], cluster: LiveCluster) -> Decide:
    """A ``decide`` that takes the journal's decisions in order, checking each is for the job asked."""
    pending = iter(decisions)
    index = {node.node_id: i for i, node in enumerate(cluster.known.fleet)}

    def decide(job_id: str) -> int:
        recorded = next(pending, None)  # [job_id, node_id, latency_ms]
        if recorded is None or recorded[0] != job_id:
            raise EventError("decisions", f"the replay asks for {job_id!r}, the journal recorded {recorded!r}")
        return cluster.n_nodes if recorded[1] is None else index[recorded[1]]

    return decide
