"""The privileged, read-only view of an episode's future, for the oracle.

An online agent in the env sees only the present and the past (``aco_env.ClusterView``: the
telemetry up to the current tick, the jobs that have arrived). The oracle computes the offline
optimum with full hindsight, and reads everything it needs through :class:`HindsightView`,
obtained from :meth:`digital_twin.DigitalTwin.hindsight` after ``reset`` (through
``ClusterSchedulingEnv.hindsight()`` in the env): never through private attributes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from digital_twin.fleet import NodeSpec
from digital_twin.spec import TwinSpec
from digital_twin.workload import Workload


@dataclass(frozen=True, eq=False)
class HindsightView:
    """What will happen in the episode regardless of the agent's decisions.

    Attributes:
        spec: The episode's fixed inputs (fleet, all jobs with arrivals and durations,
            telemetry, and its settings: horizon, TTL, SLA threshold, cost model, weights).
        interruptions_s: Per node, the sorted times at which it is interrupted (only
            effective interruptions: each hits an up node). Empty for on-demand nodes.
        recoveries_s: Per node, when each interruption ends (``spot_recovery_s`` after it,
            or where a replayed trace says; ``inf``: never).
        down_windows_s: Per node, ``(start, end)`` intervals during which it is down
            (``interruptions_s`` with ``recoveries_s``; may extend past the horizon).
        background_cpu_pct: ``(n_ticks, n_nodes)`` read-only array of background cpu %.
        background_mem_pct: ``(n_ticks, n_nodes)`` read-only array of background mem %.
        tick_times_s: ``(n_sla_ticks,)`` read-only array of the SLA sampling times: the
            episode's ticks ``k * tick_s`` (``spec.grid``, :mod:`digital_twin.tick_grid`).
    """

    spec: TwinSpec
    interruptions_s: tuple[tuple[float, ...], ...]
    recoveries_s: tuple[tuple[float, ...], ...]
    down_windows_s: tuple[tuple[tuple[float, float], ...], ...]
    background_cpu_pct: np.ndarray  # (n_ticks, n_nodes)
    background_mem_pct: np.ndarray  # (n_ticks, n_nodes)
    tick_times_s: np.ndarray  # (n_sla_ticks,)

    @classmethod
    def build(
        cls, spec: TwinSpec, interruptions_s: tuple[tuple[float, ...], ...], recoveries_s: tuple[tuple[float, ...], ...]
    ) -> HindsightView:
        """Assemble the view from a spec, the effective interruption times and their ends."""
        windows = tuple(
            tuple(zip(times, ends, strict=True)) for times, ends in zip(interruptions_s, recoveries_s, strict=True)
        )
        background = spec.telemetry.background_pct  # already read-only
        ticks = spec.grid.times_s()
        ticks.setflags(write=False)
        return cls(spec, interruptions_s, recoveries_s, windows, background[:, :, 0], background[:, :, 1], ticks)

    @property
    def fleet(self) -> tuple[NodeSpec, ...]:
        """The nodes, in action order."""
        return self.spec.fleet

    @property
    def jobs(self) -> Workload:
        """Every job of the episode (future arrivals included), sorted by arrival."""
        return self.spec.jobs

    def replayable_spec(self) -> TwinSpec:
        """``spec`` with this episode's outages fixed: a twin reset on it replays them, drawing nothing."""
        spec, interruptions = self.spec, self.interruptions_s
        return dataclasses.replace(spec, fixed_interruptions_s=interruptions, fixed_recoveries_s=self.recoveries_s)

    def is_down(self, node: int, time_s: float) -> bool:
        """Whether ``node`` is down at ``time_s`` (down windows are half-open ``[start, end)``)."""
        return any(start <= time_s < end for start, end in self.down_windows_s[node])
