"""The digital twin: the physics of a heterogeneous fleet (no RL, no deep learning here).

Public API: specs (:class:`NodeSpec`, :class:`JobSpec`, :class:`Telemetry`,
:class:`TwinSpec`, :class:`EpisodeSettings`, :class:`ObjectiveWeights`), the tick grid
(:class:`TickGrid`), fleets, the simulator :class:`DigitalTwin`,
its snapshot, the deferral rules (:mod:`digital_twin.sim.deferral`) and the oracle's
:class:`HindsightView`.

The simulator (:mod:`digital_twin.sim`) loads from a compiled build when a fresh one exists
(:mod:`digital_twin.native`); that package makes the choice, before any of its modules is imported.
"""

from digital_twin.episode_settings import EpisodeSettings
from digital_twin.errors import InvalidPlacementError, PastMismatchError, SettingError, SpecError, TraceError
from digital_twin.fleet import (
    NodeSpec,
    default_fleet,
    fleet_from_alibaba_gpu_csv,
    fleet_from_dicts,
    generate_fleet,
)
from digital_twin.hindsight import HindsightView
from digital_twin.jobs import WORKLOAD_TYPES, JobSpec, job_from_dict
from digital_twin.objective import ACTIVE_NODES, COST_MODELS, PRORATED, ObjectiveBreakdown, ObjectiveWeights
from digital_twin.sim.deferral import DEFERRALS, NEW_FIT, NEXT_EVENT
from digital_twin.sim.twin import DigitalTwin, TwinSnapshot
from digital_twin.spec import TwinSpec
from digital_twin.telemetry import Telemetry
from digital_twin.tick_grid import TickGrid

__all__ = [
    "ACTIVE_NODES",
    "COST_MODELS",
    "DEFERRALS",
    "NEW_FIT",
    "NEXT_EVENT",
    "PRORATED",
    "WORKLOAD_TYPES",
    "DigitalTwin",
    "EpisodeSettings",
    "HindsightView",
    "InvalidPlacementError",
    "JobSpec",
    "NodeSpec",
    "ObjectiveBreakdown",
    "ObjectiveWeights",
    "PastMismatchError",
    "SettingError",
    "SpecError",
    "Telemetry",
    "TickGrid",
    "TraceError",
    "TwinSnapshot",
    "TwinSpec",
    "default_fleet",
    "fleet_from_alibaba_gpu_csv",
    "fleet_from_dicts",
    "generate_fleet",
    "job_from_dict",
]
