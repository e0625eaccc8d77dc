"""An episode's energy model as the plain lists the twin's event loop reads (:class:`EnergyConstants`).

The fields are typed ``list`` (not ``Sequence``): the compiled core then indexes them directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from digital_twin.energy.model import EnergyModel


@dataclass(frozen=True, slots=True, eq=False)
class EnergyConstants:
    """An :class:`~digital_twin.energy.model.EnergyModel` as the plain lists the event loop reads.

    ``N`` nodes, ``R`` regions (in the model's order).

    Attributes:
        curve_u: ``(N,)`` per node, its power curve's utilisation points (increasing, 0 to 1).
        curve_w: ``(N,)`` per node, the curve's watts at those points.
        curve_steps: ``(N,)`` n when the node's points are ``0, 1/n, ..., 1`` (as SPECpower's),
            so that a utilisation's segment is ``floor(u n)``; 0 otherwise (searched).
        gpu_idle_w: ``(N,)`` watts of one idle GPU of the node (0 without GPUs).
        gpu_delta_w: ``(N,)`` busy minus idle watts of one GPU.
        gpu_idle_node_w: ``(N,)`` watts of all the node's GPUs idle.
        region_of: ``(N,)`` the node's region index.
        n_regions: ``R``.
        carbon_constant: ``(R,)`` the region's intensity (g/kWh) when its series has one value, else -1.
        carbon_start_s: ``(R,)`` where the series' tick 0 starts.
        carbon_tick_s: ``(R,)`` its tick, seconds.
        carbon_values: ``(R,)`` its values per tick, g/kWh.
        carbon_before: ``(R,)`` per tick, the integral from the series' start to the tick's start, (g/kWh) s.
    """

    curve_u: list[list[float]]
    curve_w: list[list[float]]
    curve_steps: list[int]
    gpu_idle_w: list[float]
    gpu_delta_w: list[float]
    gpu_idle_node_w: list[float]
    region_of: list[int]
    n_regions: int
    carbon_constant: list[float]
    carbon_start_s: list[float]
    carbon_tick_s: list[float]
    carbon_values: list[list[float]]
    carbon_before: list[list[float]]

    @classmethod
    def of(cls, model: EnergyModel, gpu_counts: Sequence[int]) -> EnergyConstants:
        """The lists of ``model`` for a fleet of ``gpu_counts`` GPUs per node (checked by the caller)."""
        regions = model.regions
        series = [model.carbon[name] for name in regions]
        return cls(
            curve_u=[node.curve.points_u.tolist() for node in model.nodes],
            curve_w=[node.curve.watts.tolist() for node in model.nodes],
            curve_steps=[_uniform_steps(node.curve.points_u.tolist()) for node in model.nodes],
            gpu_idle_w=[node.gpu.idle_w if node.gpu is not None else 0.0 for node in model.nodes],
            gpu_delta_w=[node.gpu.busy_w - node.gpu.idle_w if node.gpu is not None else 0.0 for node in model.nodes],
            gpu_idle_node_w=[
                node.gpu.idle_w * count if node.gpu is not None else 0.0
                for node, count in zip(model.nodes, gpu_counts, strict=True)
            ],
            region_of=[regions.index(node.region) for node in model.nodes],
            n_regions=len(regions),
            carbon_constant=[float(ci.g_per_kwh[0]) if ci.n_ticks == 1 else -1.0 for ci in series],
            carbon_start_s=[ci.start_s for ci in series],
            carbon_tick_s=[ci.tick_s for ci in series],
            carbon_values=[ci.g_per_kwh.tolist() for ci in series],
            carbon_before=[ci.tick_integrals_s.tolist() for ci in series],
        )


def _uniform_steps(points: list[float]) -> int:
    """The segment count ``n`` when ``points`` are exactly ``k / n`` for ``k = 0..n``, else 0."""
    n = len(points) - 1
    return n if all(points[k] == k / n for k in range(n + 1)) else 0
