"""An independent referee of workflow episodes: what the event log must show, recomputed from the rules.

Reads only the spec (jobs, parents, workflow specs) and the twin's event log; shares no code with
the twin's workflow handling (digital_twin/sim/tables/workflow_events.py).
"""

from __future__ import annotations

from collections import defaultdict

from digital_twin import DigitalTwin

FAILURES = ("rejected-ttl", "rejected-unplaceable", "evicted-failed")


def check_episode(twin: DigitalTwin) -> tuple[float, int]:
    """Assert the release and failure rules on ``twin``'s ended episode; return its workflow hours and late count.

    Rules checked: a task arrives exactly at max(its arrival_s, its parents' completions) and
    only once all have completed; it never starts before it arrives; a task with a failed or
    rejected parent never arrives and is rejected upstream at its arrival or that parent's
    failure, whichever is later.
    """
    spec = twin.spec
    jobs = {job.job_id: job for job in spec.jobs}
    horizon = spec.settings.horizon_s
    seen: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for t, event, job_id, _ in twin.event_log:
        if job_id:
            seen[job_id][event].append(t)
    for job_id, job in jobs.items():
        events = seen[job_id]
        parent_done = [seen[p]["completion"] for p in job.parents]
        if events["arrival"]:
            assert len(events["arrival"]) == 1, f"{job_id} arrived twice"
            assert all(done for done in parent_done), f"{job_id} arrived before a parent completed"
            expected = max([job.arrival_s, *(done[0] for done in parent_done)])
            assert events["arrival"][0] == expected, f"{job_id} arrived at {events['arrival'][0]}, not {expected}"
        else:
            assert not events["start"], f"{job_id} started without arriving"
        assert all(t >= events["arrival"][0] for t in events["start"])
        if events["rejected-upstream"]:
            assert not events["arrival"], f"{job_id} was both submitted and rejected upstream"
            expected = max(job.arrival_s, _failed_ancestor_at(jobs, seen, job_id))
            assert events["rejected-upstream"] == [expected], f"{job_id} rejected upstream at the wrong time"
    return _workflow_terms(twin, seen, horizon)


def _failed_ancestor_at(jobs: dict, seen: dict, job_id: str) -> float:
    """The earliest failure (or upstream rejection) among ``job_id``'s parents."""
    times = []
    for parent in jobs[job_id].parents:
        times += [t for event in (*FAILURES, "rejected-upstream") for t in seen[parent][event]]
    assert times, f"{job_id} was rejected upstream, but no parent failed"
    return min(times)


def workflow_makespan_s(twin: DigitalTwin) -> float:
    """The mean over counted workflows of submission to end (last completion, or the horizon), from the log."""
    spec = twin.spec
    horizon = spec.settings.horizon_s
    completed: dict[str, float] = {}
    for t, event, job_id, _ in twin.event_log:
        if event == "completion":
            completed[job_id] = t
    members: dict[str, list] = defaultdict(list)
    for job in spec.jobs:
        if job.workflow is not None:
            members[job.workflow].append(job)
    spans = []
    for tasks in members.values():
        submitted = min(job.arrival_s for job in tasks)
        if submitted < horizon:
            ends = [completed.get(job.job_id) for job in tasks]
            spans.append((submitted, max(ends) if all(e is not None for e in ends) else horizon))
    return sum(end - start for start, end in spans) / len(spans) if spans else 0.0


def _workflow_terms(twin: DigitalTwin, seen: dict, horizon: float) -> tuple[float, int]:
    """Weighted hours and late workflows, from the rules in the ``workflow`` terms' descriptions."""
    spec = twin.spec
    tasks: dict[str, list] = defaultdict(list)
    for job in spec.jobs:
        if job.workflow is not None:
            tasks[job.workflow].append(job)
    hours, late = 0.0, 0
    for workflow, members in tasks.items():
        submitted = min(job.arrival_s for job in members)
        if submitted >= horizon:
            continue
        completions = [seen[job.job_id]["completion"] for job in members]
        end = max(done[-1] for done in completions) if all(completions) else horizon
        described = spec.jobs.workflows.get(workflow)
        weight = described.weight if described else 1.0
        deadline = described.deadline_s if described else None
        hours += weight * (end - submitted) / 3600.0
        late += int(deadline is not None and end > deadline)
    return hours, late
