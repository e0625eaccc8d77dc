"""Work clocks: how runs progress when something slows them (contention, co-location interference).

When jobs can run slower than nominal (cpu contention, :mod:`digital_twin.sim.tables.contention`,
or co-location interference, :mod:`digital_twin.sim.tables.interference`; ``TwinConstants.clocked``),
the jobs of one *lane* on one node share a progress rate, so they share a *work clock* ``q = lane
* N + node`` (the node itself without interference): its rate integrated over time, brought up to
now (:meth:`WorkClocks.settle`) before the rate changes. A run completes when its clock reaches
the clock at its start plus its nominal duration; a clock has one completion event, for its
earliest-finishing run, replaced (a new token) whenever its rate changes (:meth:`WorkClocks.update_rate`).

A clock's rate is the node's processor-sharing rate under the tick's background (1 without
contention) times its lane's interference factor. It changes at ticks and when a job starts or
ends on the node: a start or an end changes the node's cpu demand and which aggressors run
there, so every busy lane of the node is looked at (:meth:`WorkClocks.update_node_lanes`).
"""

from __future__ import annotations

import heapq
from typing import Final

from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import COMPLETION, CoreState, Runs
from digital_twin.sim.tables.contention import progress_rate
from digital_twin.sim.tables.interference import count_aggressor, lane_factor

_heappush: Final = heapq.heappush  # (Finals: the compiled core keeps them, not looking them up at each call)
_heappop: Final = heapq.heappop


def clock_of(c: TwinConstants, j: int, i: int) -> int:
    """The work clock of job ``j`` on node ``i``: ``lane * N + i``."""
    return c.lane_of[j] * c.n_nodes + i


