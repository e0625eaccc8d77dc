"""The printed leaderboard of an evaluation: agents as rows, sorted by mean objective."""

from __future__ import annotations

from typing import Any

EPISODE_COLUMNS = (
    ("objective_usd", "objective $", "{:.3f}"),
    ("cost_usd", "cost $", "{:.3f}"),
    ("sla_usd", "SLA $", "{:.2f}"),
    ("qos_usd", "QoS $", "{:.2f}"),
    ("eviction_usd", "evict $", "{:.2f}"),
    ("deadline_usd", "deadl $", "{:.2f}"),
    ("rejection_usd", "reject $", "{:.2f}"),
    ("sla_violations", "SLA viol", "{:.1f}"),
    ("qos_compliance", "QoS ok", "{:.0%}"),
    ("failed_jobs", "failed", "{:.1f}"),
    ("rejected_jobs", "rejected", "{:.1f}"),
    ("optimality_gap", "gap/bound", "{:.1%}"),
    ("optimality_gap_vs_plan", "gap/plan", "{:.1%}"),
    ("decision_latency_ms_p50", "p50 ms", "{:.3f}"),
    ("decision_latency_ms_p99", "p99 ms", "{:.3f}"),
)
PLACEMENT_COLUMNS = (
    ("optimal", "optimality rate", "{:.1%}"),
    ("regret_usd", "mean regret $", "{:.4f}"),
    ("decision_latency_ms_p50", "p50 ms", "{:.3f}"),
    ("decision_latency_ms_p99", "p99 ms", "{:.3f}"),
)


def format_leaderboard(document: dict[str, Any]) -> str:
    """A fixed-width table; the objective column shows mean +- 95 % CI half-width."""
    placement = document.get("env") == "placement"
    columns = PLACEMENT_COLUMNS if placement else EPISODE_COLUMNS
    agents = document["agents"]
    sort_key = "regret_usd" if placement else "objective_usd"
    order = sorted(agents, key=lambda name: agents[name]["mean"].get(sort_key) or 0.0)
    header = ["agent"] + [title for key, title, _ in columns if _present(agents, key)]
    rows = [header]
    for name in order:
        mean, ci = agents[name]["mean"], agents[name]["ci95"]
        row = [name]
        for key, _, fmt in columns:
            if not _present(agents, key):
                continue
            value = mean.get(key)
            cell = "-" if value is None else fmt.format(value)
            if key == columns[0][0] and ci.get(key) is not None:
                cell += " +- " + fmt.format(ci[key]).lstrip()
            row.append(cell)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    title = (
        f"{document['scenario']}: {document['episodes']} episode(s) per agent, seeds "
        f"{document['seeds'][0]}..{document['seeds'][-1]}" + (" (one-step placement env)" if placement else "")
    )
    lines = [title]
    lines += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
              for r in rows]
    if not placement and "oracle" in agents:
        bound = agents["oracle"]["mean"].get("objective_lower_bound_usd")
        proven = agents["oracle"]["mean"].get("oracle_proven_optimal")
        lines.append(f"oracle lower bound (mean): {bound:.4f} USD; proven optimal in {proven:.0%} of episodes")
    return "\n".join(lines)


def _present(agents: dict[str, Any], key: str) -> bool:
    return any(a["mean"].get(key) is not None for a in agents.values())
