"""The ACO reference agents: router + cost engine + colony, with optional load predictions.

Registered names:

| name | carried pheromone fed to the colony | prediction factor |
|---|---|---|
| ``aco`` | yes (the paper's intent; decision 1 in ``docs/reference.md``) | none |
| ``aco-reference`` | no (the reference code: computed, never read) | none |
| ``aco-lstm`` | yes | the reference per-node LSTM |
| ``aco-ema`` | yes | EMA, alpha 0.5 |
| ``aco-persistence`` | yes | persistence |
| ``aco-cost`` | yes | none; no router: :data:`~agents.aco.router.COST_ONLY` for every job |
| ``aco-carbon`` | yes | none; eta gets a fifth factor, each node's carbon efficiency (:func:`carbon_efficiency`) |

Under placement rules every one of them keeps the required rules (they are the env's action
mask, which the router's candidates are cut to: the reference's colocation filter) and weighs
the preferred ones: eta gets the factor :func:`~agents.aco.cost_engine.colocation_fit` of the
preference weight placing the job on each node would break (1 where none would).

Example:
    >>> import gymnasium as gym
    >>> import aco_env  # registers the env ids
    >>> from agents import make_agent
    >>> env = gym.make("aco_env/Fleet5-v6")
    >>> obs, _ = env.reset(seed=0)
    >>> agent = make_agent("aco", env)
    >>> agent.reset(seed=0)
    >>> action, _ = agent.predict(obs)
    >>> bool(env.unwrapped.action_masks()[int(action)])
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from aco_env import ClusterView
from agents.aco.colony import ColonyConfig, NodePheromone
from agents.aco.cost_engine import CARBON_REFERENCE_G_PER_H, carbon_efficiency, colocation_fit
from agents.aco.router import COST_ONLY, Strategy
from agents.aco.scheduler import Decision, FleetArrays, schedule
from agents.base import register_agent
from agents.carbon import emission_rates
from agents.predictor import EmaPredictor, LstmPredictor, OnlinePredictions, PersistencePredictor
from agents.predictor.base import Predictor
from agents.predictor.cache import PredictionCache, default_cache
from agents.view_agent import ViewAgent
from digital_twin import NEW_FIT


class AcoAgent(ViewAgent):
    """The ACO scheduler as an agent: one :func:`~agents.aco.scheduler.schedule` per decision.

    The agent keeps a per-node pheromone carried across decisions: after each placement it
    chooses, every node decays by 10 % and the chosen node gains 1 (within [0.01, 10]). It is
    updated in ``predict``, which assumes the returned action is taken (as SB3's loops do).
    ``reset(seed)`` reseeds the colony's generator and restores the initial pheromone.

    With a predictor, its report at the current tick feeds the cost engine's prediction factor.
    The report is computed from the telemetry seen so far (``view.telemetry``, ticks up to the
    current one: :class:`~agents.predictor.OnlinePredictions`), never from the future; it
    equals row t of the predictor's table over the whole trace, so episodes are those of a
    whole-trace table. The LSTM's fits are cached across episodes and runs.

    When the router's strategy leaves no candidate (e.g. a latency-critical job that only fits
    on spot nodes), the agent defers, as the reference leaves the job pending.

    Args:
        env: The env (its ``unwrapped`` is an :class:`aco_env.ClusterSchedulingEnv`).
        carry_pheromone: Feed the carried pheromone to the colony as its prior (``False``
            reproduces the reference code, where it is ignored).
        predictor: Forecaster for the prediction factor; ``None`` = no prediction (factor 1).
        predictor_seed: Seed of the predictor (the LSTM's initial weights). Fixed per agent,
            not per episode, so one trace's fits are made once for all episodes.
        cache: Where the predictor's fits are cached; ``None`` = :func:`~agents.predictor.default_cache`.
        initial_pheromone: ``(N,)`` pheromone at the start of each episode (e.g. a saved
            vector); ``None`` = all 1.0.
        colony: The colony's constants.
        strategy: Use this strategy for every job instead of the intent router's (e.g.
            :data:`~agents.aco.router.COST_ONLY`, the reference's scheduler without a
            strategy); ``None`` = route each job (the default).
        name: The agent's name (defaults to ``"aco"``).
        carbon_reference_g_per_h: When set, eta gets a fifth factor, the carbon efficiency of
            each node (:func:`~agents.aco.cost_engine.carbon_efficiency` of the emissions the job
            would add there now, g/h); ``None`` = the reference's four factors.

    Attributes:
        last_decision: The :class:`~agents.aco.scheduler.Decision` of the last ``predict``
            (path, strategy, candidates, eta), for observability.
    """

    name = "aco"

    def __init__(
        self,
        env: gym.Env[Any, Any],
        *,
        carry_pheromone: bool = True,
        predictor: Predictor | None = None,
        predictor_seed: int = 0,
        cache: PredictionCache | None = None,
        initial_pheromone: np.ndarray | None = None,
        colony: ColonyConfig = ColonyConfig(),  # noqa: B008  (frozen, so a shared default is safe)
        strategy: Strategy | None = None,
        name: str | None = None,
        carbon_reference_g_per_h: float | None = None,
    ) -> None:
        super().__init__(env)
        if name is not None:
            self.name = name
        self.carry_pheromone = carry_pheromone
        self.predictor = predictor
        self.predictor_seed = predictor_seed
        self.colony = colony
        self.strategy = strategy
        self.carbon_reference_g_per_h = carbon_reference_g_per_h
        self._cache = cache
        self._arrays = FleetArrays.from_fleet(self.fleet)
        self._pheromone = NodePheromone(self.n_nodes, initial_pheromone)
        self._rng = np.random.default_rng()
        self._online: OnlinePredictions | None = None  # the episode's predictions, made at its first decision
        self.last_decision: Decision | None = None

    @property
    def pheromone(self) -> np.ndarray:
        """``(N,)`` a copy of the carried per-node pheromone."""
        return self._pheromone.values.copy()

    def prediction(self, view: ClusterView) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
        """``(spike_probability, confidence)`` ``(N,)`` at the view's tick (``(None, None)`` without predictor)."""
        if self.predictor is None:
            return None, None
        if self._online is None:
            cache = self._cache if self._cache is not None else default_cache()
            self._online = OnlinePredictions(self.predictor, view.grid.n_ticks, self.predictor_seed, cache)
        return self._online.at(view.telemetry)

    def _reset(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)
        self._pheromone.reset()
        self._online = None
        self.last_decision = None

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        del valid  # the scheduler reads the full mask (it filters by strategy as well)
        assert view.job is not None  # act() checked
        spike, confidence = self.prediction(view)
        decision = schedule(
            view.job,
            self._arrays,
            view.action_mask[: self.n_nodes],
            view.utilization_pct,
            view.running_by_type,
            self._rng,
            now_s=view.time_s,
            pheromone=self._pheromone.values if self.carry_pheromone else None,
            spike_probability=spike,
            confidence=confidence,
            strategy=self.strategy,
            config=self.colony,
            extra_factor=self._extra_factor(view),
        )
        self.last_decision = decision
        if decision.node is not None:
            self._pheromone.update(decision.node)
        return decision.node


    def _extra_factor(self, view: ClusterView) -> np.ndarray | None:
        """``(N,)`` eta's factors beyond the reference's four: carbon (``aco-carbon``) and the soft placement rules.

        ``None`` when neither applies (no carbon reference, no preference at stake).
        """
        carbon = self._carbon_factor(view)
        if not view.preference_weight.any():
            return carbon
        colocation = colocation_fit(view.preference_weight)
        return colocation if carbon is None else carbon * colocation

    def _carbon_factor(self, view: ClusterView) -> np.ndarray | None:
        """``(N,)`` the carbon efficiency of placing the view's job on each node now (``None``: off)."""
        if self.carbon_reference_g_per_h is None:
            return None
        job = view.job
        assert job is not None
        valid = np.flatnonzero(view.action_mask[: self.n_nodes])
        rates = np.zeros(self.n_nodes)
        rates[valid] = emission_rates(view, valid, job) / 1000.0  # g/h: W x g/kWh / 1000; 0 where invalid
        return carbon_efficiency(rates, self.carbon_reference_g_per_h)


