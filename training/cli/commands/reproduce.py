"""Reproduce the reference ACO system's benchmarks, in its own setting and in the full twin.

Tiers: T1.1 (cost against First-Fit), T1.3 (latency p99), T4.1 (GPU scheduling, real data) and
T5.2 (predictor routing, real data). Writes ``DIR/reproduction.json`` (every number, per seed)
and ``DIR/reproduction.md`` (the tables, the command of each, and why ours differ from the
reference's). Real-data tiers read ``ACO_ENV_TRACES``; without it they are skipped with a
message and the command still exits 0.

The full twin's episodes (one unit per tier, agent and seed; the oracle's includes its solve)
run on ``--backend``: ``processes`` (the default, one per core), ``serial`` or ``ray`` (a local
Ray or the cluster at ``--address``). Every backend writes the same numbers; only timings and
the ``backend`` field differ. T1.3 measures decision latencies and always runs in this
process. An episode that fails is retried twice; if it still fails, the command names it,
writes nothing and exits 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from agents.oracle.milp.limits import SolveLimits
from digital_twin.atomic_files import AtomicBatch
from training.checks import count, writable_dir
from training.cli.backend_options import add_backend_arguments, check_backend
from training.errors import CommandError, UsageError
from training.outputs import folder_lock, replace_generated

HELP = "reproduce the reference's benchmarks in its setting and in the full twin"
DEFAULT_SEEDS = 5
REPRODUCE_NODE_LIMIT = 10
"""Nodes per oracle solve here: T1.1's worst-case plan program spends minutes per 100 nodes
(measured on seed 0: 10 nodes 185 s for the whole oracle, 100 nodes 251 s, 1,000 nodes 855 s)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--tier, --seeds, --out, --oracle-node-limit, --oracle-time-limit, --no-oracle, --backend, --address."""
    parser.add_argument(
        "--tier", action="append", help="tier to run, e.g. T1.1 (repeatable or comma-separated; default: all)"
    )
    parser.add_argument(
        "--seeds", type=count(1), default=DEFAULT_SEEDS, help="seeds per tier: 0 .. N-1 (default: %(default)s)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("results/reproduction"),
        help="folder for reproduction.json and reproduction.md (default: %(default)s)",
    )
    parser.add_argument(
        "--oracle-node-limit",
        type=count(1),
        default=REPRODUCE_NODE_LIMIT,
        help="branch-and-bound nodes per HiGHS solve of the oracle: the limit that keeps its numbers the same on "
        "every machine (default: %(default)s)",
    )
    parser.add_argument(
        "--oracle-time-limit",
        type=float,
        default=None,
        help="also cap each HiGHS solve at this many seconds of wall time (default: no cap; a capped solve may "
        "give other numbers on another machine)",
    )
    parser.add_argument("--no-oracle", action="store_true", help="skip the oracle (its columns are n/a)")
    add_backend_arguments(parser, "the full twin's episodes")


def _command(args: argparse.Namespace, tiers: list[str]) -> str:
    parts = ["aco-env reproduce"]
    if args.tier:
        parts += [f"--tier {name}" for name in tiers]
    parts.append(f"--seeds {args.seeds}")
    if args.no_oracle:
        parts.append("--no-oracle")
    else:
        if args.oracle_node_limit != REPRODUCE_NODE_LIMIT:
            parts.append(f"--oracle-node-limit {args.oracle_node_limit}")
        if args.oracle_time_limit is not None:
            parts.append(f"--oracle-time-limit {args.oracle_time_limit:g}")
    parts.append(f"--out {args.out}")
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    """Check the options, run the chosen tiers, write the JSON and the Markdown."""
    from training.execution.backend import BackendError, UnitsFailedError
    from training.execution.registry import make_backend
    from training.learning.provenance import provenance
    from training.reproduction import TIERS, tier_module
    from training.reproduction.data import traces_dir
    from training.reproduction.play import oracle_available
    from training.reproduction.report import PAGE_TITLE, render_blocks

    tiers = [t.strip() for item in (args.tier or [",".join(TIERS)]) for t in item.split(",") if t.strip()]
    unknown = [t for t in tiers if t not in TIERS]
    if unknown or not tiers:
        raise UsageError(f"--tier: unknown tier(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(TIERS)}")
    if args.oracle_time_limit is not None and not args.oracle_time_limit > 0:
        raise UsageError(f"--oracle-time-limit must be > 0 seconds, got {args.oracle_time_limit}")
    check_backend(args.backend, args.address)
    writable_dir(args.out, "--out")
    seeds = list(range(args.seeds))
    oracle_limits = None if args.no_oracle else SolveLimits(args.oracle_node_limit, args.oracle_time_limit)
    root = traces_dir()
    if root is None:
        print("ACO_ENV_TRACES is not set: tiers that need real traces (T4.1, T5.2) will be skipped")
    document: dict[str, Any] = {
        "command": _command(args, tiers),
        "date": time.strftime("%Y-%m-%d"),
        "commit": provenance(None)["commit"],
        "machine": {"python": platform.python_version(), "processor": platform.machine(), "cpus": _cpus()},
        "settings": {
            "seeds": args.seeds,
            "oracle_limits": None if oracle_limits is None else dataclasses.asdict(oracle_limits),
            "oracle_available": oracle_available(),
            "traces_present": root is not None,  # never the folder itself: a machine's path
            "backend": args.backend,
        },
        "tiers": {},
    }
    with folder_lock(args.out, "--out"):  # one run at a time into --out
        try:
            with make_backend(args.backend, args.address) as backend:
                for name in tiers:
                    started = time.perf_counter()
                    print(f"{name}: running ...", flush=True)
                    result = tier_module(name).run(seeds, oracle_limits=oracle_limits, backend=backend)
                    document["tiers"][name] = result
                    status = result.get("skipped", "done")
                    print(f"{name}: {status} ({time.perf_counter() - started:.1f} s)", flush=True)
        except BackendError as exc:
            raise CommandError(f"--backend {args.backend}: {exc}") from None
        except UnitsFailedError as exc:
            raise CommandError(exc.for_user()) from None
        json_path, markdown_path = args.out / "reproduction.json", args.out / "reproduction.md"
        with AtomicBatch() as batch:  # both renamed into place once both are written
            batch.write_text(json_path, json.dumps(document, indent=1, default=float) + "\n")
            earlier = markdown_path.read_text(encoding="utf-8") if markdown_path.exists() else f"# {PAGE_TITLE}\n"
            batch.write_text(markdown_path, replace_generated(earlier, render_blocks(document), "make reproduce"))
    print(f"wrote {json_path} and {markdown_path}")
    return 0


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
