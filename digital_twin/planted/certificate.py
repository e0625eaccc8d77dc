"""The certificate of a planted episode: no policy's objective is below the sum of each job's cheapest fate.

The argument (docs/model.md, "Planted optima", in outline). Under the prorated cost model the objective is
a sum over jobs (each job's runs, waits and penalties) plus the unfairness term, which is >= 0.
Job ``j`` (arrival ``a``, nominal duration ``d``, horizon ``H``) ends the episode in one of these
fates, and each costs at least ``c*_j``, the least that completing it can cost:

* it completes, its last run on node ``i``: that run alone costs ``rate(j, i) x r`` with
  ``r >= d`` (contention only stretches runs), plus the QoS penalty if ``j`` is latency-critical
  and ``i`` is a spot node; so at least ``c*_j = min_i (rate(j, i) x d + qos(j, i))``;
* it is rejected (its TTL, the horizon, or no room ever): the rejection penalty;
* it fails (a non-preemptible job evicted): the eviction penalty;
* it is still running or queued at the horizon: from ``a`` to ``H`` it is always either queued
  (at ``w`` USD per job-hour: the twin counts every queue spell, the one after an eviction
  too) or running (at least ``min_i rate(j, i)`` USD/s), so it pays at least
  ``min(w / 3600, min_i rate(j, i)) x (H - a)``; a queued one also pays the rejection penalty.

A preemptible job evicted and requeued ends in one of the same fates (its evicted runs cost
``>= 0``). So the objective is at least ``sum_j c*_j`` whenever, for every job, the rejection
penalty, the eviction penalty (for non-preemptible jobs with a spot candidate) and the horizon
term are each ``>= c*_j``:
:func:`certify` checks exactly these conditions. A schedule that runs every job once, from its
arrival, at nominal speed, on a node of its cheapest fate, with no penalty, costs
``sum_j c*_j``: it is optimal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from digital_twin.constants import TwinConstants
from digital_twin.errors import SpecError
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
        SpecError: The cost model is not ``prorated``; a job fits no node; or, for a job, the
            rejection penalty, the eviction penalty (when it is not preemptible and has a spot
            candidate) or the horizon term is below its cheapest completion (the message names
            the job and the weight to raise).
    """
    settings = spec.settings
    if settings.active_nodes:
        raise SpecError("a planted certificate needs cost_model: prorated (active-nodes is not a sum over jobs)")
    c = TwinConstants.of(spec)
    weights = settings.weights
    wait_usd_per_s = weights.wait_usd_per_job_hour / 3600.0
    cheapest: list[float] = []
    nodes_of: list[tuple[int, ...]] = []
    fleet = _Nodes.of(c)
    for j in range(c.n_jobs):
        job_id = c.job_ids[j]
        if not c.candidates[j]:
            raise SpecError(f"job {job_id!r} fits no node of the fleet")
        nodes, rates, fates = _completions(c, j, fleet)
        best = float(fates.min())
        cheapest.append(best)
        candidates = c.candidates[j]  # its int objects, shared (a fleet of 1,000 nodes: thousands of jobs each)
        nodes_of.append(tuple(candidates[k] for k in np.flatnonzero(fates <= best * (1.0 + RELATIVE_SLACK)).tolist()))
        may_fail = not c.preemptible[j] and bool(fleet.is_spot[nodes].any())
        floor = best * (1.0 - RELATIVE_SLACK)
        if weights.rejection_usd < floor:
            raise SpecError(
                f"job {job_id!r}: rejection_usd {weights.rejection_usd:g} < its cheapest run {best:.6g} USD"
            )
        if may_fail and weights.eviction_usd < floor:
            raise SpecError(f"job {job_id!r}: eviction_usd {weights.eviction_usd:g} < its cheapest run {best:.6g} USD")
        in_system_s = c.horizon_s - c.arrival_s[j]
        horizon_usd = min(wait_usd_per_s, float(rates.min())) * in_system_s
        if horizon_usd < floor:
            raise SpecError(
                f"job {job_id!r}: running or waiting from its arrival to the horizon may cost {horizon_usd:.6g} USD, "
                f"less than its cheapest run {best:.6g} USD (raise wait_usd_per_job_hour, or end the job earlier)"
            )
    return Certificate(tuple(cheapest), tuple(nodes_of), float(sum(cheapest)))


def completion_usd(c: TwinConstants, j: int) -> dict[int, float]:
    """Per node job ``j`` fits (``c.candidates[j]``), the least its completion there costs (USD).

    ``rate(j, i) x d_j`` (the prorated rate of the job on node ``i`` times its nominal duration)
    plus the QoS penalty when ``j`` is latency-critical and ``i`` a spot node: the fate ``c*_j``
    minimises over nodes. Empty when the job fits no node.
    """
    nodes, _, fates = _completions(c, j)
    return dict(zip(nodes.tolist(), fates.tolist(), strict=True))


@dataclass(frozen=True)
class _Nodes:
    """``(N,)`` float64 node columns of a fleet, read once: price per second, millicores, GPUs; spot flags."""

    price_per_s: np.ndarray
    cpu_m: np.ndarray
    gpus: np.ndarray
    is_spot: np.ndarray

    @classmethod
    def of(cls, c: TwinConstants) -> _Nodes:
        return cls(
            np.asarray(c.price_per_s, dtype=np.float64),
            np.asarray(c.cpu_m, dtype=np.float64),
            np.asarray(c.gpus, dtype=np.float64),
            np.asarray(c.is_spot, dtype=bool),
        )


def _completions(c: TwinConstants, j: int, fleet: _Nodes | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(nodes, rates, fates)``, each ``(k,)`` over job ``j``'s candidate nodes: USD/s and completion USD.

    The twin's own arithmetic (:func:`digital_twin.event_handlers.job_rate_usd_per_s`: price per
    second times the request over the capacity, left to right), elementwise, so every number is
    the twin's bit for bit. ``fleet``: the node columns, when already read.
    """
    fleet = fleet or _Nodes.of(c)
    nodes = np.asarray(c.candidates[j], dtype=np.int64)
    if c.req_gpus[j] > 0:
        rates = fleet.price_per_s[nodes] * c.req_gpus[j] / fleet.gpus[nodes]
    else:
        rates = fleet.price_per_s[nodes] * c.req_cpu_m[j] / fleet.cpu_m[nodes]
    qos = np.where(c.is_lc[j] & fleet.is_spot[nodes], c.settings.weights.qos_violation_usd, 0.0)
    return nodes, rates, rates * c.duration_s[j] + qos
