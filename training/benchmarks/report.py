"""Render the benchmark JSON as the generated blocks of ``docs/benchmarks.md`` (one per section).

``make bench`` rewrites only those blocks (:func:`training.outputs.write_generated`): the page's
hand-written text (what is measured, the targets, how to compare runs) stays as it is.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from aco_env.registration import FLEET5_ID
from training.benchmarks.cells import fmt, ms
from training.benchmarks.report_at_scale import (
    fleet_size_section,
    full_scale_section,
    scale_section,
    serve_section,
    vector_section,
)

UNRECORDED = "not recorded"
"""What a table's header says of a commit the JSON does not hold (sections measured before it was kept)."""


def render_blocks(results: dict[str, Any]) -> dict[str, str]:
    """The generated blocks of ``docs/benchmarks.md``: ``{"bench-<section>": Markdown}``, one per section measured.

    Each block starts with the line naming its section's command, commit, date and machine
    (``results["provenance"][section]``; sections measured before the JSON kept provenance show
    the whole file's command and date, the commit ``not recorded``), then the section's table.
    """
    sections: list[tuple[str, Callable[[dict[str, Any]], list[str]]]] = [
        ("twin", _twin_section),
        ("env", _env_section),
        ("rules", _rules_section),
        ("aco", _aco_section),
        ("oracle", _oracle_section),
        ("memory", _memory_section),
        ("scale", scale_section),
        ("full-scale", full_scale_section),
        ("serve", serve_section),
        ("fleet-size", fleet_size_section),
        ("vector", vector_section),
        ("train", _train_lines),
        ("backends", lambda section: _backends_lines(section, results["machine"]["cpus"])),
        ("traces", _traces_lines),
    ]
    blocks = {}
    for key, section in sections:
        if results.get(key) is not None:
            lines = section(results[key])
            if lines:
                blocks[f"bench-{key}"] = "\n".join([lines[0], "", _provenance_line(results, key), *lines[1:]])
    return blocks


def _provenance_line(results: dict[str, Any], section: str) -> str:
    """``Command: `...` (commit ..., date; machine).`` for one section."""
    record = results.get("provenance", {}).get(section, {})
    machine = record.get("machine", results["machine"])
    commit = (record.get("commit") or "")[:10] or UNRECORDED
    command, date = record.get("command", results["command"]), record.get("date", results["date"])
    return (
        f"Command: `{_measuring_command(command)}` (commit {commit}, {date}; "
        f"Python {machine['python']}, {machine['processor']}, {machine['cpus']} CPUs, "
        f"{machine.get('twin_core', 'pure-python')} twin core)."
    )


OUTPUT_OPTIONS = ("--out", "--markdown")
"""Options that say where results go, not what is measured: left out of the commands a page shows."""


def _measuring_command(command: str) -> str:
    """``command`` without its :data:`OUTPUT_OPTIONS` and their values (``--out=X`` forms too)."""
    words = shlex.split(command)
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in OUTPUT_OPTIONS:
            skip = True
        elif not word.startswith(tuple(f"{option}=" for option in OUTPUT_OPTIONS)):
            kept.append(word)
    return shlex.join(kept)


def _aco_section(aco: dict[str, Any]) -> list[str]:
    """ACO's decision latency by fleet size, beside the reference's, then the predictors' times."""
    reference = aco.get("reference_ms", {})
    lines = [
        "## ACO decision latency",
        "",
        "One decision for the reference's latency job (batch, 0.1 core, preemptible: the full colony) on an "
        "empty cluster; `loaded`: random utilisation, 80 % of nodes feasible; `all iterations`: no carried "
        "pheromone, no stagnation stop.",
        "",
        "| nodes | p50 ms | p99 ms | p99 loaded | p99 all iterations | target p99 | reference p99 |",
        "|---|---|---|---|---|---|---|",
    ]
    targets = {"5": "0.25", "32": "", "1024": "2"}
    for size, row in aco["aco_decision_ms"].items():
        ref = reference.get(size, {}).get("p99")
        lines.append(
            f"| {size} | {row['p50']:.3f} | {row['p99']:.3f} | {aco['aco_decision_ms_loaded'][size]['p99']:.3f} | "
            f"{aco['aco_decision_ms_all_iterations'][size]['p99']:.3f} | {targets.get(size, '')} | "
            f"{'' if ref is None else ref} |"
        )
    lines += ["", "Reference figures: " + "; ".join(r["source"] for r in reference.values()) + ".", ""]
    lines += [
        "### Predictors (5 nodes)",
        "",
        "| predictor | whole trace ms | refit ms | one tick ms |",
        "|---|---|---|---|",
    ]
    for name, row in aco["predictor_ms"].items():
        if not isinstance(row, dict):
            continue
        lines.append(f"| {name} | {ms(row.get('trace'))} | {ms(row.get('refit'))} | {ms(row.get('predict'))} |")
    lines.append("")
    return lines


