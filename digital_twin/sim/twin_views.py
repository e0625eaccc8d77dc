"""What callers may read about a twin's state: objective, job counts and statuses, node state, metrics.

:class:`TwinViews` reads a :class:`~digital_twin.sim.state.TwinState` against the episode's
:class:`~digital_twin.sim.constants.TwinConstants` and never changes either (reading the penalty
counts may bring the lazily computed ``unfairness`` entry up to date: the value it stands for
does not change); the twin owns one and answers its public read methods
(``DigitalTwin.objective()``, ``node_vector()``, ...) through it, passing its current state.
Several of these run at every env step (:meth:`objective_dict`, :meth:`node_vector`,
:meth:`tick_index`, :meth:`pending_jobs`): they are written for speed.
"""

from __future__ import annotations

import math

import numpy as np

from digital_twin.energy.carbon_intensity import J_PER_KWH
from digital_twin.hindsight import HindsightView
from digital_twin.objective import COST_KEY, COUNT_KEYS, OBJECTIVE_KEY, PENALTIES, PENALTY_INDEX, ObjectiveBreakdown
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import LoggedEvent
from digital_twin.sim.job_states import RUNNING, STATUS_NAMES
from digital_twin.sim.state import TwinState
from digital_twin.sim.tables.rule_checks import preference_weight
from digital_twin.spec import TwinSpec

NODE_INDEX_TYPES = (int, np.integer)
"""What a node index may be (a placement's argument)."""
_QOS = PENALTY_INDEX["qos"]
_USD_KEYS = tuple(term.usd_key for term in PENALTIES)
_PENALTY_KEYS = (*_USD_KEYS, *COUNT_KEYS)  # as_dict() order after the cost


