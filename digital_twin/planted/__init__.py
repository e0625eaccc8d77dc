"""Planted-optimum episodes: jobs cut from a fleet's cheap capacity, with the schedule proven optimal.

* :func:`plant` draws one :class:`PlantedEpisode` (spec, planted nodes, certificate);
* :func:`certify` checks the conditions under which the sum of each job's cheapest fate bounds
  every policy's objective, and returns that :class:`Certificate`;
* :func:`play_planted` replays the planted schedule in the twin;
* :func:`completion_usd` prices a job's completion on each node it fits (what ``c*_j`` minimises).

docs/model.md, "Planted optima", outlines the construction and its proof.
"""

from digital_twin.planted.certificate import Certificate, certify, completion_usd
from digital_twin.planted.config import PlantedConfig
from digital_twin.planted.generator import PlantedEpisode, plant
from digital_twin.planted.replay import play_planted

__all__ = [
    "Certificate",
    "PlantedConfig",
    "PlantedEpisode",
    "certify",
    "completion_usd",
    "plant",
    "play_planted",
]
