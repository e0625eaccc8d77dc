"""The least energy and emissions a run adds to its node: what the oracle charges the ``energy`` and ``carbon`` terms.

The twin charges our jobs the power they add to each node (:mod:`digital_twin.energy.model`):
``curve(u) - curve(u_bg)`` of the host, with ``u_bg = bg / C`` and ``u = min(1, (bg + A) / C)``
(``bg`` the tick's background millicores, ``A`` our jobs' allocated millicores, ``C`` the
node's), plus ``busy - idle`` watts per GPU our jobs hold; energy is that power over time,
emissions that power times the region's carbon intensity over time
(:mod:`digital_twin.sim.features.energy_accounting`). The node-level figure is not a sum over jobs (the curve
is not linear, and it saturates at ``u = 1``), so a
run is charged here a share of it that no set of runs held together can exceed:

* **Host.** On node ``i`` at time ``t``, let ``A_max(t) = min(C, sum of the cpu of the jobs
  arrived by t with i as a candidate)``: every allocation the twin can hold there then is at
  most that (it never allocates past the cores, nor a job before its arrival or off its
  candidates). A job of ``c`` millicores running there is charged ``w(t) x c`` watts, with
  ``w = m x h / C``, ``h = min(1, max(0, C - bg) / A_max)`` and ``m`` the least slope (W per
  unit utilisation) of the curve's segments meeting ``[u_bg, min(1, u_bg + A_max / C)]``
  (at least :meth:`~digital_twin.energy.PowerCurve.min_slope_w`, the least over the whole
  curve). *Why it is a lower bound, whoever shares the node:* for jobs ``S`` running together
  (``A = sum c_S <= A_max``) the charges sum to ``m x h x A / C``. Since ``h <= 1`` that is at
  most ``m x A / C``, and since ``h <= (C - bg) / A_max`` at most ``m x (C - bg) / C``: at most
  ``m x (u - u_bg)``, as ``u - u_bg = min(A, C - bg) / C``. A secant of a piecewise-linear
  curve over ``[u_bg, u]`` is a mean of the slopes of the segments it crosses, all in the range
  ``m`` is the least over, so ``curve(u) - curve(u_bg) >= m x (u - u_bg)``. On a node the
  background saturates (``bg >= C``) the charge is 0, as the twin's. With a linear curve and a
  node our jobs can never saturate (``bg + A_max <= C``) the charge is exact.
* **GPUs.** ``(busy - idle) x gpus`` watts, exactly what the twin adds for the job's GPUs while
  it runs, for a job with at least one millicore. A GPU job whose cpu rounds to 0 millicores
  is charged 0, below the twin's count (it counts that job's GPUs too): valid, and such jobs
  are rare (a request under half a millicore).
* **Time.** The charge is the integral of that power over an interval the run surely covers
  (:mod:`agents.oracle.model.terms` says which: a run's nominal ``[s, min(s + d, H))``, a
  cell's core, an evicted run's ``[s, t)``). Contention only lengthens a run, and a longer run
  adds power for longer, so the nominal interval is a lower bound of the run's time; the
  integrands are >= 0. Emissions integrate the same power times the region's intensity
  exactly (:meth:`~digital_twin.energy.CarbonIntensity.g_per_kwh_integral`; the oracle knows
  the whole series with hindsight).

Everything is integrated exactly: ``w`` is constant between the node's *breaks* (its ticks,
the arrivals while ``A_max`` is below the cores, 0 and the horizon), and the cumulative
integrals at the breaks turn any interval's charge into two look-ups. Units: watts, seconds,
kWh and kg CO2eq (the ``energy`` and ``carbon`` counts of :data:`~digital_twin.objective.PENALTIES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from digital_twin import HindsightView
from digital_twin.energy.carbon_intensity import J_PER_KWH, CarbonIntensity
from digital_twin.energy.power_curves import PowerCurve

_G_PER_KG = 1000.0


@dataclass(frozen=True, eq=False)
class NodeEnergy:
    """One node's host charge as a step function of time, and what a GPU of it adds.

    Attributes:
        breaks_s: ``(P + 1,)`` increasing piece boundaries from 0 to the horizon, seconds.
        host_w_per_m: ``(P,)`` ``w`` on each piece: least host watts per millicore of a running job.
        host_j_per_m: ``(P + 1,)`` the integral of ``w`` from 0 to each break, J per millicore.
        host_gs_per_m: ``(P + 1,)`` the integral of ``w`` x intensity from 0 to each break,
            W x (g/kWh) x s per millicore.
        gpu_w: Busy minus idle watts of one of its GPUs (0 without GPUs).
        carbon: Its region's carbon intensity.
    """

    breaks_s: np.ndarray  # (P + 1,)
    host_w_per_m: np.ndarray  # (P,)
    host_j_per_m: np.ndarray  # (P + 1,)
    host_gs_per_m: np.ndarray  # (P + 1,)
    gpu_w: float
    carbon: CarbonIntensity

    def host_integrals(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(J, W (g/kWh) s)`` per millicore from 0 to each of ``t`` (``(n,)`` in ``[0, H]``)."""
        k = np.clip(np.searchsorted(self.breaks_s, t, side="right") - 1, 0, len(self.host_w_per_m) - 1)
        w, since = self.host_w_per_m[k], self.breaks_s[k]
        energy = self.host_j_per_m[k] + w * (t - since)
        grams = self.host_gs_per_m[k] + w * self.carbon.g_per_kwh_integral(since, t)
        return energy, grams