def _factory(
    name: str, make_predictor: Callable[[], Predictor] | None = None, **defaults: Any
) -> Callable[..., AcoAgent]:
    """A registry factory for an :class:`AcoAgent` named ``name`` (options override defaults)."""

    def factory(env: gym.Env[Any, Any], **options: Any) -> AcoAgent:
        settings: dict[str, Any] = {"name": name, **defaults}
        if make_predictor is not None:
            settings["predictor"] = make_predictor()
        settings.update(options)
        return AcoAgent(env, **settings)

    return factory


# Every ACO agent defers only when its strategy leaves no candidate among the nodes the job fits
# on (the router's arch and instance rules do not depend on time), and such a defer touches
# neither the pheromone nor the colony's generator: it may wait until the job fits somewhere new.
for _name, _make in (
    ("aco", _factory("aco")),
    ("aco-reference", _factory("aco-reference", carry_pheromone=False)),
    ("aco-lstm", _factory("aco-lstm", LstmPredictor)),
    ("aco-ema", _factory("aco-ema", EmaPredictor)),
    ("aco-persistence", _factory("aco-persistence", PersistencePredictor)),
    ("aco-cost", _factory("aco-cost", strategy=COST_ONLY)),
    ("aco-carbon", _factory("aco-carbon", carbon_reference_g_per_h=CARBON_REFERENCE_G_PER_H)),
):
    register_agent(_name, _make, deferral=NEW_FIT)
