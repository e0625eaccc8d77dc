"""Render the benchmark JSON as the Markdown of ``docs/benchmarks.md``."""

from __future__ import annotations

from typing import Any


def _fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "n/a (data not present)"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def render_markdown(results: dict[str, Any]) -> str:
    """The whole page: one table per section present in ``results``."""
    machine = results["machine"]
    lines = [
        "# Benchmarks",
        "",
        "Generated from the JSON of",
        "",
        "```",
        f"{results['command']} --out docs/benchmarks.json --markdown docs/benchmarks.md",
        "```",
        "",
        f"(`make bench` runs exactly this). Measured on {results['date']}: Python {machine['python']}, "
        f"{machine['processor']}, {machine['cpus']} CPUs. Best of several repeats; speed is never "
        "asserted in tests.",
        "",
    ]
    if "twin" in results:
        twin = results["twin"]
        lines += [
            "## Digital twin (issue 2)",
            "",
            f"Default 5-node fleet, bundled synthetic trace with 300 s ticks, {twin['sim_days']} simulated days, "
            f"{twin['jobs']:,} synthetic jobs, first-fit driver (no env, no observation).",
            "",
            "| metric | result | target |",
            "|---|---|---|",
            f"| decisions per wall second | {_fmt(twin['decisions_per_s'])} | >= 60,000 |",
            f"| simulated seconds per wall second | {_fmt(twin['sim_seconds_per_wall_second'])} | |",
            "",
        ]
    if "env" in results:
        env = results["env"]
        lines += [
            "## Environment vs CartPole (issue 4)",
            "",
            f"`gymnasium.make` with its default wrappers, {env['steps']:,} steps with uniformly random "
            "valid actions (resets included), next to `CartPole-v1` with uniformly random actions, same process.",
            "",
            "| metric | result | target |",
            "|---|---|---|",
            f"| `aco_env/Fleet5-v0` steps/s | {_fmt(env['env_steps_per_s'])} | |",
            f"| `CartPole-v1` steps/s | {_fmt(env['cartpole_steps_per_s'])} | |",
            f"| ratio | {env['env_vs_cartpole']:.3f} | >= 0.3 |",
            f"| simulated seconds per wall second (through the env) | {_fmt(env['env_sim_seconds_per_wall_second'])} | |",
            "",
        ]
    if "traces" in results:
        lines += ["## Trace load times (issue 3)", "", "| file | ms |", "|---|---|"]
        lines += [f"| {key.removesuffix('_ms')} | {_fmt(value, 1)} |" for key, value in results["traces"].items()]
        lines.append("")
    return "\n".join(lines)
