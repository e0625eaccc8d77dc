"""The Gymnasium environment: one job placement per step on a simulated heterogeneous fleet."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import scenarios
from aco_env.actions import action_mask, as_action_index
from aco_env.metrics import EPISODE_METRICS
from aco_env.observation import ObservationEncoder
from aco_env.render import render_ansi, render_rgb_array
from aco_env.reward import ObjectiveDeltaReward, RewardFn
from aco_env.types import PENALTY, ClusterView, EnvConfig, InvalidActionError, StepInfo
from digital_twin import DigitalTwin, HindsightView, InvalidPlacementError, Telemetry, TwinSpec
from digital_twin.scenario import Scenario
from digital_twin.telemetry import CPU, MEM


class ClusterSchedulingEnv(gym.Env[dict[str, np.ndarray], np.int64]):
    """Place jobs on a heterogeneous compute fleet whose digital twin replays cluster telemetry.

    ## Description
    A scenario fixes a fleet (CPU, ARM spot, GPU on-demand and spot nodes with prices), the
    background load of other tenants (a replayed trace), a job stream, and the objective. The
    twin jumps from event to event (arrivals, completions, telemetry ticks, spot interruptions
    and recoveries, queue timeouts) and stops whenever a queued job fits on some up node: each
    step is one such decision for the job at the head of the queue. The goal is to minimise the
    episode objective in USD: compute cost + penalties for SLA violations, latency-critical jobs
    on spot nodes, jobs failed by evictions, missed deadlines and rejected jobs.

    ## Action Space
    ``Discrete(N + 1)`` for N nodes: ``i < N`` starts the current job on node ``i``; ``N``
    defers it: it stays queued (until its TTL) and is asked again after the next event, or,
    with ``deferral="new-fit"``, only once it fits on a node it did not fit on when deferred
    (:mod:`digital_twin.deferral`).

    ## Observation Space
    A ``Dict`` of float32 boxes (N nodes, K = ``queue_window``, W = ``history_ticks``):

    | key | shape | range | meaning |
    |---|---|---|---|
    | nodes | (N, 17) | [0, 1], counts [0, 1000], utilisation [0, 2] | per-node features, one row per node |
    | history | (N, W) | [0, 1] | background cpu / 100, last W ticks, oldest first (tick 0 repeats before the start) |
    | job | (13,) | [0, 1] except as noted below | the current job (zeros when the episode is over) |
    | queue | (K, 13) | as job | the next K queued jobs, zero-padded |
    | queue_mask | (K,) | {0, 1} | 1 for real rows of ``queue``, 0 for padding |
    | clock | (4,) | see text | hour of day (sin, cos), time / horizon in [0, 1], jobs queued behind (<= 1000) |
    | action_mask | (N + 1,) | {0, 1} | valid actions, as ``action_masks()`` |

    ``nodes`` columns: 0 free cpu fraction, 1 free mem fraction, 2 free GPU fraction (0 without
    GPUs), 3 background cpu / 100, 4 background mem / 100, 5 utilisation / 100 (background +
    allocated cpu; in [0, 2]), 6 price / max fleet price, 7 spot flag, 8 interruption
    probability per hour, 9-11 arch one-hot (x86_64, arm64, gpu-node), 12 up flag, 13-15
    running jobs by type (latency-critical, batch, stream; counts clipped at 1000), 16 cpu cores / largest
    node's cores. ``job`` columns: 0 cpu / largest node cpu, 1 mem / largest node mem, 2 GPUs /
    most GPUs on a node, 3 VRAM per GPU / 100 GB (clipped at 10), 4-6 workload one-hot (latency-critical, batch,
    stream), 7 priority / 100, 8 preemptible, 9 has deadline, 10 hours to its deadline clipped
    to [-24, 24] (0 without), 11 duration in hours (clipped at 1000), 12 time since arrival / queue TTL clipped to
    [0, 1] (0 without TTL).

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
    jobs' cost, penalties) up to the episode end.

    ## Starting State
    ``reset(seed)`` builds the episode from the scenario with the env's seeded generator (the
    synthetic workload, if any, and the spot interruption times) and runs the twin to the first
    decision.

    ## Episode End
    Terminated when every submitted job is completed, failed or rejected (and no job arrives
    later). Truncated when the scenario's horizon ends the episode with jobs still queued or
    running, or, in penalty mode, after ``max_invalid_streak`` invalid actions in a row. There
    is no step limit: every valid action moves the episode on (a placement starts the job; a
    deferral moves on to another queued job or a later event), so the horizon ends every
    episode however long its trace. However the episode ends, ``info["episode_metrics"]`` is
    on the final step (keys in :data:`aco_env.metrics.EPISODE_METRICS`); a ``step`` after the
    end returns the final observation, reward 0, the same flags and the metrics again.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | scenario | ``"fleet5-synthetic"`` | bundled scenario name, a YAML path, or a ``Scenario`` |
    | config | ``EnvConfig()`` | windows, reward scale, invalid-action policy and streak limit, deferral rule |
    | reward_fn | ``ObjectiveDeltaReward(config.reward_scale)`` | a :class:`RewardFn` |
    | render_mode | ``None`` | ``"ansi"`` (a node table) or ``"rgb_array"`` (matplotlib, H x W x 3 uint8) |
    | **config_overrides | | any :class:`EnvConfig` field, e.g. ``reward_scale=10`` (as ``gym.make`` kwargs) |

    ## Version History
    * v0: initial version.
    * v0 (issue 12): the registered ids no longer cut episodes at 10,000 steps (long trace
      episodes ended without ``episode_metrics``); ``max_invalid_streak`` truncates an episode
      stuck on invalid actions instead. Episodes that ended before end the same way.
      ``EnvConfig.deferral`` adds the ``new-fit`` deferral rule; the default (``next-event``)
      is the rule v0 always had.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "rgb_array"],
        "render_fps": 4,
        "autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        scenario: str | Path | Scenario = "fleet5-synthetic",
        config: EnvConfig | None = None,
        reward_fn: RewardFn | None = None,
        render_mode: str | None = None,
        **config_overrides: Any,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        base = config or EnvConfig()
        self.config = dataclasses.replace(base, **config_overrides) if config_overrides else base
        self.scenario = scenarios.load(scenario)
        self.reward_fn = reward_fn or ObjectiveDeltaReward(self.config.reward_scale)
        self.render_mode = render_mode
        self.fleet = self.scenario.fleet
        self.n_nodes = len(self.fleet)
        self._encoder = ObservationEncoder.for_scenario(self.scenario, self.config)
        self.action_space = spaces.Discrete(self.n_nodes + 1)
        self.observation_space = self._encoder.space()
        self._twin: DigitalTwin | None = None
        self._objective_usd = 0.0  # the objective at the previous decision (rewards are its changes)
        self._decisions = 0
        self._invalid_actions = 0
        self._invalid_streak = 0  # invalid actions since the last valid one
        self._stuck = False  # the episode was truncated by max_invalid_streak

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], StepInfo]:
        """Start an episode; ``options`` is unused."""
        super().reset(seed=seed)
        del options
        spec = self.scenario.make_spec(self.np_random)
        self._encoder.start_episode(spec)
        self._twin = DigitalTwin(spec)
        self._twin.reset(self.np_random)
        self._decisions = 0
        self._invalid_actions = 0
        self._invalid_streak = 0
        self._stuck = False
        info = self._info(invalid=False)
        self._objective_usd = info["objective"]["objective_usd"]
        return self._observation(), info

    def step(self, action: object) -> tuple[dict[str, np.ndarray], float, bool, bool, StepInfo]:
        """Place (or defer) the current job; see the class docstring."""
        twin = self._require_twin()
        index = as_action_index(action, self.n_nodes + 1)
        if twin.done or self._stuck:  # the episode is over (or a reset found nothing to decide)
            return self._observation(), 0.0, twin.terminated, not twin.terminated, self._info(False, final=True)
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
        before, self._objective_usd = self._objective_usd, info["objective"]["objective_usd"]
        reward = self.reward_fn(before, self._objective_usd)
        terminated = twin.terminated
        return self._encoder.encode(twin), reward, terminated, twin.done and not terminated, info

    def action_masks(self) -> np.ndarray:
        """``(N + 1,)`` bool valid actions (sb3-contrib MaskablePPO calls this)."""
        return action_mask(self._require_twin())

    def render(self) -> str | np.ndarray | None:
        """A node table (``ansi``) or an RGB image ``(480, 800, 3)`` uint8 (``rgb_array``)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        view = self.cluster_view()
        if self.render_mode == "ansi":
            return render_ansi(view, self._require_twin().objective())
        return render_rgb_array(view)

    # ------------------------------------------------------------------ public views for agents
    def cluster_view(self) -> ClusterView:
        """The present state as agents may see it (node specs, load, history, job, queue, mask)."""
        return cluster_view_of(self._require_twin(), self.config.history_ticks)

    @property
    def twin_spec(self) -> TwinSpec:
        """The current episode's fixed inputs (fleet, telemetry, settings; jobs include future arrivals).

        Agents other than the oracle should read only ``fleet``, settings and past telemetry.
        """
        return self._require_twin().spec

    def hindsight(self) -> HindsightView:
        """Privileged view of the episode's future, for the oracle only (see :class:`HindsightView`)."""
        return self._require_twin().hindsight()

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

    # ------------------------------------------------------------------ internals
    def _require_twin(self) -> DigitalTwin:
        if self._twin is None:
            raise gym.error.ResetNeeded("call reset() before using the environment")
        return self._twin

    def _observation(self) -> dict[str, np.ndarray]:
        return self._encoder.encode(self._require_twin())

    def _info(self, invalid: bool, final: bool = False) -> StepInfo:
        twin = self._require_twin()
        info: StepInfo = {
            "objective": twin.objective_dict(),
            "sim_time_s": twin.time_s,
            "invalid_action": invalid,
        }
        if final:
            info["episode_metrics"] = self.episode_metrics()
        return info

    def _invalid(self, action: object) -> tuple[dict[str, np.ndarray], float, bool, bool, StepInfo]:
        twin = self._require_twin()
        job = twin.current_job
        reason = (
            f"action {action!r} is not an integer in 0..{self.n_nodes}"
            if as_action_index(action, self.n_nodes + 1) is None
            else f"job {job.job_id if job else None!r} cannot be placed on node {int(action)}"  # type: ignore[call-overload]  # checked above
        )
        if self.config.invalid_action != PENALTY:
            raise InvalidActionError(reason + " (strict mode; the environment is unchanged)")
        self._invalid_actions += 1
        self._invalid_streak += 1
        reward = -self.config.invalid_action_penalty_usd * self.config.reward_scale
        self._stuck = self._invalid_streak >= self.config.max_invalid_streak
        return self._observation(), reward, False, self._stuck, self._info(invalid=True, final=self._stuck)


