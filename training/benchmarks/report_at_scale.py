"""The benchmark page's sections on scale: whole episodes, the GPU fleets, every fleet size, vector envs, serving."""

from __future__ import annotations

from typing import Any

from training.benchmarks.cells import fmt, table_head, with_skipped


def scale_section(scale: dict[str, Any]) -> list[str]:
    """Decisions per job and wall time of whole episodes, per scenario, agent and deferral rule."""
    lines = table_head(
        "## Decisions per job and wall time at scale",
        "Whole episodes (seed 0) through the env under each agent's deferral rule; ACO under `next-event` "
        "shows what `new-fit` saves.",
        ["scenario", "nodes", "agent", "deferral", "jobs", "decisions", "per job", "wall s", "objective USD"],
    )
    lines += [
        f"| {r['scenario']} | {r['nodes']} | {r['agent']} | {r['deferral']} | {r['jobs']:,} | {r['decisions']:,} | "
        f"{r['decisions_per_job']:.2f} | {r['wall_s']:.2f} | {r['objective_usd']:.4f} |"
        for r in scale["runs"]
    ]
    lines += [
        "",
        "ACO wall time over first-fit's (target at 500 nodes: within 10 x): "
        + "; ".join(f"{name} {ratio:.2f} x" for name, ratio in scale["aco_vs_first_fit_wall"].items())
        + ".",
        "",
    ]
    return lines


def full_scale_section(full: dict[str, Any]) -> list[str]:
    """Whole episodes on the whole GPU clusters: wall time, decisions per second and peak memory per run."""
    lines = table_head(
        "## The GPU fleets at full scale",
        "One episode (seed 0) per row, each in a fresh process (`training/benchmarks/full_scale.py`); `twin`: "
        "the twin alone under first-fit. RSS before: once the scenario's data is read; peak: after the episode.",
        ["scenario", "nodes", "agent", "jobs", "decisions", "wall s", "decisions/s", "RSS before MB", "peak RSS MB"],
    )
    lines += [
        f"| {r['scenario']} | {r['nodes']:,} | {r['agent']} | {r['jobs']:,} | {r['decisions']:,} | {r['wall_s']:.1f} | "
        f"{r['decisions_per_s']:,.0f} | {r['rss_before_mb']:.0f} | {r['peak_rss_mb']:.0f} |"
        for r in full["runs"]
    ]
    return with_skipped(lines, full["skipped"])


def serve_section(serve: dict[str, Any]) -> list[str]:
    """The placement service under load (``serving/loadtest.py``), and each agent's in-process apply."""
    lines = table_head(
        "## The placement service under load",
        f"`serving/loadtest.py`: {serve['clients']} client threads on `fleet5-synthetic` until {serve['placements']:,} "
        "placements, then SIGTERM and an independent check of the journal (`kept`: no node over capacity, no job "
        "placed twice or lost). `round trip`: at the client; `service`: as it reports; `agent`: each decision; "
        "`in-process`: one submission applied without HTTP.",
        ["agent", "placements/s", "round trip p50 / p99 ms", "service p50 / p99 ms", "agent p50 / p99 ms",
         "in-process p50 / p99 ms", "kept"],
    )
    in_process = {row["agent"]: row for row in serve["in_process"]}
    for run in serve["runs"]:
        apply = in_process.get(run["agent"])
        kept = run["capacity_exceeded"] == run["placed_twice"] == run["lost"] == 0
        lines.append(
            f"| {run['agent']} | {run['placements_per_s']:.0f} | {run['round_trip_ms_p50']:.0f} / "
            f"{run['round_trip_ms_p99']:.0f} | {run['scheduling_ms_p50']:.0f} / {run['scheduling_ms_p99']:.0f} | "
            f"{run['agent_ms_p50']:.2f} / {run['agent_ms_p99']:.1f} | "
            + (f"{apply['apply_ms_p50']:.2f} / {apply['apply_ms_p99']:.2f}" if apply else "")
            + f" | {'yes' if kept else 'NO'} |"
        )
    return [*lines, ""]


def fleet_size_section(sizes: dict[str, Any]) -> list[str]:
    """The env at every fleet size: its step against the twin's decision, memory, reset, a first-fit episode."""
    lines = table_head(
        "## The env at every fleet size (CPU time)",
        "`training/benchmarks/fleet_size.py`: the env's step over the twin's decision (median of pairs "
        "in turns), an env's memory per node, a reset, a first-fit episode (env and agent).",
        ["scenario", "nodes", "twin us/decision", "env us/step", "env / twin", "KB/node (peak)", "reset us",
         "first-fit decisions/CPU s"],
    )  # fmt: skip
    lines += [
        f"| {r['scenario']} | {r['nodes']:,} | {r['twin_us_per_decision']:.1f} | {r['env_us_per_step']:.1f} | "
        f"{r['env_vs_twin']:.2f} | {r['env_kb_per_node']:.1f} ({r['env_peak_kb_per_node']:.1f}) | "
        f"{r['reset_us']:,.0f} | {fmt(r.get('first_fit_decisions_per_cpu_s'))} |"
        for r in sizes["runs"]
    ]
    return with_skipped(lines, sizes["skipped"])


def vector_section(vector: dict[str, Any]) -> list[str]:
    """Vector envs of the default env against the bare env, in CPU time."""
    lines = table_head(
        "## Vector envs (CPU time)",
        "`training/benchmarks/vector.py`: random valid actions, resets included, against the bare env "
        "(`gym.make`; median of pairs in turns).",
        ["env", "steps/CPU s", "vs the bare env"],
    )
    rows = [
        ("bare env (`gym.make`)", "bare", None),
        (f"SyncVectorEnv of {vector['n_envs']}, default info", "sync", "sync_vs_bare"),
        (f"SyncVectorEnv of {vector['n_envs']}, `info=\"final\"`", "sync_final", "sync_final_vs_bare"),
        *((f"BatchedClusterEnv of {b}", f"batched_{b}", f"batched_{b}_vs_bare") for b in vector["batches"]),
    ]
    lines += [
        f"| {label} | {vector[f'{key}_steps_per_cpu_s']:,.0f} | {'' if ratio is None else f'{vector[ratio]:.2f}'} |"
        for label, key, ratio in rows
    ]
    return [*lines, ""]
