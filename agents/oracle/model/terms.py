"""What each penalty term counts in the oracle's programs: the one oracle module that knows each term's rule.

The twin counts every term of :data:`~digital_twin.objective.PENALTIES` where its rule is met
(:mod:`digital_twin.sim.event_handlers`). The oracle's programs must charge a plan exactly what the
twin will count, and charge the relaxation no more than any episode counts
(:mod:`agents.oracle.bounds.exact` argues why). A term is charged in one or more of five ways:

* **per option**, decided by the run an option stands for (QoS, eviction, deadline, waiting,
  lost utility): a count per term in each row of ``Options.counts`` (``(n, T)``, ``T =
  len(PENALTIES)``, table order); exact for a point start with a nominal run
  (:func:`point_counts`), at the cell's first start or the infimum over the rest of it for a
  cell (:func:`cell_counts`), and only what no earlier run can have avoided for a job whose
  earlier run may have been evicted (:func:`relax_for_earlier_runs`, :func:`add_earlier_spot_run`).
  The wait is charged per queue spell, as the twin counts it: each start pays the time since
  the job last entered the queue (its arrival, or the eviction that requeued it;
  :func:`as_rerun` for a planned rerun);
* **per job not served**, the program's "no option" choice (rejection, waiting until the job
  left the queue, a latency-critical job's whole utility): :func:`unserved_counts`;
* **by the program** (the SLA: a variable per latency-critical job and rows over node loads,
  :mod:`agents.oracle.milp.program`), whose count a plan reports through :func:`plan_counts`;
* **per option, from below** (``energy`` in kWh, ``carbon`` in kg CO2eq; 0 unless weighed):
  the least the run adds to its node's draw whoever shares the node
  (:mod:`agents.oracle.model.energy` argues it), over a time the run surely covers: a point's
  run ``[s, e(s))`` (nominal, or the plan's reservation), a cell's core ``[hi, e(lo))`` (every
  start of the cell runs then), an evicted first run's ``[s, t)`` (:func:`evicted_run_counts`),
  plus the least of an earlier run the relaxation proves (:func:`add_earlier_energy`);
  :func:`run_energy_counts`. A longer run (contention) only adds energy; a plan's count is
  an estimate (its replay counts exactly); an unserved job counts 0;
* **not at all**: ``unfairness`` is a function of the whole episode (Jain's index over the
  workload classes), not a sum over jobs, so no option can carry it. It is charged 0 (its
  count column stays 0 everywhere): the relaxation stays a lower bound because the term is
  >= 0, the plan program does not optimise it, and the plan's value counts it by replaying the
  plan in the twin (:mod:`agents.oracle.plans.replay`).

The terms judged at the end of a run (lost utility, the deadline under the ``completion``
rule) are charged at the run's *nominal* end ``e = min(s + d, H)`` (completion, or the horizon
for a run still going). Cpu contention only lengthens a run, and both only grow with the end,
so they are charged no more than any longer run counts, with one exception: a longer run of a
non-preemptible job may reach an interruption and fail, and a failed job is never late. Under
the ``completion`` rule such a run (one the node's next interruption falls within
``longest_run_s`` of its start) is charged no deadline miss. A failed latency-critical job
loses all its utility (1), at least what any completed run loses, so utility needs no such care.
Without contention ``longest_run_s`` is the nominal duration and every charge is exact.

Counts become USD only through :class:`agents.charges.Charges` (:func:`penalty_usd`: weight x
count per term, summed in table order, as the twin sums them), and so does every other charge of
the oracle (the bounds at scale, the hindsight greedy plan): a new weight reaches all of them
there. :func:`run_usd_per_s` is the compute rate the bounds at scale charge a run.
"""

from __future__ import annotations

import numpy as np

from agents.charges import share_usd_per_s, wait_job_hours
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.release import last_enqueue_s, release_floor_s, requeue_times_s
from digital_twin.objective import PENALTIES, PENALTY_INDEX

N_TERMS = len(PENALTIES)
_SLA, _QOS, _EVICTION, _DEADLINE, _REJECTION, _WAIT, _UTILITY, _ENERGY, _CARBON = (
    PENALTY_INDEX[name]
    for name in ("sla", "qos", "eviction", "deadline", "rejection", "wait", "utility", "energy", "carbon")
)


