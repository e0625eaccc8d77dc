"""A twin's present continued into another future: the state behind :meth:`DigitalTwin.continued_in`.

An online planner knows the episode's past and guesses its future. Replaying the episode's
decisions on a twin of each guessed future costs the whole past at every decision; continuing
the present costs a copy of it. :func:`continued_state` is that copy, for a spec that agrees
with the twin's episode on everything up to now (:func:`past_difference` says what does not).

**What carries over, and why the result is exact.** The state of a twin at a decision is a
function of the fleet, the settings, the jobs arrived so far, the telemetry ticks fired so far,
the interruptions so far and the decisions taken: the events still to come (later arrivals,
ticks and interruptions) have not been read. A twin built on the new spec and given the same
decisions therefore passes through the same states up to now, except in three places that
depend on the whole spec and are rebuilt here:

* **per-job lists** (``M`` entries): the arrived jobs' entries are kept; the jobs still to
  arrive (the old spec's and the new one's) hold the initial values of a job in the future,
  and ``status_counts`` counts the new spec's future jobs;
* **the interruptions**: ``interruptions_s`` and ``recoveries_s`` become the new spec's; the
  old future interruptions leave the event heap and the new spec's future ones enter it (every
  past one was handled before the current decision: events come before decisions at equal
  times); a node down now comes back when the new spec says (its recovery entry, pushed when
  it was interrupted, keeps its ``seq`` and takes the new time: a replayed trace's recovery is
  not known before it comes);
* **the tie-break** ``seq``: a twin pushes every interruption at reset, node by node, before
  any other event, so interruption ``k`` of the episode (in that order) has ``seq = k`` and
  every later event is shifted by the number of interruptions. The continued twin's heap
  holds the very entries the rebuilt twin's holds, ``seq`` included, so equal-time events are
  handled in the same order.

Nothing else reads the spec's future before it happens (but the GPU fragmentation metric, which
weighs free GPUs by the whole spec's job mix: the continued twin's integral up to now is the old
mix's, :mod:`digital_twin.sim.tables.gpu_fragmentation`): the event loop reads the next
arrival, the next tick and the heap's top. So the continued twin's state equals the rebuilt
twin's field by field, but for *stale* heap entries (a completion of a run that ended, a TTL
expiry of a queue spell that ended: no events, dropped when they reach the heap's top, so
which ones a twin still holds depends on the events that came before them): the continued
twin drops them all, and its heap holds the rebuilt twin's live entries, ``seq`` included. A
heap pops by its entries' order, every ``seq`` is unique, and stale entries never change what
happens, so every later step gives the same results bit for bit.

**Durations known so far.** The new spec may give the jobs that have not completed other
durations (an online planner knows only the declared ones, :meth:`DigitalTwin.known_spec`): a
pending job's duration is read only when it starts, and a running job's run then ends when its
new duration of work is done, which must be more than the work it has done by now (its
completion event, and under contention its finish on the node's work clock, are moved; the
rest of the state is unchanged, as nothing before now depended on a duration that had not run
out). The result is then the rebuilt twin's to the rounding of one addition on the work clock
(``finish - old + new`` for ``clock at start + new``); with unchanged durations it is exact.

Cost: O(nodes + jobs + interruptions + ticks so far), plus the event log when recording.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence

import numpy as np

from digital_twin.energy.model import energy_past_difference
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import COMPLETION, INTERRUPTION, RECOVERY, ScheduledEvent
from digital_twin.sim.event_loop import is_stale
from digital_twin.sim.features.outages import Outages
from digital_twin.sim.features.work_clocks import WorkClocks
from digital_twin.sim.features.workflow_handlers import WorkflowState
from digital_twin.sim.job_states import COMPLETED, FUTURE
from digital_twin.sim.state import TwinState, ordered_features
from digital_twin.sim.tables.rule_checks import RuleTables, count_running
from digital_twin.spec import TwinSpec
from digital_twin.spot.outages import given_outages, outages_difference
from digital_twin.spot.poisson import Interruptions, Recoveries

_JOB_COLUMNS = (
    "job_ids", "arrival_s", "duration_s", "workload_index", "cpu_cores", "mem_gb", "gpu_count", "gpu_vram_gb",
    "allowed_gpu_models", "required_arch", "priority", "preemptible", "deadline_s", "declared_duration_s",
    "workflow", "parents",
)  # fmt: skip
"""The :class:`~digital_twin.workload.Workload` columns: a job is these values."""


def past_difference(old: TwinSpec, c: TwinConstants, s: TwinState, tick_index: int, new: TwinSpec) -> str | None:
    """What of ``new`` differs from ``old``'s episode up to state ``s``'s decision (``None``: nothing).

    Up to now: the fleet; the settings (but ``spot_interruptions``, which says only whether a
    reset draws them); the telemetry's tick and its rows to ``tick_index`` (the current tick);
    the jobs arrived (the first ``s.next_arrival`` of ``new``, equal in every field but the
    duration of a job that has not completed, which for a running job must exceed the work it
    has done; the rest arriving after now); the interruptions at or before now (``new`` must
    give them); the energy model (the nodes' power, and each region's carbon intensity up to
    now); the placement rules. ``c`` are ``old``'s constants.
    """
    now = s.time_s
    if new.fleet != old.fleet:
        at = next(i for i in range(max(len(old.fleet), len(new.fleet))) if old.fleet[i : i + 1] != new.fleet[i : i + 1])
        return f"the fleet differs at node {at} ({len(new.fleet)} nodes, the twin's {len(old.fleet)})"
    settings = [
        field.name for field in dataclasses.fields(old.settings)
        if field.name != "spot_interruptions" and getattr(old.settings, field.name) != getattr(new.settings, field.name)
    ]  # fmt: skip
    if settings:
        return f"the settings differ in {', '.join(settings)}"
    if new.rules != old.rules:
        return "the placement rules differ"
    return (
        _telemetry_difference(old, new, tick_index)
        or _jobs_difference(old, new, s.next_arrival, now, s.jobs.status)
        or _workflows_difference(old, c, s, new)
        or _durations_difference(c, s, new)
        or outages_difference(s.outages.interruptions_s, s.outages.recoveries_s, given_outages(new), now)
        or energy_past_difference(old.energy_model, new.energy_model, now)
    )


def shapes_difference(old: TwinConstants, c: TwinConstants, arrived: int) -> str | None:
    """Why the first ``arrived`` jobs' shapes differ between ``old`` and ``c`` (``None``: they agree).

    Only placement rules can regroup them: a later job's required anti-affinity that selects
    some arrived jobs of one shape and not others. A parked job's bucket would then be wrong.
    """
    if list(c.shape[:arrived]) == list(old.shape[:arrived]):
        return None
    return (
        "the spec's later jobs change which arrived jobs share a shape under the placement rules "
        "(a later job's required anti-affinity selects some of them but not others); not continued"
    )


def continued_state(
    s: TwinState, old: TwinConstants, c: TwinConstants, outages: tuple[Interruptions, Recoveries]
) -> TwinState:
    """State ``s`` (of a twin of constants ``old``, at a decision) as the state of a twin of constants ``c``.

    ``c`` are the constants of a spec that continues the twin's episode.

    That spec must agree with the twin's up to now (:func:`past_difference` is ``None``);
    ``outages`` are its effective interruptions and their ends
    (:func:`~digital_twin.spot.outages.given_outages`). See the module docstring for what carries
    over and why the result is exact.
    """
    out = s.copy()
    arrived, later = s.next_arrival, c.n_jobs - s.next_arrival
    out.jobs = s.jobs.continued(arrived, later)
    held = s.jobs.status_counts[FUTURE] - (len(s.jobs.status) - arrived)  # arrived tasks held back stay future
    out.jobs.status_counts[FUTURE] = later + held
    out.queue.parked_fit = s.queue.parked_fit[:arrived] + [None] * later
    out.queue.position = s.queue.position[:arrived] + [0] * later
    if out.rules is not None and c.rules is not None:
        out.rules.counts = _rule_counts(s, c.rules)
    out.workflows = _continued_workflows(s, old, c)
    clocks = out.runs
    if isinstance(clocks, WorkClocks):
        clocks.finish_clock_s = clocks.finish_clock_s[:arrived] + [0.0] * later
        _add_clocks(clocks, c.n_nodes * c.n_lanes - len(clocks.rate), s.time_s)
    out.features = ordered_features(out)
    interruptions, recoveries = outages
    out.outages = Outages(interruptions, recoveries)
    out.gpus.jobs = c.n_jobs  # free GPUs weighed by the new spec's job mix from now on (tables.gpu_fragmentation)
    for i in range(c.n_nodes):
        out.gpus.refresh_node(out, c, i)
    shift = out.outages.count() - s.outages.count()
    heap: list[ScheduledEvent] = [
        (out.outages.end_s(index, out.time_s) if kind == RECOVERY else t, kind, seq + shift, index, generation)
        for t, kind, seq, index, generation in s.heap
        if kind != INTERRUPTION and not is_stale(s, (t, kind, seq, index, generation))
    ]
    heap.extend(_future_interruptions(interruptions, s.time_s))
    moved = [j for j in _running(s) if c.duration_s[j] != old.duration_s[j]]
    if moved:
        heap = _moved_completions(out, old, c, moved, heap)
    heapq.heapify(heap)
    out.heap = heap
    out.seq = s.seq + shift
    return out


def _continued_workflows(s: TwinState, old: TwinConstants, c: TwinConstants) -> WorkflowState | None:
    """The workflows' state under ``c``'s DAG (``None`` without one): counted anew from the jobs completed in ``s``.

    A task's parents left are its parents in ``c`` not completed; a workflow's tasks left, its
    tasks in ``c`` not completed; a workflow is closed when the twin closed it (found through
    an arrived task of it, the same job in both specs).
    """
    dag, arrived = c.dag, s.next_arrival
    if dag is None:
        return None
    status = s.jobs.status
    parents_left = list(dag.n_parents)
    workflow_left = list(dag.n_tasks)
    for j in range(arrived):
        if status[j] != COMPLETED:
            continue
        for child in dag.children[j]:
            parents_left[child] -= 1
        if dag.workflow_of[j] >= 0:
            workflow_left[dag.workflow_of[j]] -= 1
    end_s = [-1.0] * dag.n_workflows
    if s.workflows is not None and old.dag is not None:
        for j in range(arrived):
            w_old, w_new = old.dag.workflow_of[j], dag.workflow_of[j]
            if w_old >= 0 and s.workflows.workflow_end_s[w_old] >= 0.0:
                end_s[w_new] = s.workflows.workflow_end_s[w_old]
    return WorkflowState(parents_left, workflow_left, end_s)


def _moved_completions(
    out: TwinState, old: TwinConstants, c: TwinConstants, moved: list[int], heap: list[ScheduledEvent]
) -> list[ScheduledEvent]:
    """``heap`` with the completions of running jobs ``moved`` (whose duration ``c`` changes) at their new ends.

    Without work clocks a run completes at its start plus its duration. On them its finish on
    its clock moves by the change, the clock's runs are reordered, and the clock's one live
    completion event (same ``seq`` and token) is set for its first run.
    """
    w = out.runs
    if not isinstance(w, WorkClocks):
        return _completions_at(heap, {j: out.jobs.start_s[j] + c.duration_s[j] for j in moved})
    n = c.n_nodes
    clocks = sorted({c.lane_of[j] * n + out.jobs.node_of[j] for j in moved})
    for j in moved:
        w.finish_clock_s[j] += c.duration_s[j] - old.duration_s[j]
    for q in clocks:
        on_clock = [j for j in out.nodes.node_jobs[q % n] if c.lane_of[j] == q // n]
        w.runs_by_finish[q] = [(w.finish_clock_s[j], j, out.jobs.generation[j]) for j in on_clock]
        heapq.heapify(w.runs_by_finish[q])
    return _completions_at(heap, {q: _first_finish_time(out, w, q) for q in clocks})


def _completions_at(heap: list[ScheduledEvent], ends: dict[int, float]) -> list[ScheduledEvent]:
    """``heap`` with each completion about an index of ``ends`` (a job, or on work clocks a clock) at its new time."""
    return [
        (ends[index], kind, seq, index, generation) if kind == COMPLETION and index in ends else entry
        for entry in heap for (_, kind, seq, index, generation) in (entry,)
    ]  # fmt: skip


def _first_finish_time(s: TwinState, w: WorkClocks, q: int) -> float:
    """When clock ``q``'s first run finishes at its current rate (the clock need not be settled)."""
    left = w.runs_by_finish[q][0][0] - w.clock_now(s, q)
    return s.time_s + (left if left > 0.0 else 0.0) / w.rate[q]


