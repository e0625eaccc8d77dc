"""The certificate of a planted episode: no policy's objective is below the sum of each job's cheapest fate.

The argument (docs/model.md, "Planted optima", in outline). Under the prorated cost model the objective is
a sum over jobs (each job's runs, waits, energy and penalties) plus terms that are >= 0 (SLA,
deadline, unfairness). Job ``j`` (arrival ``a``, nominal duration ``d``, horizon ``H``, SLO
``L`` if latency-critical, ``U`` the utility weight) ends the episode in one of these fates,
and each costs at least ``c*_j``, the least that completing it can cost:

* it completes, its last run on node ``i``: that run does ``d`` nominal seconds of work, each
  costing at least ``rate(j, i) + energy(j, i)`` (:mod:`digital_twin.planted.energy_floor`:
  contention only stretches runs, and a stretched second costs more), plus the QoS penalty if
  ``j`` is latency-critical and ``i`` a spot node, plus ``U x loss(d / L)`` (its latency is at
  least ``d``); so at least ``c*_j = min_i ((rate + energy)(j, i) x d + qos(j, i)) + U x loss(d / L)``;
* it is rejected (its TTL, the horizon, or no room ever): the rejection penalty, plus ``U``;
* it fails (a non-preemptible job evicted): the eviction penalty, plus ``U``;
* it is still running or queued at the horizon: from ``a`` to ``H`` it is always either queued
  (at ``w`` USD per job-hour: the twin counts every queue spell, the one after an eviction
  too) or running (at least ``min_i rate(j, i) + energy(j, i)`` USD/s, the energy of a second
  of its run), so it pays at least ``min(w / 3600, min_i (rate + energy)(j, i)) x (H - a) + U x
  loss((H - a) / L)``.

A preemptible job evicted and requeued ends in one of the same fates (its evicted runs cost
``>= 0``). So the objective is at least ``sum_j c*_j`` whenever, for every job, the rejection
fate, the eviction fate (for non-preemptible jobs with a spot candidate) and the horizon fate
each cost ``>= c*_j``: :func:`certify` checks exactly these conditions, and refuses terms no job
carries (broken preferences, workflow terms). A schedule that runs every job once, from its
arrival, at nominal speed, on a node of its cheapest fate, with no penalty, and whose energy is
the floor's (``energy_floor.inexact_reason`` is ``None``), costs ``sum_j c*_j``: it is optimal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.planted.energy_floor import EnergyFloor, energy_floor
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.measures import utility_loss
from digital_twin.spec import TwinSpec

RELATIVE_SLACK = 1e-9
"""How much the conditions may miss by, relative (float rounding of the rates)."""


@dataclass(frozen=True)
class Certificate:
    """Per job, the least its fate can cost, and their sum: a lower bound on any policy's objective.

    Attributes:
        cheapest_usd: ``(M,)`` per job, ``c*_j`` (USD).
        cheapest_nodes: ``(M,)`` per job, the node indices whose run attains ``c*_j``.
        bound_usd: ``sum_j c*_j``.
    """

    cheapest_usd: tuple[float, ...]
    cheapest_nodes: tuple[tuple[int, ...], ...]
    bound_usd: float

    def attained_by(self, nodes: Sequence[int]) -> bool:
        """Whether running job ``j`` on ``nodes[j]`` attains every job's cheapest fate."""
        return all(node in best for node, best in zip(nodes, self.cheapest_nodes, strict=True))


def certify(spec: TwinSpec) -> Certificate:
    """The certificate of ``spec``'s jobs, after checking the conditions that make it a bound.

    Raises:
        SpecError: The cost model is not ``prorated``; the spec has workflows, or placement
            rules with a preference weight (terms no per-job fate carries); a job fits no node;
            or, for a job, the rejection fate, the eviction fate (when it is not preemptible and
            has a spot candidate) or the horizon fate costs less than its cheapest completion
            (the message names the job and the weight to raise).
    """
    settings = spec.settings
    if settings.active_nodes:
        raise SpecError("a planted certificate needs cost_model: prorated (active-nodes is not a sum over jobs)")
    c = TwinConstants.of(spec)
    _refuse_unbounded_terms(spec, c)
    weights = settings.weights
    wait_usd_per_s = weights.wait_usd_per_job_hour / 3600.0
    cheapest: list[float] = []
    nodes_of: list[tuple[int, ...]] = []
    fleet = _Nodes.of(c, energy_floor(spec, c))
    for j in range(c.n_jobs):
        job_id = c.job_ids[j]
        if not c.candidates[j]:
            raise SpecError(f"job {job_id!r} fits no node of the fleet")
        nodes, rates, fates = _completions(c, j, fleet)
        if fleet.energy is not None:  # a running second pays its energy too
            rates = rates + fleet.energy.usd_per_wall_s(c.req_cpu_m[j] / 1000.0, c.req_gpus[j], nodes)
        utility = weights.utility_loss_usd * utility_loss(c.duration_s[j], c.slo_s[j]) if c.is_lc[j] else 0.0
        best = float(fates.min()) + utility
        cheapest.append(best)
        candidates = c.candidates[j]  # its int objects, shared (a fleet of 1,000 nodes: thousands of jobs each)
        nodes_of.append(
            tuple(candidates[k] for k in np.flatnonzero(fates + utility <= best * (1.0 + RELATIVE_SLACK)).tolist())
        )
        unserved = weights.utility_loss_usd if c.is_lc[j] else 0.0  # a job that never completes loses it all
        may_fail = not c.preemptible[j] and bool(fleet.is_spot[nodes].any())
        floor = best * (1.0 - RELATIVE_SLACK)
        if weights.rejection_usd + unserved < floor:
            raise SpecError(
                f"job {job_id!r}: rejection_usd {weights.rejection_usd:g} < its cheapest run {best:.6g} USD"
            )
        if may_fail and weights.eviction_usd + unserved < floor:
            raise SpecError(f"job {job_id!r}: eviction_usd {weights.eviction_usd:g} < its cheapest run {best:.6g} USD")
        in_system_s = c.horizon_s - c.arrival_s[j]
        horizon_usd = min(wait_usd_per_s, float(rates.min())) * in_system_s
        if c.is_lc[j]:
            horizon_usd += weights.utility_loss_usd * utility_loss(in_system_s, c.slo_s[j])
        if horizon_usd < floor:
            raise SpecError(
                f"job {job_id!r}: running or waiting from its arrival to the horizon may cost {horizon_usd:.6g} USD, "
                f"less than its cheapest run {best:.6g} USD (raise wait_usd_per_job_hour, or end the job earlier)"
            )
    return Certificate(tuple(cheapest), tuple(nodes_of), float(sum(cheapest)))