def point_counts(
    inst: OracleInstance, job: int, node: int, starts: np.ndarray, t_next: np.ndarray, reach: np.ndarray | None = None
) -> np.ndarray:
    """``(n, T)`` counts of starting ``job`` on ``node`` at each of ``starts``, exactly as the twin counts.

    With ``reach=None`` the run is nominal: exact without cpu contention, a lower bound under
    it (see the module docstring). With ``reach``, the runs complete then (the plan's
    worst-case ends, :mod:`agents.oracle.model.stretch`) and are counted exactly as such runs.

    Args:
        inst: The episode.
        job: The job.
        node: The node it starts on.
        starts: ``(n,)`` start times, seconds (the job's first and only start).
        t_next: ``(n,)`` the node's first interruption after each start (``inf``: none).
        reach: ``(n,)`` when each run completes (uncapped); ``None`` = ``starts + d``.
    """
    counts = _option_counts(inst, job, node, len(starts))
    worst_case = reach is not None
    if reach is None:
        reach = starts + inst.duration_s[job]
    fails = (~inst.job_preemptible[job]) & (t_next < reach)
    counts[:, _EVICTION] = fails
    end = np.minimum(reach, inst.horizon_s)
    if inst.deadline_at_completion:
        counts[:, _DEADLINE] = (
            ~fails & (end > inst.deadline_s[job]) if worst_case
            else _late_at_completion(inst, job, starts, t_next, inst.deadline_s[job], infimum=False)
        )
    else:
        counts[:, _DEADLINE] = starts > inst.deadline_s[job]
    since = release_floor_s(inst, job, starts)
    counts[:, _WAIT] = wait_job_hours(starts - since)
    counts[:, _UTILITY] = _utility_lost(inst, job, end, fails, since)
    stops = np.minimum(end, t_next) if not inst.job_preemptible[job] else end  # a failed run stops at t_next
    count_run_energy(inst, job, node, counts, starts, stops)
    return counts