def cluster_view_of(twin: DigitalTwin, history_ticks: int) -> ClusterView:
    """The :class:`ClusterView` of a twin at its current decision point."""
    telemetry = twin.spec.telemetry
    k = twin.tick_index
    free_cpu, free_mem, free_gpus = twin.node_free()
    pending = twin.pending_jobs()
    return ClusterView(
        time_s=twin.time_s,
        fleet=twin.spec.fleet,
        job=twin.current_job,
        queue=twin.spec.jobs.select(pending[1:] if twin.current_job is not None else pending),
        free_cpu_cores=free_cpu,
        free_mem_gb=free_mem,
        free_gpus=free_gpus,
        up=twin.node_up(),
        background_cpu_pct=telemetry.background_pct[k, :, CPU].copy(),
        background_mem_pct=telemetry.background_pct[k, :, MEM].copy(),
        background_cpu_history_pct=_history(telemetry, k, history_ticks),
        utilization_pct=twin.utilization_pct(),
        running_by_type=twin.running_by_type(),
        action_mask=action_mask(twin),
        tick_index=k,
        tick_s=telemetry.tick_s,
    )


def _history(telemetry: Telemetry, tick: int, window: int) -> np.ndarray:
    """``(N, window)`` background cpu % for ticks ``tick - window + 1 .. tick`` (clamped at 0)."""
    ticks = np.clip(np.arange(tick - window + 1, tick + 1), 0, None)
    return telemetry.background_pct[ticks, :, CPU].T.copy()

