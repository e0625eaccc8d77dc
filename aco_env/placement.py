"""The one-step placement env: one decision in a sampled twin state, scored against hindsight.

Each episode: build an episode of the scenario from the seed, play a seeded heuristic for a
random number of decisions, then ask the agent to place the current job. For every action a
(each node, and defer) the env replays the rest of the episode in the twin from a snapshot
-- with the true future arrivals, telemetry and spot interruptions -- under a fixed
continuation policy, and records the episode objective ``Q(a)``. The known-optimal actions
are those with the lowest ``Q``; an action's regret is ``Q(a) - min Q``. This is the DECICE
"virtual training environment" idea done exactly: labels for imitation learning, and
optimality rate and regret for scoring.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from aco_env import fit_rules
from aco_env.actions import action_mask, as_action_index
from aco_env.twin_env import TwinEnv, start_hour_option
from aco_env.types import PENALTY, EnvConfig, InvalidActionError
from digital_twin import DigitalTwin
from digital_twin.scenario import Scenario

TIE_USD = 1e-9
"""Q-values this close to the lowest (in USD) are tied for optimal: regret exactly 0."""

TwinPolicy = Callable[[DigitalTwin], int | None]
"""A policy on the twin: a node index, or ``None`` to defer."""


def _valid_nodes(twin: DigitalTwin) -> list[int]:
    """The nodes the current job fits on now, ascending."""
    return [i for i, ok in enumerate(twin.feasible_mask()) if ok]


def cheapest_fit(twin: DigitalTwin) -> int | None:
    """:func:`aco_env.fit_rules.cheapest_fit` on the twin's current decision (``None``: nothing fits)."""
    valid = _valid_nodes(twin)
    return fit_rules.cheapest_fit(valid, [n.price_per_hour_usd for n in twin.spec.fleet]) if valid else None


def first_fit(twin: DigitalTwin) -> int | None:
    """:func:`aco_env.fit_rules.first_fit` on the twin's current decision (``None``: nothing fits)."""
    valid = _valid_nodes(twin)
    return fit_rules.first_fit(valid) if valid else None


def apply(twin: DigitalTwin, action: int | None) -> None:
    """Place the current job on ``action`` or defer it (``None``; asked again after the next event)."""
    if action is None:
        twin.defer()
    else:
        twin.place(action)


def rollout_objective(twin: DigitalTwin, policy: TwinPolicy) -> float:
    """Play ``policy`` to the end of the episode and return the final objective (USD)."""
    while not twin.done:
        apply(twin, policy(twin))
    return twin.objective().total_usd