def run_energy_counts(
    inst: OracleInstance, job: int, node: int, t0: np.ndarray, t1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``((n,) kWh, (n,) kg)``: the least ``job`` running on ``node`` over each ``[t0, t1)`` adds.

    Its ``energy`` and ``carbon`` counts (:class:`agents.oracle.model.energy.RunEnergy`); 0 when the
    episode weighs neither term, and for an empty interval (``t1 <= t0``).
    """
    if inst.energy is None:
        return np.zeros(len(t0)), np.zeros(len(t0))
    return inst.energy.run_counts(int(inst.job_cpu_m[job]), int(inst.job_gpus[job]), node, t0, t1)


def count_run_energy(
    inst: OracleInstance, job: int, node: int, counts: np.ndarray, t0: np.ndarray, t1: np.ndarray
) -> None:
    """Set the ``energy`` and ``carbon`` columns of ``(n, T)`` counts to :func:`run_energy_counts` (in place)."""
    counts[:, _ENERGY], counts[:, _CARBON] = run_energy_counts(inst, job, node, t0, t1)


def energy_usd(inst: OracleInstance, kwh: np.ndarray, kg: np.ndarray) -> np.ndarray:
    """USD of ``kwh`` of energy and ``kg`` of CO2eq under the episode's weights."""
    return inst.charges.usd("energy", kwh) + inst.charges.usd("carbon", kg)


def cell_counts(
    inst: OracleInstance,
    job: int,
    node: int,
    lo: np.ndarray,
    t_next: np.ndarray,
    *,
    infimum: bool,
    at: np.ndarray | None = None,
) -> np.ndarray:
    """``(n, T)`` counts of a start in each cell ``[lo, hi)``: at ``lo``, or their infimum over ``(lo, hi)``.

    The counted events (eviction, deadline, QoS) are constant inside a cell: no interruption
    and no deadline lies strictly inside one, nor does a start whose nominal run would end at
    an interruption (cells are cut at ``t - d``); the infimum drops an event when any start
    inside the cell avoids it. The terms that move continuously with the start (the wait, and
    lost utility through the run's end) are those of the start ``at`` (default ``lo``, where
    both are least), so that the caller can charge the cheapest start of the cell as a whole.

    Args:
        inst: The episode.
        job: The job.
        node: The node.
        lo: ``(n,)`` first start of each cell, seconds.
        t_next: ``(n,)`` the node's first interruption after ``lo`` (``inf``: none).
        infimum: False for the counts of the start at ``lo``, True for the infimum over the open cell.
        at: ``(n,)`` a start in each cell (``lo <= at <= hi``, the end as a limit) at which the
            wait and lost utility are counted; ``None`` = ``lo``.
    """
    counts = _option_counts(inst, job, node, len(lo))
    d = inst.duration_s[job]
    reach = lo + d
    fails = ~inst.job_preemptible[job] & ((t_next <= reach) if infimum else (t_next < reach))
    counts[:, _EVICTION] = fails
    deadline = inst.deadline_s[job]
    start = lo if at is None else at
    end = np.minimum(start + d, inst.horizon_s)  # the nominal end of the run from that start
    if inst.deadline_at_completion:
        counts[:, _DEADLINE] = _late_at_completion(inst, job, lo, t_next, deadline, infimum=infimum)
    else:
        counts[:, _DEADLINE] = (lo >= deadline) if infimum else (lo > deadline)
    since = release_floor_s(inst, job, start)
    counts[:, _WAIT] = wait_job_hours(start - since)  # the wait rises with the start (0 for a task with parents)
    counts[:, _UTILITY] = _utility_lost(inst, job, end, fails, since)  # the loss rises with the end
    return counts


def ramp_kinks(inst: OracleInstance, job: int) -> np.ndarray:
    """Starts at which a continuous per-start charge of ``job`` changes slope (seconds, any order).

    The compute cost of a run ``min(s + d, H) - s`` bends at ``s = H - d``; a latency-critical
    job's lost utility ``clip((min(s + d, H) - a) / slo - 1, 0, 1)`` at ``H - d`` and where the
    ramp starts and ends (``s = a + slo - d`` and ``a + 2 slo - d``). The wait is linear.
    Between consecutive kinks every such charge is linear in the start.
    """
    d, a = inst.duration_s[job], inst.arrival_s[job]
    kinks = [inst.horizon_s - d]
    if inst.job_lc[job]:
        slo = inst.latency_slo_s[job]
        kinks += [a + slo - d, a + 2.0 * slo - d]
    return np.array(kinks, dtype=np.float64)


def _late_at_completion(
    inst: OracleInstance, job: int, lo: np.ndarray, t_next: np.ndarray, deadline: float, *, infimum: bool
) -> np.ndarray:
    """``(n,)`` bool: a deadline miss under the ``completion`` rule, of a start at ``lo`` or in ``(lo, hi)``.

    Late when the run's end ``min(s + d, H)`` is past the deadline (non-decreasing in ``s``),
    unless the run may fail (then never late). Inside a cell the nominal failure is constant;
    a run stretched by contention may fail at any interruption after the start, so the
    infimum drops the miss whenever one follows (:attr:`OracleInstance.longest_run_s`).
    """
    d = inst.duration_s[job]
    reach = lo + d
    non_preemptible = not inst.job_preemptible[job]
    if not infimum:
        may_fail = non_preemptible & (t_next < lo + inst.longest_run_s[job])
        return ~may_fail & (np.minimum(reach, inst.horizon_s) > deadline)
    stretches = bool(inst.longest_run_s[job] > d)
    may_fail = non_preemptible & ((t_next <= reach) | (stretches & np.isfinite(t_next)))
    late = np.where(reach < inst.horizon_s, reach >= deadline, inst.horizon_s > deadline)  # s + d > reach
    return ~may_fail & late


def relax_for_earlier_runs(inst: OracleInstance, job: int, counts: np.ndarray, starts: np.ndarray) -> None:
    """Keep, for a job whose earlier run may have been evicted, only what every run counts (in place).

    The option stands for the job's *last* run, started at ``starts`` (``(n,)`` seconds). The
    ``first-start`` deadline is known only by its bound over all first starts: late only when
    the arrival is already past the deadline. The wait counted is the last queue spell's
    least: it began at the job's last enqueue, its arrival or an eviction at an interruption
    of a candidate node, no later than :func:`~agents.oracle.model.release.last_enqueue_s`.
    Earlier spells are not counted here. The terms judged at the end of a run (lost utility, the ``completion`` rule's
    deadline) judge the last run: they stay.
    """
    if not inst.deadline_at_completion:
        counts[:, _DEADLINE] = inst.arrival_s[job] > inst.deadline_s[job]
    counts[:, _WAIT] = wait_job_hours(starts - last_enqueue_s(inst, job, starts))


def evicted_run_counts(
    inst: OracleInstance, job: int, node: int, starts: np.ndarray, evicted_s: np.ndarray
) -> np.ndarray:
    """``(n, T)`` counts of a first run of a preemptible job on ``node`` that a spot interruption evicts.

    The job is re-queued, so the eviction counts nothing; the terms judged at the first start
    are its: the wait until then and, under the ``first-start`` rule, the deadline; and the
    energy and emissions of what it ran, from ``starts`` to ``evicted_s`` (``(n,)`` seconds).
    The evict-and-rerun plans are built for jobs that are not latency critical (no QoS, no utility).
    """
    counts = np.zeros((len(starts), N_TERMS))
    count_run_energy(inst, job, node, counts, starts, evicted_s)
    counts[:, _WAIT] = wait_job_hours(starts - release_floor_s(inst, job, starts))
    if not inst.deadline_at_completion:
        counts[:, _DEADLINE] = starts > inst.deadline_s[job]
    return counts


def as_rerun(inst: OracleInstance, counts: np.ndarray, starts: np.ndarray, requeued_s: float) -> None:
    """Turn a run's counts into those of a rerun at ``starts`` after an eviction at ``requeued_s`` (in place).

    The rerun ends the queue spell that began at the eviction: it waits ``starts - requeued_s``
    (``(n,)`` seconds). The ``first-start`` deadline was judged at the first run
    (:func:`evicted_run_counts`); the terms judged at the end of a run stay.
    """
    counts[:, _WAIT] = wait_job_hours(starts - requeued_s)
    if not inst.deadline_at_completion:
        counts[:, _DEADLINE] = 0.0


def add_earlier_spot_run(inst: OracleInstance, job: int, counts: np.ndarray, later: np.ndarray) -> None:
    """Count what a surely evicted earlier run on a spot node adds to the options ``later`` (in place).

    A latency-critical job's earlier run on a spot node counted the QoS violation, whatever
    node the last run uses (:func:`agents.oracle.bounds.exact._charge_earlier_runs` proves the run).
    """
    if inst.job_lc[job]:
        counts[later, _QOS] = 1.0


def add_earlier_energy(counts: np.ndarray, later: np.ndarray, kwh: np.ndarray, kg: np.ndarray) -> None:
    """Add ``kwh`` and ``kg`` (one each per option of ``later``) an evicted earlier run surely added (in place).

    The least energy and emissions of that run (:func:`agents.oracle.bounds.exact._charge_earlier_runs`),
    a run other than the one the options stand for.
    """
    counts[later, _ENERGY] += kwh
    counts[later, _CARBON] += kg


def add_first_run_wait(counts: np.ndarray, later: np.ndarray, wait_s: np.ndarray) -> None:
    """Add ``wait_s`` of waiting before a surely evicted first run to the options ``later`` (in place).

    The options stand for a last run after that eviction and count its own queue spell's
    wait (:func:`relax_for_earlier_runs`), a later spell than the first; ``wait_s`` (one per
    option of ``later``, seconds) is the least the first spell can have lasted
    (:func:`agents.oracle.bounds.exact._charge_earlier_runs`).
    """
    counts[later, _WAIT] += wait_job_hours(wait_s)


def unserved_counts(inst: OracleInstance, may_have_started: np.ndarray | None = None) -> np.ndarray:
    """``(J, T)`` counts of leaving each job unserved: the program's "no option" choice.

    Every submitted job that is not served counts a rejection (TTL, unplaceable, or still queued
    at the horizon), a latency-critical one its whole utility (1), and the wait of its last
    queue spell, until it left the queue: from an enqueue at ``e`` to ``min(e + TTL, H)``. A
    job never started entered the queue once, at ``e = a``; one rejected on arrival waits 0.
    Jobs arriving at or after the horizon never exist and count nothing.

    Args:
        inst: The episode.
        may_have_started: ``(J,)`` bool, jobs whose "no option" may stand for an episode in which
            they started and were then evicted (the relaxation): their last spell may also
            begin at any requeue time (:func:`~agents.oracle.model.release.requeue_times_s`), and the least over those
            enqueues is counted; ``None``: no job (the plan).
    """
    counts = np.zeros((inst.n_jobs, N_TERMS))
    counts[:, _REJECTION] = inst.submitted
    counts[:, _UTILITY] = inst.submitted & inst.job_lc
    for j in range(inst.n_jobs):
        if not inst.placeable(j):
            continue
        enqueues = np.array([float(inst.arrival_s[j])])
        if may_have_started is not None and may_have_started[j]:
            enqueues = np.concatenate((enqueues, requeue_times_s(inst, j)))
        left = np.full(len(enqueues), inst.horizon_s) if inst.ttl_s is None else np.minimum(
            enqueues + inst.ttl_s, inst.horizon_s)
        if not inst.has_parents[j]:  # a task released by its parents may be released at the horizon: 0
            counts[j, _WAIT] = wait_job_hours(float((left - enqueues).min()))
    return counts


def run_usd_per_s(inst: OracleInstance, jobs: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """``(len(jobs), len(nodes))`` USD per second of a run of each job on each node, as the bounds charge it.

    The pro-rated rate (:attr:`OracleInstance.rate_per_s`); under ``active-nodes`` the node's
    price times the job's cpu share (:func:`agents.charges.share_usd_per_s`): the shares of the
    jobs on a node sum to at most 1, so these charges sum to at most the node's active cost.
    The hindsight greedy plan charges its runs the same.
    """
    if inst.active_nodes:
        return share_usd_per_s(inst.node_price_per_s[None, nodes], inst.job_cpu_m[jobs][:, None],
                               inst.node_cpu_m[None, nodes])
    return inst.rate_per_s[np.ix_(jobs, nodes)]


def penalty_usd(inst: OracleInstance, counts: np.ndarray) -> np.ndarray:
    """``(n,)`` USD of each row of ``(n, T)`` counts in table order (:meth:`agents.charges.Charges.penalties`)."""
    return inst.charges.penalties(counts)


def plan_counts(option_counts: np.ndarray, unserved: np.ndarray, sla_violations: int) -> list[int | float]:
    """The counts, in table order, of a plan: its options', its unserved jobs' and the SLA's.

    ``unfairness`` is not charged (0; see the module docstring): the plan's own value is its
    replay's.

    Args:
        option_counts: ``(P, T)`` counts of the options the plan picked.
        unserved: ``(U, T)`` :func:`unserved_counts` rows of the jobs it leaves unserved.
        sla_violations: Latency-critical jobs whose node went over the SLA threshold.
    """
    totals = option_counts.sum(axis=0) + unserved.sum(axis=0)
    totals[_SLA] += sla_violations
    return [round(v) if term.integral else float(v) for term, v in zip(PENALTIES, totals, strict=True)]


def _utility_lost(
    inst: OracleInstance, job: int, end: np.ndarray, fails: np.ndarray, since: np.ndarray
) -> np.ndarray:
    """``(n,)`` utility a latency-critical job loses by runs ending at ``end`` (1 where they fail; 0 if not LC).

    :func:`digital_twin.sim.measures.utility_loss` of ``end - since`` (``since``: the job's
    release, :func:`~agents.oracle.model.release.release_floor_s`), vectorised with the same float operations.
    """
    if not inst.job_lc[job]:
        return np.zeros(len(end))
    lost = np.clip((end - since) / inst.latency_slo_s[job] - 1.0, 0.0, 1.0)
    return np.where(fails, 1.0, lost)


def _option_counts(inst: OracleInstance, job: int, node: int, n: int) -> np.ndarray:
    """``(n, T)`` zeros, with the term every option of (job, node) counts alike: QoS on a spot node."""
    counts = np.zeros((n, N_TERMS))
    counts[:, _QOS] = bool(inst.job_lc[job] and inst.node_spot[node])
    return counts