@dataclass(frozen=True, eq=False)
class RunEnergy:
    """The least kWh and kg CO2eq a run adds to its node, per node (see the module docstring).

    Attributes:
        nodes: One :class:`NodeEnergy` per fleet node.
    """

    nodes: tuple[NodeEnergy, ...]

    def run_counts(
        self, cpu_m: int, gpus: int, node: int, t0: np.ndarray, t1: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``((n,) kWh, (n,) kg)``: the least a job's run on ``node`` adds over each ``[t0, t1)``.

        Args:
            cpu_m: The job's cpu request, millicores.
            gpus: Its GPUs.
            node: The node.
            t0: ``(n,)`` interval starts, seconds in ``[0, H]``.
            t1: ``(n,)`` interval ends, seconds in ``[0, H]``; an end before its start is an
                empty interval (charged 0).
        """
        t0 = np.asarray(t0, dtype=np.float64)
        t1 = np.maximum(np.asarray(t1, dtype=np.float64), t0)
        power = self.nodes[node]
        joules = np.zeros(len(t0))
        grams = np.zeros(len(t0))
        if cpu_m > 0:
            j0, g0 = power.host_integrals(t0)
            j1, g1 = power.host_integrals(t1)
            joules += cpu_m * np.maximum(j1 - j0, 0.0)
            grams += cpu_m * np.maximum(g1 - g0, 0.0) / J_PER_KWH
            gpu_w = gpus * power.gpu_w  # exact (a GPU job of 0 millicores is charged nothing: valid, below)
            if gpu_w > 0.0:
                joules += gpu_w * (t1 - t0)
                grams += gpu_w * power.carbon.g_per_kwh_integral(t0, t1) / J_PER_KWH
        return joules / J_PER_KWH, grams / _G_PER_KG

    def kinks_s(self, node: int) -> np.ndarray:
        """Sorted times in ``[0, H]`` where a run's charge rate on ``node`` may change.

        Between two of them the host ``w`` and the region's intensity are constant, so
        :meth:`run_counts` over ``[s, s + d)`` is linear in ``s`` while neither ``s`` nor
        ``s + d`` crosses one: its least value over a range of starts is at a kink, a shifted
        kink (minus ``d``) or an end of the range.
        """
        power = self.nodes[node]
        breaks, carbon = power.breaks_s, power.carbon
        if carbon.n_ticks == 1:
            return breaks
        horizon = float(breaks[-1])
        first, last = (np.ceil(-carbon.start_s / carbon.tick_s), np.floor((horizon - carbon.start_s) / carbon.tick_s))
        ticks = carbon.start_s + carbon.tick_s * np.arange(first, last + 1)
        return np.unique(np.concatenate((breaks, ticks[(ticks >= 0.0) & (ticks <= horizon)])))


def charged(view: HindsightView) -> bool:
    """Whether the episode weighs energy or carbon (otherwise the oracle counts neither: 0, exact)."""
    weights = view.spec.settings.weights
    return weights.energy_usd_per_kwh > 0.0 or weights.carbon_usd_per_kg > 0.0


def run_energy(
    view: HindsightView, node_cpu_m: np.ndarray, job_cpu_m: np.ndarray, candidates: Sequence[Sequence[int]]
) -> RunEnergy:
    """The charges of every node of the episode ``view`` describes (its hindsight energy model).

    Args:
        view: The episode.
        node_cpu_m: ``(N,)`` node cpu, millicores.
        job_cpu_m: ``(J,)`` job cpu requests, millicores.
        candidates: Per job, the nodes it can ever run on.
    """
    spec = view.spec
    model = spec.energy_model
    horizon = float(spec.settings.horizon_s)
    ticks = np.asarray(view.tick_times_s, dtype=np.float64)
    pct = np.asarray(view.background_cpu_pct, dtype=np.float64)
    rows = np.minimum(np.arange(len(ticks)), len(pct) - 1)  # the twin holds the last row past the telemetry
    arrival = np.asarray(spec.jobs.arrival_s, dtype=np.float64)
    users: list[list[int]] = [[] for _ in range(len(node_cpu_m))]
    for j, nodes in enumerate(candidates):
        if arrival[j] < horizon:
            for i in nodes:
                users[i].append(j)
    out = []
    for i, power in enumerate(model.nodes):
        capacity = int(node_cpu_m[i])
        background_m = pct[rows, i] * float(capacity) / 100.0  # the twin's product
        mine = np.array(users[i], dtype=np.int64)
        out.append(_node_energy(power.curve, capacity, ticks, background_m, horizon, arrival[mine], job_cpu_m[mine],
                                0.0 if power.gpu is None else power.gpu.busy_w - power.gpu.idle_w,
                                model.carbon[power.region]))
    return RunEnergy(tuple(out))


def _node_energy(
    curve: PowerCurve,
    capacity_m: int,
    ticks: np.ndarray,
    background_m: np.ndarray,
    horizon_s: float,
    arrival_s: np.ndarray,
    cpu_m: np.ndarray,
    gpu_w: float,
    carbon: CarbonIntensity,
) -> NodeEnergy:
    """One node's :class:`NodeEnergy` from its ticks' background and its candidate jobs' arrivals and cpu."""
    order = np.argsort(arrival_s, kind="stable")
    arrivals, reach = arrival_s[order], np.minimum(np.cumsum(cpu_m[order]), capacity_m)  # A_max after each arrival
    moves = arrivals[: int(np.searchsorted(reach, capacity_m, side="left")) + 1]  # A_max is constant once full
    breaks = np.unique(np.concatenate(([0.0, horizon_s], ticks, moves)))
    breaks = breaks[(breaks >= 0.0) & (breaks <= horizon_s)]
    starts = breaks[:-1]
    tick = np.maximum(np.searchsorted(ticks, starts, side="right") - 1, 0)  # the tick whose background holds
    bg = background_m[tick]
    arrived = np.searchsorted(arrivals, starts, side="right")  # the jobs arrived by each piece's start
    a_max = np.concatenate(([0], reach)).astype(np.float64)[arrived]
    u_bg = bg / capacity_m
    u_top = np.minimum(1.0, (bg + a_max) / capacity_m)
    headroom = np.clip(np.maximum(capacity_m - bg, 0.0) / np.maximum(a_max, 1.0), 0.0, 1.0)
    w = np.where((a_max > 0) & (u_bg < 1.0), least_slopes_w(curve, u_bg, u_top) * headroom / capacity_m, 0.0)
    return NodeEnergy(
        breaks_s=breaks,
        host_w_per_m=w,
        host_j_per_m=np.concatenate(([0.0], np.cumsum(w * np.diff(breaks)))),
        host_gs_per_m=np.concatenate(([0.0], np.cumsum(w * carbon.g_per_kwh_integral(starts, breaks[1:])))),
        gpu_w=float(gpu_w),
        carbon=carbon,
    )


def least_slopes_w(curve: PowerCurve, u0: np.ndarray, u1: np.ndarray) -> np.ndarray:
    """``(n,)`` the least slope (W per unit utilisation, >= 0) of the curve's segments meeting each ``[u0, u1]``.

    0 where ``u1 <= u0`` (no load can be added). A secant over any ``[a, b]`` inside ``[u0, u1]``
    is at least this (a mean of the slopes of the segments it crosses), and it is at least
    :meth:`~digital_twin.energy.PowerCurve.min_slope_w`.

    >>> curve = PowerCurve.from_specpower([58.4, 98, 109, 118, 128, 140, 153, 170, 189, 205, 222])
    >>> least_slopes_w(curve, np.array([0.0, 0.5, 0.05]), np.array([1.0, 0.7, 0.05])).round(6).tolist()
    [90.0, 130.0, 0.0]
    """
    points = curve.points_u
    slopes = np.maximum(np.diff(curve.watts) / np.diff(points), 0.0)  # (S,)
    meets = (points[None, :-1] < u1[:, None]) & (points[None, 1:] > u0[:, None])  # (n, S)
    least = np.where(meets, slopes[None, :], np.inf).min(axis=1)
    return np.where((u1 > u0) & np.isfinite(least), least, 0.0)
