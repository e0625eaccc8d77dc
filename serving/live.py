"""A live cluster's episode on the twin: events in, the agent's decisions out.

:class:`LiveCluster` keeps what the cluster pushed (:class:`serving.known.KnownEpisode`) and the
twin standing at its last decision. A batch of events at time ``t`` (:class:`EventBatch`)
writes a new spec of the episode as now known and continues that twin into it
(:meth:`digital_twin.DigitalTwin.continued_in`: exact, as the spec changes nothing before the
decision), replays the action taken there, and runs the twin on: every decision it poses at or
before ``t`` is asked of the agent through :class:`serving.live_env.LiveEnv`, the env the agent
was built for, and taken. The twin's first decision after ``t`` is not asked: it would rest on
events not pushed yet (the next batch continues from the last decision again). So the agent
sees each decision exactly as the training env would pose it, had that env's episode been this
one (:mod:`serving` and docs/serving.md: why, and the parity tests).

Cost of a batch: O(jobs of the episode) for the new spec and the continuation, plus the
decisions. Events at the instant of a decision already taken are taken a float's step later
(decisions come after every event of their instant: one batch should carry them all).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aco_env import EnvConfig
from agents import agent_deferral, make_agent
from digital_twin import NEXT_EVENT, DigitalTwin, SpecError, TwinSnapshot, TwinSpec
from digital_twin.scenario import Scenario
from serving.apply import apply_facts, check_batch
from serving.events import (
    ACTIVE,
    FAILED,
    QUEUED,
    REJECTED,
    RUNNING,
    Decision,
    EventBatch,
    EventError,
    JobRecord,
    JobRequest,
)
from serving.known import KnownEpisode
from serving.live_env import LiveEnv

Decide = Callable[[str], int]
"""``decide(job_id) -> action`` for the decision posed now (node index, or N to defer)."""


@dataclass(frozen=True)
class Probe:
    """Where a job would go if submitted now (:meth:`LiveCluster.probe`).

    Attributes:
        mask: ``(N,)`` bool, the nodes it fits on now (all False: it would wait, or is never placeable).
        choice: The node the agent picks, or ``None`` (it defers, or the job fits nowhere).
        twin: The probe's twin at the job's decision (or past it when the job fits nowhere): read it for reasons.
    """

    mask: np.ndarray  # (N,) bool
    choice: int | None
    twin: DigitalTwin


@dataclass(frozen=True)
class BatchResult:
    """What one batch did.

    Attributes:
        time_s: The instant it was applied at (episode seconds).
        decisions: The decisions it led to, in order.
        changed: The jobs whose status changed (copies), in job order.
    """

    time_s: float
    decisions: tuple[Decision, ...]
    changed: tuple[JobRecord, ...]


class LiveCluster:
    """One live episode of a scenario's fleet, decided by one agent.

    Args:
        scenario: The fleet and the episode's settings (:class:`serving.known.KnownEpisode`).
        agent: A registered agent spec or ``sb3:PATH``; built for this cluster's :class:`LiveEnv`.
        config: The env config the agent was trained or tuned with (default ``EnvConfig()``).
        seed: Seeds the agent (``agent.reset(seed)``), as an evaluation seeds it per episode.
        clock: Seconds since the episode started, for batches without ``time_s`` (default: wall time).

    Attributes:
        jobs: ``job_id -> JobRecord`` of every job submitted in this episode.
        decisions: Every decision of the episode, in order.
        time_s: The instant of the last batch.
    """

    def __init__(
        self,
        scenario: Scenario,
        agent: str,
        config: EnvConfig | None = None,
        seed: int = 0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.scenario = scenario
        self.agent_spec = agent
        self.env = LiveEnv(scenario, config or EnvConfig(deferral=agent_deferral(agent)))
        self.agent = make_agent(agent, self.env)
        self.deferral = self.env.config.deferral
        self._clock = clock
        self.restart(seed)

    def restart(self, seed: int = 0) -> None:
        """Start a new, empty episode at time 0 (the agent reset with ``seed``)."""
        self.seed = seed
        self.known = KnownEpisode(self.scenario)
        self.jobs: dict[str, JobRecord] = {}
        self._active: set[str] = set()  # ids of the jobs queued or running
        self.decisions: list[Decision] = []
        self.time_s = 0.0
        self.invalid_actions = 0
        self._base: tuple[DigitalTwin, TwinSnapshot, int] | None = None  # the twin at the last decision, its action
        self._twin: DigitalTwin | None = None
        self._origin = time.monotonic()
        self._first_decision = True
        self.agent.reset(seed)

    @property
    def n_nodes(self) -> int:
        """N; the action N defers."""
        return len(self.known.fleet)

    def now_s(self) -> float:
        """The episode's clock now: the injected clock, or wall seconds since :meth:`restart`."""
        return self._clock() if self._clock is not None else time.monotonic() - self._origin

    # ------------------------------------------------------------------ events
    def apply(self, batch: EventBatch, decide: Decide | None = None) -> BatchResult:
        """Apply ``batch`` and take the decisions it leads to.

        ``decide`` overrides the agent (the journal replays recorded decisions with it).

        Raises:
            EventError: The batch is malformed or contradicts the cluster; nothing was applied.
        """
        t = self._instant(batch.time_s)
        withdrawn = check_batch(self, batch, t)
        before = {job_id: (self.jobs[job_id].status, self.jobs[job_id].node_id) for job_id in self._active}
        apply_facts(self, batch, t)
        self._active.update(job.job_id for job in batch.submit)
        self.time_s = t
        if withdrawn:
            self._rebuild(withdrawn)
        decisions = self._advance(t, decide or self._ask_agent)
        self._sync_statuses(t, set(batch.down))
        submitted = [job.job_id for job in batch.submit]
        moved = [
            job_id for job_id, was in before.items() if was != (self.jobs[job_id].status, self.jobs[job_id].node_id)
        ]
        changed = tuple(JobRecord(**vars(self.jobs[job_id])) for job_id in dict.fromkeys([*moved, *submitted]))
        self._active = {job_id for job_id in self._active if self.jobs[job_id].status in ACTIVE}
        return BatchResult(t, tuple(decisions), changed)

    def _instant(self, time_s: float | None) -> float:
        """The batch's instant: checked, and after the last decision's."""
        t = self.now_s() if time_s is None else time_s
        if not isinstance(t, int | float) or isinstance(t, bool) or not math.isfinite(t) or t < 0:
            raise EventError("time_s", f"must be a finite number of seconds >= 0, got {t!r}")
        t = float(max(t, self.time_s)) if time_s is None else float(t)
        if t < self.time_s:
            raise EventError("time_s", f"{t:g} s is before the cluster's clock ({self.time_s:g} s)", conflict=True)
        if t >= self.known.horizon_s:
            raise EventError(
                "time_s", f"{t:g} s is past the episode's horizon ({self.known.horizon_s:g} s): restart", conflict=True
            )
        if self.decisions and t <= self.decisions[-1].time_s:
            t = math.nextafter(self.decisions[-1].time_s, math.inf)
        return t

    # ------------------------------------------------------------------ the twin
    def probe(self, job: JobRequest) -> Probe:
        """Where the agent would place ``job`` if it were submitted now; nothing changes.

        Decisions on other queued jobs that the twin poses first are not asked (they are deferred
        in the probe). The agent is asked once (an agent that learns from its own decisions, as
        ACO's pheromone does, remembers it).

        Raises:
            EventError: ``job`` is malformed (the field named).
        """
        t = self._instant(None)
        try:
            spec = self.known.spec(extra=job.job_spec(t))
        except SpecError as exc:
            raise EventError("pod", str(exc)) from None
        twin = self._continued(spec)
        while not twin.done and twin.time_s <= t:
            current = twin.current_job
            assert current is not None
            if current.job_id == job.job_id:
                self.env.attach(twin)
                action = self._ask_agent(job.job_id)
                mask = np.array(twin.feasible_mask(), dtype=bool)
                return Probe(mask, action if 0 <= action < self.n_nodes and mask[action] else None, twin)
            twin.defer(NEXT_EVENT)
        return Probe(np.zeros(self.n_nodes, dtype=bool), None, twin)

    def _continued(self, spec: TwinSpec) -> DigitalTwin:
        """A twin on ``spec`` at the last decision, its action taken (a fresh one before any decision)."""
        if self._base is None:
            twin = DigitalTwin(spec)
            twin.reset(np.random.default_rng(0))  # draws nothing: the outages are given
            return twin
        base, snapshot, action = self._base
        base.restore(snapshot)
        twin = base.continued_in(spec)
        self._take(twin, action)
        return twin

    def _advance(self, t: float, decide: Decide) -> list[Decision]:
        """Continue the twin from the last decision into the new spec; take every decision up to ``t``."""
        twin = self._continued(self.known.spec())
        self.env.attach(twin)
        decisions = []
        while not twin.done and twin.time_s <= t:
            job = twin.current_job
            assert job is not None  # a twin at a decision has a current job
            started = time.perf_counter()
            action = decide(job.job_id)
            latency_ms = (time.perf_counter() - started) * 1e3
            if action != self.n_nodes and not twin.can_place(action):
                self.invalid_actions += 1
                action = self.n_nodes
            decided_s = twin.time_s
            snapshot = twin.snapshot()
            self._take(twin, action)
            self._base = (twin, snapshot, action)
            decisions.append(self._record(decided_s, job.job_id, action, latency_ms))
        self._twin = twin
        return decisions

    def _take(self, twin: DigitalTwin, action: int) -> None:
        if action == self.n_nodes:
            twin.defer(self.deferral)
        else:
            twin.place(action)

    def _record(self, time_s: float, job_id: str, action: int, latency_ms: float) -> Decision:
        """Log the decision taken at ``time_s`` and update the job's record."""
        node_id = None if action == self.n_nodes else self.known.fleet[action].node_id
        decision = Decision(time_s, job_id, node_id, latency_ms)
        self.decisions.append(decision)
        if node_id is not None:
            record = self.jobs[job_id]
            record.status, record.node_id, record.started_s = RUNNING, node_id, time_s
        return decision

    def _ask_agent(self, job_id: str) -> int:
        """The agent's action for the decision the live env stands at."""
        episode_start = np.array([self._first_decision])
        self._first_decision = False
        action, _ = self.agent.predict(self.env.observation(), episode_start=episode_start, deterministic=True)
        index = np.asarray(action).reshape(-1)
        return int(index[0]) if index.size == 1 and 0 <= int(index[0]) <= self.n_nodes else -1

    def _rebuild(self, withdrawn: set[str]) -> None:
        """Replay the episode with the jobs ``withdrawn`` rejected on arrival (cancelled before they ever ran).

        The decisions are taken again as recorded, but theirs (:meth:`KnownEpisode.withdraw` says
        why the others are posed as before; a decision posed otherwise is a bug, raised).
        """
        self.decisions = [d for d in self.decisions if d.job_id not in withdrawn]
        self._base = None
        if not self.decisions:
            return
        twin = DigitalTwin(self.known.spec())
        twin.reset(np.random.default_rng(0))
        index = {node.node_id: i for i, node in enumerate(self.known.fleet)}
        for k, decision in enumerate(self.decisions):
            job = twin.current_job
            if job is None or job.job_id != decision.job_id:
                raise RuntimeError(f"replay without {sorted(withdrawn)} asks for {job} where {decision} was taken")
            action = self.n_nodes if decision.node_id is None else index[decision.node_id]
            if k == len(self.decisions) - 1:
                self._base = (twin, twin.snapshot(), action)
            self._take(twin, action)

    def _sync_statuses(self, t: float, down: set[str]) -> None:
        """Read the evictions and rejections up to ``t`` into the job records.

        The twin may stand past ``t`` (at its next decision, after the events it expects): a job
        it shows as not running any more was evicted now only if its node went ``down`` now
        (then it is queued again, or failed if not preemptible), and a queued job it shows as
        rejected was rejected by now only if it never fits or its TTL ran out by ``t``.
        """
        twin, ttl = self._twin, self.known.ttl_s
        assert twin is not None
        for job_id in self._active:
            record = self.jobs[job_id]
            if record.status not in ACTIVE:  # ended in this batch (finished, cancelled)
                continue
            j = self.known.job_index[job_id]
            status = twin.job_status(j)
            if record.status == RUNNING and status != "running" and record.node_id in down:
                if self.known.jobs[j].preemptible:
                    record.status, record.node_id, record.queued_s = QUEUED, None, t
                else:
                    record.status, record.ended_s = FAILED, t
            if record.status == QUEUED and status == "rejected":
                never_fits = not twin.candidate_masks([j]).any()
                expiry = record.queued_s + ttl if ttl is not None else math.inf
                if never_fits or expiry <= t:
                    record.status, record.ended_s = REJECTED, record.queued_s if never_fits else expiry