class TwinViews:
    """Read-only views of the states of one episode (``N`` nodes, ``M`` jobs).

    Args:
        spec: The episode's inputs.
        constants: The constants derived from ``spec`` (shared with the simulator).
    """

    __slots__ = ("_counts_seen", "_items", "_penalties_usd", "constants", "spec")

    def __init__(self, spec: TwinSpec, constants: TwinConstants) -> None:
        self.spec = spec
        self.constants = constants
        # objective_dict()'s cache: the penalty counts it was built for (NaN: none yet), their USD
        # amounts, and the dict it copies (as_dict() order: the cost and the objective are
        # filled in by each call), updated term by term as counts change.
        n_terms = len(PENALTIES)
        self._counts_seen: list[float] = [math.nan] * n_terms
        self._penalties_usd: list[float] = [0.0] * n_terms
        self._items: dict[str, float] = dict.fromkeys((COST_KEY, *_PENALTY_KEYS, OBJECTIVE_KEY), 0.0)

    def tick_index(self, s: TwinState) -> int:
        """Index of the telemetry tick that contains ``s.time_s`` (the last tick after the trace).

        The largest k with ``k * tick_s <= time_s``, the product the twin fires tick k at
        (:mod:`digital_twin.tick_grid`): ``time_s // tick_s`` can be one less (``0.9 - 1 ulp``
        is tick 3 of 0.3 s ticks, but ``// 0.3`` gives 2).
        """
        c = self.constants
        t, tick_s = s.time_s, c.tick_s
        k = int(t // tick_s)
        if (k + 1) * tick_s <= t:
            k += 1
        return k if k < c.last_tick else c.last_tick

    def objective(self, s: TwinState) -> ObjectiveBreakdown:
        """The objective accrued up to ``s.time_s``, by term."""
        return ObjectiveBreakdown.of(s.cost_usd, self.spec.settings.weights, s.penalty_counts())

    def objective_dict(self, s: TwinState) -> dict[str, float]:
        """:meth:`objective` as ``ObjectiveBreakdown.as_dict()`` gives it, built directly (hot path).

        This runs at every env step, and few penalty counts change between steps (often only an
        episode-level one such as ``unfairness``): the USD amount and items of a term are rebuilt
        only when its count changed, and each call copies the cached dict. The sum runs in the
        order of ``ObjectiveBreakdown.total_usd``, so the two agree bit for bit.
        """
        counts = s.penalty_counts()
        seen = self._counts_seen
        if counts != seen:
            weights, usd, items = self.constants.penalty_weights, self._penalties_usd, self._items
            for k, count in enumerate(counts):
                if count != seen[k]:
                    seen[k] = count
                    usd[k] = items[_USD_KEYS[k]] = count * weights[k]
                    items[COUNT_KEYS[k]] = count
        cost_usd = s.cost_usd
        out = self._items.copy()
        out[COST_KEY] = cost_usd
        total = cost_usd
        for term_usd in self._penalties_usd:
            total += term_usd
        out[OBJECTIVE_KEY] = total
        return out

    def objective_usd(self, s: TwinState) -> float:
        """The objective accrued up to ``s.time_s``, USD (the sum of :meth:`objective`'s terms)."""
        total = s.cost_usd
        for count, weight in zip(s.penalty_counts(), self.constants.penalty_weights):  # noqa: B905  (hot; equal lengths)
            total += count * weight
        return total

    def job_counts(self, s: TwinState) -> dict[str, int]:
        """Number of jobs per status name (``future`` = not yet arrived); they sum to ``M``."""
        return dict(zip(STATUS_NAMES, s.jobs.status_counts, strict=True))

    def job_status(self, s: TwinState, job: int) -> str:
        """Status name of job ``job`` (index into ``spec.jobs``)."""
        return STATUS_NAMES[s.jobs.status[job]]

    def job_node(self, s: TwinState, job: int) -> int:
        """Node index a running job is on (-1 when not running)."""
        return s.jobs.node_of[job] if s.jobs.status[job] == RUNNING else -1

    def metrics(self, s: TwinState) -> dict[str, float]:
        """Episode metrics up to ``s.time_s``: objective terms, job counts, mean wait, utilisation, QoS, energy.

        ``mean_wait_s`` (per started job, its time queued before its starts, every queue spell
        counted as in the ``wait`` term) is 0.0 before any start; ``utilization_cpu`` (allocated / total
        millicore-seconds) is 0.0 at time 0, ``gpu_allocation_ratio`` likewise and without GPUs;
        ``gpu_fragmentation_rate`` (FGD's fragmented share of the free GPUs of up nodes, time
        averaged: :mod:`digital_twin.sim.tables.gpu_fragmentation`) is 0.0 while no GPU has been free;
        ``qos_compliance`` is 1.0 before any latency-critical start;
        ``node_energy_kwh`` and ``node_carbon_kg`` are the nodes' whole energy and emissions (the
        ``energy_kwh`` and ``carbon_kg`` counts are our jobs' share), NaN without energy accounting;
        ``workflow_makespan_s`` is the mean makespan of the workflows ended so far, each from its
        submission to its end (its last task's completion, or the horizon for one that failed or
        is unfinished, as the ``workflow`` term counts it, unweighted): 0.0 before any ends and
        without workflows.
        """
        c = self.constants
        out = self.objective_dict(s)  # as objective(s).as_dict(), bit for bit, and cheaper
        out.update({f"{name}_jobs": count for name, count in self.job_counts(s).items()})
        out["mean_wait_s"] = s.wait_sum_s / s.started_jobs if s.started_jobs else 0.0
        total_cpu_m_s = sum(c.cpu_m) * s.time_s
        out["utilization_cpu"] = s.alloc_cpu_m_s / total_cpu_m_s if total_cpu_m_s > 0 else 0.0
        out.update(_gpu_metrics(c, s))
        first_start_s = s.jobs.first_start_s
        lc_started = sum(1 for j in range(c.n_jobs) if c.is_lc[j] and first_start_s[j] >= 0)
        out["qos_compliance"] = 1.0 - s.penalty_counts()[_QOS] / lc_started if lc_started else 1.0
        energy = s.energy
        out["node_energy_kwh"] = energy.node_energy_j / J_PER_KWH if energy is not None else math.nan
        out["node_carbon_kg"] = energy.node_carbon_g / 1000.0 if energy is not None else math.nan
        out["workflow_makespan_s"] = _makespan_s(c, s)
        out["sim_time_s"] = s.time_s
        return out

    def runs_left(self, s: TwinState) -> list[tuple[int, int, float]]:
        """``(job, node, seconds)`` of every running job: the nominal work its run has left, node by node.

        Without work clocks that is ``start + duration - now``; on them (contention,
        interference), the run's finish on its clock less the clock brought to now at its current
        rate (the wall time it takes may change with the rate). Never negative.
        """
        c, runs = self.constants, s.runs
        out: list[tuple[int, int, float]] = []
        for i, jobs in enumerate(s.nodes.node_jobs):
            for j in jobs:
                left = runs.work_left_s(s, c, j, i)
                out.append((j, i, left if left > 0.0 else 0.0))
        return out

    def node_free(self, s: TwinState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Free cpu cores, free mem GB and free GPUs per node, each ``(N,)`` float64."""
        return (
            np.array(s.nodes.free_cpu_m, dtype=np.float64) / 1000.0,
            np.array(s.nodes.free_mem_mib, dtype=np.float64) / 1024.0,
            np.array(s.nodes.free_gpus, dtype=np.float64),
        )

    def node_up(self, s: TwinState) -> np.ndarray:
        """``(N,)`` bool: which nodes are up."""
        return np.array(s.nodes.up, dtype=bool)

    def running_by_type(self, s: TwinState) -> np.ndarray:
        """``(N, 3)`` int64: running jobs per node and workload type (``WORKLOAD_TYPES`` order)."""
        return np.array(s.nodes.running_counts, dtype=np.int64).reshape(3, self.constants.n_nodes).T.copy()

    def node_vector(self, s: TwinState) -> list[float]:
        """The dynamic node state as one flat list, for fast observation encoders.

        ``7 * N`` values, seven blocks of ``N`` in this order: free millicores, free MiB, free
        GPUs, up (0/1), running latency-critical, batch and stream jobs. A fresh list (safe to keep).
        """
        nodes = s.nodes
        vector: list[float] = [
            *nodes.free_cpu_m, *nodes.free_mem_mib, *nodes.free_gpus, *nodes.up, *nodes.running_counts,
        ]  # fmt: skip
        return vector

    def fits_by_resources(self, s: TwinState, j: int, i: int) -> bool:
        """Whether node ``i`` has the free cpu, memory and GPUs job ``j`` asks for now."""
        c = self.constants
        cpu, mem, gpus = c.req_cpu_m[j], c.req_mem_mib[j], c.req_gpus[j]
        nodes = s.nodes
        return nodes.free_cpu_m[i] >= cpu and nodes.free_mem_mib[i] >= mem and nodes.free_gpus[i] >= gpus

    def why_not(self, s: TwinState, j: int, node: object) -> str:
        """Why job ``j`` cannot be placed on ``node`` now (for :class:`~digital_twin.errors.InvalidPlacementError`)."""
        c = self.constants
        job = self.spec.jobs[j]
        if not isinstance(node, NODE_INDEX_TYPES) or not 0 <= node < c.n_nodes:
            return f"node index {node!r} is not in 0..{c.n_nodes - 1}"
        i = int(node)
        where = f"job {job.job_id!r} cannot go on {c.node_ids[i]}"
        nodes = s.nodes
        if not nodes.up[i]:
            return f"{where}: the node is down (spot interruption)"
        if i not in c.candidates[j]:
            return f"{where}: arch, GPU model/count/VRAM, size or a node-side placement rule never fits"
        if c.rules is not None and self.fits_by_resources(s, j, i):
            return f"{where} now: a required placement rule (anti-affinity, spread) forbids it"
        return (
            f"{where}: needs {c.req_cpu_m[j]} mcpu/{c.req_mem_mib[j]} MiB/{c.req_gpus[j]} GPU, "
            f"free {nodes.free_cpu_m[i]} mcpu/{nodes.free_mem_mib[i]} MiB/{nodes.free_gpus[i]} GPU"
        )

    def preference_weights(self, s: TwinState) -> np.ndarray:
        """``(N,)`` float64: the preference weight placing the current job on each node now would count.

        Zeros without placement rules or once the episode is over (:mod:`digital_twin.sim.tables.rule_checks`).
        """
        c = self.constants
        rules, tables = s.rules, c.rules
        if rules is None or tables is None or s.done:
            return np.zeros(c.n_nodes)
        return np.array([preference_weight(rules.counts, tables, s.current, i) for i in range(c.n_nodes)])

    def utilization_pct(self, s: TwinState) -> np.ndarray:
        """``(N,)`` float64: background cpu % now + allocated cpu / node cpu x 100 (may exceed 100)."""
        c = self.constants
        background = c.background_cpu_pct.row(self.tick_index(s))
        free_cpu_m = s.nodes.free_cpu_m
        return np.array([background[i] + 100.0 * (c.cpu_m[i] - free_cpu_m[i]) / c.cpu_m[i] for i in range(c.n_nodes)])

    def pending_jobs(self, s: TwinState) -> list[int]:
        """Job indices in the queue, starting with the current job, in the order they will be asked."""
        return s.queue.asking_order(s.current)

    def event_log(self, s: TwinState) -> list[LoggedEvent]:
        """A copy of the event log (empty unless recording)."""
        return list(s.events or [])

    def hindsight(self, s: TwinState) -> HindsightView:
        """The privileged, read-only view of the episode's future (for the oracle only)."""
        return HindsightView.build(self.spec, s.outages.interruptions_s, s.outages.recoveries_s)


def _gpu_metrics(c: TwinConstants, s: TwinState) -> dict[str, float]:
    """``gpu_allocation_ratio`` and ``gpu_fragmentation_rate`` of :meth:`TwinViews.metrics`."""
    fleet_gpu_s = sum(c.gpus) * s.time_s
    gpus = s.gpus
    allocation = gpus.allocated_s / fleet_gpu_s if fleet_gpu_s > 0 else 0.0
    fragmentation = gpus.fragmented_s / gpus.free_up_s if gpus.free_up_s > 0 else 0.0
    return {"gpu_allocation_ratio": allocation, "gpu_fragmentation_rate": fragmentation}


def _makespan_s(c: TwinConstants, s: TwinState) -> float:
    """``workflow_makespan_s`` of :meth:`TwinViews.metrics` (0.0 without workflows)."""
    workflows, dag = s.workflows, c.dag
    if workflows is None or dag is None:
        return 0.0
    end_s = workflows.workflow_end_s
    ended = [w for w in range(dag.n_workflows) if end_s[w] >= 0.0]
    if not ended:
        return 0.0
    return sum(end_s[w] - dag.submitted_s[w] for w in ended) / len(ended)
