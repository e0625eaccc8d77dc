"""The main job's recipe (``aco-env run``, ``make run``): its training budget and its rollout shape.

``aco-env run`` trains with these, and the training benchmark (:mod:`training.benchmarks.train`)
times the same rollout.
"""

from __future__ import annotations

from typing import Any

RUN_TIMESTEPS = 300_000
"""Steps of RL after the imitation (the default ``--timesteps`` of ``aco-env run``)."""
RUN_DAGGER_ITERATIONS = 6
"""DAgger iterations imitating the ``lookahead`` agent before RL (the default ``--dagger-iterations``)."""
RUN_ROLLOUT: dict[str, Any] = {"n_envs": 16, "n_steps": 512, "batch_size": 1024}
"""16 envs collecting side by side in this process, 512 steps each per rollout (8,192 in all, 32
minibatches of 1,024 per epoch). Long per-env rollouts keep the returns Monte-Carlo (most episodes
end inside one): with 128 steps each, the greedy policy drifted to deferring after 60,000 steps
(docs/results.md)."""

__all__ = ["RUN_DAGGER_ITERATIONS", "RUN_ROLLOUT", "RUN_TIMESTEPS"]