def _add_clocks(w: WorkClocks, extra: int, now_s: float) -> None:
    """Give ``w`` the work clocks of ``extra`` more lanes' nodes (the continuing spec's jobs add lanes), idle."""
    if extra <= 0:
        return
    w.rate = w.rate + [1.0] * extra
    w.rate_since_s = w.rate_since_s + [now_s] * extra
    w.work_clock_s = w.work_clock_s + [0.0] * extra
    w.runs_by_finish = w.runs_by_finish + [[] for _ in range(extra)]
    w.completion_token = w.completion_token + [0] * extra
    w.clock_runs = w.clock_runs + [0] * extra


def _future_interruptions(interruptions: Interruptions, now_s: float) -> list[ScheduledEvent]:
    """The heap entries of the interruptions after ``now_s``, with the ``seq`` a reset gives them (1, 2, ...)."""
    entries: list[ScheduledEvent] = []
    seq = 0
    for node, times in enumerate(interruptions):
        for t in times:
            seq += 1
            if t > now_s:
                entries.append((t, INTERRUPTION, seq, node, 0))
    return entries


def _telemetry_difference(old: TwinSpec, new: TwinSpec, tick_index: int) -> str | None:
    if new.telemetry.tick_s != old.telemetry.tick_s:
        return f"the telemetry tick differs ({new.telemetry.tick_s:g} s, the twin's {old.telemetry.tick_s:g} s)"
    rows = tick_index + 1
    ours, theirs = old.telemetry.background_pct[:rows], new.telemetry.background_pct[:rows]
    if theirs.shape != ours.shape or not np.array_equal(ours, theirs):
        differs = np.flatnonzero((ours != theirs).any(axis=(1, 2))) if theirs.shape == ours.shape else [len(theirs)]
        return f"the telemetry differs at tick {int(differs[0])} (the current tick is {tick_index})"
    return None


