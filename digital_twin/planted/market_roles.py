"""The roles of a fleet's nodes in a priced planted episode: home nodes, dear nodes, and the price gap.

* cpu *home* nodes: the cpu-only nodes at the least price per core;
* GPU *home* nodes: the GPU nodes at the least price per GPU;
* *dear* nodes: the on-demand cpu-only nodes at the least price per core above the homes'.

:func:`roles_of` checks what the priced certificate needs of the fleet and the weights, and
names what fails: every other node at least as dear per core as the dear nodes (cpu jobs);
waiting dearer than the price gap for every cpu class, and cheaper than the GPU gap (a GPU job
waits rather than run on a dearer GPU node); home nodes without background under processor
sharing (a full node with background slows its jobs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from digital_twin.episode_settings import EpisodeSettings
from digital_twin.errors import SpecError
from digital_twin.fleet import NodeSpec
from digital_twin.planted.market_config import MarketConfig

SLACK = 1e-9
"""Relative tolerance when comparing prices."""


@dataclass(frozen=True)
class Roles:
    """Node indices by role, and the cpu price gap.

    Attributes:
        cpu_homes, gpu_homes, dears: Node indices (fleet order).
        delta_usd_per_core_s: Dear minus home price per core-second.
    """

    cpu_homes: tuple[int, ...]
    gpu_homes: tuple[int, ...]
    dears: tuple[int, ...]
    delta_usd_per_core_s: float


def _per_s(node: NodeSpec, units: float) -> float:
    return node.price_per_hour_usd / 3600.0 / units


def roles_of(
    fleet: tuple[NodeSpec, ...], settings: EpisodeSettings, peak_pct: np.ndarray, config: MarketConfig
) -> Roles:
    """The roles of ``fleet``'s nodes (``peak_pct``: ``(N,)`` peak background cpu %), checked.

    Raises:
        SpecError: No cpu-only node, no dear node, a node between the home and dear prices,
            a waiting weight outside the range the certificate needs, or background on a home
            node under processor sharing (each message names the node or the weight).
    """
    if settings.queue_ttl_s is None:
        raise SpecError(
            "a priced planted world needs queue_ttl_s: without it any job could wait to be cut off by the horizon"
        )
    cpu_nodes = [i for i, n in enumerate(fleet) if not n.gpu_count]
    if not cpu_nodes:
        raise SpecError("a priced planted world needs cpu-only nodes")
    per_core = {i: _per_s(n, n.cpu_cores) for i, n in enumerate(fleet)}
    home_price = min(per_core[i] for i in cpu_nodes)
    cpu_homes = tuple(i for i in cpu_nodes if per_core[i] <= home_price * (1 + SLACK))
    others = [i for i in cpu_nodes if i not in cpu_homes and not fleet[i].is_spot]
    if not others:
        raise SpecError("a priced planted world needs an on-demand cpu-only node dearer per core than the cheapest")
    dear_price = min(per_core[i] for i in others)
    dears = tuple(i for i in others if per_core[i] <= dear_price * (1 + SLACK))
    for i, node in enumerate(fleet):
        if i not in cpu_homes and per_core[i] < dear_price * (1 - SLACK):
            raise SpecError(
                f"node {node.node_id!r} is cheaper per core than the dear nodes: a cpu job would leave them for it"
            )
    delta = dear_price - home_price
    wait = settings.weights.wait_usd_per_job_hour / 3600.0
    widest = max(c.cpu_cores for c in config.classes("cpu"))
    if wait < widest * delta * (1 - SLACK):
        raise SpecError(
            f"wait_usd_per_job_hour {settings.weights.wait_usd_per_job_hour:g} is below the price gap of a "
            f"{widest:g}-core job ({widest * delta * 3600:.4g} USD/h): a cpu job would wait rather than run on a "
            "dear node"
        )
    gpu_homes = _gpu_homes(fleet, wait)
    if settings.contention:
        for i in (*cpu_homes, *gpu_homes):
            if peak_pct[i] > 0:
                raise SpecError(
                    f"home node {fleet[i].node_id!r} has background ({peak_pct[i]:g} % at peak): under processor "
                    "sharing a full home node would slow its jobs"
                )
    return Roles(cpu_homes, gpu_homes, dears, delta)


def _gpu_homes(fleet: tuple[NodeSpec, ...], wait_usd_per_s: float) -> tuple[int, ...]:
    """The GPU nodes at the least price per GPU (checked: waiting is cheaper than the next GPU node)."""
    gpu_nodes = [i for i, n in enumerate(fleet) if n.gpu_count]
    if not gpu_nodes:
        return ()
    per_gpu = {i: _per_s(fleet[i], fleet[i].gpu_count) for i in gpu_nodes}
    cheapest = min(per_gpu.values())
    homes = tuple(i for i in gpu_nodes if per_gpu[i] <= cheapest * (1 + SLACK))
    rest = [per_gpu[i] for i in gpu_nodes if i not in homes]
    if rest and wait_usd_per_s >= min(rest) - cheapest:
        raise SpecError(
            "wait_usd_per_job_hour is not below the GPU price gap: a GPU job would run on a dearer GPU node rather "
            "than wait for a home one"
        )
    return homes


def dear_room(node: NodeSpec, peak_pct: float, sla_threshold_pct: float, latency_critical: bool) -> float:
    """Cores our jobs may hold on a dear node.

    Below its peak background's complement (no contention) and, while a latency-critical job runs
    there, below the SLA threshold.
    """
    share = 1.0 - peak_pct / 100.0
    if latency_critical:
        share = min(share, (sla_threshold_pct - peak_pct) / 100.0)
    return max(share, 0.0) * node.cpu_cores
