"""Planted-optimum episodes: jobs cut from a fleet's cheap capacity, with the schedule proven optimal.

* :func:`plant` draws one :class:`PlantedEpisode` (spec, planted nodes, certificate), its jobs cut
  from the cheap nodes' capacity; :func:`plant_priced` draws one whose jobs are of the default
  scenario's kinds, where cheap capacity binds and the optimum uses dearer nodes and waiting,
  proven by capacity prices (:func:`lagrangian_bound`);
* :func:`certify` checks the conditions under which the sum of each job's cheapest fate bounds
  every policy's objective, and returns that :class:`Certificate`;
* :func:`play_planted` replays the planted schedule in the twin;
* :func:`completion_usd` prices a job's completion on each node it fits (what ``c*_j`` minimises).

docs/model.md, "Planted optima", outlines the construction and its proof.
"""

from digital_twin.planted.certificate import Certificate, certify, completion_usd
from digital_twin.planted.config import PlantedConfig
from digital_twin.planted.energy_floor import EnergyFloor, energy_floor
from digital_twin.planted.generator import PlantedEpisode, plant
from digital_twin.planted.market import plant_priced
from digital_twin.planted.market_config import MarketConfig
from digital_twin.planted.prices import LagrangianCertificate, NodePrice, lagrangian_bound
from digital_twin.planted.replay import play_planted

__all__ = [
    "Certificate",
    "EnergyFloor",
    "LagrangianCertificate",
    "MarketConfig",
    "NodePrice",
    "PlantedConfig",
    "PlantedEpisode",
    "certify",
    "completion_usd",
    "energy_floor",
    "lagrangian_bound",
    "plant",
    "plant_priced",
    "play_planted",
]
