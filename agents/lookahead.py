"""The online reference: rollouts in sampled futures from the episode as known now (model-predictive control).

At every decision the ``lookahead`` agent plans with only what is known online
(:meth:`aco_env.ClusterSchedulingEnv.known_twin`: a twin of the episode as known now, at the
current decision: the jobs arrived so far, the telemetry to the current tick, the spot
interruptions so far) and re-plans at the next one:

1. **Sample futures.** ``samples`` times: future arrivals as a Poisson process at the rate
   observed so far (jobs arrived over ``max(now, tick)`` seconds), each a copy of a past job
   drawn uniformly (same shape, duration, class; its deadline keeps its slack); spot
   interruptions as Poisson processes at each spot node's hourly probability; the background
   held at its last known value (persistence). Nothing is read from the episode's future, and
   the generator is seeded by ``reset(seed)`` only.
2. **Continue the present.** The known twin is continued into each sampled episode
   (:meth:`digital_twin.DigitalTwin.continued_in`: a copy of the present state, exact, with
   no replay of the past), whoever took the decisions so far.
3. **Roll out.** From the continued twin's snapshot, each valid action (every node that fits,
   and defer) is taken and the episode is played to the horizon by the rollout rule
   (:func:`agents.rollouts.cheapest_charge`: the fitting node of least prorated cost plus the
   QoS penalty); the action with the least mean final objective over the samples wins (the
   same samples for every action), ties to the lowest index. With ``rollout_window_s`` each
   rollout stops that long after now instead, and adds what its state commits
   (:mod:`agents.rollouts`); with ``candidates`` only that many fitting nodes are tried (those
   the rollout rule charges least), and defer.

It bounds from above what an online policy can reach with these models of the future. Its
clairvoyant twin ``lookahead-clairvoyant`` (:mod:`agents.lookahead_clairvoyant`, a hindsight
agent) makes the same rollouts in the true future, so that its gap to the oracle's plan splits
in two: ``lookahead - lookahead-clairvoyant``, what knowing the future is worth to this planner,
and ``lookahead-clairvoyant - oracle``, what its planning leaves. Cost per decision:
``samples x (one continuation, O(nodes + jobs), + actions x the rollout's decisions)`` twin
steps; rollouts to the horizon make an episode's cost grow with the square of its decisions
(the window makes it linear), and ``candidates`` caps ``actions`` on large fleets. Both are
options of the agent spec: ``aco-env evaluate --agents "lookahead[rollout_window_s=600,candidates=8]"``.

The rollout rule never waits: a latency-critical job that fits only on a spot node starts there
(a QoS penalty). Through a burst of short latency-critical requests, a place taken now on an
on-demand node therefore looks as dear as the later requests the rule sends to the spot node
instead, and the agent starts requests on the spot node while the on-demand one has room (on
``fleet5-azure-llm`` first-fit, which starts a request on the spot node only when the on-demand
one is full, does better).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np

from aco_env import ClusterView
from agents.base import register_agent
from agents.charges import Charges
from agents.rollouts import Action, KnownTwinSource, action_objectives, rule_charges
from agents.view_agent import ViewAgent
from digital_twin import DigitalTwin, JobSpec, TwinSpec
from digital_twin.sim.deferral import NEXT_EVENT
from digital_twin.workload import Workload

DEFAULT_SAMPLES = 4
"""Sampled futures per decision."""


class LookaheadAgent(ViewAgent):
    """Rollouts from the present in sampled futures (see the module docstring).

    Template method: :meth:`rollout_totals` sums each action's rolled-out objective over the
    futures the hook :meth:`_futures` gives (here: ``samples`` sampled ones; the clairvoyant
    subclass gives the true one).

    Args:
        env: The env (``env.unwrapped`` must offer ``cluster_view()``, ``known_twin()`` and
            ``config.deferral``).
        samples: Sampled futures per decision (>= 1).
        rollout_window_s: ``None`` (the default): each rollout plays to the end of the episode.
            A number of seconds (> 0): each stops at its first decision that far after now,
            and is judged on its objective so far plus what its state commits
            (:func:`agents.rollouts.action_objectives`); for episodes of thousands of
            decisions, whose rollouts to the horizon would take hours.
        candidates: ``None`` (the default): every fitting node is tried. An integer ``k >= 1``:
            only the ``k`` fitting nodes of least rollout-rule charge
            (:func:`agents.rollouts.rule_charges`, ties to the lowest index), and defer; for
            fleets of hundreds of nodes.

    Raises:
        ValueError: ``samples`` is not an integer >= 1, ``rollout_window_s`` not ``None`` or a
            number > 0, or ``candidates`` not ``None`` or an integer >= 1.
        TypeError: The env offers no ``known_twin()``.
    """

    name = "lookahead"

    def __init__(
        self,
        env: gym.Env[Any, Any],
        samples: int = DEFAULT_SAMPLES,
        rollout_window_s: float | None = None,
        candidates: int | None = None,
    ) -> None:
        super().__init__(env)
        if not _is_count(samples):
            raise ValueError(f"samples must be an integer >= 1, got {samples!r}")
        if candidates is not None and not _is_count(candidates):
            raise ValueError(f"candidates must be None or an integer >= 1, got {candidates!r}")
        if rollout_window_s is not None and not (
            isinstance(rollout_window_s, int | float) and not isinstance(rollout_window_s, bool)
            and math.isfinite(rollout_window_s) and rollout_window_s > 0
        ):  # fmt: skip
            raise ValueError(f"rollout_window_s must be None or a finite number > 0, got {rollout_window_s!r}")
        if not isinstance(env.unwrapped, KnownTwinSource):
            raise TypeError(f"{type(self).__name__} needs an env with known_twin() (aco_env.ClusterSchedulingEnv)")
        self._known: KnownTwinSource = env.unwrapped
        self.samples = samples
        self.rollout_window_s = rollout_window_s
        self.candidates = candidates
        self._qos_usd: float | None = None  # the rollout rule's QoS charge, read from the first known twin
        config = getattr(env.unwrapped, "config", None)
        self.deferral: str = getattr(config, "deferral", NEXT_EVENT)
        self._rng = np.random.default_rng()

    def rollout_totals(self) -> dict[Action, float]:
        """Per valid action now (``None``: defer), its rolled-out final objective summed over the futures, USD.

        Draws the futures from the agent's generator (a call changes the next ones).
        """
        view = self._source.cluster_view()
        return self._totals(view, np.flatnonzero(view.action_mask[: self.n_nodes]))

    def _reset(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        """The action of least summed rolled-out objective (``None``: defer), ties to the lowest node."""
        totals = self._totals(view, valid)
        return min(totals, key=totals.__getitem__)

    def _totals(self, view: ClusterView, valid: np.ndarray) -> dict[Action, float]:
        actions: list[Action] = [*self._tried(view, valid), None]
        totals = np.zeros(len(actions))
        for future in self._futures(view):
            totals += action_objectives(future, actions, self.deferral, self.rollout_window_s)
        return dict(zip(actions, totals.tolist(), strict=True))

    def _tried(self, view: ClusterView, valid: np.ndarray) -> list[int]:
        """The fitting nodes to roll out: all, or the ``candidates`` the rollout rule charges least."""
        if self.candidates is None or len(valid) <= self.candidates:
            return valid.tolist()
        assert view.job is not None  # act() checked
        if self._qos_usd is None:
            self._qos_usd = Charges(self._known.known_twin().spec.settings.weights).qos(1.0)
        charges = rule_charges(view.fleet, view.job, self._qos_usd)[valid]
        cheapest = np.argsort(charges, kind="stable")[: self.candidates]  # stable: ties to the lowest node
        return sorted(valid[cheapest].tolist())

    def _futures(self, view: ClusterView) -> Iterator[DigitalTwin]:
        """Hook: twins standing at the current decision, one per future to roll out in (here: sampled ones)."""
        present = self._known.known_twin()
        window = self.rollout_window_s
        until_s = None if window is None else view.time_s + window
        for _ in range(self.samples):
            yield present.continued_in(sample_future(present.spec, view.time_s, self._rng, until_s))


def _is_count(value: object) -> bool:
    """``value`` is an integer >= 1 (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def sample_future(
    known: TwinSpec, now_s: float, rng: np.random.Generator, until_s: float | None = None
) -> TwinSpec:
    """``known`` (the episode as known at ``now_s``) with sampled future arrivals and interruptions.

    Arrivals in ``(now_s, until_s)`` (``until_s`` ``None``: the horizon; a windowed rollout
    needs no later ones): a Poisson process at the rate observed so far, each a copy of a
    uniformly drawn known job (new id ``"sampled-K"``, its deadline at the same slack after its
    arrival; a task's copy is an independent job: future workflows are forecast as their
    tasks' load, not their DAGs). Interruptions after ``now_s``: for each spot node, a Poisson process at its
    ``interruption_prob_per_hour``. The telemetry is ``known``'s (held after the current tick).
    """
    past = known.jobs
    horizon = float(known.settings.horizon_s)
    rate_per_s = len(past) / max(now_s, known.tick_s)
    arrivals = _poisson_times(rng, rate_per_s, now_s, horizon if until_s is None else min(until_s, horizon))
    templates = rng.integers(len(past), size=len(arrivals)) if len(past) else np.zeros(0, dtype=np.int64)
    future = Workload.of(
        _copy_job(past[int(t)], f"sampled-{k}", float(at))
        for k, (t, at) in enumerate(zip(templates, arrivals, strict=True))
    )
    known_interruptions = known.fixed_interruptions_s or tuple(() for _ in known.fleet)
    interruptions = tuple(
        (*times, *_poisson_times(rng, node.interruption_prob_per_hour / 3600.0, now_s, horizon).tolist())
        if node.is_spot else times
        for node, times in zip(known.fleet, known_interruptions, strict=True)
    )
    recoveries = _forecast_recoveries(known, interruptions, now_s)
    return dataclasses.replace(
        known, jobs=past.then(future), fixed_interruptions_s=interruptions, fixed_recoveries_s=recoveries
    )


def _forecast_recoveries(
    known: TwinSpec, interruptions: tuple[tuple[float, ...], ...], now_s: float
) -> tuple[tuple[float, ...], ...] | None:
    """The ends of ``interruptions`` when ``known`` fixes outage ends (replayed traces), else ``None``.

    A known end stays; an outage still on at ``now_s`` (its end unknown, ``inf``) is forecast
    to end ``spot_recovery_s`` from now, a sampled one ``spot_recovery_s`` after it starts.
    """
    if known.fixed_recoveries_s is None:
        return None
    recovery_s = known.settings.spot_recovery_s
    ends: list[tuple[float, ...]] = []
    for times, known_ends in zip(interruptions, known.fixed_recoveries_s, strict=True):
        ongoing = tuple(now_s + recovery_s if math.isinf(end) else end for end in known_ends)
        ends.append((*ongoing, *(t + recovery_s for t in times[len(known_ends) :])))
    return tuple(ends)


def _poisson_times(rng: np.random.Generator, rate_per_s: float, after_s: float, before_s: float) -> np.ndarray:
    """Sorted event times of a Poisson process of ``rate_per_s`` in ``(after_s, before_s)``."""
    if rate_per_s <= 0.0 or before_s <= after_s:
        return np.zeros(0)
    count = int(rng.poisson(rate_per_s * (before_s - after_s)))
    times = np.sort(rng.uniform(after_s, before_s, size=count))
    return times[times > after_s]


def _copy_job(job: JobSpec, job_id: str, arrival_s: float) -> JobSpec:
    deadline = None if job.deadline_s is None else arrival_s + (job.deadline_s - job.arrival_s)
    return dataclasses.replace(job, job_id=job_id, arrival_s=arrival_s, deadline_s=deadline, workflow=None, parents=())


def make_lookahead(env: gym.Env[Any, Any], **options: Any) -> LookaheadAgent:
    """Factory registered as ``"lookahead"``."""
    return LookaheadAgent(env, **options)


register_agent("lookahead", make_lookahead)
