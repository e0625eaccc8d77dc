"""The four-factor cost engine: the heuristic desirability eta of placing a job on each node.

A re-implementation of the reference's ``CostEngine`` (``docs/reference.md``, "Cost engine"):
``eta = r * c * s * p`` with

* reliability ``r``: 1 on on-demand nodes; on spot nodes ``1 - p_int`` for latency-critical
  (LC) jobs, or 0 (a hard gate) when ``p_int > spot_threshold``; ``max(0, 1 - 0.3 p_int)``
  for other jobs (no gate);
* cost efficiency ``c = 1 / (1 + price / 1.0 $/h)`` (never 0);
* SLA headroom ``s``: ``headroom = (100 - cpu utilisation %) / 100``; LC jobs get
  ``headroom``, or 0 (a hard gate) when ``headroom < sla_threshold``; other jobs get
  ``max(headroom, 0.1)``;
* prediction ``p = max(0.5, 1 - spike_probability * spike_weight * confidence)``, or 1 with
  no prediction.

Every function is vectorised over nodes (arrays of shape ``(N,)``, scalars broadcast).
Utilisation is the env's ``ClusterView.utilization_pct``: background + our allocation, in %
(it may exceed 100, making the headroom negative).

Example:
    >>> [round(float(c), 3) for c in cost_efficiency([0.12, 0.50, 3.20])]
    [0.893, 0.667, 0.238]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

MAX_COST_REFERENCE_USD_PER_H = 1.0
"""Price at which cost efficiency is 0.5."""
SPOT_PENALTY_THRESHOLD = 0.3
"""Default spot gate for LC jobs (interruption probability per hour)."""
SPIKE_PENALTY_WEIGHT = 0.5
"""Default weight of the predicted spike."""
SLA_STRICT_THRESHOLD = 0.2
"""Default headroom gate for LC jobs (fraction of the node's cpu)."""
NON_LC_SPOT_DISCOUNT = 0.3
"""Non-LC jobs on spot nodes: reliability ``1 - 0.3 * interruption probability``."""
NON_LC_HEADROOM_FLOOR = 0.1
"""Non-LC jobs: the headroom factor never drops below this."""
PREDICTION_FLOOR = 0.5
"""A prediction can at most halve eta."""


def reliability(
    is_spot: ArrayLike,
    interruption_prob: ArrayLike,
    latency_critical: bool,
    spot_threshold: float = SPOT_PENALTY_THRESHOLD,
) -> np.ndarray:
    """Reliability factor r per node, in [0, 1] (0 = the LC spot gate).

    Args:
        is_spot: ``(N,)`` bool, spot instance.
        interruption_prob: ``(N,)`` interruption probability per hour, in [0, 1).
        latency_critical: The job is latency-critical.
        spot_threshold: LC jobs: a spot node with ``interruption_prob > spot_threshold`` gets 0.
    """
    spot = np.asarray(is_spot, dtype=bool)
    prob = np.asarray(interruption_prob, dtype=float)
    if latency_critical:
        on_spot = np.where(prob > spot_threshold, 0.0, 1.0 - prob)
    else:
        on_spot = np.maximum(0.0, 1.0 - NON_LC_SPOT_DISCOUNT * prob)
    return np.where(spot, on_spot, 1.0)


def cost_efficiency(price_per_hour_usd: ArrayLike) -> np.ndarray:
    """Cost-efficiency factor c per node: ``1 / (1 + price / 1.0)``, in (0, 1]."""
    return 1.0 / (1.0 + np.asarray(price_per_hour_usd, dtype=float) / MAX_COST_REFERENCE_USD_PER_H)


def sla_headroom(
    utilization_pct: ArrayLike, latency_critical: bool, sla_threshold: float = SLA_STRICT_THRESHOLD
) -> np.ndarray:
    """SLA-headroom factor s per node (0 = the LC headroom gate).

    Args:
        utilization_pct: ``(N,)`` cpu utilisation in % (background + allocated; may exceed 100).
        latency_critical: The job is latency-critical.
        sla_threshold: LC jobs: a headroom below this fraction gets 0.

    Returns:
        LC: ``headroom`` or 0 (in [sla_threshold, 1] or 0). Others: ``max(headroom, 0.1)``.
    """
    headroom = (100.0 - np.asarray(utilization_pct, dtype=float)) / 100.0
    if latency_critical:
        return np.where(headroom < sla_threshold, 0.0, headroom)
    return np.maximum(headroom, NON_LC_HEADROOM_FLOOR)


def prediction_factor(
    spike_probability: ArrayLike | None,
    confidence: ArrayLike | None,
    spike_weight: float = SPIKE_PENALTY_WEIGHT,
) -> np.ndarray | float:
    """Prediction factor p per node, in [0.5, 1]; 1.0 (a scalar) without a prediction.

    Args:
        spike_probability: ``(N,)`` in [0, 1], or ``None`` for no prediction. NaN entries
            mean no prediction for that node (factor 1).
        confidence: ``(N,)`` in [0, 1] (``None`` with ``spike_probability``).
        spike_weight: Weight of the spike.
    """
    if spike_probability is None or confidence is None:
        return 1.0
    penalty = (
        np.asarray(spike_probability, dtype=float)
        * spike_weight
        * np.asarray(confidence, dtype=float)
    )
    return np.where(np.isnan(penalty), 1.0, np.maximum(PREDICTION_FLOOR, 1.0 - penalty))


def score_breakdown(
    *,
    is_spot: ArrayLike,
    interruption_prob: ArrayLike,
    price_per_hour_usd: ArrayLike,
    utilization_pct: ArrayLike,
    latency_critical: bool,
    spike_probability: ArrayLike | None = None,
    confidence: ArrayLike | None = None,
    sla_threshold: float = SLA_STRICT_THRESHOLD,
    spike_weight: float = SPIKE_PENALTY_WEIGHT,
    spot_threshold: float = SPOT_PENALTY_THRESHOLD,
) -> dict[str, Any]:
    """Each factor and their product ``eta`` per node (the reference's ``score_breakdown``).

    Returns:
        ``{"reliability", "cost_efficiency", "sla_headroom", "prediction", "eta"}``, each an
        ``(N,)`` array (``prediction`` may be the scalar 1.0). ``eta`` is 0 wherever a hard
        gate (reliability or headroom) is 0.
    """
    r = reliability(is_spot, interruption_prob, latency_critical, spot_threshold)
    c = cost_efficiency(price_per_hour_usd)
    s = sla_headroom(utilization_pct, latency_critical, sla_threshold)
    p = prediction_factor(spike_probability, confidence, spike_weight)
    # The product is 0 exactly where r or s is 0 (c > 0 and p >= 0.5), i.e. the reference's
    # early exit on a hard gate.
    return {
        "reliability": r,
        "cost_efficiency": c,
        "sla_headroom": s,
        "prediction": p,
        "eta": r * c * s * p,
    }


CARBON_REFERENCE_G_PER_H = 50.0
"""Marginal emissions at which the carbon efficiency is 0.5 (a 4-core job on the default fleet
adds about 55 W: 22 g/h at 400 g/kWh)."""


def carbon_efficiency(emissions_g_per_h: ArrayLike, reference_g_per_h: float = CARBON_REFERENCE_G_PER_H) -> np.ndarray:
    """``1 / (1 + emissions / reference)`` per node, in (0, 1]: the cost efficiency's form for carbon.

    Not in the reference system: an optional fifth factor of eta (``aco-carbon``), from the
    emissions the job would add on each node now (``agents.carbon.marginal_watts`` x the
    node's grid intensity).

    >>> [round(float(x), 3) for x in carbon_efficiency([0.0, 50.0, 150.0])]
    [1.0, 0.5, 0.25]
    """
    return 1.0 / (1.0 + np.asarray(emissions_g_per_h, dtype=float) / reference_g_per_h)


def colocation_fit(preference_weight: ArrayLike) -> np.ndarray:
    """``1 / (1 + weight)`` per node, in (0, 1]: how well a placement keeps the soft placement rules.

    The reference's router filters nodes by a colocation policy (the env's action mask holds the
    required rules); this factor of eta weighs the preferred ones: the weight of the preferences
    placing the job on each node would break (``ClusterView.preference_weight``).

    >>> [round(float(x), 3) for x in colocation_fit([0.0, 1.0, 3.0])]
    [1.0, 0.5, 0.25]
    """
    return 1.0 / (1.0 + np.asarray(preference_weight, dtype=float))


def eta(**kwargs: Any) -> np.ndarray:
    """``score_breakdown(**kwargs)["eta"]``: the desirability per node, ``(N,)``, >= 0."""
    return np.asarray(score_breakdown(**kwargs)["eta"])
