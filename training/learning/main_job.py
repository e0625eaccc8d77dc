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

PLANTED_REFERENCE = "planted"
"""On a planted scenario the run evaluates the planted expert (its objective is the proven optimum)
instead of the oracle, whose solves take minutes per planted5 episode and prove nothing more."""


def run_baselines(baselines: tuple[str, ...], planted: bool) -> tuple[str, ...]:
    """The baselines ``aco-env run`` evaluates: the oracle replaced by the planted expert when ``planted``.

    >>> run_baselines(("first-fit", "oracle"), planted=True), run_baselines(("first-fit", "oracle"), planted=False)
    (('first-fit', 'planted'), ('first-fit', 'oracle'))
    """
    if not planted:
        return baselines
    return tuple(PLANTED_REFERENCE if name == "oracle" else name for name in baselines)


__all__ = ["PLANTED_REFERENCE", "RUN_DAGGER_ITERATIONS", "RUN_ROLLOUT", "RUN_TIMESTEPS", "run_baselines"]
