"""aco-env: a Gymnasium environment for job placement on a heterogeneous compute fleet.

Importing this package registers the environment ids below with Gymnasium (it never imports
torch or Stable-Baselines3)::

    import gymnasium as gym
    import aco_env  # noqa: F401  (registers the ids)

    env = gym.make("aco_env/Fleet5-v0")
"""

from gymnasium.envs.registration import register

from aco_env.env import ClusterSchedulingEnv
from aco_env.metrics import EPISODE_METRICS
from aco_env.placement import PlacementEnv
from aco_env.twin_env import TwinEnv
from aco_env.types import EnvConfig, InvalidActionError
from aco_env.views import ClusterView, EpisodeSettings, TelemetrySoFar, cluster_view_of

__all__ = [
    "EPISODE_METRICS",
    "ClusterSchedulingEnv",
    "ClusterView",
    "EnvConfig",
    "EpisodeSettings",
    "InvalidActionError",
    "PlacementEnv",
    "TelemetrySoFar",
    "TwinEnv",
    "cluster_view_of",
]

# No max_episode_steps: every episode ends at the scenario's horizon (each valid action moves it
# on), and EnvConfig.max_invalid_streak truncates one stuck on invalid actions. A step limit would
# cut long trace episodes short, without their episode metrics.

# The default: the reference's 5-node fleet on the bundled synthetic trace, ~50 jobs over 4 h.
# Works with no data present.
register(
    id="aco_env/Fleet5-v0",
    entry_point="aco_env.env:ClusterSchedulingEnv",
    kwargs={"scenario": "fleet5-synthetic"},
)

# Any scenario: gym.make("aco_env/ClusterScheduling-v0", scenario="toy3" or "path/to/file.yaml").
register(
    id="aco_env/ClusterScheduling-v0",
    entry_point="aco_env.env:ClusterSchedulingEnv",
    kwargs={"scenario": "fleet5-synthetic"},
)

# The 5-node fleet on the real Alibaba 2018 data-centre mean trace (needs ACO_ENV_TRACES).
register(
    id="aco_env/Fleet5Alibaba-v0",
    entry_point="aco_env.env:ClusterSchedulingEnv",
    kwargs={"scenario": "fleet5-alibaba2018"},
)

# 32 Alibaba GPU 2023 nodes with real GPU-cluster pods (needs ACO_ENV_TRACES).
register(
    id="aco_env/GPU32Alibaba-v0",
    entry_point="aco_env.env:ClusterSchedulingEnv",
    kwargs={"scenario": "gpu32-alibaba2023"},
)

# One decision per episode in a sampled state of the default scenario, with known-optimal labels.
register(
    id="aco_env/Placement-v0",
    entry_point="aco_env.placement:PlacementEnv",
    kwargs={"scenario": "fleet5-synthetic"},
)
