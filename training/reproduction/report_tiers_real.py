"""The Markdown sections of the real-data tiers: T4.1 (GPU scheduling) and T5.2 (predictor routing).

As :mod:`training.reproduction.report_tiers`: the reference's number, ours in its setting, ours in
the full twin, and why they differ. Each function writes its section below the head;
:data:`training.reproduction.report_tiers.RENDERERS` adds the head.
"""

from __future__ import annotations

from typing import Any

from training.reproduction.report_format import (
    NA,
    cheaper,
    compare,
    mean,
    number,
    oracle_limits_note,
    pct,
    pm,
    table,
)


# ---------------------------------------------------------------------------------------- T4.1
def render_t4_1(result: dict[str, Any]) -> list[str]:
    """T4.1 below its head: per-agent tables for both settings (the headline is the summary's)."""
    ref, twin, theirs = result["reference_setting"], result["full_twin"], result["reference"]
    bed = result["testbed"]
    lines = [
        f"Testbed: {bed['nodes']} nodes ({bed['on_demand_nodes']} on-demand), {bed['gpus']} GPUs; "
        f"{bed['candidate_pods']:,} candidate pods; {result['config']['jobs']} sampled per seed "
        f"({', '.join(map(str, bed['ls_jobs_per_seed']))} LS).",
        "",
    ]
    rows = [
        [
            f"`{name}`",
            number(theirs["per_agent"][name]["total_price_per_hour"], 1),
            pm(r["total_price_per_hour"], digits=1),
            f"{100 * theirs['per_agent'][name]['ls_on_demand']:.1f} %",
            pct(r["ls_on_demand"]),
            pm(r["unplaced_jobs"], digits=1),
        ]
        for name, r in ref["per_agent"].items()
    ]
    lines += [
        "Reference setting (each pod alone on the empty cluster; `cheapest`: the reference's greedy, "
        "`aco-cost`: ACO without a strategy, `aco`: ACO+QoS):",
        "",
        *table(
            [
                "agent",
                "reference Σ $/h",
                "ours Σ $/h",
                "reference LS on on-demand",
                "ours LS on on-demand",
                "ours unplaced",
            ],
            rows,
        ),
    ]
    rows = [
        [
            f"`{name}`",
            pm(r["objective_usd"]),
            pm(r["cost_usd"]),
            pct(r["ls_on_demand"]),
            pm(r["sla_violations"], digits=1),
            pm(r["failed_jobs"], digits=1),
            pm(r["rejected_jobs"], digits=1),
            pm(r["mean_wait_s"], digits=0),
        ]
        for name, r in twin["per_agent"].items()
    ]
    hours = result["config"]["horizon_s"] / 3600
    lines += [
        "",
        f"Full twin (one {hours:g} h episode per seed; unplaced LS jobs count as not on on-demand):",
        "",
        *table(
            [
                "agent",
                "objective USD",
                "compute cost USD",
                "LS on on-demand",
                "SLA violations",
                "failed (evicted)",
                "rejected",
                "mean wait s",
            ],
            rows,
        ),
        "",
    ]
    if twin["oracle"]:
        o = twin["oracle"]
        lines += [
            f"Oracle: lower bound {pm(o['lower_bound_usd'])} USD, gap of its plan to the bound "
            f"{pct(o['gap'])}, proven optimal in {o['proven_optimal']} of {o['episodes']} episodes "
            f"({oracle_limits_note(o)}).",
            "",
        ]
    return [*lines, *_why_t4_1(result), ""]


def _why_t4_1(result: dict[str, Any]) -> list[str]:
    ref, twin = result["reference_setting"]["per_agent"], result["full_twin"]["per_agent"]
    greedy, first_fit = mean(ref["cheapest"]["total_price_per_hour"]), mean(ref["first-fit"]["total_price_per_hour"])
    text = (
        "**Why they differ.** Our NumPy samples of nodes and pods are not the reference's pandas ones, so "
        'absolute $/h differ. "79.6 % cheaper than Random" measures Random, which spreads 1-GPU pods up to '
        f"the $25.6/h V100 nodes, while ACO-cost ({pm(ref['aco-cost']['total_price_per_hour'], digits=1)} $/h), "
        f"First-Fit ({pm(ref['first-fit']['total_price_per_hour'], digits=1)}) and the greedy "
        f"({pm(ref['cheapest']['total_price_per_hour'], digits=1)}) settle on the cheapest capable node "
        "($1.00/h A10). "
        + (
            "The reference's greedy ($89.0, below its First-Fit) likely drew some $0.60/h P100 spot nodes; "
            "ours drew none. "
            if greedy is not None and first_fit is not None and abs(greedy - first_fit) < 0.5
            else ""
        )
        + f"ACO+QoS keeps LS pods on on-demand nodes ({pct(ref['aco']['ls_on_demand'])}) but sends "
        "preemptible GPU pods to `preemptible-actor`, x86/arm only: "
        f"{pm(ref['aco']['unplaced_jobs'], digits=1)} per seed fit nowhere (0 $/h here). In the full twin "
        f"ACO-cost's saving falls to {pct(result['full_twin']['aco_cost_saving_vs_random'])} of compute cost "
        f"({pct(result['full_twin']['aco_cost_objective_saving_vs_random'])} of objective), and ACO+QoS "
        f"({pct(twin['aco']['ls_on_demand'])} LS on on-demand) pays with {pm(twin['aco']['rejected_jobs'], digits=1)} "
        f"rejected pods per episode: its objective ({pm(twin['aco']['objective_usd'])} USD) is "
        f"{cheaper(mean(twin['aco']['objective_usd']), mean(twin['first-fit']['objective_usd']))} First-Fit's."
    )
    if "oracle" in twin:
        text += _t4_1_oracle_text(twin["oracle"])
    return [text]


