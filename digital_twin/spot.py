"""Spot interruptions: drawn once per episode from its seed, so they are known in hindsight."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from digital_twin.fleet import NodeSpec


def effective_interruptions(times: Sequence[float], horizon_s: float, recovery_s: float) -> tuple[float, ...]:
    """Sorted times in ``[0, horizon_s)`` that hit an up node (a node is down for ``recovery_s``)."""
    kept: list[float] = []
    down_until = -1.0
    for t in sorted(times):
        if t >= horizon_s:
            break
        if t >= down_until:
            kept.append(float(t))
            down_until = t + recovery_s
    return tuple(kept)


def draw_interruptions(
    fleet: Sequence[NodeSpec], horizon_s: float, recovery_s: float, rng: np.random.Generator
) -> tuple[tuple[float, ...], ...]:
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
