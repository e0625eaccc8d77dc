"""Benchmarks: twin and env throughput (with CartPole beside it), trace load times, and more.

Every number is measured on this machine in this process and written to ``--out`` (JSON), each
section with its provenance (the command, the commit, the date, the machine). With ``--only``
and an ``--out`` that exists, the sections measured replace theirs in it and the others are
kept. With ``--markdown`` the JSON's sections are rendered as the generated blocks of
``docs/benchmarks.md``; the page's hand-written text is kept (:mod:`training.benchmarks.report`).
``--from JSON --markdown PAGE`` renders a JSON kept before and measures nothing.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from digital_twin import native
from digital_twin.atomic_files import write_text
from training.checks import writable_file
from training.errors import DataError, UsageError
from training.learning.provenance import command_line, provenance

HELP = (
    "measure speed and memory: twin, env vs CartPole, placement rules, traces, ACO, oracle, scale, training, "
    "execution backends, the GPU fleets at full scale, the placement service under load (JSON / Markdown)"
)

SECTIONS: dict[str, str] = {
    "twin": "training.benchmarks.twin:bench_twin",
    "env": "training.benchmarks.env:bench_env",
    "traces": "training.benchmarks.traces:bench_traces",
    "aco": "training.benchmarks.aco:bench_aco",
    "memory": "training.benchmarks.memory:bench_memory",
    "oracle": "training.benchmarks.oracle:bench_oracle",
    "scale": "training.benchmarks.scale:bench_scale",
    "train": "training.benchmarks.train:bench_train",
    "backends": "training.benchmarks.backends:bench_backends",
    "rules": "training.benchmarks.rules:bench_rules",
    "full-scale": "training.benchmarks.full_scale:bench_full_scale",
    "serve": "serving.loadtest:bench_serve",
    "fleet-size": "training.benchmarks.fleet_size:bench_fleet_size",
    "vector": "training.benchmarks.vector:bench_vector",
}
"""Section name -> ``module:function``; each function returns a JSON-ready dict."""

QUICK_OPTIONS: dict[str, dict[str, Any]] = {
    "twin": {"repeats": 1, "days": 2, "compare_pure_python": False},
    "env": {"steps": 3000, "repeats": 1, "compare_pure_python": False},
    "traces": {"repeats": 1},
    "rules": {"episodes": 2, "env_steps": 1000, "repeats": 1},
    "aco": {"n_decisions": 300},
    "oracle": {"seeds": 1},
    "train": {"steps": 4096, "repeats": 1},
    "backends": {"episodes": 3, "repeats": 1, "heavy_episodes": 2, "learned_episodes": 1},
    "scale": {
        "runs": (("fleet5-synthetic", "first-fit", None), ("fleet5-synthetic", "aco", None)),
        "real_trace": False,
    },
    "full-scale": {"scenario_names": ("openb1523-alibaba2023",), "agents": ("twin", "first-fit")},
    "serve": {"placements": 2000},
    "fleet-size": {"decisions": 500, "repeats": 1, "resets": 50, "episodes": False},
    "vector": {"steps": 4096, "repeats": 1},
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--quick, --only, --out, --markdown, --from."""
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run, noisier numbers)")
    parser.add_argument("--only", help=f"comma-separated sections (default: all of {', '.join(SECTIONS)})")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--markdown", type=Path, help="also render the results as Markdown here")
    parser.add_argument(
        "--from",
        dest="from_json",
        type=Path,
        help="render this results JSON into --markdown and measure nothing (e.g. docs/benchmarks.json)",
    )


