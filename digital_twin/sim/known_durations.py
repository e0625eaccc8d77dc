"""How long an arrived job is expected to run, from what is known at a decision.

A job's true duration is what the twin runs; what an online agent knows is the duration its
submitter declared (``Workload.declared_duration_s``) and, once the job runs, the work its run
has done. :func:`expected_duration_s` is the one rule that turns these into an expected
duration, and :func:`known_durations_s` applies it to an episode's arrived jobs for
:meth:`digital_twin.DigitalTwin.known_spec`:

* a completed job: its true duration (its run was observed to its end);
* a running job: its declaration while the run has done less work than declared; once it
  has outlived the declaration, twice the work done (a run is expected to last as long again
  as it has: the median remaining life of a run of power-law duration at that age, which is
  how job run times past their estimate behave in cluster traces); always more than the work
  done, so the run has not ended in the known episode;
* any other job (queued, failed, rejected): its declaration.
"""

from __future__ import annotations

from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.continuation import work_done_s
from digital_twin.sim.job_states import COMPLETED, RUNNING
from digital_twin.sim.state import TwinState
from digital_twin.workload import Workload


def expected_duration_s(declared_s: float, done_s: float) -> float:
    """The expected nominal duration of a run that has done ``done_s`` seconds of work, declared ``declared_s``.

    >>> expected_duration_s(600.0, 120.0), expected_duration_s(600.0, 900.0)
    (600.0, 1800.0)
    """
    return declared_s if done_s < declared_s else 2.0 * done_s


def known_jobs(s: TwinState, c: TwinConstants, jobs: Workload) -> Workload:
    """The jobs known at ``s``'s decision (copies, with their durations known now): see :meth:`DigitalTwin.known_spec`.

    The arrived jobs, then the tasks of their workflows that arrive later (with their
    declared durations: a workflow's tasks are known when it is submitted).
    """
    arrived = s.next_arrival
    durations = known_durations_s(s, c, jobs)
    dag = c.dag
    if dag is None:
        return jobs.take(range(arrived), duration_s=durations)
    submitted = {dag.workflow_of[j] for j in range(arrived)} - {-1}
    later = [j for j in range(arrived, c.n_jobs) if dag.workflow_of[j] in submitted]
    declared = jobs.declared_or_true_s()
    return jobs.take([*range(arrived), *later], duration_s=[*durations, *declared[later].tolist()])


def known_durations_s(s: TwinState, c: TwinConstants, jobs: Workload) -> list[float]:
    """``(A,)`` the expected durations of the ``A = s.next_arrival`` arrived jobs, in workload order, seconds.

    Args:
        s: A twin's state at a decision.
        c: The twin's constants.
        jobs: The twin's workload (its true durations and declarations).
    """
    arrived = s.next_arrival
    declared = jobs.declared_or_true_s()[:arrived].tolist()
    known = declared
    for j in range(arrived):
        status = s.jobs.status[j]
        if status == COMPLETED:
            known[j] = c.duration_s[j]
        elif status == RUNNING:
            known[j] = expected_duration_s(declared[j], work_done_s(s, c, j))
    return known
