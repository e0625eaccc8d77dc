"""aco-env: a Gymnasium environment for job placement on a heterogeneous compute fleet.

Importing this package registers its environment ids with Gymnasium (:mod:`aco_env.registration`
lists them; it never imports torch or Stable-Baselines3)::

    import gymnasium as gym
    import aco_env  # noqa: F401  (registers the ids)

    env = gym.make("aco_env/Fleet5-v6")  # aco_env.registration.FLEET5_ID
"""

import aco_env.registration  # noqa: F401  (importing it registers the ids)
from aco_env.env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of, planted_action_of, planted_of, scenario_of, twin_continued_of
from aco_env.metrics import EPISODE_METRICS
from aco_env.placement import PlacementEnv
from aco_env.twin_env import TwinEnv
from aco_env.types import EnvConfig, InvalidActionError
from aco_env.vector_env import BatchedClusterEnv
from aco_env.views import ClusterView, KnownJobs, TelemetryRecord, TelemetrySoFar, cluster_view_of

__all__ = [
    "EPISODE_METRICS",
    "BatchedClusterEnv",
    "ClusterSchedulingEnv",
    "ClusterView",
    "EnvConfig",
    "InvalidActionError",
    "KnownJobs",
    "PlacementEnv",
    "TelemetryRecord",
    "TelemetrySoFar",
    "TwinEnv",
    "cluster_view_of",
    "hindsight_of",
    "planted_action_of",
    "planted_of",
    "scenario_of",
    "twin_continued_of",
]
