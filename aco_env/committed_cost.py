"""The committed cost: the potential by which ``EnvConfig(reward_shaping="committed-cost")`` shapes rewards."""

from __future__ import annotations

import math

from digital_twin import DigitalTwin, TwinSpec
from digital_twin.objective import prorated_share


class CommittedCost:
    """USD that an episode's running jobs are expected to cost from now on (0 when none runs).

    For each running job (:meth:`~digital_twin.DigitalTwin.runs_left`): the price per second of
    the share the ``prorated`` cost model charges it (:func:`~digital_twin.objective.prorated_share`)
    times its work left, and on a spot node the eviction penalty
    times the chance that the node fails before that work is done at the node's Poisson rate
    (``1 - exp(-rate x work left)``). What the placements made so far commit the episode to at
    full speed: contention, the episode's own outages and ``active-nodes`` pricing make the true
    remainder differ, and a potential needs only to be a function of the state.

    Args:
        spec: The episode (its fleet's prices, sizes and spot rates, its jobs' requests, its
            eviction weight are read once).
    """

    def __init__(self, spec: TwinSpec) -> None:
        fleet = spec.fleet
        self._price_per_s = [node.price_per_hour_usd / 3600.0 for node in fleet]
        self._node_cores = [node.cpu_cores for node in fleet]
        self._node_gpus = [node.gpu_count for node in fleet]
        self._failure_rate = [node.interruption_rate_per_s if node.is_spot else 0.0 for node in fleet]
        self._job_cores = spec.jobs.cpu_cores.tolist()
        self._job_gpus = spec.jobs.gpu_count.tolist()
        self._eviction_usd = spec.settings.weights.eviction_usd

    def __call__(self, twin: DigitalTwin) -> float:
        """The committed USD of ``twin``, a twin of the spec given."""
        total = 0.0
        for j, i, left in twin.runs_left():
            share = prorated_share(self._job_gpus[j], self._job_cores[j], self._node_gpus[i], self._node_cores[i])
            total += self._price_per_s[i] * share * left
            failure_rate = self._failure_rate[i]
            if failure_rate > 0.0:
                total += self._eviction_usd * -math.expm1(-failure_rate * left)
        return total
