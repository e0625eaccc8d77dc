"""Benchmarks of the ACO decision and of the predictors (called by ``aco-env bench``; not tests).

``aco_decision_ms`` times one full decision -- :func:`~agents.aco.scheduler.schedule` (route,
filter, cost engine, 20 x 5 colony) plus the carried-pheromone update -- for the reference's
latency job (batch, 0.1 core, 0.2 GB, preemptible: the ``preemptible-actor`` strategy, so the
full colony, never the fast path), at 5, 32 and 1,024 nodes, in two settings:

* ``empty``: every node fits and is idle (utilisation 0 %), as the reference's T1.3;
* ``loaded``: utilisation U(0, 120) %, 80 % of nodes feasible, some nodes running jobs.

Fleets: the default 5-node fleet; larger ones repeat its five node types with +-20 % price
jitter (seeded). Wall time per decision with ``time.perf_counter_ns`` after a warm-up; the
garbage collector stays on (an agent would see its pauses too).

``predictor_ms`` times each predictor's table over a trace of ``trace_ticks`` ticks, and for
the LSTM one refit (all nodes, ``history`` samples, 50 epochs) and one forecast (all nodes, one
tick).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from agents.aco.colony import ColonyConfig, NodePheromone
from agents.aco.scheduler import FleetArrays, schedule
from agents.predictor import PREDICTORS, LstmPredictor
from digital_twin import JobSpec, NodeSpec, default_fleet, generate_fleet

LATENCY_JOB = JobSpec("bench", 0.0, 60.0, "batch", 0.1, 0.2, priority=50, preemptible=True)
"""The reference's T1.3 job: routed to PREEMPTIBLE_ACTOR (full colony on x86/arm nodes)."""
SETTINGS = ("empty", "loaded")


def bench_fleet(n_nodes: int, seed: int = 0) -> tuple[NodeSpec, ...]:
    """The default fleet (5 nodes), or ``n_nodes`` nodes of its 5 types with prices +-20 %."""
    base = default_fleet()
    if n_nodes == len(base):
        return base
    per_type, extra = divmod(n_nodes, len(base))
    counts = {node.node_id: per_type + (i < extra) for i, node in enumerate(base)}
    return generate_fleet(
        {n.node_id: n for n in base}, counts, np.random.default_rng(seed), price_jitter=0.2
    )


def _percentiles(samples_ns: Sequence[int]) -> dict[str, float]:
    ms = np.asarray(samples_ns, dtype=float) / 1e6
    return {
        "p50": float(np.percentile(ms, 50)),
        "p99": float(np.percentile(ms, 99)),
        "mean": float(ms.mean()),
        "n": int(ms.size),
    }


