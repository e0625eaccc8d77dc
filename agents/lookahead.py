"""The online reference: rollouts in sampled futures from the episode as known now (model-predictive control).

At every decision the ``lookahead`` agent plans with only what is known online
(:meth:`aco_env.ClusterSchedulingEnv.known_spec`: the jobs arrived so far, the telemetry to
the current tick, the spot interruptions so far) and re-plans at the next one:

1. **Sample futures.** ``samples`` times: future arrivals as a Poisson process at the rate
   observed so far (jobs arrived over ``max(now, tick)`` seconds), each a copy of a past job
   drawn uniformly (same shape, duration, class; its deadline keeps its slack); spot
   interruptions as Poisson processes at each spot node's hourly probability; the background
   held at its last known value (persistence). Nothing is read from the episode's future, and
   the generator is seeded by ``reset(seed)`` only.
2. **Reach the present.** A twin on the sampled episode replays the episode's decisions so far
   (:meth:`aco_env.ClusterSchedulingEnv.decisions`, whoever took them); the past of the sampled
   episode is the real past, so the twin reaches the current decision in the same state
   (checked at each decision).
3. **Roll out.** From a snapshot, each valid action (every node that fits, and defer) is taken
   and the episode is played to the horizon by the rollout rule (:func:`cheapest_charge`: the
   fitting node of least prorated cost plus the QoS penalty); the action with the least mean
   final objective over the samples wins (the same samples for every action), ties to the
   lowest index.

It bounds from above what an online policy can reach with these models of the future, and
its gap to the oracle's plan is the part of an agent's gap that hindsight buys. Cost per
decision: ``samples x (decisions so far + actions x remaining decisions)`` twin steps, a few
tens of milliseconds on the default scenario; it is meant for the 5-node scenarios.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import gymnasium as gym
import numpy as np

from aco_env import ClusterView
from agents.base import register_agent
from agents.charges import Charges, nominal_run_usd
from agents.view_agent import ViewAgent
from digital_twin import DigitalTwin, JobSpec, TwinSpec
from digital_twin.deferral import NEXT_EVENT
from digital_twin.workload import Workload

DEFAULT_SAMPLES = 4
"""Sampled futures per decision."""


class LookaheadAgent(ViewAgent):
    """Rollouts from the present in sampled futures (see the module docstring).

    Args:
        env: The env (``env.unwrapped`` must offer ``cluster_view()``, ``known_spec()``,
            ``decisions()`` and ``config.deferral``).
        samples: Sampled futures per decision (>= 1).

    Raises:
        ValueError: ``samples`` is not an integer >= 1.
        TypeError: The env offers no ``known_spec()`` or ``decisions()``.
    """

    name = "lookahead"

    def __init__(self, env: gym.Env[Any, Any], samples: int = DEFAULT_SAMPLES) -> None:
        super().__init__(env)
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples must be an integer >= 1, got {samples!r}")
        if not all(callable(getattr(env.unwrapped, method, None)) for method in ("known_spec", "decisions")):
            raise TypeError(
                f"{type(self).__name__} needs an env with known_spec() and decisions() (aco_env.ClusterSchedulingEnv)"
            )
        self.samples = samples
        config = getattr(env.unwrapped, "config", None)
        self.deferral: str = getattr(config, "deferral", NEXT_EVENT)
        self._rng = np.random.default_rng()

    def _reset(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        """The action of least mean rolled-out objective (``None``: defer)."""
        base: Any = self._source  # checked in __init__: known_spec() and decisions()
        known, past = base.known_spec(), base.decisions()
        actions: list[int | None] = [*valid.tolist(), None]
        totals = np.zeros(len(actions))
        for _ in range(self.samples):
            twin = DigitalTwin(sample_future(known, view.time_s, self._rng))
            twin.reset(np.random.default_rng(0))  # its interruptions are fixed: nothing is drawn
            self._replay(twin, view, past)
            present = twin.snapshot()
            for k, action in enumerate(actions):
                twin.restore(present)
                self._apply(twin, action)
                roll_out(twin, self.deferral)
                totals[k] += twin.objective_usd()
        return actions[int(np.argmin(totals))]

    def _replay(self, twin: DigitalTwin, view: ClusterView, past: list[tuple[str, int | None]]) -> None:
        """Play the episode's decisions so far in ``twin``; it must then stand at ``view``'s decision."""
        for job_id, action in past:
            job = twin.current_job
            if job is None or job.job_id != job_id:
                raise RuntimeError(
                    f"{self.name}: replaying the episode diverged at job {job_id!r} (the twin asks for "
                    f"{None if job is None else job.job_id!r})"
                )
            self._apply(twin, action)
        job = twin.current_job
        if job is None or view.job is None or job.job_id != view.job.job_id or twin.time_s != view.time_s:
            raise RuntimeError(f"{self.name}: the replay did not reach the current decision at t={view.time_s:g} s")

    def _apply(self, twin: DigitalTwin, action: int | None) -> None:
        if action is None:
            twin.defer(self.deferral)
        else:
            twin.place(action)


def sample_future(known: TwinSpec, now_s: float, rng: np.random.Generator) -> TwinSpec:
    """``known`` (the episode as known at ``now_s``) with sampled future arrivals and interruptions.

    Arrivals after ``now_s``: a Poisson process at the rate observed so far, each a copy of a
    uniformly drawn known job (new id ``"sampled-K"``, its deadline at the same slack after its
    arrival). Interruptions after ``now_s``: for each spot node, a Poisson process at its
    ``interruption_prob_per_hour``. The telemetry is ``known``'s (held after the current tick).
    """
    past = tuple(known.jobs)
    horizon = float(known.settings.horizon_s)
    rate_per_s = len(past) / max(now_s, known.tick_s)
    arrivals = _poisson_times(rng, rate_per_s, now_s, horizon)
    templates = rng.integers(len(past), size=len(arrivals)) if past else np.zeros(0, dtype=np.int64)
    future = tuple(
        _copy_job(past[int(t)], f"sampled-{k}", float(at))
        for k, (t, at) in enumerate(zip(templates, arrivals, strict=True))
    )
    known_interruptions = known.fixed_interruptions_s or tuple(() for _ in known.fleet)
    interruptions = tuple(
        (*times, *_poisson_times(rng, node.interruption_prob_per_hour / 3600.0, now_s, horizon).tolist())
        if node.is_spot else times
        for node, times in zip(known.fleet, known_interruptions, strict=True)
    )
    return dataclasses.replace(known, jobs=Workload.of(past + future), fixed_interruptions_s=interruptions)


def _poisson_times(rng: np.random.Generator, rate_per_s: float, after_s: float, before_s: float) -> np.ndarray:
    """Sorted event times of a Poisson process of ``rate_per_s`` in ``(after_s, before_s)``."""
    if rate_per_s <= 0.0 or before_s <= after_s:
        return np.zeros(0)
    count = int(rng.poisson(rate_per_s * (before_s - after_s)))
    times = np.sort(rng.uniform(after_s, before_s, size=count))
    return times[times > after_s]


def _copy_job(job: JobSpec, job_id: str, arrival_s: float) -> JobSpec:
    deadline = None if job.deadline_s is None else arrival_s + (job.deadline_s - job.arrival_s)
    return dataclasses.replace(job, job_id=job_id, arrival_s=arrival_s, deadline_s=deadline)


def cheapest_charge(twin: DigitalTwin) -> int | None:
    """The rollout rule: the fitting node of least prorated cost of the nominal run plus QoS; ``None`` if none fits.

    The charge is the node's price times the job's share (GPU share for GPU jobs, cpu share
    otherwise, as the twin charges under ``prorated``) times the run, plus the QoS penalty for
    a latency-critical job on a spot node; ties to the lowest index.
    """
    job = twin.current_job
    assert job is not None
    qos = Charges(twin.spec.settings.weights).qos(1.0)
    best, best_charge = None, math.inf
    for i, fits in enumerate(twin.feasible_mask()):
        if not fits:
            continue
        node = twin.spec.fleet[i]
        charge = nominal_run_usd(node, job)
        if job.workload == "latency-critical" and node.is_spot:
            charge += qos
        if charge < best_charge:
            best, best_charge = i, charge
    return best


def roll_out(twin: DigitalTwin, deferral: str = NEXT_EVENT) -> None:
    """Play ``twin`` to the end of its episode by :func:`cheapest_charge` (deferring when nothing fits)."""
    while not twin.done:
        node = cheapest_charge(twin)
        if node is None:
            twin.defer(deferral)
        else:
            twin.place(node)


def make_lookahead(env: gym.Env[Any, Any], **options: Any) -> LookaheadAgent:
    """Factory registered as ``"lookahead"``."""
    return LookaheadAgent(env, **options)


register_agent("lookahead", make_lookahead)