def run(args: argparse.Namespace) -> int:
    """Check the options, run the chosen sections, print and write the results."""
    if args.from_json is not None:
        return _render(args)
    names = args.only.split(",") if args.only else list(SECTIONS)
    unknown = sorted(set(names) - set(SECTIONS))
    if unknown:
        raise UsageError(f"--only: unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    for option, path in (("--out", args.out), ("--markdown", args.markdown)):
        if path is not None:
            writable_file(path, option)
    command = "aco-env bench" + (" --quick" if args.quick else "") + (f" --only {args.only}" if args.only else "")
    machine = {"python": platform.python_version(), "processor": platform.machine(), "cpus": _cpus(),
               "twin_core": native.status}  # fmt: skip
    date = time.strftime("%Y-%m-%d")
    results: dict[str, Any] = _earlier(args) | {"command": command, "machine": machine, "date": date}
    commit = provenance(None)["commit"]
    record = {"command": command_line(args._argv), "commit": commit, "date": date, "machine": machine}
    for name in names:
        options = QUICK_OPTIONS.get(name, {}) if args.quick else {}
        started = time.perf_counter()
        results[name] = _load(SECTIONS[name])(**options)
        results.setdefault("provenance", {})[name] = record
        print(f"{name}: {json.dumps(results[name], default=_round)}  ({time.perf_counter() - started:.1f} s)")
    flat = _flat_keys(results)
    results.update(flat)
    if args.out:
        write_text(args.out, json.dumps(results, indent=1, default=float) + "\n")
        print(f"wrote {args.out}")
    if args.markdown:
        _write_page(args.markdown, results)
    return 0


def _render(args: argparse.Namespace) -> int:
    """``--from``: the JSON's sections into ``--markdown``, nothing measured."""
    if args.only or args.quick or args.out:
        raise UsageError("--from renders a results file kept before: --markdown alone (no --only, --quick, --out)")
    if args.markdown is None:
        raise UsageError("--from needs --markdown, the page to write (e.g. docs/benchmarks.md)")
    writable_file(args.markdown, "--markdown")
    try:
        results: dict[str, Any] = json.loads(args.from_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"--from {args.from_json}: cannot read the results ({exc})") from None
    if not isinstance(results, dict) or "machine" not in results:
        raise DataError(f"--from {args.from_json}: not an aco-env bench results file (no 'machine' key)")
    _write_page(args.markdown, results)
    return 0


def _write_page(page: Path, results: dict[str, Any]) -> None:
    """Render ``results``' sections as ``page``'s generated blocks (its hand-written text is kept)."""
    from training.benchmarks.report import render_blocks
    from training.outputs import write_generated

    write_generated(page, render_blocks(results), "make bench", "Benchmarks")
    print(f"wrote the generated tables of {page}")


def _earlier(args: argparse.Namespace) -> dict[str, Any]:
    """The sections of an existing ``--out`` that a run with ``--only`` keeps (nothing for a whole run)."""
    if not args.only or args.out is None or not args.out.is_file():
        return {}
    try:
        earlier: dict[str, Any] = json.loads(args.out.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"--out {args.out}: cannot read the earlier results to keep their sections ({exc})") from None
    provenance = earlier.setdefault("provenance", {})
    for name in SECTIONS:  # a section measured before provenance was kept: the file's own command and date
        if name in earlier and name not in provenance:
            provenance[name] = {key: earlier.get(key) for key in ("command", "date", "machine")} | {"commit": None}
    return earlier


def _flat_keys(results: dict[str, Any]) -> dict[str, Any]:
    """The headline numbers at the top level of the JSON (``env_vs_cartpole``, ``aco_decision_ms``, ...)."""
    flat: dict[str, Any] = {}
    env = results.get("env", {})
    for key in ("env_steps_per_s", "cartpole_steps_per_s", "env_vs_cartpole"):
        if key in env:
            flat[key] = env[key]
    if "train" in results:
        flat["train_run_vs_flat_one_env"] = results["train"]["run_vs_flat_one_env"]
    if "backends" in results:
        flat["backend_speedup_vs_serial"] = results["backends"]["speedup_vs_serial"]
    if "aco" in results:
        flat["aco_decision_ms"] = results["aco"]["aco_decision_ms"]
    if "twin" in results:
        flat["sim_seconds_per_wall_second"] = results["twin"]["sim_seconds_per_wall_second"]
        flat["twin_decisions_per_s"] = results["twin"]["decisions_per_s"]
    if "scale" in results:
        flat["aco_vs_first_fit_wall"] = results["scale"]["aco_vs_first_fit_wall"]
        flat["decisions_per_job"] = {
            f"{r['scenario']}/{r['agent']}/{r['deferral']}": r["decisions_per_job"] for r in results["scale"]["runs"]
        }
    return flat


def _load(target: str) -> Callable[..., dict[str, Any]]:
    import importlib

    module, function = target.split(":")
    return getattr(importlib.import_module(module), function)


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _round(value: float) -> float:
    return round(value, 4)