def _refuse_unbounded_terms(spec: TwinSpec, c: TwinConstants) -> None:
    """Refuse a spec whose objective has a weighted term that no job's fate carries (naming the weight)."""
    weights = spec.settings.weights
    if c.dag is not None:
        raise SpecError(
            "a planted certificate covers independent jobs: the spec has workflows (a task's release, "
            "workflow_usd_per_hour and workflow_deadline_miss_usd depend on the schedule)"
        )
    if c.rules is not None and weights.preference_violation_usd > 0:
        raise SpecError(
            f"a planted certificate does not bound broken preferences: preference_violation_usd "
            f"{weights.preference_violation_usd:g} > 0 with placement rules"
        )


def completion_usd(c: TwinConstants, j: int, floor: EnergyFloor | None = None) -> dict[int, float]:
    """Per node job ``j`` fits (``c.candidates[j]``), the least its completion there costs (USD).

    ``(rate(j, i) + energy(j, i)) x d_j`` (the prorated rate of the job on node ``i`` plus the
    energy floor's, times its nominal duration; energy counts only when ``floor`` is given:
    :func:`~digital_twin.planted.energy_floor.energy_floor` of the spec, computed once) plus
    the QoS penalty when ``j`` is latency-critical and ``i`` a spot node: the fate ``c*_j``
    minimises over nodes (less the utility term, the same on every node). Empty when the job
    fits no node.
    """
    nodes, _, fates = _completions(c, j, _Nodes.of(c, floor))
    return dict(zip(nodes.tolist(), fates.tolist(), strict=True))


@dataclass(frozen=True)
class _Nodes:
    """``(N,)`` float64 node columns of a fleet, read once.

    Price per second, millicores, GPUs, spot flags; the energy floor (``None``: not charged).
    """

    price_per_s: np.ndarray
    cpu_m: np.ndarray
    gpus: np.ndarray
    is_spot: np.ndarray
    energy: EnergyFloor | None

    @classmethod
    def of(cls, c: TwinConstants, energy: EnergyFloor | None = None) -> _Nodes:
        return cls(
            np.asarray(c.price_per_s, dtype=np.float64),
            np.asarray(c.cpu_m, dtype=np.float64),
            np.asarray(c.gpus, dtype=np.float64),
            np.asarray(c.is_spot, dtype=bool),
            energy if energy is not None and energy.charged else None,
        )


def _completions(c: TwinConstants, j: int, fleet: _Nodes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(nodes, rates, fates)``, each ``(k,)`` over job ``j``'s candidate nodes: USD/s and completion USD.

    The rates are the twin's own arithmetic (:func:`digital_twin.sim.event_handlers.job_rate_usd_per_s`:
    price per second times the request over the capacity, left to right), elementwise, so every
    number is the twin's bit for bit; the completion adds the energy floor per nominal second
    (when charged) and the QoS penalty.
    """
    nodes = np.asarray(c.candidates[j], dtype=np.int64)
    if c.req_gpus[j] > 0:
        rates = fleet.price_per_s[nodes] * c.req_gpus[j] / fleet.gpus[nodes]
    else:
        rates = fleet.price_per_s[nodes] * c.req_cpu_m[j] / fleet.cpu_m[nodes]
    per_s = rates
    if fleet.energy is not None:
        per_s = rates + fleet.energy.usd_per_s(rates, c.req_cpu_m[j] / 1000.0, c.req_gpus[j], nodes)
    qos = np.where(c.is_lc[j] & fleet.is_spot[nodes], c.settings.weights.qos_violation_usd, 0.0)
    return nodes, rates, per_s * c.duration_s[j] + qos
