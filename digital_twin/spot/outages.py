"""An episode's spot outages: given by its spec or drawn at reset, and what of them is known now.

An outage is an interruption and the time its node is up again (:mod:`digital_twin.spot.poisson`).
"""

from __future__ import annotations

import math

import numpy as np

from digital_twin.spec import TwinSpec
from digital_twin.spot.poisson import Interruptions, Recoveries, draw_interruptions, effective_outages, fixed_recoveries


def given_outages(spec: TwinSpec) -> tuple[Interruptions, Recoveries] | None:
    """``spec``'s effective interruptions and their ends when given, ``None`` when its reset draws them.

    Given: its ``fixed_interruptions_s`` (effective: before the horizon, on an up node) with
    ``fixed_recoveries_s`` (or each ``spot_recovery_s`` later), or none when spot
    interruptions are off or no node can be interrupted.
    """
    settings = spec.settings
    horizon_s, recovery_s = float(settings.horizon_s), settings.spot_recovery_s
    if spec.fixed_interruptions_s is not None:
        ends = spec.fixed_recoveries_s or (None,) * len(spec.fleet)
        kept = [
            effective_outages(times, node_ends, horizon_s, recovery_s)
            for times, node_ends in zip(spec.fixed_interruptions_s, ends, strict=True)
        ]
        return tuple(times for times, _ in kept), tuple(node_ends for _, node_ends in kept)
    if settings.spot_interruptions and any(node.interruption_rate_per_s > 0.0 for node in spec.fleet):
        return None
    return tuple(() for _ in spec.fleet), tuple(() for _ in spec.fleet)


def episode_outages(spec: TwinSpec, rng: np.random.Generator) -> tuple[Interruptions, Recoveries]:
    """The episode's outages: :func:`given_outages`, else drawn from ``rng`` (Poisson, ``spot_recovery_s`` long)."""
    outages = given_outages(spec)
    if outages is not None:
        return outages
    settings = spec.settings
    interruptions = draw_interruptions(spec.fleet, float(settings.horizon_s), settings.spot_recovery_s, rng)
    return interruptions, fixed_recoveries(interruptions, settings.spot_recovery_s)


def known_outages(
    spec: TwinSpec, interruptions: Interruptions, recoveries: Recoveries, now_s: float
) -> tuple[Interruptions, Recoveries | None]:
    """The outages as known at ``now_s``: the interruptions so far, and the ends that have come.

    Ends are given only when ``spec`` fixes them (replayed traces): ``inf`` for an outage still
    on. ``None`` otherwise: an end ``spot_recovery_s`` after its start is a setting, known.
    """
    past = tuple(tuple(t for t in times if t <= now_s) for times in interruptions)
    if spec.fixed_recoveries_s is None:
        return past, None
    ends = tuple(
        tuple(end if end <= now_s else math.inf for end in node_ends[: len(times)])
        for times, node_ends in zip(past, recoveries, strict=True)
    )
    return past, ends


def _known_end(end_s: float, now_s: float) -> float | None:
    """An outage's end as known at ``now_s``: the time it came, ``None`` while it has not."""
    return end_s if end_s <= now_s else None


def outages_difference(
    ours: Interruptions, our_ends: Recoveries, theirs: tuple[Interruptions, Recoveries] | None, now_s: float
) -> str | None:
    """Where the outages up to ``now_s`` differ: each interruption so far, and its end if it came."""
    if theirs is None:
        return "the spec draws its spot interruptions at reset: give them (fixed_interruptions_s)"
    their_times, their_ends = theirs
    for node, (mine, given) in enumerate(zip(ours, their_times, strict=True)):
        past_mine = [t for t in mine if t <= now_s]
        past_given = [t for t in given if t <= now_s]
        if past_mine != past_given:
            return f"node {node}'s interruptions up to now differ ({past_given}, the twin's {past_mine})"
        ended_mine = [_known_end(end, now_s) for end in our_ends[node][: len(past_mine)]]
        ended_given = [_known_end(end, now_s) for end in their_ends[node][: len(past_given)]]
        if ended_mine != ended_given:
            return f"node {node}'s recoveries up to now differ ({ended_given}, the twin's {ended_mine})"
    return None