def _jobs_difference(old: TwinSpec, new: TwinSpec, arrived: int, now_s: float, status: list[int]) -> str | None:
    if len(new.jobs) < arrived:
        return f"the spec has {len(new.jobs)} jobs, fewer than the {arrived} arrived by t={now_s:g} s"
    for name in _JOB_COLUMNS:
        ours, theirs = getattr(old.jobs, name)[:arrived], getattr(new.jobs, name)[:arrived]
        if name == "duration_s":  # only a completed run's duration is known for sure
            done = np.array(status[:arrived]) == COMPLETED
            ours, theirs = ours[done], theirs[done]
        if not _equal_columns(ours, theirs):
            at = next(j for j in range(len(ours)) if not _equal_columns(ours[j : j + 1], theirs[j : j + 1]))
            if name == "duration_s":
                at = int(np.flatnonzero(np.array(status[:arrived]) == COMPLETED)[at])
                return f"completed job {at} ({old.jobs.job_ids[at]!r}) differs in duration_s"
            return f"arrived job {at} ({old.jobs.job_ids[at]!r}) differs in {name}"
    for workflow in {w for w in old.jobs.workflow[:arrived] if w is not None}:
        if old.jobs.workflows.get(workflow) != new.jobs.workflows.get(workflow):
            return f"workflow {workflow!r} of the arrived jobs is described differently (weight, deadline)"
    if len(new.jobs) > arrived and new.jobs.arrival_s[arrived] <= now_s:
        job = new.jobs.job_ids[arrived]
        return f"job {job!r} arrives at {new.jobs.arrival_s[arrived]:g} s, not after now (t={now_s:g} s)"
    return None


