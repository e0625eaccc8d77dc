"""The environment ids aco-env registers with Gymnasium, each once, with what it runs.

Importing :mod:`aco_env` imports this module, which registers them. Code that names an id
imports its constant from here (``gym.make(FLEET5_ID)``), so a version bump is one edit.

An id's version changes whenever its dynamics, rewards or spaces change (Gymnasium's
convention); the env classes' docstrings say what each version is (``## Version History``).
Only the latest version of an id is registered: ``gym.make`` of an older one raises
``gymnasium.error.DeprecatedEnv``, whose message names the id to use instead, e.g.
"Environment version v5 for `aco_env/Fleet5` is deprecated. Please use `aco_env/Fleet5-v6`
instead."

No id has ``max_episode_steps``: every episode ends at the scenario's horizon (each valid
action moves it on), and ``EnvConfig.max_invalid_streak`` truncates one stuck on invalid
actions. A step limit would cut long trace episodes short, without their episode metrics.
"""

from __future__ import annotations

from gymnasium.envs.registration import register

FLEET5_ID = "aco_env/Fleet5-v6"
"""The default: the reference's 5-node fleet on the bundled synthetic trace, ~50 jobs over 4 h,
with cpu contention and a price on waiting (scenario ``fleet5-synthetic``). Works with no data present."""
CLUSTER_SCHEDULING_ID = "aco_env/ClusterScheduling-v6"
"""Any scenario: ``gym.make(CLUSTER_SCHEDULING_ID, scenario="toy3" or "path/to/file.yaml")``
(default ``fleet5-synthetic``)."""
FLEET5_ALIBABA_ID = "aco_env/Fleet5Alibaba-v6"
"""The 5-node fleet on the real Alibaba 2018 data-centre mean trace (``fleet5-alibaba2018``; needs
``ACO_ENV_TRACES``)."""
GPU32_ALIBABA_ID = "aco_env/GPU32Alibaba-v6"
"""32 Alibaba GPU 2023 nodes with real GPU-cluster pods (``gpu32-alibaba2023``; needs ``ACO_ENV_TRACES``)."""
PLACEMENT_ID = "aco_env/Placement-v6"
"""One decision per episode in a sampled state of the default scenario, with known-optimal labels."""
PLANTED5_ID = "aco_env/Planted5-v6"
"""ClusterSchedulingEnv on scenarios/planted5.yaml: each episode's optimum is planted and proven."""
PLANTED50_ID = "aco_env/Planted50-v6"
"""The same on scenarios/planted50.yaml: 50 generated nodes, about 600 jobs per episode."""
PLANTED500_ID = "aco_env/Planted500-v6"
"""The same on scenarios/planted500.yaml: 500 generated nodes, about 6,500 jobs per episode."""

ENV_IDS = (
    FLEET5_ID,
    CLUSTER_SCHEDULING_ID,
    FLEET5_ALIBABA_ID,
    GPU32_ALIBABA_ID,
    PLACEMENT_ID,
    PLANTED5_ID,
    PLANTED50_ID,
    PLANTED500_ID,
)
"""Every id registered here, in the order above."""

_ENV = "aco_env.env:ClusterSchedulingEnv"
_BATCHED = "aco_env.vector_env:BatchedClusterEnv"
"""``gym.make_vec(id, num_envs, vectorization_mode="vector_entry_point")`` gives the batched env."""

# The default scenario through ClusterSchedulingEnv.
register(
    id=FLEET5_ID, entry_point=_ENV, vector_entry_point=_BATCHED, kwargs={"scenario": "fleet5-synthetic"}
)

# ClusterSchedulingEnv on the scenario given to gym.make (a bundled name, a YAML path or a Scenario).
register(
    id=CLUSTER_SCHEDULING_ID, entry_point=_ENV, vector_entry_point=_BATCHED, kwargs={"scenario": "fleet5-synthetic"}
)

# ClusterSchedulingEnv on the real Alibaba 2018 data-centre mean trace.
register(
    id=FLEET5_ALIBABA_ID, entry_point=_ENV, vector_entry_point=_BATCHED, kwargs={"scenario": "fleet5-alibaba2018"}
)

# ClusterSchedulingEnv on the Alibaba GPU 2023 fleet and pods.
register(
    id=GPU32_ALIBABA_ID, entry_point=_ENV, vector_entry_point=_BATCHED, kwargs={"scenario": "gpu32-alibaba2023"}
)

# PlacementEnv on the default scenario.
register(id=PLACEMENT_ID, entry_point="aco_env.placement:PlacementEnv", kwargs={"scenario": "fleet5-synthetic"})

# ClusterSchedulingEnv on the planted-optimum scenarios (digital_twin/planted/), at three sizes.
for planted_id, planted_scenario in (
    (PLANTED5_ID, "planted5"),
    (PLANTED50_ID, "planted50"),
    (PLANTED500_ID, "planted500"),
):
    register(id=planted_id, entry_point=_ENV, vector_entry_point=_BATCHED, kwargs={"scenario": planted_scenario})
