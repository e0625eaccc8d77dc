"""What each objective term charges in USD: the one place in ``agents`` that turns a count into money.

:mod:`digital_twin.objective` defines the penalty terms (:data:`~digital_twin.objective.PENALTIES`,
each with its unit) and their weights (:class:`~digital_twin.objective.ObjectiveWeights`); the
twin counts each term. Whatever in ``agents`` prices a decision, a plan or a bound (the oracle's
programs, its exact relaxation, its bounds at scale, the hindsight greedy plan, the lookahead's
rollout rule) charges through :class:`Charges`: one charge per term, the term's weight times a
count in the term's unit (:meth:`Charges.usd`), from which every other method derives. A new
weight, or a new way of charging a term, changes every one of them here.

Waiting is counted in job-hours. A count of options (:meth:`Charges.penalties`) holds the wait
as job-hours (:func:`wait_job_hours`, seconds / 3600, as the twin counts it) and charges weight x
job-hours; the bounds that are linear in a start time charge it per second
(:meth:`Charges.wait`, weight / 3600 x seconds). The two agree up to float rounding.

The compute cost is no penalty term, but its rates live here too: :func:`share_usd_per_s` (a
job's share of a node's price, as the twin's ``prorated`` cost model charges it) and
:func:`nominal_run_usd` (the same for one run at full speed, from the specs, whose share is
:func:`charged_share`).

Example:
    >>> from digital_twin.objective import ObjectiveWeights
    >>> charges = Charges(ObjectiveWeights(qos_violation_usd=0.25, wait_usd_per_job_hour=0.36))
    >>> charges.qos(2), round(charges.wait(600.0), 12), charges.usd("wait", wait_job_hours(600.0))
    (0.5, 0.06, 0.06)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from digital_twin import JobSpec, NodeSpec
from digital_twin.objective import PENALTIES, PENALTY_INDEX, ObjectiveWeights, prorated_share

SECONDS_PER_HOUR = 3600.0
Count = TypeVar("Count", float, np.ndarray)
"""A count of a term (or one per row): a number, or an array of them."""


def wait_job_hours(seconds: Count) -> Count:
    """The ``wait`` term's count of ``seconds`` of waiting: job-hours, as the twin counts them."""
    return seconds / SECONDS_PER_HOUR


@dataclass(frozen=True)
class Charges:
    """USD per counted unit of each penalty term, for one episode's weights.

    Attributes:
        weights: The episode's weights.
    """

    weights: ObjectiveWeights
    _per_term: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_per_term", self.weights.per_term())

    def usd(self, term: str, count: Count) -> Count:
        """USD of ``count`` units of the term named ``term`` (its :data:`PENALTIES` unit): weight x count."""
        return self._per_term[PENALTY_INDEX[term]] * count

    def sla(self, jobs: Count) -> Count:
        """USD of latency-critical jobs whose node went over the SLA threshold while they ran."""
        return self.usd("sla", jobs)

    def qos(self, jobs: Count) -> Count:
        """USD of latency-critical jobs placed on a spot node (a bool array: one per placement)."""
        return self.usd("qos", jobs)

    def eviction(self, jobs: Count) -> Count:
        """USD of jobs failed by a spot interruption."""
        return self.usd("eviction", jobs)

    def deadline(self, jobs: Count) -> Count:
        """USD of deadline misses."""
        return self.usd("deadline", jobs)

    def wait(self, seconds: Count) -> Count:
        """USD of ``seconds`` of waiting, at the ``wait`` weight's rate per second (weight / 3600 x seconds)."""
        return self.usd("wait", 1.0) / SECONDS_PER_HOUR * seconds

    def penalties(self, counts: np.ndarray) -> np.ndarray:
        """``(n,)`` USD of each row of ``(n, T)`` counts (:data:`PENALTIES` order), summed in table order."""
        total = np.zeros(len(counts))
        for t, term in enumerate(PENALTIES):
            total = total + self.usd(term.name, counts[:, t])
        return total


def share_usd_per_s(price_per_s: Count, request: Count, capacity: Count) -> Count:
    """USD per second of a job holding ``request`` of a node's ``capacity``: the twin's ``prorated`` rate.

    ``price_per_s x request / capacity`` (GPUs for a GPU job, cpu millicores otherwise), with the
    twin's float operations; under ``active-nodes`` the bounds charge a job this rate of its cpu
    share, since the shares of the jobs on a node sum to at most 1.
    """
    return price_per_s * request / capacity


def charged_share(node: NodeSpec, job: JobSpec) -> float:
    """The share of ``node``'s price that the ``prorated`` cost model charges ``job`` (:func:`prorated_share`)."""
    return prorated_share(job.gpu_count, job.cpu_cores, node.gpu_count, node.cpu_cores)


def nominal_run_usd(node: NodeSpec, job: JobSpec) -> float:
    """USD of ``job``'s run at full speed on ``node`` under ``prorated``: the price of its share for its duration."""
    return node.price_per_hour_usd * charged_share(node, job) * job.duration_s / SECONDS_PER_HOUR
