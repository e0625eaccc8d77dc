"""Playing a planted episode's optimal schedule in the twin."""

from __future__ import annotations

import numpy as np

from digital_twin.planted.generator import PlantedEpisode
from digital_twin.sim.twin import DigitalTwin


def play_planted(episode: PlantedEpisode) -> DigitalTwin:
    """The twin after playing ``episode``'s schedule: every job on its planted node when asked.

    The planted runs start at arrival, so each job is asked once, at its arrival, and fits.

    Raises:
        RuntimeError: A planted node has no room when its job is asked (a generator bug).
    """
    twin = DigitalTwin(episode.spec)
    twin.reset(np.random.default_rng(0))  # the interruptions are the episode's: nothing is drawn
    while not twin.done:
        j = twin.current_job_index
        node = episode.planted_nodes[j]
        if not twin.can_place(node):
            raise RuntimeError(
                f"a bug in the generator: job {episode.spec.jobs[j].job_id} does not fit its planted node"
            )
        twin.place(node)
    return twin
