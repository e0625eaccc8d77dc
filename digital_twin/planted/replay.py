"""Playing a planted episode's optimal schedule in the twin."""

from __future__ import annotations

import numpy as np

from digital_twin.planted.generator import PlantedEpisode
from digital_twin.sim.twin import DigitalTwin

START_TOLERANCE_S = 1e-6
"""A job asked this close to its planted start is started (event times are sums of floats)."""


def play_planted(episode: PlantedEpisode) -> DigitalTwin:
    """The twin after playing ``episode``'s schedule: every job on its planted node from its planted start.

    A job asked before its planted start is deferred (it is asked again after the next event; a
    planted start is always an event: the job's arrival, or the completion that frees its room).

    Raises:
        RuntimeError: A planted node has no room at its job's planted start (a generator bug).
    """
    twin = DigitalTwin(episode.spec)
    twin.reset(np.random.default_rng(0))  # the interruptions are the episode's: nothing is drawn
    while not twin.done:
        j = twin.current_job_index
        node = episode.planted_nodes[j]
        start = episode.start_of(j)
        if twin.time_s < start - START_TOLERANCE_S:
            twin.defer()
            continue
        if not twin.can_place(node):
            if twin.time_s <= start + START_TOLERANCE_S:  # the completion that frees it is due at this instant
                twin.defer()
                continue
            raise RuntimeError(
                f"a bug in the generator: job {episode.spec.jobs[j].job_id} does not fit its planted node"
            )
        twin.place(node)
    return twin
