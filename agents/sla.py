"""What a placement would cost in SLA marks now: the latency-critical jobs it puts over their node's threshold.

The twin marks each latency-critical job once, at the first telemetry tick at which its node's
utilisation (background cpu % plus our allocated cpu / node cpu x 100) is above the episode's
``sla_threshold_pct`` (:func:`digital_twin.sim.event_handlers.tick`); the ``sla`` term charges
each mark. A placement that lifts a node over the threshold marks every latency-critical job
there, the placed job included when it is latency-critical.
"""

from __future__ import annotations

import numpy as np

from aco_env import ClusterView
from digital_twin.jobs import LATENCY_CRITICAL, WORKLOAD_TYPES

_LATENCY_CRITICAL_COLUMN = WORKLOAD_TYPES.index(LATENCY_CRITICAL)  # of ClusterView.running_by_type


def sla_marks(view: ClusterView) -> np.ndarray:
    """``(N,)`` float: the latency-critical jobs that placing ``view.job`` on each node puts over its SLA threshold.

    Per node: the latency-critical jobs running there, plus one when the job is latency-critical,
    where the node's utilisation with the job added is above ``view.settings.sla_threshold_pct``
    at the current tick's background; 0 elsewhere. The utilisation is computed in millicores, as
    the twin computes it. Every node is counted, valid or not (a node the job does not fit gets
    its count too: mask it).

    An estimate from what is known now: a job marked before is counted again (the view does not
    say which are), and a later tick's background may lift the node over, or bring it back.

    Raises:
        ValueError: The view has no job (the episode is over).
    """
    job = view.job
    if job is None:
        raise ValueError("the view has no job to place (the episode is over)")
    cpu_m = np.rint(np.array([node.cpu_cores for node in view.fleet], dtype=np.float64) * 1000.0)
    free_m = np.rint(view.free_cpu_cores * 1000.0)
    job_m = round(job.cpu_cores * 1000.0)
    after_pct = view.background_cpu_pct + 100.0 * (cpu_m - free_m + job_m) / cpu_m
    there = view.running_by_type[:, _LATENCY_CRITICAL_COLUMN] + float(job.workload == LATENCY_CRITICAL)
    return np.where(after_pct > view.settings.sla_threshold_pct, there, 0.0)