LATE_START_S = 600.0
"""A mean wait above this (s) is called out as the oracle holding pods back."""


def _t4_1_oracle_text(o: dict[str, Any]) -> str:
    """What the oracle's T4.1 plan does, said only where its numbers show it."""
    text = (
        f" The oracle's plan ({pm(o['objective_usd'])} USD) is the cheapest its programs found with hindsight "
        "within their limits, not a proven optimum."
    )
    if mean(o["rejected_jobs"]) >= 1.0 or mean(o["failed_jobs"]) >= 1.0:
        text += (
            f" It rejects {pm(o['rejected_jobs'], digits=1)} pods and lets {pm(o['failed_jobs'], digits=1)} fail: "
            "the default penalties ($1 per rejection, $0.50 per failed job, sized for the 5-node CPU fleet) cost "
            "less than running a multi-GPU pod for hours."
        )
    if mean(o["mean_wait_s"]) >= LATE_START_S:
        text += (
            f" It starts pods late ({pm(o['mean_wait_s'], digits=0)} s on average): waiting is free here and pods "
            "still running at the horizon are charged only up to it."
        )
    return text


# ---------------------------------------------------------------------------------------- T5.2
def render_t5_2(result: dict[str, Any]) -> list[str]:
    """T5.2 below its head: share on stable nodes per condition in both settings."""
    ref, twin, theirs = result["reference_setting"], result["full_twin"], result["reference"]
    ablation = theirs["ablation_10_seeds"]
    rows = []
    for name in ref["stable_share"]:
        t_ref, t_twin = (ref["paired_t"].get(name, {}), twin["paired_t"].get(name, {}))
        rows.append(
            [
                name,
                f"{100 * theirs[name]:.1f} %" if name in theirs else NA,
                f"{100 * ablation[name]:.1f} %" if name in ablation else NA,
                pct(ref["stable_share"][name]) + (f" (t = {t_ref['t']:.1f})" if t_ref.get("t") is not None else ""),
                pct(twin["stable_share"][name]) + (f" (t = {t_twin['t']:.1f})" if t_twin.get("t") is not None else ""),
                pm(twin["per_condition"][name]["sla_violations"], digits=1),
            ]
        )
    lines = table(
        [
            "prediction",
            "reference (README)",
            "reference (paper, 10 seeds)",
            "ours: reference setting",
            "ours: full twin",
            "full twin: SLA violations",
        ],
        rows,
    )
    lines += [
        "",
        "Share of latency-critical jobs on the 16 stable nodes (t: paired t against no prediction, "
        "over seeds); the oracle does not apply (a routing share, not the objective).",
        "",
    ]
    none_ref = mean(ref["stable_share"]["none"])
    lstm_ref = mean(ref["stable_share"].get("lstm"))
    gains = ", ".join(f"{name} {pm(v, digits=1)} pp" for name, v in twin["gain_pp"].items())
    noise = all(v["ci95"] is not None and abs(v["mean"]) <= v["ci95"] for v in twin["gain_pp"].values())
    text = (
        "**Why they differ.** Without predictions every node has the same eta in the reference's setting "
        f"and the shuffled order decides (ours {100 * (none_ref or 0):.1f} %, reference 48.8 %); a predictor "
        "damps nodes whose window ends in a rise, and the argmax picks among the stable rest. Our EMA and "
        f"persistence land near the paper's ablation; our LSTM is {compare(lstm_ref, theirs['lstm'])} the "
        f"README's 80.3 % and {compare(lstm_ref, theirs['ablation_10_seeds']['lstm'])} the paper's 75.4 % (it "
        "depends on its initial weights, and reads percent, not cores: decision 3). In the full twin (gains: "
        f"{gains}) "
        + ("no predictor moves the share beyond its seed-to-seed noise" if noise else "the gains shrink")
        + ": ACO already picks the node with the most headroom, a stable node "
        f"{pct(twin['stable_share']['none'])} of the time, and utilisation separates nodes far more than the "
        "prediction factor (at most halving eta)." + _contention_note(twin.get("contention"))
    )
    return [*lines, text, ""]


def _contention_note(contention: dict[str, Any] | None) -> str:
    """What cpu contention changed in T5.2's full twin (ACO without prediction, with and without it)."""
    if contention is None:
        return ""
    changed, n = contention["episodes_changed"], contention["objective_change_usd"]["n"]
    peak = f"the background peaks at {contention['max_background_cpu_pct']:.1f} % of a node's cores"
    if changed == 0:
        return f" CPU contention changed none of the {n} episodes: {peak} and ACO spreads the jobs by headroom."
    change = contention["objective_change_usd"]
    return (
        f" CPU contention changed {changed} of the {n} episodes, by {change['mean']:.2g} USD of objective "
        f"on average (at most {max(change['values']):.2g}): {peak} and ACO spreads the jobs by headroom."
    )
