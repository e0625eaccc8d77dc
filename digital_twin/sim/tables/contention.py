"""CPU contention: how the replayed background load slows our jobs down (processor sharing).

The interference model is chosen per scenario (``interference:``,
:data:`digital_twin.episode_settings.INTERFERENCE_MODELS`):

* ``none``: jobs always run at their nominal speed; the background only feeds the SLA.
* ``processor-sharing``: a node's cpu *demand* is its background cpu (the trace's percent of
  the node's cores, a step function of the telemetry ticks) plus the cpu our running jobs
  requested. While the demand is at most the node's cores every job runs at full speed (rate
  1). Above it, the cores are shared in proportion to demand: every consumer, background and
  each of our jobs alike (the background has no priority), gets ``cores / demand`` of what it
  asks, so every job on the node progresses at ``rate = cores / demand`` nominal seconds per
  second. GPU jobs are slowed alike (their host cpu feeds the GPUs).

Rates change only at telemetry ticks and when a job starts or stops on the node, so the twin
stays event-driven. All jobs on a node share its rate, so the node keeps one *work clock* (its
rate integrated over time; :func:`digital_twin.sim.event_handlers.settle` brings it up to now at
each change) and each run completes when the clock reaches the clock at its start plus its
nominal duration. The node has one completion event, for its earliest-finishing run, at
``now + (finish - clock) / rate``; a rate change replaces that one event (not one per job), and
a replaced event is dropped without waking the loop. A job's work is conserved: it completes
when its nominal duration of work is done; it pays its compute cost for the actual (longer)
run time. Our requests never exceed a node's cores and the background is at most 100 %, so a
rate is always in ``[0.5, 1]``.
"""

from __future__ import annotations


def progress_rate(background_m: float, allocated_m: int, capacity_m: int) -> float:
    """Nominal seconds of work per second for each of our jobs on a node (in ``(0, 1]``).

    Args:
        background_m: Background cpu demand, millicores (trace percent x node millicores / 100).
        allocated_m: Millicores requested by our jobs running on the node.
        capacity_m: The node's millicores.

    >>> progress_rate(2000.0, 6000, 8000), progress_rate(4000.0, 8000, 8000)
    (1.0, 0.6666666666666666)
    """
    demand = background_m + allocated_m
    return 1.0 if demand <= capacity_m else capacity_m / demand


def slowest_rate(background_m: float, capacity_m: int) -> float:
    """The lowest rate a node can have while its background is ``background_m`` (fully allocated)."""
    return progress_rate(background_m, capacity_m, capacity_m)