def _oracle_section(oracle: dict[str, Any]) -> list[str]:
    """The oracle's solve time, plan, bound and estimated memory per seed."""
    lines = [
        "## Oracle solve time",
        "",
        f"`{oracle['scenario']}` episodes, plan and lower bound (HiGHS solves, "
        f"{oracle.get('limits', 'a wall-time limit each')}), prorated cost."
        + (f" {oracle['note']}" if "note" in oracle else ""),  # a section re-run on its own says so
        "",
        "| seed | solve s | plan USD | bound USD | gap | status | estimated peak MB |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['seed']} | {r['solve_s']:.2f} | {r['plan_usd']:.4f} | {r['bound_usd']:.4f} | {r['gap']:.1%} | "
        f"{r['status']} | {r['estimated_peak_mb']:,.0f} |"
        for r in oracle["episodes"]
    ]
    lines += [
        "",
        "The estimate (`agents/oracle/sizing/size.py`), an upper bound of the measured peak, is checked "
        "against the budget (4 GB, `ACO_ENV_ORACLE_MEMORY_GB`) before anything is built.",
        "",
    ]
    return lines


def _memory_section(memory: dict[str, Any]) -> list[str]:
    """Peak memory of one default episode."""
    return [
        "## Memory of a default episode",
        "",
        "| measure | MB |",
        "|---|---|",
        f"| peak RSS of a fresh process playing one `{FLEET5_ID}` episode | {memory['peak_rss_mb']:.1f} |",
        f"| tracemalloc peak during reset + the episode | {memory['episode_peak_traced_mb']:.2f} |",
        "",
    ]


def _traces_lines(traces: dict[str, Any] | None) -> list[str]:
    """The trace load-time table; none without the section."""
    if traces is None:
        return []
    rows = [f"| {key.removesuffix('_ms')} | {fmt(value, 1)} |" for key, value in traces.items()]
    return ["## Trace load times", "", "| file | ms |", "|---|---|", *rows, ""]


