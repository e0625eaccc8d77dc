"""The summary table at the top of the page: each tier's headline, the reference against ours."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from training.reproduction.report_format import NA, mean, pct, table, worst_mean


def _headline_t1_1(result: dict[str, Any]) -> list[list[str]]:
    bal = result["topologies"]["balanced"]
    return [
        [
            "ACO saving vs First-Fit (balanced)",
            f"{100 * result['reference']['balanced']['aco_saving']:.1f} %",
            pct(bal["reference_setting"]["aco_saving_vs_first_fit"]),
            pct(bal["full_twin"]["aco_cost_saving_vs_first_fit"]) + " (compute cost)",
        ]
    ]


def _headline_t1_3(result: dict[str, Any]) -> list[list[str]]:
    def worst(setting: dict[str, Any]) -> str:
        return f"{worst_mean(setting, 'wall_p99_ms'):.3f} ms wall, {worst_mean(setting, 'cpu_p99_ms'):.3f} ms CPU"

    return [
        [
            "worst p99 over 1-200 queued jobs",
            f"{max(result['reference']['p99_ms'].values()):.3f} ms (< 0.75)",
            worst(result["reference_setting"]),
            worst(result["in_env"]) + " (agent.predict)",
        ]
    ]


def _headline_t4_1(result: dict[str, Any]) -> list[list[str]]:
    ref, twin, theirs = result["reference_setting"], result["full_twin"], result["reference"]
    return [
        [
            "ACO-cost saving vs Random",
            f"{100 * theirs['aco_cost_saving_vs_random']:.1f} %",
            pct(ref["aco_cost_saving_vs_random"]),
            pct(twin["aco_cost_saving_vs_random"]) + " (compute cost)",
        ],
        [
            "ACO+QoS: LS jobs on on-demand",
            f"{100 * theirs['aco_qos_ls_on_demand']:.1f} %",
            pct(ref["per_agent"]["aco"]["ls_on_demand"]),
            pct(twin["per_agent"]["aco"]["ls_on_demand"]),
        ],
    ]


def _headline_t5_2(result: dict[str, Any]) -> list[list[str]]:
    ref, twin = result["reference_setting"]["stable_share"], result["full_twin"]["stable_share"]
    rows = []
    for name in ("lstm", "ema"):
        if name not in ref:
            continue
        theirs = result["reference"].get(name, result["reference"]["ablation_10_seeds"].get(name))
        rows.append(
            [
                f"LC jobs on stable nodes: none -> {name}",
                f"{100 * result['reference']['none']:.1f} -> {100 * theirs:.1f} %",
                f"{100 * (mean(ref['none']) or 0):.1f} -> {pct(ref[name])}",
                f"{100 * (mean(twin['none']) or 0):.1f} -> {pct(twin[name])}",
            ]
        )
    return rows


HEADLINES: dict[str, Callable[[dict[str, Any]], list[list[str]]]] = {
    "T1.1": _headline_t1_1,
    "T1.3": _headline_t1_3,
    "T4.1": _headline_t4_1,
    "T5.2": _headline_t5_2,
}
"""Tier name -> its rows of the page's summary table (metric, reference, ours x 2)."""


def summary_table(tiers: dict[str, dict[str, Any]]) -> list[str]:
    """The page's summary: each tier's headline, reference against ours in both settings."""
    rows = []
    for name, result in tiers.items():
        if "skipped" in result:
            rows.append([name, result["title"], NA, "not run (data absent)", "not run (data absent)"])
            continue
        rows += [[name, *row] for row in HEADLINES[name](result)]
    return table(["tier", "headline", "reference", "ours: reference setting", "ours: full twin"], rows)
