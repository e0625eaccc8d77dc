"""Execution backends: wall time of one evaluation under serial, processes and ray, and speed-ups against serial.

The workload is the evaluation of the default scenario by 4 agents (first-fit, cheapest, aco,
random) x 10 seeds, as ``aco-env evaluate --backend NAME`` runs it: 40 units of one episode each
(:mod:`training.execution.backend`). Per backend:

* ``start_s``, ``stop_s``: entering and leaving the backend (spawning the pool; starting and
  shutting down a local Ray);
* ``cold_s``: the first evaluation on the started backend (its workers import the packages);
* ``total_s``: ``start_s + cold_s + stop_s``, what one ``aco-env evaluate`` pays;
* ``warm_s``: the same evaluation again on the started backend, best of ``repeats``: the cost of
  the work and of shipping it, without start-up;
* ``heavy_s``: ``lookahead`` x ``heavy_episodes`` seeds on the warm backend (about a second of
  work per episode), where the work outweighs the per-unit overheads;
* ``learned_p50_ms``: the median decision latency (wall ms per ``predict``) of ``make run``'s
  agent as the repository ships it (:data:`LEARNED_MODEL`), ``learned_episodes`` seeds on the warm
  backend: in a worker it must stay near its latency in this process (torch on one thread in
  every worker); ``learned_p50_vs_serial`` is the backend's over serial's. Left out without the
  model or the train extra.

Speed-ups are serial's time over the backend's. Every backend's results are compared with
serial's (timings aside): ``identical``. Without the ray extra the ``ray`` row is left out.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import scenarios
from training.evaluation.evaluator import evaluate
from training.evaluation.results import Evaluation, without_timing
from training.execution.backend import Backend
from training.execution.registry import BACKENDS, make_backend

AGENTS = ("first-fit", "cheapest", "aco", "random")
HEAVY_AGENT = "lookahead"
LEARNED_MODEL = Path("models") / "make-run" / "model.zip"
"""``make run``'s agent as the repository ships it (relative to the checkout)."""
_CHECKOUT = Path(__file__).resolve().parents[2]


def bench_backends(
    episodes: int = 10,
    repeats: int = 3,
    heavy_episodes: int = 10,
    agents: Sequence[str] = AGENTS,
    learned_episodes: int = 4,
) -> dict[str, Any]:
    """Times and speed-ups of each backend (module docstring); ``*_episodes=0`` skips that workload."""
    scenario = scenarios.load(scenarios.DEFAULT)
    names = [name for name in BACKENDS if _installed(name)]
    learned_agent = f"sb3:{_CHECKOUT / LEARNED_MODEL}"
    if not (learned_episodes and (_CHECKOUT / LEARNED_MODEL).exists() and importlib.util.find_spec("sb3_contrib")):
        learned_episodes = 0

    def light(backend: Backend) -> Evaluation:
        return evaluate(scenario, agents, episodes, seed=0, progress=False, backend=backend)

    def heavy(backend: Backend) -> Evaluation:
        return evaluate(scenario, [HEAVY_AGENT], heavy_episodes, seed=0, progress=False, backend=backend)

    def learned(backend: Backend) -> Evaluation:
        return evaluate(scenario, [learned_agent], learned_episodes, seed=0, progress=False, backend=backend)

    rows: dict[str, dict[str, Any]] = {}
    documents: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        row: dict[str, Any] = {}
        started = time.perf_counter()
        with make_backend(name) as backend:
            row["start_s"] = time.perf_counter() - started
            row["workers"] = backend.workers
            row["cold_s"], first = _timed(light, backend)
            row["warm_s"] = min(_timed(light, backend)[0] for _ in range(repeats))
            outputs = [first.to_json()]
            if heavy_episodes:
                row["heavy_s"], played = _timed(heavy, backend)
                outputs.append(played.to_json())
            if learned_episodes:
                played = learned(backend)
                row["learned_p50_ms"] = float(np.median(played.agents[learned_agent].latencies_ms))
                outputs.append(played.to_json())
            stopping = time.perf_counter()
        row["stop_s"] = time.perf_counter() - stopping
        row["total_s"] = row["start_s"] + row["cold_s"] + row["stop_s"]
        rows[name] = row
        documents[name] = [without_timing(document) for document in outputs]
    for name, row in rows.items():
        row["identical"] = documents[name] == documents["serial"]
    serial = rows["serial"]
    speedup = {
        kind: {name: serial[f"{kind}_s"] / row[f"{kind}_s"] for name, row in rows.items() if name != "serial"}
        for kind in ("total", "warm", *(("heavy",) if heavy_episodes else ()))
    }
    return {
        "scenario": scenario.name,
        "agents": list(agents),
        "episodes": episodes,
        "heavy": {"agent": HEAVY_AGENT, "episodes": heavy_episodes},
        "learned": {"agent": f"sb3:{LEARNED_MODEL.as_posix()}", "episodes": learned_episodes},
        "backends": rows,
        "speedup_vs_serial": speedup,
        "learned_p50_vs_serial": {
            name: row["learned_p50_ms"] / serial["learned_p50_ms"]
            for name, row in rows.items()
            if name != "serial" and learned_episodes
        },
        "left_out": sorted(set(BACKENDS) - set(names)),
    }


def _installed(name: str) -> bool:
    """Whether the optional extra the backend needs (if any) is installed."""
    module = BACKENDS[name].needs_module
    return module is None or importlib.util.find_spec(module) is not None


def _timed(play: Callable[[Backend], Evaluation], backend: Backend) -> tuple[float, Evaluation]:
    """Wall seconds of ``play(backend)``, and what it returned."""
    started = time.perf_counter()
    evaluation = play(backend)
    return time.perf_counter() - started, evaluation


__all__ = ["bench_backends"]