class PlacementEnv(TwinEnv):
    """One placement decision per episode, with known-optimal labels and per-action regret.

    ## Description
    See the module docstring. Observation and action spaces, masks, rendering and
    ``cluster_view()`` are those of :class:`aco_env.ClusterSchedulingEnv` on the same scenario
    (both are :class:`~aco_env.twin_env.TwinEnv` s).

    ## Rewards
    ``-regret(action) * reward_scale`` in USD: exactly 0 for a known-optimal action. Invalid actions
    follow ``EnvConfig.invalid_action`` (penalty: reward ``-invalid_action_penalty_usd`` and
    the episode ends; raise: :class:`InvalidActionError`).

    ## Episode End
    Always terminated after one step; the step's ``info["episode_metrics"]`` has ``regret_usd``
    (NaN for an invalid action), ``optimal`` (1.0 or 0.0) and ``invalid_actions``. ``info``
    (on reset and step) also carries ``optimal_actions``
    (list of action indices), ``q_values_usd`` (``(N + 1,)``, ``inf`` for invalid actions),
    ``regret_usd`` (``(N + 1,)``, ``inf`` for invalid actions) and ``warmup_decisions``. Actions
    whose Q is within :data:`TIE_USD` of the lowest are tied: all optimal, each with regret exactly
    0 (the same objective summed in another order can differ in the last bits); every other
    valid action has regret > :data:`TIE_USD`, so no regret is ever negative.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | scenario | ``"fleet5-synthetic"`` | bundled name, YAML path or ``Scenario`` |
    | config | ``EnvConfig()`` | windows, reward scale, invalid-action policy (``deferral`` is not used: see below) |
    | render_mode | ``None`` | ``"ansi"`` or ``"rgb_array"``: the decision state, as ``ClusterSchedulingEnv`` |
    | max_warmup_decisions | 40 | the state is sampled after U{0..max} heuristic decisions (keyword only) |
    | warmup_policy | ``cheapest_fit`` | the heuristic played before the decision (keyword only) |
    | continuation_policy | ``cheapest_fit`` | the policy that finishes each rollout (keyword only) |
    | **config_overrides | | any :class:`EnvConfig` field (as ``gym.make`` kwargs) |

    The labels are a property of the state, the same for every agent: the defer action is
    always labelled by deferring until the next event, whatever ``config.deferral`` says.

    ## Version History
    * v2: the labels and regrets follow the v2 dynamics of :class:`aco_env.ClusterSchedulingEnv`
      (every queue spell's wait counts; stale events pose no decision).
    * v1: the labels and regrets are those of the v1 dynamics of ``aco_env/Fleet5-v1`` (cpu
      contention, a price on waiting: see :class:`aco_env.ClusterSchedulingEnv`), with its
      spaces; actions tied for optimal (within :data:`TIE_USD`) get regret exactly 0;
      ``render_mode`` is accepted as by the other ids; built like ``ClusterSchedulingEnv``
      (``(scenario, config, render_mode, **config_overrides)``, the policies and
      ``max_warmup_decisions`` keyword-only).
    * v0: initial version.
    """

    def __init__(
        self,
        scenario: str | Path | Scenario = "fleet5-synthetic",
        config: EnvConfig | None = None,
        render_mode: str | None = None,
        *,
        max_warmup_decisions: int = 40,
        warmup_policy: TwinPolicy = cheapest_fit,
        continuation_policy: TwinPolicy = cheapest_fit,
        **config_overrides: Any,
    ) -> None:
        super().__init__(scenario, config, render_mode, **config_overrides)
        self.max_warmup_decisions = max_warmup_decisions
        self.warmup_policy = warmup_policy
        self.continuation_policy = continuation_policy
        self._labels: dict[str, Any] = {}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Sample a decision state (re-drawing the episode until one is reached).

        ``options``: ``{"start_hour": h}`` sets the clock's hour of day at time 0, as
        :meth:`aco_env.ClusterSchedulingEnv.reset` does; other keys raise ``ValueError``.
        """
        start_hour = start_hour_option(options)
        super().reset(seed=seed)
        while True:
            twin = self._scenario.twin(self._scenario.make_spec(self.np_random))
            twin.reset(self.np_random)
            warmup = int(self.np_random.integers(0, self.max_warmup_decisions + 1))
            played = 0
            while played < warmup and not twin.done:
                apply(twin, self.warmup_policy(twin))
                played += 1
            if not twin.done:
                break
        self._start_episode(twin, start_hour)
        self._labels = self._label(twin)
        self._labels["warmup_decisions"] = played
        return self._observation(), self._info()

    def step(self, action: object) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Score the action by its regret; the episode ends (a second step raises ``ResetNeeded``: reset first)."""
        self._require_episode()
        index = as_action_index(action, self.n_nodes + 1)
        regret = self._labels["regret_usd"][index] if index is not None else np.inf
        info = self._info()
        info["invalid_action"] = not np.isfinite(regret)
        if info["invalid_action"]:
            if self.config.invalid_action != PENALTY:
                raise InvalidActionError(f"action {action!r} is not valid here (strict mode)")
            reward = -self.config.invalid_action_penalty_usd * self.config.reward_scale
        else:
            reward = 0.0 - float(regret) * self.config.reward_scale  # +0.0, not -0.0, for a tie
        info["episode_metrics"] = {
            "regret_usd": float(regret) if np.isfinite(regret) else float("nan"),
            "optimal": float(index in self._labels["optimal_actions"]),
            "invalid_actions": float(info["invalid_action"]),
        }
        return self._ending((self._observation(), reward, True, False, info))

    def _label(self, twin: DigitalTwin) -> dict[str, Any]:
        """Q, regret and the optimal actions of the twin's decision, from rollouts with hindsight."""
        snapshot = twin.snapshot()
        mask = action_mask(twin)
        q = np.full(self.n_nodes + 1, np.inf)
        for index in np.flatnonzero(mask):
            twin.restore(snapshot)
            apply(twin, None if index == self.n_nodes else int(index))
            q[index] = rollout_objective(twin, self.continuation_policy)
        twin.restore(snapshot)
        best = q.min()
        tied = np.isclose(q, best, rtol=0.0, atol=TIE_USD)
        regret = np.where(tied, 0.0, q - best)
        return {"optimal_actions": [int(i) for i in np.flatnonzero(tied)], "q_values_usd": q, "regret_usd": regret}

    def _info(self) -> dict[str, Any]:
        """A fresh copy of the labels (callers may keep and modify it)."""
        return {k: v.copy() if isinstance(v, np.ndarray | list) else v for k, v in self._labels.items()}