def _backends_lines(bench: dict[str, Any] | None, cpus: int) -> list[str]:
    """The execution-backend table; none without the section."""
    if bench is None:
        return []
    heavy, learned = bench["heavy"], bench.get("learned", {"agent": "sb3", "episodes": 0})
    speedup = bench["speedup_vs_serial"]
    lines = [
        "## Execution backends",
        "",
        f"`aco-env evaluate --backend NAME` on `{bench['scenario']}`: {', '.join(bench['agents'])} x "
        f"{bench['episodes']} seeds on {cpus} CPUs. `total`: start, evaluate, stop; `warm`: again on the started "
        f"backend; `{heavy['agent']}`: {heavy['episodes']} seeds of it, warm. Speed-up: serial's time over the "
        f"backend's; `sb3 p50 ms`: median decision latency of `{learned['agent']}`, "
        f"{learned['episodes']} seeds, warm; `same results`: equal to serial's but for timing.",
        "",
        "| backend | workers | start s | stop s | total s | speed-up | warm s | speed-up | "
        f"{heavy['agent']} s | speed-up | sb3 p50 ms | vs serial | same results |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    latency = bench.get("learned_p50_vs_serial", {})
    for name, row in bench["backends"].items():
        ratios = [f"{speedup[kind][name]:.2f}" if name in speedup.get(kind, {}) else "1.00"
                  for kind in ("total", "warm", "heavy")]
        heavy_s = f"{row['heavy_s']:.2f}" if "heavy_s" in row else ""
        learned_ms = f"{row['learned_p50_ms']:.3f}" if "learned_p50_ms" in row else ""
        learned_ratio = f"{latency.get(name, 1.0):.2f}" if learned_ms else ""
        lines.append(
            f"| {name} | {row['workers']} | {row['start_s']:.2f} | {row['stop_s']:.2f} | {row['total_s']:.2f} | "
            f"{ratios[0]} | {row['warm_s']:.3f} | {ratios[1]} | {heavy_s} | {ratios[2] if heavy_s else ''} | "
            f"{learned_ms} | {learned_ratio} | {'yes' if row['identical'] else 'NO'} |"
        )
    if bench.get("left_out"):
        lines += ["", f"Left out (extra not installed): {', '.join(bench['left_out'])}."]
    return [*lines, ""]


def _train_lines(train: dict[str, Any]) -> list[str]:
    """The training-throughput table."""
    same_shape = train.get("cartpole_same_shape_steps_per_s")
    rows = [
        "| SB3 PPO, CartPole-v1 (SB3 defaults: 1 env, minibatch 64, 10 epochs) | "
        f"{fmt(train['cartpole_ppo_steps_per_s'])} | 1.00 | |",
    ]
    if same_shape:
        rows.append(
            f"| SB3 PPO, CartPole-v1, `aco-env run`'s rollout shape | {fmt(same_shape)} | "
            f"{same_shape / train['cartpole_ppo_steps_per_s']:.2f} | 1.00 |"
        )
    rows.append(
        f"| MaskablePPO, flat, 1 env | {fmt(train['flat_one_env_steps_per_s'])} | "
        f"{train['flat_one_env_vs_cartpole_ppo']:.2f} | |"
    )
    run_vs_shape = f"{train['run_vs_cartpole_same_shape']:.2f}" if same_shape else ""
    rows.append(
        f"| aco-env run (set policy, {train['run_n_envs']} envs) | {fmt(train['run_steps_per_s'])} | "
        f"{train['run_vs_cartpole_ppo']:.2f} | {run_vs_shape} |"
    )
    return [
        "## Training throughput",
        "",
        f"Samples per CPU second of `model.learn` (updates included), {train['steps']:,} steps after a warm-up "
        "rollout, one torch thread, best of the repeats, the learners in turns. `flat, 1 env`: MaskablePPO's "
        f"MultiInputPolicy on one env behind SB3's `Monitor`; `aco-env run`: the set policy, {train['run_n_envs']} "
        "envs batched in this process, rollouts of 512 steps each, minibatch 1,024, 4 epochs (the second row's shape).",
        "",
        "| learner | steps per CPU s | vs SB3 defaults on CartPole | vs the same rollout shape on CartPole |",
        "|---|---|---|---|",
        *rows,
        "",
    ]


def _twin_section(twin: dict[str, Any]) -> list[str]:
    """Twin throughput under a first-fit driver (and on the pure-Python sources, when measured)."""
    lines = [
        "## Digital twin",
        "",
        f"Default 5-node fleet, bundled synthetic trace with 300 s ticks, {twin['sim_days']} simulated days, "
        f"{twin['jobs']:,} synthetic jobs, first-fit driver (no env, no observation).",
        "",
        "| metric | result | target |",
        "|---|---|---|",
        f"| decisions per wall second | {fmt(twin['decisions_per_s'])} | >= 60,000 |",
        f"| simulated seconds per wall second | {fmt(twin['sim_seconds_per_wall_second'])} | |",
    ]
    if "energy_off" in twin:
        lines += [
            f"| decisions per wall second, energy accounting off | {fmt(twin['energy_off']['decisions_per_s'])} | |",
            f"| accounting on / off (median of paired runs) | {twin['energy_on_vs_off']:.2f} | >= 0.8 |",
        ]
    if "pure_python" in twin:
        lines += [
            f"| decisions per wall second, pure-Python twin | {fmt(twin['pure_python']['decisions_per_s'])} | |",
            f"| compiled / pure-Python | {twin['compiled_vs_pure_python']:.2f} | |",
        ]
    lines.append("")
    return lines


def _rules_section(rules: dict[str, Any]) -> list[str]:
    """Decisions per second on the placement-rules scenario, with its rules and without them."""
    return [
        "## Placement rules",
        "",
        f"`{rules['scenario']}` ({rules['episodes']} episodes, {rules['jobs']:,} jobs) with its `placement` section "
        "and without, in turns (ratios: medians of the pairs): first-fit in the twin (building a twin, which "
        f"compiles the rules, timed apart) and {rules['env_steps']:,} random valid steps through `gymnasium.make`.",
        "",
        "| metric | with rules | without | with / without |",
        "|---|---|---|---|",
        f"| twin decisions/s | {fmt(rules['twin_decisions_per_s'])} | "
        f"{fmt(rules['twin_decisions_per_s_without_rules'])} | {rules['twin_with_vs_without']:.2f} |",
        f"| ms to build a twin (per episode) | {rules['twin_build_ms']:.2f} | "
        f"{rules['twin_build_ms_without_rules']:.2f} | |",
        f"| env steps/s | {fmt(rules['env_steps_per_s'])} | {fmt(rules['env_steps_per_s_without_rules'])} | "
        f"{rules['env_with_vs_without']:.2f} |",
        "",
    ]


def _env_section(env: dict[str, Any]) -> list[str]:
    """Env steps per second through ``gymnasium.make``, beside CartPole-v1."""
    lines = [
        "## Environment vs CartPole",
        "",
        f"`gymnasium.make` with its default wrappers, {env['steps']:,} steps of uniformly random valid actions "
        "(resets included), in turns with `CartPole-v1`'s random steps in the same process; the ratio is the "
        "median over the pairs.",
        "",
        "| metric | result | target |",
        "|---|---|---|",
        f"| `{FLEET5_ID}` steps/s | {fmt(env['env_steps_per_s'])} | |",
        f"| `CartPole-v1` steps/s | {fmt(env['cartpole_steps_per_s'])} | |",
        f"| ratio | {env['env_vs_cartpole']:.3f} | >= 0.45 |",
        f"| simulated s per wall s (through the env) | {fmt(env['env_sim_seconds_per_wall_second'])} | |",
    ]
    if "pure_python" in env:
        pure = env["pure_python"]
        lines += [
            f"| ratio, pure-Python twin (child process: `CartPole-v1` {fmt(pure['cartpole_steps_per_s'])} "
            f"steps/s there) | {pure['env_vs_cartpole']:.3f} | |",
        ]
    lines.append("")
    return lines