def _state(
    n_nodes: int, setting: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(feasible (N,), utilisation % (N,), running_by_type (N, 3))`` of one decision."""
    if setting == "empty":
        return (
            np.ones(n_nodes, dtype=bool),
            np.zeros(n_nodes),
            np.zeros((n_nodes, 3), dtype=np.int64),
        )
    feasible = rng.random(n_nodes) < 0.8
    feasible[rng.integers(n_nodes)] = True  # the env only asks when something fits
    running = rng.poisson(0.5, size=(n_nodes, 3))
    return feasible, rng.uniform(0.0, 120.0, n_nodes), running


def aco_decision_latency(
    sizes: Sequence[int] = (5, 32, 1024),
    n_decisions: int = 2000,
    warmup: int = 200,
    setting: str = "empty",
    seed: int = 0,
    carry_pheromone: bool = True,
    colony: ColonyConfig = ColonyConfig(),  # noqa: B008  (frozen, so a shared default is safe)
) -> dict[str, dict[str, float]]:
    """Decision latency in ms (p50, p99, mean, n) per fleet size; see the module docstring.

    ``carry_pheromone`` feeds the carried pheromone to the colony (the ``aco`` agent) or not
    (``aco-reference``); ``colony`` sets the colony's constants (e.g. ``stagnation_limit=99``
    for always all iterations, the worst case).

    Also reports ``colony_share``, the fraction of timed decisions that ran the colony (1.0
    unless a state left no candidate), and ``mean_iterations``, the colony iterations per
    decision (below 5 when the stagnation rule stopped it).
    """
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")
    out: dict[str, dict[str, float]] = {}
    for n_nodes in sizes:
        fleet = FleetArrays.from_fleet(bench_fleet(n_nodes, seed))
        rng = np.random.default_rng(seed)
        states = [_state(n_nodes, setting, rng) for _ in range(min(n_decisions, 64))]
        pheromone = NodePheromone(n_nodes)
        samples: list[int] = []
        colony_runs = iterations = 0
        for k in range(warmup + n_decisions):
            feasible, utilization, running = states[k % len(states)]
            start = time.perf_counter_ns()
            decision = schedule(
                LATENCY_JOB,
                fleet,
                feasible,
                utilization,
                running,
                rng,
                pheromone=pheromone.values if carry_pheromone else None,
                config=colony,
            )
            if decision.node is not None:
                pheromone.update(decision.node)
            elapsed = time.perf_counter_ns() - start
            if k >= warmup:
                samples.append(elapsed)
                if decision.colony is not None:
                    colony_runs += 1
                    iterations += decision.colony.iterations
        out[str(n_nodes)] = {
            **_percentiles(samples),
            "colony_share": colony_runs / n_decisions,
            "mean_iterations": iterations / max(colony_runs, 1),
        }
    return out


def _time_ms(call: Callable[[], Any], repeats: int) -> dict[str, float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    return {"p50": float(np.median(samples)) / 1e6, "min": float(min(samples)) / 1e6, "n": repeats}


def predictor_times(
    n_nodes: int = 5,
    trace_ticks: int = 120,
    history: int = 500,
    repeats: int = 3,
    seed: int = 0,
    predictors: Sequence[str] = ("persistence", "ema", "lstm"),
) -> dict[str, dict[str, Any]]:
    """Predictor times in ms on a synthetic diurnal trace (``n_nodes`` columns).

    Returns:
        Per predictor: ``trace`` (the whole table over ``trace_ticks`` ticks, p50 of
        ``repeats``); for ``lstm`` also ``refit`` (one fit of all nodes on ``history`` samples)
        and ``predict`` (one tick's forecast for all nodes).
    """
    rng = np.random.default_rng(seed)
    ticks = np.arange(max(trace_ticks, history + 1))[:, None]
    series = np.clip(
        45
        + 20 * np.sin(2 * np.pi * ticks / 288 + rng.uniform(0, 6, n_nodes))
        + rng.normal(0, 4, (ticks.size, n_nodes)),
        0.0,
        100.0,
    )
    out: dict[str, dict[str, Any]] = {}
    for name in predictors:
        predictor = PREDICTORS[name]()
        out[name] = {
            "trace": _time_ms(
                functools.partial(predictor.predict_trace, series[:trace_ticks], seed), repeats
            )
        }
        out[name]["trace"].update(ticks=trace_ticks, nodes=n_nodes)
        if isinstance(predictor, LstmPredictor):
            out[name].update(_lstm_times(predictor, series, history, repeats, seed))
    return out


def _lstm_times(
    predictor: LstmPredictor, series: np.ndarray, history: int, repeats: int, seed: int
) -> dict[str, dict[str, float]]:
    import torch  # only when the LSTM is benchmarked

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in LstmPredictor.forecast
    try:
        window = series[:history]
        refit = _time_ms(lambda: predictor.fit(window, seed), repeats)
        model = predictor.fit(window, seed)
        predict = _time_ms(
            lambda: predictor.predict_range(model, series, history, history + 1), max(repeats, 20)
        )
    finally:
        torch.set_num_threads(threads)
    nodes = series.shape[1]
    return {
        "refit": {**refit, "history": history, "nodes": nodes},
        "predict": {**predict, "nodes": nodes},
    }


def run_benchmarks(
    sizes: Sequence[int] = (5, 32, 1024),
    n_decisions: int = 2000,
    predictor_options: dict[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Every benchmark of this module.

    Returns:
        ``"aco_decision_ms"``: ``{"5": {"p50", "p99", "mean", "n", "colony_share",
        "mean_iterations"}, "32": ..., "1024": ...}`` for the ``aco`` agent's decision in the
        reference's empty-cluster setting; ``"aco_decision_ms_loaded"``: the same on loaded
        states; ``"aco_decision_ms_all_iterations"``: empty cluster, no carried pheromone and
        no stagnation stop (always 20 ants x 5 iterations: the worst case);
        ``"predictor_ms"``: see :func:`predictor_times`; ``"settings"``: what was measured.
    """
    options = dict(predictor_options or {})
    worst = ColonyConfig(stagnation_limit=ColonyConfig().n_iterations + 1)
    return {
        "aco_decision_ms": aco_decision_latency(sizes, n_decisions, setting="empty", seed=seed),
        "aco_decision_ms_loaded": aco_decision_latency(
            sizes, n_decisions, setting="loaded", seed=seed
        ),
        "aco_decision_ms_all_iterations": aco_decision_latency(
            sizes, n_decisions, setting="empty", seed=seed, carry_pheromone=False, colony=worst
        ),
        "predictor_ms": predictor_times(seed=seed, **options),
        "settings": {
            "job": dataclasses.asdict(LATENCY_JOB),
            "strategy": "preemptible-actor (full colony: 20 ants x 5 iterations, stagnation 3)",
            "timed": "schedule() + carried-pheromone update, per decision",
            "timer": "time.perf_counter_ns, gc enabled",
        },
    }
