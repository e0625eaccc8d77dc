"""The file of a planted imitation dataset (``aco-env export-planted``): its arrays, shapes and dtypes.

Names only, no numpy: ``aco-env export-planted --help`` shows :data:`FILE_FORMAT` without loading
the library; :mod:`training.learning.planted_dataset` writes and reads the file.
"""

from __future__ import annotations

FORMAT_VERSION = 4
"""The ``format_version`` in ``meta``; a reader refuses other versions. 4: the observations of env
``v6`` (22 node columns, 18 job columns); 3 held ``v4``'s (21, 13), 2 ``v3``'s, 1 ``v2``'s."""
OBS_PREFIX = "obs_"
"""Each observation key ``K`` is the array ``obs_K``."""
ROW_ARRAYS = ("action", "taken", "on_planted", "episode")
"""Arrays with one entry per row (decision), besides the observation."""
EPISODE_ARRAYS = ("episode_seeds", "episode_optimum_usd", "episode_objective_usd")
"""Arrays with one entry per episode."""
META = "meta"
"""A 0-d string array: JSON with ``format_version``, ``scenario``, ``agent`` (who played), ``seed``,
``episodes`` and ``env_config`` (the :class:`aco_env.EnvConfig` fields the observations were made with)."""

FILE_FORMAT = """\
The file (NumPy .npz; load with numpy.load(FILE), no pickle): n rows, one per decision of the
played agent, in play order; N nodes, K = queue window, W = history ticks, E episodes.

  array                  shape          dtype    meaning
  obs_nodes              (n, N, 22)     float32  the observation of the state, key by key, as
  obs_history            (n, N, W)      float32    ClusterSchedulingEnv returns it (its class
  obs_job                (n, 18)        float32    docstring documents every column)
  obs_queue              (n, K, 18)     float32
  obs_queue_mask         (n, K)         float32
  obs_clock              (n, 4)         float32
  obs_action_mask        (n, N + 1)     float32  1 for a valid action (the last one defers)
  action                 (n,)           int64    the label: the planted expert's action in the state
  taken                  (n,)           int64    the action played (= action when the expert played)
  on_planted             (n,)           bool     the state is on the planted trajectory (every earlier
                                                 valid action was the planted one): the label is the
                                                 planted action, proven optimal; off it, the label is
                                                 the expert's fallback (the valid node of least
                                                 completion cost), not a proven optimum
  episode                (n,)           int64    the row's episode, an index into the episode_* arrays
  episode_seeds          (E,)           int64    each episode's env seed (seed, seed + 1, ...)
  episode_optimum_usd    (E,)           float64  its proven optimum (USD)
  episode_objective_usd  (E,)           float64  the objective the played agent reached (USD)
  meta                   ()             str      JSON: format_version, scenario, agent, seed,
                                                 episodes, env_config
"""
