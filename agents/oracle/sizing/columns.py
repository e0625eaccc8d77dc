"""What the size estimate reads from an episode: per-job and per-shape columns, no option built.

:class:`EpisodeColumns` holds ``J'``-long arrays of the placeable jobs and ``S``-long arrays of
the fleet's node shapes (:mod:`agents.oracle.model.fit`), from which
:mod:`agents.oracle.sizing.counts` bounds the programs' sizes.
"""

from __future__ import annotations

import math

import numpy as np

from agents.oracle.bounds.decision_times import grid_bounds_for
from agents.oracle.model.fit import mebibytes, millicores, node_shapes
from agents.oracle.model.instance import first_expiries_s, longest_runs, slowest_rates, static_events
from digital_twin import HindsightView
from digital_twin.jobs import LATENCY_CRITICAL, WORKLOAD_TYPES
from digital_twin.objective import ACTIVE_NODES

_MAX_BIN_EDGES = 2048
"""Grid edges used to bin usage ends (a coarser binning only loosens the bound)."""


class EpisodeColumns:
    """What the counts read from an episode; job arrays (``(J',)``) cover the placeable jobs.

    Attributes:
        n_nodes, n_jobs: Fleet size and workload size (submitted or not).
        fits: ``(S, J')`` bool, job fits an empty node of shape ``s``; ``sizes``: ``(S,)`` nodes
            per shape; ``capacity``: ``(S, 3)`` cpu millicores, MiB and GPUs of the shape.
        a, d, w: Arrival, duration and first window end (seconds).
        longest: ``(J',)`` the longest a run can last under contention (seconds; ``d`` without).
        slowed: ``(S,)`` bool, a node of the shape can slow down (cpu contention, ``prorated``:
            the programs' slowdown rows exist).
        need: ``(3, J')`` cpu millicores, MiB and GPUs requested.
        events: ``(E,)`` static event times; ``ticks``: ``(K,)``; ``edges``: relaxation grid.
        expiries: ``(J',)`` first TTL expiries (empty without a TTL): possible events only.
        has_parents: ``(J',)`` bool, a workflow task released by its parents (its relaxation
            window runs to the horizon).
        shape_ints: Per shape, the sorted interruption times of all its nodes.
        shape_cuts_sum, shape_cuts_max: ``(S,)`` interruptions plus twice the down windows,
            summed over and maximal among the shape's nodes.
    """

    def __init__(self, view: HindsightView, divisor: int) -> None:
        spec, jobs = view.spec, view.spec.jobs
        self.n_nodes, self.n_jobs = len(spec.fleet), len(jobs)
        self.horizon = float(spec.settings.horizon_s)
        self.ttl = None if spec.settings.queue_ttl_s is None else float(spec.settings.queue_ttl_s)
        self.active = spec.settings.cost_model == ACTIVE_NODES
        self.ticks = np.asarray(view.tick_times_s, dtype=np.float64)
        shapes = node_shapes(spec.fleet, jobs)
        submitted = jobs.arrival_s < self.horizon
        placeable = submitted & (shapes.n_candidates > 0)
        self.events = static_events(view, self.ticks, submitted)
        self.edges = grid_bounds_for(self.horizon, float(spec.tick_s), divisor)
        self.fits = shapes.fits[:, placeable]
        self.sizes = shapes.sizes
        self.c = shapes.n_candidates[placeable]
        first = [spec.fleet[int(m[0])] for m in shapes.members]
        self.capacity = np.array([[millicores(n.cpu_cores), mebibytes(n.mem_gb), n.gpu_count] for n in first],
                                 dtype=np.float64).reshape(-1, 3)
        self.a, self.d = jobs.arrival_s[placeable], jobs.duration_s[placeable]
        rates = slowest_rates(view)
        shape_rate = np.array([rates[np.asarray(m)].min() for m in shapes.members]).reshape(-1, 1)  # (S, 1)
        slowest = np.where(self.fits, shape_rate, 1.0).min(axis=0, initial=1.0)  # (J',)
        self.longest = longest_runs(self.d, slowest)
        self.slowed = (shape_rate[:, 0] < 1.0) & (spec.settings.cost_model != ACTIVE_NODES)
        ttl = math.inf if self.ttl is None else self.ttl
        self.w = np.minimum(self.a + ttl, self.horizon)
        self.expiries = first_expiries_s(self.a, self.ttl)
        self.need = np.stack((np.rint(jobs.cpu_cores[placeable] * 1000.0), np.rint(jobs.mem_gb[placeable] * 1024.0),
                              jobs.gpu_count[placeable].astype(np.float64)))
        self.lc = jobs.workload_index[placeable] == WORKLOAD_TYPES.index(LATENCY_CRITICAL)
        self.preemptible = jobs.preemptible[placeable]
        graph = jobs.graph()
        has_parents = np.zeros(self.n_jobs, dtype=bool) if graph is None else np.array(
            [len(p) > 0 for p in graph.parents], dtype=bool)
        self.has_parents = has_parents[placeable]
        self.deadlines = jobs.deadline_s[placeable]
        self.shape_ints = [np.sort(np.array([t for i in m for t in view.interruptions_s[i]], dtype=np.float64))
                           for m in shapes.members]
        per_node = [np.array([len(view.interruptions_s[i]) + 2 * len(view.down_windows_s[i]) for i in m])
                    for m in shapes.members]
        self.shape_cuts_sum = np.array([int(p.sum()) for p in per_node], dtype=np.int64)
        self.shape_cuts_max = np.array([int(p.max()) for p in per_node], dtype=np.int64)
        self.downs = np.sort(np.array([t for w in view.down_windows_s for pair in w for t in pair], dtype=np.float64))

    @property
    def bin_edges(self) -> np.ndarray:
        """Grid edges (at most :data:`_MAX_BIN_EDGES`, always 0 and H) for binning usage ends."""
        step = max(1, math.ceil(len(self.edges) / _MAX_BIN_EDGES))
        return np.unique(np.concatenate((self.edges[::step], self.edges[-1:])))