def _workflows_difference(old: TwinSpec, c: TwinConstants, s: TwinState, new: TwinSpec) -> str | None:
    """Whether ``new`` changes how the twin's workflows ended so far (``None``: it does not).

    A workflow the twin saw complete must gain no later task; one still open must keep a task
    not completed (without its later tasks it would have completed). A failed workflow may
    gain tasks: it is over whatever they do.
    """
    if c.dag is None or s.workflows is None:
        return None
    arrived, status, end_s = s.next_arrival, s.jobs.status, s.workflows.workflow_end_s
    tasks: dict[str, list[int]] = {}
    for j in range(len(new.jobs)):
        workflow = new.jobs.workflow[j]
        if workflow is not None:
            tasks.setdefault(workflow, []).append(j)
    judged = {old.jobs.workflow[j]: c.dag.workflow_of[j] for j in range(arrived) if c.dag.workflow_of[j] >= 0}
    for name, w in judged.items():  # each workflow with an arrived task, once
        assert name is not None
        done = all(k < arrived and status[k] == COMPLETED for k in tasks[name])
        all_arrived_done = all(status[k] == COMPLETED for k in tasks[name] if k < arrived)
        if end_s[w] >= 0.0 and all_arrived_done and not done:
            return f"workflow {name!r} has completed, but the spec gives it a later task"
        if end_s[w] < 0.0 and done:
            return f"workflow {name!r} has tasks still to come, but the spec gives it none"
    return None


