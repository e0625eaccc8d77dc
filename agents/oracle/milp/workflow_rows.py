"""Workflow rows: precedence between tasks, and the ``workflow`` and ``workflow_deadline`` terms.

Both programs (plan and relaxation) get the same rows; what differs is what an option's
``start_hi_s`` and ``use_end_s`` mean. For a plan's point they are its start and its planned
end; for the relaxation's cell they are the latest start of the cell and the least end of a
run from it (``e(lo)``), so that an episode's runs always satisfy the rows
(:mod:`agents.oracle.bounds.exact`, item 9). With ``x[o]`` "the job's last run is option
``o``", ``H`` the horizon:

* **served tasks had completed parents**, per edge ``p -> c``: ``sum_{o of c} x[o] <=
  sum_{o of p, may complete} x[o]``. An option *may complete* when it is no evicted first
  run, does not surely fail (its ``eviction`` count is 0) and its run can end by the
  horizon (``lo + d <= H``);
* **precedence**, per edge: ``sum_{p, may complete} x[o] e[o] + sum_{c} x[o] (H - s[o]) <= H``
  (the child starts after the parent's end; nothing when the child is not served);
* **the workflow's hours**, per counted workflow ``w`` (submitted before ``H``), a variable
  ``C[w]`` in ``[0, 1]`` (its end over ``H``) with, per task ``j``: ``H C[w] >= H - sum_{o of j,
  may complete} x[o] (H - e[o])``: the latest task's end, or ``H`` when a task does not
  complete (failed, unserved, or unfinished). Charged ``weight x (H C[w] - submitted) / 3600``
  weighted hours;
* **the deadline**, per counted workflow with a deadline ``D < H``, a binary ``L[w]`` with,
  per task, ``L[w] >= 1 - sum_{o of j, may complete, e[o] <= D} x[o]``;
* **the plan's TTL** (plan program only, a finite TTL): per edge, ``sum_c x s - sum_{p} x e
  <= TTL``: the child starts within the TTL of each parent's end, hence of its release.
  (The relaxation has no such row: the TTL runs from the *last* parent's completion.)

A sum over some options of one job is written on the step variables
(:mod:`agents.oracle.milp.program`): ``sum_o w[o] x[o] = sum_o P[o] (w[o] - w[o + 1])``
within each (job, node) group.
"""

from __future__ import annotations

import numpy as np

from agents.oracle.milp.builder import Builder
from agents.oracle.milp.options import Options
from agents.oracle.model.instance import OracleInstance
from digital_twin.objective import PENALTY_INDEX

_EVICTION = PENALTY_INDEX["eviction"]


def workflow_rows(bld: Builder, inst: OracleInstance, options: Options, *, plan_ttl: bool) -> float:
    """Add the workflow rows and variables (module docstring) to ``bld``; return the objective's constant, USD.

    Nothing is added (and 0 returned) for an episode without workflows.

    Args:
        bld: The program under construction (its first ``options.n`` columns are the step variables).
        inst: The episode.
        options: The program's options.
        plan_ttl: Add the plan's TTL rows (the plan program; never the relaxation).
    """
    dag = inst.dag
    if dag is None or options.n == 0:
        return 0.0
    sums = _JobSums(inst, options)
    h = inst.horizon_s
    for p, c in dag.edges:
        row = bld.new_rows(np.zeros(1))
        sums.add(bld, row, c, sums.serving, 1.0)
        sums.add(bld, row, p, sums.completes, -1.0)
        row = bld.new_rows(np.ones(1))
        sums.add(bld, row, p, sums.completes, sums.end / h)
        sums.add(bld, row, c, sums.serving, 1.0 - sums.start / h)
        if plan_ttl and inst.ttl_s is not None:
            row = bld.new_rows(np.array([inst.ttl_s / h]))
            sums.add(bld, row, c, sums.serving, sums.start / h)
            sums.add(bld, row, p, sums.completes, -sums.end / h)
    charges = inst.charges
    late_usd = float(charges.usd("workflow_deadline", 1.0))
    constant = 0.0
    for w in np.flatnonzero(dag.counted):  # a term of weight 0 gets no rows: it counts 0 USD
        usd_per_hour = float(charges.usd("workflow", float(dag.weight[w])))
        end_col = None
        if usd_per_hour > 0.0:
            constant -= usd_per_hour * float(dag.submitted_s[w]) / 3600.0
            (end_col,) = bld.new_vars(np.array([usd_per_hour * h / 3600.0]), integral=False)
        late_col = None
        deadline = float(dag.deadline_s[w])
        if deadline < h and late_usd > 0.0:
            (late_col,) = bld.new_vars(np.array([late_usd]), integral=True)
        for j in dag.tasks[w]:
            if end_col is not None:
                row = bld.new_rows(np.array([-1.0]))
                bld.add(row, np.array([end_col]), -1.0)
                sums.add(bld, row, j, sums.completes, -(1.0 - sums.end / h))
            if late_col is not None:
                row = bld.new_rows(np.array([-1.0]))
                bld.add(row, np.array([late_col]), -1.0)
                sums.add(bld, row, j, sums.completes & (sums.end <= deadline), -1.0)
    return constant


class _JobSums:
    """Per-option flags and times, and sums over one job's options written on the step variables."""

    def __init__(self, inst: OracleInstance, options: Options) -> None:
        self.options = options
        self.start = options.start_hi_s
        self.end = options.use_end_s
        self.serving = ~options.evicted
        reachable = options.start_lo_s + inst.duration_s[options.job] <= inst.horizon_s
        self.completes = self.serving & (options.counts[:, _EVICTION] == 0) & reachable
        order = np.argsort(options.job, kind="stable")
        bounds = np.searchsorted(options.job[order], np.arange(inst.n_jobs + 1))
        self._of_job = [order[bounds[j]: bounds[j + 1]] for j in range(inst.n_jobs)]
        group = np.repeat(np.arange(options.n_groups), np.diff(options.group_offsets))
        self._same_group_next = np.zeros(options.n, dtype=bool)
        self._same_group_next[:-1] = group[1:] == group[:-1]

    def add(self, bld: Builder, row: np.ndarray, job: int, among: np.ndarray, weight: np.ndarray | float) -> None:
        """Add ``sum over job's options o in among of weight[o] x[o]`` to ``row`` (``weight``: one or ``(n,)``)."""
        mine = self._of_job[job]
        if len(mine) == 0:
            return
        w = np.zeros(self.options.n)
        w_all = np.broadcast_to(np.asarray(weight, dtype=np.float64), (self.options.n,))
        w[mine] = np.where(among[mine], w_all[mine], 0.0)
        nxt = np.where(self._same_group_next[mine], w[np.minimum(mine + 1, self.options.n - 1)], 0.0)
        coef = w[mine] - nxt
        keep = coef != 0.0
        bld.add(np.full(int(keep.sum()), row[0]), mine[keep], coef[keep])
