"""The memory the oracle would take on an episode, estimated before anything is built.

:func:`estimate_oracle_memory` counts each program's options, variables, constraints and
non-zeros from the episode's columns (:mod:`agents.oracle.sizing.counts`: upper bounds, computed
from ``J``-long arrays and the relaxation's grid, never from the options themselves), and turns
them into the peak memory of :func:`~agents.oracle.solve_oracle`. On a 500-node fleet with
5,000 jobs it takes under a second and about 3 MB (tracemalloc), against the terabytes the
programs would need.

**Bytes.** The estimate is the memory the solve adds to the process: the instance's arrays plus
the largest phase, which is building the plan's options; solving the plan program (its options
alive); building the relaxation's options and solving it (both option sets alive). Solving a
program costs :data:`SOLVER_BYTES_PER_NONZERO` per non-zero and
:data:`SOLVER_BYTES_PER_ROW_OR_COLUMN` per row and per column (the builder's pieces, the
compressed matrix, SciPy's copy of its values, HiGHS's presolved copies, row- and column-wise
LP, factorisation), plus the growth of HiGHS's search tree and cut pool,
:data:`SEARCH_BYTES_PER_SECOND` over the time limit but at most
:data:`SEARCH_BYTES_PER_ENTRY` per non-zero, row and column. An option set costs
:data:`OPTION_BYTES` per option and :data:`GROUP_BYTES` per (job, node) group while assembled.

**How the constants were measured.** Each phase (options, then build + solve of each program)
ran in a fresh process with the default 60 s limits; its cost is the process's peak resident set
(``VmHWM``, restarted through ``/proc/self/clear_refs``) minus its resident set before the phase,
because tracemalloc does not see HiGHS's C++ allocations. Instances: the default scenario, and
generated fleets of the default's five node types (``fleet: generate``) with the bundled
synthetic background at spread offsets and synthetic jobs over 4 hours, under both cost models.
HiGHS took from 220 bytes per non-zero (16M non-zeros: 3.6 GB) to 1,700 (small ``active-nodes``
programs, whose search grew by 1-5 MB/s for the whole minute); each constant covers every phase
measured. Whole solves, measured the same way from just before :func:`~agents.oracle.solve_oracle` (seed 0):

=====================  =========  ====  =====  ============  ============  =====
scenario               cost       N     J      estimate MB   measured MB   ratio
=====================  =========  ====  =====  ============  ============  =====
fleet5-synthetic       prorated   5     45     111           35            3.2
fleet5-synthetic       active     5     45     558           239           2.3
generated              prorated   20    45     374           63            5.9
generated              active     20    45     747           601           1.2
generated              prorated   50    45     626           115           5.4
generated              active     50    45     1,289         420           3.1
generated              prorated   20    177    988           502           2.0
generated              prorated   50    456    5,680         3,937         1.4
gpu32-alibaba2023      prorated   32    100    1,573         661           2.4
hpc-swf                prorated   4     60     568           104           5.5
=====================  =========  ====  =====  ============  ============  =====

The estimate was above the measured peak everywhere, by 1.2x to 6x (most where the search
allowance dominates a small program). A longer time limit lets the search grow further; the
allowance grows with it, up to its cap.

Example:
    >>> import numpy as np
    >>> from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, Telemetry, TwinSpec, default_fleet
    >>> jobs = tuple(JobSpec(f"j{k}", 60.0 * k, 600.0, "batch", 4, 8) for k in range(10))
    >>> telemetry = Telemetry.constant(5, 30, 40, 3600, 300)
    >>> twin = DigitalTwin(TwinSpec(default_fleet(), jobs, telemetry, EpisodeSettings(3600)))
    >>> twin.reset(np.random.default_rng(0))
    >>> estimate = estimate_oracle_memory(twin.hindsight())
    >>> estimate.plan.n_options >= 10 * 5, estimate.peak_bytes < 100e6
    (True, True)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from agents.oracle.model.energy import charged
from agents.oracle.sizing.budget import format_bytes
from agents.oracle.sizing.columns import EpisodeColumns
from agents.oracle.sizing.counts import ProgramSize, bound_size, plan_size
from digital_twin import HindsightView

SOLVER_BYTES_PER_NONZERO = 200
"""Bytes per matrix non-zero of a program (the builder's pieces, the matrix, SciPy's and HiGHS's copies)."""
SOLVER_BYTES_PER_ROW_OR_COLUMN = 100
"""Bytes per constraint and per variable of a program (bounds, costs, bases, domains)."""
SEARCH_BYTES_PER_SECOND = 8_000_000
"""Growth of HiGHS's branch-and-bound tree and cut pool per second of solving (5.4 MB/s seen)."""
SEARCH_BYTES_PER_ENTRY = 1500
"""Cap on that growth per non-zero, row and column (a small program stops growing early)."""
OPTION_BYTES = 250
"""Bytes per option while an option set is assembled (14 fields, concatenated, filtered)."""
GROUP_BYTES = 4096
"""Bytes per (job, node) group while an option set is assembled (per-group arrays and dicts)."""


def options_bytes(size: ProgramSize) -> int:
    """Peak bytes of assembling a program's option set."""
    return OPTION_BYTES * size.n_options + GROUP_BYTES * size.n_groups


def solver_bytes(size: ProgramSize, time_limit_s: float) -> int:
    """Peak bytes of building and solving a program for up to ``time_limit_s``, its options excluded."""
    rows_and_columns = size.n_variables + size.n_constraints
    search = min(SEARCH_BYTES_PER_SECOND * time_limit_s, SEARCH_BYTES_PER_ENTRY * (size.n_nonzeros + rows_and_columns))
    return int(SOLVER_BYTES_PER_NONZERO * size.n_nonzeros + SOLVER_BYTES_PER_ROW_OR_COLUMN * rows_and_columns + search)


@dataclass(frozen=True)
class OracleSizeEstimate:
    """What :func:`~agents.oracle.solve_oracle` would build for one episode, and the memory it would take.

    Attributes:
        n_nodes, n_jobs, n_ticks: The fleet, the workload (submitted or not), the SLA ticks.
        plan: Upper bounds on the plan program's size (the larger of the nominal and the
            worst-case plan under cpu contention; they are solved one after the other).
        bound: Upper bounds on the relaxation's size (``None`` when the bound is not computed).
        instance_bytes: The episode's arrays: ``(J, N)`` rates, ``(K, N)`` SLA tables, the
            candidate lists and, with energy or carbon weighed, the energy charges.
        time_limit_s: Time limit of each solve (HiGHS's search grows with it).
    """

    n_nodes: int
    n_jobs: int
    n_ticks: int
    plan: ProgramSize
    bound: ProgramSize | None
    instance_bytes: int
    time_limit_s: float

    @property
    def peak_bytes(self) -> int:
        """Estimated peak memory of the solve above the interpreter's own, in bytes."""
        plan_options = options_bytes(self.plan)
        phases = [plan_options + solver_bytes(self.plan, self.time_limit_s)]
        if self.bound is not None:
            phases.append(plan_options + options_bytes(self.bound) + solver_bytes(self.bound, self.time_limit_s))
        return self.instance_bytes + max(phases)

    def describe(self) -> str:
        """One line: fleet, jobs, each program's size and the estimated peak."""
        programs = [f"plan {_program_text(self.plan)}"]
        if self.bound is not None:
            programs.append(f"bound {_program_text(self.bound)}")
        return (f"{self.n_nodes} nodes, {self.n_jobs} jobs; {'; '.join(programs)}; "
                f"estimated peak {format_bytes(self.peak_bytes)}")


def larger(a: ProgramSize, b: ProgramSize) -> ProgramSize:
    """Each count the larger of ``a``'s and ``b``'s (a bound on either program)."""
    return ProgramSize(*(max(x, y) for x, y in zip(dataclasses.astuple(a), dataclasses.astuple(b), strict=True)))


def _program_text(size: ProgramSize) -> str:
    return f"{size.n_variables:,} variables x {size.n_constraints:,} rows, {size.n_nonzeros:,} non-zeros"


def estimate_oracle_memory(
    hindsight: HindsightView,
    time_limit_s: float = math.inf,
    bound_grid_divisor: int = 5,
    max_points_per_cell: int = 3,
    *,
    compute_bound: bool = True,
) -> OracleSizeEstimate:
    """Estimate what :func:`~agents.oracle.solve_oracle` builds for this episode, without building it.

    Args:
        hindsight: The episode (``hindsight_of(env)`` after ``reset``).
        time_limit_s: Wall-time cap of each HiGHS solve (``math.inf``, the default: none; the
            search's memory is then estimated at its cap).
        bound_grid_divisor: As for :func:`~agents.oracle.solve_oracle` (the relaxation's grid).
        max_points_per_cell: As for :func:`~agents.oracle.solve_oracle`.
        compute_bound: False leaves the relaxation out (``bound`` is ``None``).
    """
    ep = EpisodeColumns(hindsight, bound_grid_divisor)
    n_ticks = len(ep.ticks)
    rates = 8 * ep.n_jobs * ep.n_nodes  # rate_per_s: (J, N) float64
    sla = 4 * 8 * n_ticks * ep.n_nodes  # sla_allowed, background, slowest rates, the plan's loads: (K, N)
    candidates = 40 * int(ep.c.sum())  # a Python int per (job, node) pair in the candidate tuples
    # energy weighed: 4 float64 arrays per node over its pieces (ticks, and arrivals of its candidates)
    energy = 4 * 8 * (ep.n_nodes * (n_ticks + 2) + int(ep.c.sum())) if charged(hindsight) else 0
    return OracleSizeEstimate(
        n_nodes=ep.n_nodes,
        n_jobs=ep.n_jobs,
        n_ticks=n_ticks,
        plan=larger(plan_size(ep), plan_size(ep, ep.longest)),
        bound=bound_size(ep, max_points_per_cell) if compute_bound else None,
        instance_bytes=rates + sla + candidates + energy,
        time_limit_s=float(time_limit_s),
    )
