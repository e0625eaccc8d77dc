"""Runs rebuilt from a twin's event log: each run's work integrated at rates the caller recomputes.

Shared by the contention and interference tests: the caller says what rate each running job has
on a node while a tick's background holds; this integrates those rates between the logged events
and the ticks, and lists every run with the work it did.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from digital_twin import DigitalTwin

Run = tuple[str, float, float, bool]
"""``(job id, nominal work done, nominal duration, completed)``."""
Rates = Callable[[int, Collection[str], int], dict[str, float]]
"""``rates(node index, ids of the jobs running on it, tick index) -> job id -> rate``."""


def rebuilt_runs(twin: DigitalTwin, rates: Rates) -> list[Run]:
    """Every run of ``twin``'s logged episode with the work it did at ``rates``, in the order runs ended."""
    spec = twin.spec
    nodes = {n.node_id: i for i, n in enumerate(spec.fleet)}
    durations = {job.job_id: job.duration_s for job in spec.jobs}
    running: list[dict[str, float]] = [{} for _ in spec.fleet]  # node -> job -> work done
    runs: list[Run] = []
    last_t = 0.0

    def advance(t: float) -> None:
        k = min(int(last_t // spec.tick_s), spec.telemetry.n_ticks - 1)
        for i, on_node in enumerate(running):
            if on_node:
                job_rates = rates(i, list(on_node), k)
                for j in on_node:
                    on_node[j] += job_rates[j] * (t - last_t)

    ticks = [k * spec.tick_s for k in range(1, int(spec.settings.horizon_s // spec.tick_s) + 1)]
    for t, event, job_id, node_id in [*twin.event_log, (twin.time_s, "end", "", "")]:
        for tick_t in [b for b in ticks if last_t < b < t]:  # rates also change at ticks
            advance(tick_t)
            last_t = tick_t
        advance(t)
        last_t = t
        if event == "start":
            running[nodes[node_id]][job_id] = 0.0
        elif event in ("completion", "evicted-requeued", "evicted-failed"):
            runs.append((job_id, running[nodes[node_id]].pop(job_id), durations[job_id], event == "completion"))
    return runs
