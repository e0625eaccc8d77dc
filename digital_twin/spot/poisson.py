"""Spot interruptions: an episode's outages, drawn once from its seed or given, so known in hindsight.

An *outage* of a spot node is an interruption time and the time the node is up again. Under
the Poisson model (:func:`draw_interruptions`) a node is up again ``spot_recovery_s`` after its
interruption; replayed traces (:mod:`digital_twin.spot.replay`) give each outage's end.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from digital_twin.fleet import NodeSpec

Interruptions = tuple[tuple[float, ...], ...]
"""Per node, its sorted effective interruption times, seconds."""
Recoveries = tuple[tuple[float, ...], ...]
"""Per node, the time each of its interruptions ends (same shape as :data:`Interruptions`;
``math.inf``: not up again in the episode, or not known to be)."""


def effective_outages(
    times: Sequence[float], ends: Sequence[float] | None, horizon_s: float, recovery_s: float
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The outages of ``times`` (with their ``ends``) that hit an up node before ``horizon_s``.

    Args:
        times: Interruption times, seconds, any order.
        ends: The time each interruption ends (``> `` its time), or ``None``: ``time + recovery_s``.
        horizon_s: Interruptions at or after it are dropped.
        recovery_s: How long a node is down when ``ends`` is ``None``, seconds.

    Returns:
        The kept times, sorted, and their ends: an interruption that falls while the node is
        still down from the previous one has no effect and is dropped, so every kept time
        interrupts an up node.
    """
    pairs = zip(times, ends, strict=True) if ends is not None else ((t, t + recovery_s) for t in times)
    kept_times: list[float] = []
    kept_ends: list[float] = []
    down_until = -1.0
    for t, end in sorted(pairs):
        if t >= horizon_s:
            break
        if t >= down_until:
            kept_times.append(float(t))
            kept_ends.append(float(end))
            down_until = end
    return tuple(kept_times), tuple(kept_ends)


def effective_interruptions(times: Sequence[float], horizon_s: float, recovery_s: float) -> tuple[float, ...]:
    """Sorted times in ``[0, horizon_s)`` that hit an up node (a node is down for ``recovery_s``)."""
    return effective_outages(times, None, horizon_s, recovery_s)[0]


def fixed_recoveries(interruptions: Interruptions, recovery_s: float) -> Recoveries:
    """Each interruption's end under a fixed recovery time: ``t + recovery_s``."""
    return tuple(tuple(t + recovery_s for t in times) for times in interruptions)


def draw_interruptions(
    fleet: Sequence[NodeSpec], horizon_s: float, recovery_s: float, rng: np.random.Generator
) -> Interruptions:
    """Draw each spot node's effective interruption times in ``[0, horizon_s)``.

    Each spot node fails as a Poisson process of rate ``node.interruption_rate_per_s``.
    An interruption that falls while the node is still down from the previous one (within
    ``recovery_s``) has no effect and is dropped, so every returned time interrupts an up node.
    Nodes are drawn in fleet order from the one generator, so the result depends only on the
    fleet, the horizon and the generator's state.

    Returns:
        One sorted tuple of times (seconds) per node; empty for on-demand nodes.
    """
    result: list[tuple[float, ...]] = []
    for node in fleet:
        rate = node.interruption_rate_per_s
        if rate <= 0.0:
            result.append(())
            continue
        times: list[float] = []
        scale = 1.0 / rate
        t = float(rng.exponential(scale))
        while t < horizon_s:
            times.append(t)
            t += float(rng.exponential(scale))
        # Drawn sorted and before the horizon: one time (or none) is effective as it is.
        result.append(effective_interruptions(times, horizon_s, recovery_s) if len(times) > 1 else tuple(times))
    return tuple(result)