class WorkClocks(Runs):
    """Runs on work clocks (``N * L`` clocks: clock ``q = lane * N + node``; ``M`` jobs).

    Attributes:
        rate: ``(N * L,)`` progress rate of the clock's jobs, nominal seconds per second (1.0
            while nothing slows them).
        rate_since_s: ``(N * L,)`` when ``work_clock_s`` was last brought up to date (settled).
        work_clock_s: ``(N * L,)`` nominal seconds of work each of the clock's jobs has done per
            second, summed since the episode began (``rate`` integrated up to ``rate_since_s``).
        runs_by_finish: ``(N * L,)`` a heap of ``(finish_clock_s, job, generation)`` of the
            clock's runs; entries of ended runs stay until they reach the top (their job's
            generation has moved on).
        completion_token: ``(N * L,)`` the token of the clock's one live completion event (for
            its earliest run); an event with another token is stale, dropped without waking the loop.
        clock_runs: ``(N * L,)`` with interference, the runs on each clock (which lanes are busy).
        aggressors: ``(E * N,)`` with interference, running aggressors per entry and node (index
            ``entry * N + node``, :mod:`digital_twin.sim.tables.interference`); empty without.
        finish_clock_s: ``(M,)`` the clock's ``work_clock_s`` at which the job's current run
            completes (the clock at its start plus its nominal duration).
    """

    def __init__(
        self, rate: list[float], rate_since_s: list[float], work_clock_s: list[float],
        runs_by_finish: list[list[tuple[float, int, int]]], completion_token: list[int], clock_runs: list[int],
        aggressors: list[int], finish_clock_s: list[float],
    ) -> None:  # fmt: skip
        self.rate = rate
        self.rate_since_s = rate_since_s
        self.work_clock_s = work_clock_s
        self.runs_by_finish = runs_by_finish
        self.completion_token = completion_token
        self.clock_runs = clock_runs
        self.aggressors = aggressors
        self.finish_clock_s = finish_clock_s

    @classmethod
    def of(cls, c: TwinConstants) -> WorkClocks:
        """Every clock at 0, at rate 1, idle."""
        clocks = c.n_nodes * c.n_lanes
        lanes = c.lanes
        return cls(
            rate=[1.0] * clocks,
            rate_since_s=[0.0] * clocks,
            work_clock_s=[0.0] * clocks,
            runs_by_finish=[[] for _ in range(clocks)],
            completion_token=[0] * clocks,
            clock_runs=[0] * clocks,
            aggressors=[0] * (lanes.n_entries * c.n_nodes if lanes is not None else 0),
            finish_clock_s=[0.0] * c.n_jobs,
        )

    def copy(self) -> WorkClocks:
        """An independent copy (the heaps too; their entries are immutable)."""
        return WorkClocks(
            self.rate.copy(), self.rate_since_s.copy(), self.work_clock_s.copy(),
            [runs.copy() for runs in self.runs_by_finish], self.completion_token.copy(), self.clock_runs.copy(),
            self.aggressors.copy(), self.finish_clock_s.copy(),
        )  # fmt: skip

    def __reduce__(self) -> tuple[type[WorkClocks], tuple[object, ...]]:
        """Pickle by its fields (compiled, the class has no default pickling)."""
        return WorkClocks, (
            self.rate, self.rate_since_s, self.work_clock_s, self.runs_by_finish, self.completion_token,
            self.clock_runs, self.aggressors, self.finish_clock_s,
        )  # fmt: skip

    # ------------------------------------------------------------------ the clocks
    def settle(self, s: CoreState, q: int) -> None:
        """Bring clock ``q`` up to now, at the rate its jobs ran since the last settle."""
        t = s.time_s
        elapsed = t - self.rate_since_s[q]
        if elapsed > 0.0:
            self.work_clock_s[q] += self.rate[q] * elapsed
        self.rate_since_s[q] = t

    def update_rate(self, s: CoreState, c: TwinConstants, i: int, q: int, k: int) -> bool:
        """Recompute clock ``q``'s rate (node ``i``) under tick ``k``; if it changed, settle it and reschedule.

        Returns:
            Whether the rate changed (the clock's completion event was then replaced).
        """
        cpu_m = c.cpu_m[i]
        background_m = c.background_cpu_m.row(k)[i]
        rate = progress_rate(background_m, cpu_m - s.nodes.free_cpu_m[i], cpu_m) if c.contention else 1.0
        lanes = c.lanes
        if lanes is not None:
            rate *= lane_factor(self.aggressors, lanes, q // c.n_nodes, i, c.n_nodes)
        if rate == self.rate[q]:
            return False
        self.settle(s, q)  # the old rate held until now (the clock needs settling only when the rate changes)
        self.rate[q] = rate
        self.schedule_completion(s, q)
        return True

    def update_node_lanes(self, s: CoreState, c: TwinConstants, j: int, i: int, k: int, delta: int) -> None:
        """With interference: job ``j`` starts (``delta`` +1) or ends (-1) on node ``i``; the other lanes follow.

        Counts ``j`` among the node's aggressors and its clock's runs, then updates the rate of every
        other lane with runs on the node (``j``'s own clock is the caller's).
        """
        lanes = c.lanes
        assert lanes is not None
        n = c.n_nodes
        count_aggressor(self.aggressors, lanes, j, i, n, delta)
        own = clock_of(c, j, i)
        self.clock_runs[own] += delta
        for lane in range(lanes.n_lanes):
            q = lane * n + i
            if q != own and self.clock_runs[q]:
                self.update_rate(s, c, i, q, k)

    def first_run(self, s: CoreState, q: int) -> int:
        """The job whose run on clock ``q`` completes first (-1: none runs), dropping ended runs from the heap top."""
        runs, generation = self.runs_by_finish[q], s.jobs.generation
        while runs and generation[runs[0][1]] != runs[0][2]:
            _heappop(runs)
        return runs[0][1] if runs else -1

    def schedule_completion(self, s: CoreState, q: int) -> None:
        """Replace clock ``q``'s completion event: its first run completes when the clock reaches its finish.

        The clock must be settled to now. The previous event becomes stale (a new token); no event
        is scheduled while nothing runs on the clock.
        """
        self.completion_token[q] += 1
        j = self.first_run(s, q)
        if j >= 0:
            left = self.finish_clock_s[j] - self.work_clock_s[q]
            s.schedule(s.time_s + (left if left > 0.0 else 0.0) / self.rate[q], COMPLETION, q, self.completion_token[q])

    def clock_now(self, s: CoreState, q: int) -> float:
        """Clock ``q`` at ``s.time_s``, at its current rate (without settling it)."""
        return self.work_clock_s[q] + self.rate[q] * (s.time_s - self.rate_since_s[q])

    # ------------------------------------------------------------------ Runs
    def start(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        """Job ``j``'s run joins its clock: it finishes when the clock has done its duration."""
        q = clock_of(c, j, i)
        self.settle(s, q)  # the clock's jobs progressed at the old rate until now
        finish = self.work_clock_s[q] + c.duration_s[j]
        self.finish_clock_s[j] = finish
        _heappush(self.runs_by_finish[q], (finish, j, s.jobs.generation[j]))
        k = s.current_tick(c)
        if c.lanes is not None:
            self.update_node_lanes(s, c, j, i, k, 1)
        if not self.update_rate(s, c, i, q, k) and self.first_run(s, q) == j:
            self.schedule_completion(s, q)  # the rate is the same, but j completes first

    def before_end(self, s: CoreState, c: TwinConstants, j: int, i: int) -> bool:
        """Settle ``j``'s clock; whether ``j``'s run is the one its completion event is for."""
        q = clock_of(c, j, i)
        self.settle(s, q)
        return self.first_run(s, q) == j

    def end(self, s: CoreState, c: TwinConstants, j: int, i: int, was_first: bool) -> None:
        """The node's other runs may speed up; the clock's next run takes its completion event if ``j`` held it."""
        k = s.current_tick(c)
        if c.lanes is not None:
            self.update_node_lanes(s, c, j, i, k, -1)
        if not self.update_rate(s, c, i, clock_of(c, j, i), k) and was_first:
            self.schedule_completion(s, clock_of(c, j, i))  # j's completion event was the clock's

    def on_tick(self, s: CoreState, c: TwinConstants, k: int) -> None:
        """Under contention the background changes the rates of the busy nodes' clocks (in fleet order)."""
        if not c.contention:
            return
        n = c.n_nodes
        node_jobs, free_cpu_m, cpu_m, rate = s.nodes.node_jobs, s.nodes.free_cpu_m, c.cpu_m, self.rate
        background_m = c.background_cpu_m.row(k)
        n_clocks = n * c.n_lanes
        lanes = c.lanes
        for i in range(n):
            if not node_jobs[i]:
                continue
            if lanes is not None:  # the background changes the base rate of every busy lane
                for q in range(i, n_clocks, n):
                    if self.clock_runs[q]:
                        self.update_rate(s, c, i, q, k)
            # A node whose demand stays within its cores keeps rate 1 (progress_rate): skip the call.
            elif rate[i] != 1.0 or background_m[i] + (cpu_m[i] - free_cpu_m[i]) > cpu_m[i]:
                self.update_rate(s, c, i, i, k)

    def is_stale(self, s: CoreState, index: int, generation: int) -> bool:
        """A completion event about clock ``index`` is stale once the clock's token moved on."""
        return generation != self.completion_token[index]

    def completing(self, s: CoreState, index: int, generation: int) -> int:
        """The first run of clock ``index`` (the event's token must be live), or -1."""
        if self.completion_token[index] != generation:
            return -1
        return self.first_run(s, index)

    def work_done_s(self, s: CoreState, c: TwinConstants, j: int) -> float:
        """Its duration less the work its clock has still to do before the run's finish."""
        q = clock_of(c, j, s.jobs.node_of[j])
        return c.duration_s[j] - (self.finish_clock_s[j] - self.clock_now(s, q))

    def settled_work_done_s(self, s: CoreState, c: TwinConstants, j: int) -> float:
        """:meth:`work_done_s`, the clock settled to now first (the horizon's judgement)."""
        q = clock_of(c, j, s.jobs.node_of[j])
        self.settle(s, q)
        return c.duration_s[j] - (self.finish_clock_s[j] - self.work_clock_s[q])

    def work_left_s(self, s: CoreState, c: TwinConstants, j: int, i: int) -> float:
        """The run's finish on its clock less the clock brought to now at its current rate."""
        return self.finish_clock_s[j] - self.clock_now(s, clock_of(c, j, i))
