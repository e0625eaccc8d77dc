"""Capacity fill of GPU-sharing placement policies, as in FGD's evaluation (Weng et al., ATC'23).

``aco-env capacity-fill --out DIR`` reads an Alibaba GPU 2023 node list and pod list (default:
``${ACO_ENV_TRACES}/alibaba-gpu-2023/openb_node_list_all_node.csv`` and
``openb_pod_list_default.csv``), and for each policy and seed submits pods drawn with
replacement, never finishing, until the arrived GPU demand reaches ``--max-load`` times the
cluster's GPU capacity. It writes ``DIR/capacity_fill.json`` (every curve and the summary) and
``DIR/capacity_fill.md`` (GPU allocation ratio and fragmentation rate at ``--loads``, mean and
spread over seeds). docs/fragmentation.md describes the measure and the policies.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from agents.gpu_sharing import PAPER_POLICIES, POLICIES, TIE_RULES
from digital_twin.gpu_sharing import GpuCluster, read_pod_list, target_workload
from digital_twin.gpu_sharing.pods import DEFAULT_POPULARITY
from training.capacity_fill import DEFAULT_MAX_LOAD, DEFAULT_TABLE_LOADS, check_fillable, run_fill, write_results
from training.errors import EXIT_OK, UsageError

HELP = "GPU-sharing capacity fill: allocation ratio and fragmentation (FGD's experiment) per policy"
TRACE_FOLDER = "alibaba-gpu-2023"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--nodes, --pods, --policies, --seeds, --max-load, --popularity, --ties, --loads, --out."""
    parser.add_argument("--nodes", type=Path, help="node list CSV (default: the full openb fleet under ACO_ENV_TRACES)")
    parser.add_argument(
        "--pods", type=Path, help="pod list CSV (default: openb_pod_list_default.csv under ACO_ENV_TRACES)"
    )
    parser.add_argument(
        "--policies",
        default=",".join(PAPER_POLICIES),
        help=f"comma-separated, from {', '.join(POLICIES)} (default: the paper's six)",
    )
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds, 0..N-1 (default 5)")
    parser.add_argument(
        "--max-load", type=float, default=DEFAULT_MAX_LOAD, help="stop at this arrived GPU load (default 1.3)"
    )
    parser.add_argument(
        "--popularity",
        type=float,
        default=DEFAULT_POPULARITY,
        help="share of pods the target workload's task types cover (default 1: all; FGD's artifact: 0.95)",
    )
    parser.add_argument(
        "--ties",
        choices=TIE_RULES,
        default="random",
        help="how policies break ties: random (default; stock Kubernetes) or node-order (reproduces FGD's artifact)",
    )
    parser.add_argument(
        "--loads",
        help="arrived loads (%%) shown in the table (default: 80,90,... below 100 x --max-load, and that)",
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder")


def _trace(path: Path | None, name: str) -> Path:
    if path is not None:
        return path
    root = os.environ.get("ACO_ENV_TRACES")
    if not root:
        raise UsageError(f"set ACO_ENV_TRACES or pass the file explicitly (no default for {name})")
    return Path(root) / TRACE_FOLDER / name


def _parse(args: argparse.Namespace) -> tuple[list[str], list[int]]:
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        raise UsageError(f"--policies: unknown policy {unknown or '(none given)'}; known: {', '.join(POLICIES)}")
    if args.seeds < 1:
        raise UsageError(f"--seeds must be >= 1, got {args.seeds}")
    if args.loads is None:
        top = round(100 * args.max_load)
        return policies, [load for load in DEFAULT_TABLE_LOADS if load < top] + [top]
    try:
        loads = [int(x) for x in args.loads.split(",")]
    except ValueError:
        raise UsageError(f"--loads must be comma-separated integers, got {args.loads!r}") from None
    if any(not 0 <= load <= round(100 * args.max_load) for load in loads):
        raise UsageError(f"--loads must lie in 0..{round(100 * args.max_load)} (100 x --max-load), got {loads}")
    return policies, loads


def run(args: argparse.Namespace) -> int:
    """Run every policy x seed, print the table and write the results."""
    from training.learning.provenance import provenance

    policies, loads = _parse(args)
    record = provenance("aco-env capacity-fill " + " ".join(_argv(args)))  # the commit that runs, read first
    nodes_path, pods_path = (
        _trace(args.nodes, "openb_node_list_all_node.csv"),
        _trace(args.pods, "openb_pod_list_default.csv"),
    )
    cluster = GpuCluster.from_node_csv(nodes_path)
    pods = read_pod_list(pods_path)
    check_fillable(cluster, pods)
    workload = target_workload(pods, cluster.models, args.popularity)
    curves = []
    for policy in policies:
        start = time.perf_counter()
        curves += [
            run_fill(cluster, pods, workload, policy, seed, args.max_load, args.ties) for seed in range(args.seeds)
        ]
        print(f"{policy}: {args.seeds} fill(s) in {time.perf_counter() - start:.1f} s", flush=True)
    settings = {
        "nodes": nodes_path.name,
        "pods": pods_path.name,
        "node_count": cluster.num_nodes,
        "gpu_capacity": cluster.capacity_milli // 1000,
        "pod_count": len(pods),
        "task_types": len(workload.prob),
        "popularity": args.popularity,
        "ties": args.ties,
        "max_load": args.max_load,
        "seeds": list(range(args.seeds)),
        **{key: record[key] for key in ("command", "commit", "started")},
    }
    json_path, md_path = write_results(args.out, settings, curves, loads)
    print(md_path.read_text(encoding="utf-8"))
    print(f"wrote {json_path} and {md_path}")
    return EXIT_OK


def _argv(args: argparse.Namespace) -> list[str]:
    """The options as given (paths by name only), for the record."""
    parts = []
    for key in ("nodes", "pods"):
        if getattr(args, key) is not None:
            parts.append(f"--{key} {getattr(args, key).name}")
    parts += [f"--policies {args.policies}", f"--seeds {args.seeds}", f"--max-load {args.max_load}"]
    parts += [f"--popularity {args.popularity}", f"--ties {args.ties}"]
    parts += ([f"--loads {args.loads}"] if args.loads else []) + ["--out OUT"]
    return parts
