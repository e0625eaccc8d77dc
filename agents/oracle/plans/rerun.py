"""Evict-and-rerun plans: a first run that a known spot interruption evicts, then the real run.

A preemptible job evicted by a spot interruption returns to the queue with a fresh TTL and
the eviction costs nothing but the run so far. With hindsight a plan can use that: start the
job on a spot node shortly before the node's interruption at ``t`` (paying ``t - s1`` of the
node), and run it for real in ``[t, t + TTL)``, when a cheaper node may be free again, past
the job's first TTL. The relaxation knows such episodes (:mod:`agents.oracle.bounds.exact`, item 1);
without them the plan cannot reach it.

For each preemptible job that is not latency critical (a QoS violation or lost utility would
follow the job across its runs: left out), with a TTL, and each time ``t`` at which a spot
candidate node is interrupted, one *family* of options (:class:`agents.oracle.milp.options.Options`,
``family``):

* first runs (``evicted``) on each spot candidate ``k`` interrupted at ``t``, starting at one of
  the job's plan starts ``s1`` (:func:`agents.oracle.plans.options.plan_starts`) with ``t - d < s1 < t``
  (the run is still going at ``t``: a run only lasts longer under contention) and no earlier
  interruption of ``k`` after ``s1``; the last :data:`MAX_FIRST_RUN_STARTS` such starts per
  node (the later, the less of the node it pays for). Usage ``[s1, t)``, the cost and the
  energy of that time, and the terms judged at the first start
  (:func:`agents.oracle.model.terms.evicted_run_counts`);
* reruns on each candidate node at ``t`` (the re-queued job is asked at once) or a static
  event in ``(t, min(t + TTL, H))``, as ordinary runs (never crossing an interruption) without
  the ``first-start`` deadline, and waiting from the eviction at ``t`` to the rerun's start:
  the job's second queue spell (:func:`agents.oracle.model.terms.as_rerun`).

The program takes a first run of a family exactly when it takes one of its reruns
(:mod:`agents.oracle.milp.program`), and the replay starts both (:mod:`agents.oracle.plans.replay`).
"""

from __future__ import annotations

import numpy as np

from agents.oracle.milp.options import block, crosses, point_terms, recounted
from agents.oracle.model import terms
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.stretch import RunLengths

MAX_FIRST_RUN_STARTS = 3
"""First-run starts kept per (job, node, interruption): the latest ones."""


def eligible(inst: OracleInstance, job: int) -> bool:
    """Whether ``job`` gets evict-and-rerun families: preemptible, not latency critical, a TTL, placeable, no parents.

    A workflow task with parents has none: its first run would have to follow its parents too.
    """
    return (
        inst.ttl_s is not None
        and not bool(inst.has_parents[job])
        and bool(inst.job_preemptible[job])
        and not bool(inst.job_lc[job])
        and inst.placeable(job)
    )


def rerun_blocks(
    inst: OracleInstance, job: int, starts: np.ndarray, first_family: int, *, runs: RunLengths | None = None
) -> tuple[list[dict[str, np.ndarray]], int]:
    """The groups of ``job``'s evict-and-rerun families, numbered from ``first_family``.

    Args:
        inst: The episode.
        job: An :func:`eligible` job.
        starts: The job's plan starts (sorted), where first runs may start.
        first_family: The first family id to use.
        runs: How long reruns are reserved (:class:`~agents.oracle.model.stretch.RunLengths`; ``None``: nominal).

    Returns:
        ``(blocks, n_families)``: one group per (family, node, kind), ordered by start.
    """
    assert inst.ttl_s is not None  # eligible() checked it
    a = float(inst.arrival_s[job])
    spot = [k for k in inst.candidates[job] if inst.interruptions_s[k]]
    times = sorted({t for k in spot for t in inst.interruptions_s[k] if a < t < inst.horizon_s})
    blocks: list[dict[str, np.ndarray]] = []
    family = first_family
    for t in times:
        found = (first_run_block(inst, job, k, t, starts, family) for k in spot if t in inst.interruptions_s[k])
        firsts = [b for b in found if b is not None]
        if not firsts:
            continue
        events = inst.static_events_s
        later = np.concatenate(([t], events[(events > t) & (events < min(t + inst.ttl_s, inst.horizon_s))]))
        reruns = []
        for i in inst.candidates[job]:
            ok = np.array([not inst.is_down(i, float(s)) for s in later], dtype=bool)
            ok &= ~crosses(inst, job, i, later, runs=runs)
            if ok.any():
                run = point_terms(inst, job, i, later[ok], runs=runs)
                counts = run["counts"].copy()
                terms.as_rerun(inst, counts, later[ok], t)
                reruns.append(recounted(inst, job, i, run, counts, family))
        if reruns:
            blocks.extend(firsts + reruns)
            family += 1
    return blocks, family - first_family


def first_run_block(
    inst: OracleInstance, job: int, node: int, t: float, starts: np.ndarray, family: int
) -> dict[str, np.ndarray] | None:
    """First runs of ``job`` on spot ``node`` that its interruption at ``t`` evicts (``None``: none possible)."""
    d = float(inst.duration_s[job])
    mine = starts[(starts > t - d) & (starts < t)]
    mine = mine[[not inst.is_down(node, float(s)) for s in mine]] if len(mine) else mine
    mine = mine[inst.next_interruption_s(node, mine) == t] if len(mine) else mine
    mine = mine[-MAX_FIRST_RUN_STARTS:]
    if len(mine) == 0:
        return None
    ends = np.full(len(mine), t)
    ticks = inst.tick_times_s
    return block(
        inst,
        job,
        node,
        lo=mine,
        hi=mine,
        use=(mine, ends),
        tick_range=(np.searchsorted(ticks, mine, side="right"), np.searchsorted(ticks, ends, side="left")),
        cost=inst.rate_per_s[job, node] * (ends - mine),
        counts=terms.evicted_run_counts(inst, job, node, mine, ends),
        family=family,
        evicted=True,
    )