def _durations_difference(c: TwinConstants, s: TwinState, new: TwinSpec) -> str | None:
    for j in _running(s):
        done, duration = work_done_s(s, c, j), float(new.jobs.duration_s[j])
        if duration <= done:
            return f"running job {j} ({c.job_ids[j]!r}) has done {done:g} s of work, not less than its {duration:g} s"
    return None


def _rule_counts(s: TwinState, rules: RuleTables) -> list[list[int]]:
    """The placement rules' tallies of the jobs running in ``s``, under the continuing spec's tables.

    Counted anew: the continuing spec's jobs may add tallies, which renumbers them.
    """
    counts = rules.empty_counts()
    for j in _running(s):
        count_running(counts, rules, j, s.jobs.node_of[j], 1)
    return counts


def _running(s: TwinState) -> list[int]:
    return [j for node_jobs in s.nodes.node_jobs for j in node_jobs]


def work_done_s(s: TwinState, c: TwinConstants, j: int) -> float:
    """Nominal seconds of work running job ``j``'s current run has done by now (``c``: its twin's constants).

    Without work clocks, the time since its start of work; on them, its duration less the work
    its clock has still to do before the run's finish (:meth:`~digital_twin.sim.core.Runs.work_done_s`).
    """
    return s.runs.work_done_s(s, c, j)


def _equal_columns(ours: Sequence[object] | np.ndarray, theirs: Sequence[object] | np.ndarray) -> bool:
    if isinstance(ours, np.ndarray) and isinstance(theirs, np.ndarray):
        return bool(np.array_equal(ours, theirs, equal_nan=ours.dtype.kind == "f"))
    return list(ours) == list(theirs)


