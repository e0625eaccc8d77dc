"""The Gymnasium environment: one job placement per step on a simulated heterogeneous fleet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from aco_env.actions import as_action_index
from aco_env.committed_cost import CommittedCost
from aco_env.metrics import EPISODE_METRICS
from aco_env.reward import ObjectiveDeltaReward, RewardFn
from aco_env.twin_env import TwinEnv, start_hour_option
from aco_env.types import COMMITTED_COST, FULL_INFO, PENALTY, EnvConfig, InvalidActionError
from digital_twin import InvalidPlacementError
from digital_twin.planted import PlantedEpisode
from digital_twin.scenario import Scenario

__all__ = ["ClusterSchedulingEnv"]


class ClusterSchedulingEnv(TwinEnv):
    """Place jobs on a heterogeneous compute fleet whose digital twin replays cluster telemetry.

    ## Description
    A scenario fixes a fleet (CPU, ARM spot, GPU on-demand and spot nodes with prices), the
    background load of other tenants (a replayed trace), a job stream, and the objective. The
    twin jumps from event to event (arrivals, completions, telemetry ticks, spot interruptions
    and recoveries, queue timeouts) and stops whenever a queued job fits on some up node: each
    step is one such decision for the job at the head of the queue. The goal is to minimise the
    episode objective in USD: compute cost + penalties for SLA violations, latency-critical jobs
    on spot nodes, jobs failed by evictions, missed deadlines and rejected jobs (and, where the
    scenario weighs them, waiting, lost SLO utility and unfairness between workload classes:
    :data:`digital_twin.objective.PENALTIES`).

    ## Action Space
    ``Discrete(N + 1)`` for N nodes: ``i < N`` starts the current job on node ``i``; ``N``
    defers it: it stays queued (until its TTL) and is asked again after the next event, or,
    with ``deferral="new-fit"``, only once it fits on a node it did not fit on when deferred
    (:mod:`digital_twin.sim.deferral`). Learned agents train and play under ``new-fit`` by default
    (``aco-env train --deferral``; a saved model's ``config.json`` names its rule): a policy that
    defers is then asked about a job at most once per change of where it fits, so an episode's
    decisions are bounded by the events, not by how often the policy says "wait". Under
    ``new-fit`` a job that fits on every node it could ever run on (:meth:`current_candidates`)
    would never be asked again once deferred; saved models do not defer it
    (:func:`agents.sb3_agent.without_stranding_deferral`).

    ## Observation Space
    A ``Dict`` of float32 boxes (N nodes, K = ``queue_window``, W = ``history_ticks``):

    | key | shape | range | meaning |
    |---|---|---|---|
    | nodes | (N, 22) | [0, 1], counts [0, 1000], [0, 2] and [0, 10] as noted | per-node features, one row per node |
    | history | (N, W) | [0, 1] | background cpu / 100, last W ticks, oldest first (tick 0 repeats before the start) |
    | job | (18,) | [0, 1] except as noted below | the current job (zeros when the episode is over) |
    | queue | (K, 18) | as job | the next K queued jobs, zero-padded |
    | queue_mask | (K,) | {0, 1} | 1 for real rows of ``queue``, 0 for padding |
    | clock | (4,) | see below | time features |
    | action_mask | (N + 1,) | {0, 1} | valid actions, as ``action_masks()`` |

    Columns of ``nodes`` (names: :data:`aco_env.observation.NODE_FEATURES`):

    | col | name | meaning |
    |---|---|---|
    | 0 | free_cpu_frac | free cpu / node cpu |
    | 1 | free_mem_frac | free memory / node memory |
    | 2 | free_gpu_frac | free GPUs / node GPUs (0 on a node without GPUs) |
    | 3 | up | 1 when the node is up (0 while an interrupted spot node recovers) |
    | 4 | running_latency_critical | latency-critical jobs running on the node (clipped at 1000) |
    | 5 | running_batch | batch jobs running on the node (clipped at 1000) |
    | 6 | running_stream | stream jobs running on the node (clipped at 1000) |
    | 7 | background_cpu | other tenants' cpu % / 100 at the current tick |
    | 8 | background_mem | other tenants' mem % / 100 at the current tick |
    | 9 | utilization | (background cpu % + allocated cpu / node cpu x 100) / 100, in [0, 2] |
    | 10 | qos_risk | 1 where placing the current job counts a QoS violation (latency-critical on spot) |
    | 11 | carbon_now | the node's grid carbon intensity now, kg/kWh (clipped at 2) |
    | 12 | carbon_forecast_min | the grid's lowest intensity 24 h to 12 h ago, kg/kWh (yesterday's, coming 12 h) |
    | 13 | energy_cost_rel | USD of an hour of the node's dynamic power (energy + carbon) / highest price (max 10) |
    | 14 | price_rel | price / the fleet's highest price |
    | 15 | is_spot | 1 for a spot node |
    | 16 | interruption_prob | spot interruption probability per hour |
    | 17 | arch_x86_64 | arch one-hot |
    | 18 | arch_arm64 | arch one-hot |
    | 19 | arch_gpu_node | arch one-hot |
    | 20 | cpu_rel | node cpu cores / the largest node's cores |
    | 21 | gpu_rel | node GPUs / the most GPUs on a node (0 in a fleet without GPUs) |

    Columns of ``job`` and of each ``queue`` row (names: :data:`aco_env.observation.JOB_FEATURES`):

    | col | name | meaning |
    |---|---|---|
    | 0 | cpu_rel | cpu cores / the largest node's cores (clipped at 1) |
    | 1 | mem_rel | memory / the largest node's memory (clipped at 1) |
    | 2 | gpu_rel | GPUs / the most GPUs on a node (0 in a fleet without GPUs) |
    | 3 | vram_per_gpu_100gb | VRAM per GPU / 100 GB (clipped at 10) |
    | 4 | type_latency_critical | workload one-hot |
    | 5 | type_batch | workload one-hot |
    | 6 | type_stream | workload one-hot |
    | 7 | priority | priority / 100 |
    | 8 | preemptible | 1 when an eviction requeues the job (instead of failing it) |
    | 9 | has_deadline | 1 when the job has a deadline (latest start) |
    | 10 | deadline_slack_h | hours to its deadline, clipped to [-24, 24] (0 without) |
    | 11 | duration_h | declared duration in hours (clipped at 1000; the true run time is hindsight) |
    | 12 | wait_frac | time since arrival / queue TTL, clipped to [0, 1] (0 without TTL) |
    | 13 | task | 1 when the job is a task of a workflow (0 for an independent job, and in every column below) |
    | 14 | critical_path_h | its declared duration plus its descendants' longest chain, hours (clipped at 1000) |
    | 15 | children | the tasks that wait for it directly (clipped at 1000) |
    | 16 | descendants_work_core_h | its descendants' declared work, core-hours (clipped at 1000) |
    | 17 | workflow_weight | its workflow's weight in the ``workflow`` term (clipped at 1000) |

    Entries of ``clock`` (names: :data:`aco_env.observation.CLOCK_FEATURES`):

    | col | name | meaning |
    |---|---|---|
    | 0 | hour_sin | sin of the hour of day (scenario ``start_hour`` at time 0, or reset's option), in [-1, 1] |
    | 1 | hour_cos | cos of the hour of day, in [-1, 1] |
    | 2 | progress | time / horizon, in [0, 1] |
    | 3 | queue_length | jobs queued behind the current one (clipped at 1000) |

    ## Action Masking
    ``action_masks()`` (the sb3-contrib MaskablePPO convention) and ``obs["action_mask"]`` mark a
    node valid when the job fits now (cpu, memory, GPU count, VRAM, GPU model, arch) and the
    node is up. Defer is always valid. An invalid action, in the default ``"penalty"`` mode,
    earns ``-invalid_action_penalty_usd * reward_scale`` and changes nothing (the same job is
    asked again; ``max_invalid_streak`` of them in a row truncate the episode); in ``"raise"``
    mode it raises :class:`InvalidActionError` and changes nothing.

    ## Rewards
    ``-(objective accrued since the previous decision) * reward_scale`` (custom ``reward_fn``
    possible). Without invalid actions an episode's return is exactly ``-objective_usd *
    reward_scale``. The last step's reward includes everything after the last decision (running
    jobs' cost, penalties) up to the episode end. With an ``unfairness`` weight a step's reward
    can be positive: that term is an episode-level measure, recomputed as jobs arrive and end,
    and may fall. ``reward_shaping="committed-cost"`` charges a placement's run at once and keeps
    the return (:class:`EnvConfig`).

    ## Starting State
    ``reset(seed)`` builds the episode from the scenario with the env's seeded generator (the
    synthetic workload, if any, and the spot interruption times) and runs the twin to the first
    decision. ``reset(seed, options={"start_hour": h})`` sets the hour of day at time 0 of this
    episode's clock features (the twin never reads the hour, so the episode is otherwise the one
    ``reset(seed)`` plays): a training loop randomises it so that a policy does not learn the
    hour of its training scenario (:class:`training.learning.random_start_hour.RandomStartHour`).
    Other option keys raise ``ValueError``. On a planted scenario (``scenario.planted``) the
    episode is drawn with its optimal schedule, which :func:`aco_env.hindsight.planted_of` and
    ``planted_action_of`` hold (hindsight, never in the observation or ``info``).

    ## Episode End
    Terminated when every submitted job is completed, failed or rejected (and no job arrives
    later). Truncated when the scenario's horizon ends the episode with jobs still queued or
    running, or, in penalty mode, after ``max_invalid_streak`` invalid actions in a row. There
    is no step limit: every valid action moves the episode on (a placement starts the job; a
    deferral moves on to another queued job or a later event), so the horizon ends every
    episode however long its trace. However the episode ends, ``info["episode_metrics"]`` is
    on the final step (keys in :data:`aco_env.metrics.EPISODE_METRICS`). A ``step`` after the
    step that returned ``terminated`` or ``truncated`` raises ``gymnasium.error.ResetNeeded``
    (as a ``step`` before the first ``reset`` does), so a loop that misses both flags stops with
    an error rather than running forever. When a ``reset`` finds nothing to decide (every job
    ends without a decision), the first ``step`` returns that end: the final observation,
    reward 0, the flags and the metrics.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | scenario | ``"fleet5-synthetic"`` | bundled scenario name, a YAML path, or a ``Scenario`` |
    | config | ``EnvConfig()`` | windows, reward scale, invalid actions, deferral, ``info`` (``"final"``: vector envs) |
    | reward_fn | ``ObjectiveDeltaReward(config.reward_scale)`` | a :class:`RewardFn` |
    | render_mode | ``None`` | ``"ansi"`` (a node table) or ``"rgb_array"`` (matplotlib, H x W x 3 uint8) |
    | **config_overrides | | any :class:`EnvConfig` field, e.g. ``reward_scale=10`` (as ``gym.make`` kwargs) |

    ## Version History
    One line per version; CHANGELOG.md ("Environment versions") says more of each.

    * v6: the node column ``gpu_rel`` (a node's GPUs); dynamics and rewards are v5's.
    * v5: workflows (DAG tasks), five workflow job columns and the ``workflow`` objective terms.
    * v4: three grid columns (carbon now and forecast, energy cost); energy and carbon terms.
    * v3: declared durations in the observation (the twin runs the true ones); ``qos_risk``.
    * v2: every queue spell's wait is priced; stale events pose no decision; ``Planted5``.
    * v1: cpu contention, a waiting price, finite boxes, no step limit, the ``new-fit`` deferral.
    * v0: initial version (no contention, no waiting price, episodes cut at 10,000 steps).
    """

    def __init__(
        self,
        scenario: str | Path | Scenario = "fleet5-synthetic",
        config: EnvConfig | None = None,
        reward_fn: RewardFn | None = None,
        render_mode: str | None = None,
        **config_overrides: Any,
    ) -> None:
        super().__init__(scenario, config, render_mode, **config_overrides)
        self.reward_fn = reward_fn or ObjectiveDeltaReward(self.config.reward_scale)
        self._objective_usd = 0.0  # the objective at the previous decision (rewards are its changes)
        self._committed: CommittedCost | None = None  # the potential shaping the rewards (EnvConfig.reward_shaping)
        self._committed_usd = 0.0  # its value at the previous decision
        self._decisions = 0
        self._invalid_actions = 0
        self._invalid_streak = 0  # invalid actions since the last valid one
        self._stuck = False  # the episode was truncated by max_invalid_streak
        self._planted: PlantedEpisode | None = None  # the episode's planted schedule (planted scenarios)
        self._full_info = self.config.info == FULL_INFO

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode (``options``: ``{"start_hour": h}`` or none; "Starting State" above).

        ``info`` has the keys of :class:`~aco_env.types.StepInfo`.
        """
        info = self._new_episode(seed, options)
        return self._observation(), info

    def step(self, action: object) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Place (or defer) the current job; see the class docstring. ``info``: :class:`~aco_env.types.StepInfo`.

        Raises:
            gymnasium.error.ResetNeeded: Before the first ``reset``, and after a step that returned
                ``terminated`` or ``truncated``.
        """
        self._require_episode()
        reward, terminated, truncated, info = self._advance(action)
        return self._ending((self._observation(), reward, terminated, truncated, info))

    # ------------------------------------------------------------------ public views
    def episode_metrics(self) -> dict[str, float]:
        """The metrics of the episode so far (the final step's ``info["episode_metrics"]``)."""
        twin = self._require_twin()
        raw = twin.metrics()
        raw.update(
            decisions=self._decisions + self._invalid_actions,
            invalid_actions=self._invalid_actions,
            invalid_action_rate=self._invalid_actions / max(1, self._decisions + self._invalid_actions),
        )
        return {key: float(raw[key]) for key in EPISODE_METRICS}

    # ------------------------------------------------------------------ internals (a batched env calls them too)
    def _new_episode(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        """``reset`` but its observation: start the episode, return its ``info``."""
        start_hour = start_hour_option(options)
        super().reset(seed=seed)
        # drawn once: a planted episode's spec is the one make_spec would build from the same draws
        self._planted = self._scenario.planted_episode(self.np_random) if self._scenario.planted else None
        spec = self._planted.spec if self._planted is not None else self._scenario.make_spec(self.np_random)
        twin = self._scenario.twin(spec)
        twin.reset(self.np_random)
        self._start_episode(twin, start_hour)
        self._decisions = 0
        self._invalid_actions = 0
        self._invalid_streak = 0
        self._stuck = False
        self._full_info = self.config.info == FULL_INFO
        self._objective_usd = twin.objective_usd()
        self._committed = CommittedCost(spec) if self.config.reward_shaping == COMMITTED_COST else None
        self._committed_usd = 0.0 if self._committed is None else self._committed(twin)
        return self._info(invalid=False)

    def _advance(self, action: object) -> tuple[float, bool, bool, dict[str, Any]]:
        """``step`` but its observation: ``(reward, terminated, truncated, info)``."""
        twin = self._require_twin()
        index = as_action_index(action, self.n_nodes + 1)
        if twin.done or self._stuck:  # the episode is over (or a reset found nothing to decide)
            return 0.0, twin.terminated, not twin.terminated, self._info(False, final=True)
        if index is None:
            return self._invalid(action)
        if index == self.n_nodes:
            twin.defer(self.config.deferral)
        else:
            try:
                twin.place(index)
            except InvalidPlacementError:  # the job does not fit there; the twin is unchanged
                return self._invalid(action)
        self._decisions += 1
        self._invalid_streak = 0
        info = self._info(invalid=False, final=twin.done)
        before, self._objective_usd = self._objective_usd, twin.objective_usd()
        if self._committed is not None:  # the objective plus what the running jobs commit to (EnvConfig.reward_shaping)
            committed, self._committed_usd = self._committed_usd, 0.0 if twin.done else self._committed(twin)
            reward = self.reward_fn(before + committed, self._objective_usd + self._committed_usd)
        else:
            reward = self.reward_fn(before, self._objective_usd)
        terminated = twin.terminated
        return reward, terminated, twin.done and not terminated, info

    def _info(self, invalid: bool, final: bool = False) -> dict[str, Any]:
        """The step's ``info``: :class:`~aco_env.types.StepInfo`'s keys, or under ``info="final"`` only the metrics."""
        twin = self._require_twin()
        if not self._full_info:
            return {"episode_metrics": self.episode_metrics()} if final else {}
        info: dict[str, Any] = {
            "objective": twin.objective_dict(),
            "sim_time_s": twin.time_s,
            "invalid_action": invalid,
        }
        if final:
            info["episode_metrics"] = self.episode_metrics()
        return info

    def _invalid(self, action: object) -> tuple[float, bool, bool, dict[str, Any]]:
        twin = self._require_twin()
        job = twin.current_job
        index = as_action_index(action, self.n_nodes + 1)
        reason = (
            f"action {action!r} is not an integer in 0..{self.n_nodes}"
            if index is None
            else f"job {job.job_id if job else None!r} cannot be placed on node {index}"
        )
        if self.config.invalid_action != PENALTY:
            raise InvalidActionError(reason + " (strict mode; the environment is unchanged)")
        self._invalid_actions += 1
        self._invalid_streak += 1
        reward = -self.config.invalid_action_penalty_usd * self.config.reward_scale
        self._stuck = self._invalid_streak >= self.config.max_invalid_streak
        return reward, False, self._stuck, self._info(invalid=True, final=self._stuck)
