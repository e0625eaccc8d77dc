"""A recorded episode as the events a live cluster would have pushed, to check parity with the env.

:func:`episode_events` re-runs a recording (:mod:`aco_env.recording`: scenario, seed, actions)
on a twin that logs its events, and writes down what the cluster would have told a live
service, instant by instant: the telemetry of each tick, the jobs submitted (as their submitters
state them: the declared run time, not the true one), the runs that ended, the spot nodes that
went down and came back; and, last, an empty batch just before the horizon (the clock runs on
to the episode's end: a job deferred until after a TTL expiry, an event the service finds itself,
is asked then). TTL expiries, evictions and rejections are not in it: the service's twin finds
them itself. It also returns the recording's decisions, ``(job_id, node_id or None)``, which
a service fed these batches must take again, one for one (tests/serving).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from typing import Any

from gymnasium.utils import seeding

from aco_env.recording import find_scenario
from aco_env.types import EnvConfig
from digital_twin import DigitalTwin
from serving.events import Background, EventBatch, JobRequest


@dataclasses.dataclass(frozen=True)
class EpisodeEvents:
    """A recorded episode as a live cluster's event batches.

    Attributes:
        batches: One batch per instant with events, in time order.
        decisions: The recording's decisions in order: ``(job_id, node_id)``, ``None`` for a deferral.
        scenario: The recording's scenario name.
        seed: The recording's seed.
    """

    batches: tuple[EventBatch, ...]
    decisions: tuple[tuple[str, str | None], ...]
    scenario: str
    seed: int


def episode_events(record: dict[str, Any]) -> EpisodeEvents:
    """The event batches and decisions of a recorded episode (from :func:`aco_env.recording.load_recording`).

    Raises:
        aco_env.recording.RecordingError: The scenario cannot be found.
        ValueError: A planted scenario (its episodes are drawn differently), or the recording's
            actions do not replay on the twin.
    """
    scenario, _ = find_scenario(record["scenario"])
    if scenario.planted:
        raise ValueError(f"{scenario.name}: planted scenarios are not replayed as live events")
    config = EnvConfig(**record["config"])
    rng, _ = seeding.np_random(record["seed"])  # the env's generator for this seed
    spec = scenario.make_spec(rng)
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(rng)
    n_nodes = len(spec.fleet)
    for step in record["steps"]:
        if twin.done:
            break
        action = step["action"]
        if action == n_nodes:
            twin.defer(config.deferral)
        elif twin.can_place(action):
            twin.place(action)  # an invalid action changed nothing in the env
    by_time: dict[float, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    jobs = {job.job_id: job for job in spec.jobs}
    for time_s, event, job_id, node_id in twin.event_log:
        if event == "arrival":
            by_time[time_s]["submit"].append(JobRequest.of(jobs[job_id]))
        elif event == "completion":
            by_time[time_s]["finish"].append(job_id)
        elif event == "interruption":
            by_time[time_s]["down"].append(node_id)
        elif event == "recovery":
            by_time[time_s]["up"].append(node_id)
    telemetry = spec.telemetry.background_pct
    for k in range(spec.grid.n_ticks):
        by_time[k * spec.telemetry.tick_s]["telemetry"] = [
            Background(node.node_id, float(telemetry[k, i, 0]), float(telemetry[k, i, 1]))
            for i, node in enumerate(spec.fleet)
        ]
    batches = (
        *(EventBatch(t, **{key: tuple(values) for key, values in by_time[t].items()}) for t in sorted(by_time)),
        EventBatch(math.nextafter(spec.settings.horizon_s, 0.0)),  # the clock runs to the end of the episode
    )
    decisions = tuple((job_id, None if node is None else spec.fleet[node].node_id) for job_id, node in twin.decisions())
    return EpisodeEvents(batches, decisions, scenario.name, record["seed"])
