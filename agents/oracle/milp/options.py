"""Placement options: a job on a node over a set of start times, with its usage, ticks and terms.

Both programs (the achievable plan and the lower-bound relaxation) choose at most one option
per job. An option is either a *point* (one start time ``s``) or a *cell* (any start in
``[lo, hi)``). Within a (job, node) *group*, options are ordered by start and their usage
intervals and tick ranges are non-decreasing at both ends, so the options covering any time (or
tick) form a contiguous range of the group: :mod:`agents.oracle.milp.program` exploits this.

For a start ``s`` on node ``i`` the twin's semantics give (``t_next`` = first interruption of
``i`` after ``s``, ``H`` = horizon, ``d`` = duration):

* run end ``e(s) = min(s + d, t_next, H)`` for a non-preemptible job (it fails at ``t_next``),
  ``min(s + d, H)`` for a preemptible one (options whose run would cross ``t_next`` are
  dropped: such a run is evicted and is never the job's last run);
* usage ``[s, e(s))``; SLA ticks ``T`` with ``s < T < e(s)`` (ticks come before decisions and
  after completions and interruptions at equal times);
* pro-rated cost ``rate * (e(s) - s)``; the penalty terms a start decides are counted by
  :mod:`agents.oracle.model.terms` (eviction when ``s < t_next < s + d``, deadline when ``s >
  deadline``, QoS for a latency-critical job on a spot node, ...).

A cell's *core* is what every start in it shares: usage ``[hi, e(lo))``, ticks ``hi <= T <
e(lo)``, and each penalty/cost term at its minimum over the cell (see :mod:`agents.oracle.bounds.exact`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agents.oracle.model import terms
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.stretch import RunLengths, interference_stretch, worst_case_ends


@dataclass(frozen=True, eq=False)
class Options:
    """All options of one program, grouped by (job, node), each group ordered by start.

    Attributes:
        job, node: ``(n,)`` int64 job and node index of each option.
        group_offsets: ``(G + 1,)`` int64; options of group ``g`` are ``group_offsets[g]`` to
            ``group_offsets[g + 1] - 1``.
        start_lo_s, start_hi_s: ``(n,)`` start set ``[lo, hi)``; ``lo == hi`` marks a point.
        use_start_s, use_end_s: ``(n,)`` interval during which the job surely holds its
            resources on the node (empty when ``use_start_s >= use_end_s``).
        tick_lo, tick_hi: ``(n,)`` int64, SLA tick indices ``[tick_lo, tick_hi)`` at which the
            job surely runs.
        coef_usd: ``(n,)`` objective constant of the option: penalties plus, under the
            ``prorated`` cost model, the compute cost.
        cost_usd: ``(n,)`` pro-rated compute cost (whatever the cost model; for a cell, the
            cost at the start that attains its minimum).
        counts: ``(n, T)`` what the option counts of each penalty term, in ``PENALTIES`` order
            (exact for points, but ``energy`` and ``carbon``: a lower bound;
            :mod:`agents.oracle.model.terms`).
        family: ``(n,)`` int64, ``-1`` for an ordinary option (the job's one run); otherwise
            the option belongs to an *evict-and-rerun* family (one per job and spot
            interruption, :mod:`agents.oracle.plans.rerun`): a first run the interruption evicts,
            and the rerun after it. A program takes a family's first run exactly when it
            takes one of its reruns.
        evicted: ``(n,)`` bool, the option is such a first run (it does not serve the job).
        stretchable: ``(n,)`` bool, the program charges the option's least slowdown under cpu
            contention (:func:`agents.oracle.milp.rows.slowdown_rows`): its run is charged its
            nominal duration and surely completes, even at the node's
            slowest rate, before the horizon and the node's next interruption
            (:func:`stretchable_runs`). False for every option without contention.
        unserved_counts: ``(J, T)`` what leaving each job unserved (no option) counts.
        unserved_usd: ``(J,)`` the USD of ``unserved_counts``.
    """

    job: np.ndarray  # (n,)
    node: np.ndarray  # (n,)
    group_offsets: np.ndarray  # (G + 1,)
    start_lo_s: np.ndarray  # (n,)
    start_hi_s: np.ndarray  # (n,)
    use_start_s: np.ndarray  # (n,)
    use_end_s: np.ndarray  # (n,)
    tick_lo: np.ndarray  # (n,)
    tick_hi: np.ndarray  # (n,)
    coef_usd: np.ndarray  # (n,)
    cost_usd: np.ndarray  # (n,)
    counts: np.ndarray  # (n, T)
    family: np.ndarray  # (n,)
    evicted: np.ndarray  # (n,)
    stretchable: np.ndarray  # (n,)
    unserved_counts: np.ndarray  # (J, T)
    unserved_usd: np.ndarray  # (J,)

    @property
    def n(self) -> int:
        """Number of options."""
        return len(self.job)

    @property
    def n_groups(self) -> int:
        """Number of (job, node) groups."""
        return len(self.group_offsets) - 1

    @property
    def group_job(self) -> np.ndarray:
        """``(G,)`` job of each group."""
        return self.job[self.group_offsets[:-1]]

    @property
    def group_node(self) -> np.ndarray:
        """``(G,)`` node of each group."""
        return self.node[self.group_offsets[:-1]]

    @property
    def is_point(self) -> np.ndarray:
        """``(n,)`` bool, single start time."""
        return self.start_lo_s == self.start_hi_s

    @staticmethod
    def concatenate(
        blocks: list[dict[str, np.ndarray]], unserved_counts: np.ndarray, unserved_usd: np.ndarray
    ) -> Options:
        """Assemble groups (dicts of equal-length arrays with the per-option fields) into options.

        Args:
            blocks: One dict per (job, node) group, as :func:`block` returns.
            unserved_counts: ``(J, T)`` what leaving each job unserved counts (:func:`unserved`).
            unserved_usd: ``(J,)`` what it costs, USD.
        """
        blocks = [b for b in blocks if len(b["job"])]
        sizes = [len(b["job"]) for b in blocks]
        offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        empty = {"job": np.int64, "node": np.int64, "tick_lo": np.int64, "tick_hi": np.int64, "family": np.int64,
                 "evicted": np.bool_, "stretchable": np.bool_}
        arrays = {}
        for name in _PER_OPTION:
            if blocks:
                arrays[name] = np.concatenate([b[name] for b in blocks])
            elif name == "counts":
                arrays[name] = np.zeros((0, terms.N_TERMS))
            else:
                arrays[name] = np.zeros(0, dtype=empty.get(name, np.float64))
        return Options(group_offsets=offsets, unserved_counts=unserved_counts, unserved_usd=unserved_usd, **arrays)


_PER_JOB = ("unserved_counts", "unserved_usd")
_PER_OPTION = tuple(f for f in Options.__dataclass_fields__ if f not in ("group_offsets", *_PER_JOB))
"""The fields of :class:`Options` with one entry (row) per option."""


def unserved(inst: OracleInstance, may_have_started: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``((J, T) counts, (J,) USD)`` of leaving each job unserved (see :func:`terms.unserved_counts`)."""
    counts = terms.unserved_counts(inst, may_have_started)
    return counts, terms.penalty_usd(inst, counts)


def point_terms(
    inst: OracleInstance, job: int, node: int, starts: np.ndarray, *, runs: RunLengths | None = None
) -> dict[str, np.ndarray]:
    """Terms of starting ``job`` on ``node`` at each of ``starts`` (sorted, all allowed).

    Each run lasts its nominal duration (exact without cpu contention; the relaxation's lower
    bound under it), or as long as ``runs`` says under contention (:mod:`agents.oracle.model.stretch`:
    the plan's reservation, charged as that longer run).

    Returns:
        A group block for :meth:`Options.concatenate` (crossing starts of preemptible jobs must
        have been removed by the caller; see :func:`crosses`).
    """
    t_next = inst.next_interruption_s(node, starts)
    reach = reach_of(inst, job, node, starts, runs=runs)
    end = run_end(inst, job, starts, t_next, reach)
    cost = inst.rate_per_s[job, node] * (end - starts)
    ticks = inst.tick_times_s
    return block(
        inst,
        job,
        node,
        lo=starts,
        hi=starts,
        use=(starts, end),
        tick_range=(np.searchsorted(ticks, starts, side="right"), np.searchsorted(ticks, end, side="left")),
        cost=cost,
        counts=terms.point_counts(inst, job, node, starts, t_next, None if runs is None else reach),
        stretchable=None if runs is None else np.zeros(len(starts), dtype=bool),
    )


def reach_of(
    inst: OracleInstance, job: int, node: int, starts: np.ndarray, *, runs: RunLengths | None = None
) -> np.ndarray:
    """``(n,)`` when runs from ``starts`` would complete, uncapped: nominally, or as ``runs`` says."""
    if runs is not None:
        return runs.ends(inst, job, node, starts)
    return starts + inst.duration_s[job]


def run_end(
    inst: OracleInstance, job: int, starts: np.ndarray, t_next: np.ndarray, reach: np.ndarray | None = None
) -> np.ndarray:
    """``e(s)``: when a run started at ``s`` stops (completion at ``reach``, failure, or the horizon).

    ``reach`` defaults to the nominal completion ``s + d``.
    """
    end = np.minimum(starts + inst.duration_s[job] if reach is None else reach, inst.horizon_s)
    if not inst.job_preemptible[job]:
        end = np.minimum(end, t_next)
    return end


def stretchable_runs(inst: OracleInstance, job: int, node: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``(n,)`` bool: a run of ``job`` on ``node`` started anywhere in ``[lo, hi)`` surely completes.

    Surely: its worst-case end (:func:`agents.oracle.model.stretch.worst_case_ends`, from the latest
    start ``hi``) is before the horizon and the node's next interruption after ``lo``. Such a
    run pays (under the ``prorated`` cost model) for its whole stretched length, which the
    program's slowdown charge relies on; all False on a node that never slows down.
    """
    if inst.active_nodes or inst.slowest_rate[:, node].min() >= 1.0:
        return np.zeros(len(lo), dtype=bool)
    work_s = float(inst.duration_s[job]) * interference_stretch(inst, job)
    end = worst_case_ends(inst, node, np.asarray(hi, dtype=np.float64), work_s)
    return end < np.minimum(inst.horizon_s, inst.next_interruption_s(node, np.asarray(lo, dtype=np.float64)))


def crosses(
    inst: OracleInstance, job: int, node: int, starts: np.ndarray, *, runs: RunLengths | None = None
) -> np.ndarray:
    """``(n,)`` bool: a run started at each time would be running at an interruption.

    The run lasts its nominal duration, or as long as ``runs`` says.
    """
    return inst.next_interruption_s(node, starts) < reach_of(inst, job, node, starts, runs=runs)


def block(
    inst: OracleInstance,
    job: int,
    node: int,
    *,
    lo: np.ndarray,
    hi: np.ndarray,
    use: tuple[np.ndarray, np.ndarray],
    tick_range: tuple[np.ndarray, np.ndarray],
    cost: np.ndarray,
    counts: np.ndarray,
    family: int = -1,
    evicted: bool = False,
    stretchable: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """One group's arrays; forms ``coef_usd`` from the ``(n, T)`` penalty counts and the cost.

    ``family`` and ``evicted`` mark the options of an evict-and-rerun family (see :class:`Options`).
    ``stretchable`` defaults to :func:`stretchable_runs` for runs charged their nominal duration
    (never for an evicted first run); pass it for others (all False for runs of other lengths).
    """
    n = len(lo)
    penalties = terms.penalty_usd(inst, counts)
    coef = penalties if inst.active_nodes else penalties + cost
    return {
        "job": np.full(n, job, dtype=np.int64),
        "node": np.full(n, node, dtype=np.int64),
        "start_lo_s": np.asarray(lo, dtype=np.float64),
        "start_hi_s": np.asarray(hi, dtype=np.float64),
        "use_start_s": np.asarray(use[0], dtype=np.float64),
        "use_end_s": np.asarray(use[1], dtype=np.float64),
        "tick_lo": np.asarray(tick_range[0], dtype=np.int64),
        "tick_hi": np.asarray(tick_range[1], dtype=np.int64),
        "coef_usd": np.asarray(coef, dtype=np.float64),
        "cost_usd": np.asarray(cost, dtype=np.float64),
        "counts": counts,
        "family": np.full(n, family, dtype=np.int64),
        "evicted": np.full(n, evicted, dtype=bool),
        "stretchable": (np.zeros(n, dtype=bool) if evicted else stretchable_runs(inst, job, node, lo, hi))
        if stretchable is None else np.asarray(stretchable, dtype=bool),
    }


def recounted(
    inst: OracleInstance, job: int, node: int, group: dict[str, np.ndarray], counts: np.ndarray, family: int = -1
) -> dict[str, np.ndarray]:
    """``group`` (a block of ``job`` on ``node``) with other penalty counts, in ``family`` (see :func:`block`)."""
    return block(
        inst, job, node, lo=group["start_lo_s"], hi=group["start_hi_s"], use=(group["use_start_s"], group["use_end_s"]),
        tick_range=(group["tick_lo"], group["tick_hi"]), cost=group["cost_usd"], counts=counts, family=family,
        stretchable=group["stretchable"],
    )


def symmetry_allowed(inst: OracleInstance, job: np.ndarray, node: np.ndarray,
                     ordinary: np.ndarray | None = None) -> np.ndarray:
    """``(n,)`` bool mask removing options that symmetric solutions make redundant.

    For a class ``c_1 < ... < c_m`` of interchangeable nodes, the ``r``-th job (0-based, in job
    order) among those with options on the class may only use ``c_1 .. c_{r+1}``. Any solution
    can be relabelled within the class (node ``c_p`` = the p-th node by first user) without
    changing its objective, and then satisfies this rule, so no optimum is lost.

    Only the ``ordinary`` options (``(n,)`` bool, default all) are ranked and restricted; the
    others stay on every node of the class, so a relabelled solution keeps them (nodes used
    by them alone are labelled after the ranked ones).
    """
    keep = np.ones(len(job), dtype=bool)
    ordinary = keep.copy() if ordinary is None else ordinary
    for members in inst.node_classes:
        position = {n: p for p, n in enumerate(members)}
        on_class = np.isin(node, members) & ordinary
        users = np.unique(job[on_class])  # sorted job indices
        rank = {int(j): r for r, j in enumerate(users)}
        for o in np.flatnonzero(on_class):
            if position[int(node[o])] > rank[int(job[o])]:
                keep[o] = False
    return keep


def filter_options(options: Options, keep: np.ndarray) -> Options:
    """The options where ``keep`` is True (groups left empty disappear); ``options`` itself if all are."""
    if keep.all():
        return options  # no copy: symmetry breaking removes nothing on fleets without twin nodes
    groups = np.repeat(np.arange(options.n_groups), np.diff(options.group_offsets))
    sizes = np.unique(groups[keep], return_counts=True)[1]
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return Options(
        group_offsets=offsets,
        unserved_counts=options.unserved_counts,
        unserved_usd=options.unserved_usd,
        **{f: getattr(options, f)[keep] for f in _PER_OPTION},
    )
