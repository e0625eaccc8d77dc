"""The construction and the agent-facing API shared by the envs that pose decisions on a twin.

:class:`TwinEnv` is the base of :class:`aco_env.ClusterSchedulingEnv` (one decision per step,
whole episodes) and :class:`aco_env.PlacementEnv` (one decision per episode): both are built
from ``(scenario, config, render_mode, **config_overrides)``, have the same spaces, masks,
rendering and :meth:`TwinEnv.cluster_view`, and differ only in ``reset`` and ``step``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import scenarios
from aco_env.actions import action_mask
from aco_env.observation import ObservationEncoder
from aco_env.render import render_ansi, render_rgb_array
from aco_env.types import EnvConfig
from aco_env.views import ClusterView, TelemetryRecord, cluster_view_of
from digital_twin import DigitalTwin, TwinSpec
from digital_twin.errors import short_repr
from digital_twin.scenario import Scenario

RENDER_MODES = ("ansi", "rgb_array")
RESET_OPTIONS = ("start_hour",)
"""The keys ``reset(options=...)`` accepts."""


def start_hour_option(options: dict[str, Any] | None) -> float | None:
    """The ``start_hour`` of ``reset``'s options (``None`` when not given), checked.

    Raises:
        ValueError: An unknown key, or a start hour that is not a finite number (the key and value named).
    """
    if not options:
        return None
    unknown = sorted(set(options) - set(RESET_OPTIONS))
    if unknown:
        raise ValueError(f"reset options: unknown key(s) {unknown}; known: {list(RESET_OPTIONS)}")
    hour = options.get("start_hour")
    if hour is None:
        return None
    if isinstance(hour, bool) or not isinstance(hour, int | float | np.integer | np.floating) or not np.isfinite(hour):
        raise ValueError(f"reset options: start_hour must be a finite number of hours, got {short_repr(hour)}")
    return float(hour)


StepResult = tuple[Any, float, bool, bool, dict[str, Any]]
"""What ``step`` returns: observation, reward, terminated, truncated, info."""


class TwinEnv(gym.Env[dict[str, np.ndarray], np.int64]):
    """An env whose state is one episode of a :class:`~digital_twin.DigitalTwin` at a decision.

    Subclasses implement ``reset`` (which calls :meth:`_start_episode` with the twin, once it
    stands at the decision to ask) and ``step``.

    Args:
        scenario: A bundled scenario name, a YAML path, or a ``Scenario``.
        config: How the MDP is posed (default ``EnvConfig()``).
        render_mode: ``None``, ``"ansi"`` or ``"rgb_array"``.
        **config_overrides: :class:`EnvConfig` fields that replace the config's (as ``gym.make`` kwargs).

    Attributes:
        scenario_name: The loaded scenario's name (the scenario itself, which holds a trace
            scenario's whole trace, is hindsight: :func:`aco_env.hindsight.scenario_of`).
        config: The config, overrides applied.
        fleet: The nodes, in action order.
        n_nodes: N; the action ``N`` defers.
    """

    metadata: dict[str, Any] = {  # noqa: RUF012  (gym.Env declares it an instance attribute)
        "render_modes": list(RENDER_MODES),
        "render_fps": 4,
        "autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        scenario: str | Path | Scenario = "fleet5-synthetic",
        config: EnvConfig | None = None,
        render_mode: str | None = None,
        **config_overrides: Any,
    ) -> None:
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {list(RENDER_MODES)}, got {render_mode!r}")
        base = config or EnvConfig()
        self.config = dataclasses.replace(base, **config_overrides) if config_overrides else base
        self._scenario = scenarios.load(scenario)  # holds a trace scenario's whole trace: aco_env.hindsight
        self.scenario_name = self._scenario.name
        self.render_mode = render_mode
        self.fleet = self._scenario.fleet
        self.n_nodes = len(self.fleet)
        self._encoder = ObservationEncoder.for_scenario(self._scenario, self.config)
        self.action_space = spaces.Discrete(self.n_nodes + 1)
        self.observation_space = self._encoder.space()
        self._twin: DigitalTwin | None = None
        self._ended = False  # a step returned terminated or truncated: the next step needs a reset
        self._telemetry_record: TelemetryRecord | None = None  # the episode's ticks so far, for its views

    def action_masks(self) -> np.ndarray:
        """``(N + 1,)`` bool valid actions (sb3-contrib MaskablePPO calls this)."""
        return action_mask(self._require_twin())

    def render(self) -> str | np.ndarray | None:  # type: ignore[override]  # gymnasium 1.2: an unbound TypeVar
        """A node table (``ansi``) or an RGB image ``(480, 800, 3)`` uint8 (``rgb_array``)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        view = self.cluster_view()
        if self.render_mode == "ansi":
            return render_ansi(view, self._require_twin().objective())
        return render_rgb_array(view)

    def current_candidates(self) -> np.ndarray:
        """``(N,)`` bool: the nodes the current job could ever run on (its shape, the rules' node side).

        Static for a job (not whether it fits now: that is the action mask). Known at decision
        time, so online agents may read it: with the mask it tells whether a deferral under
        ``new-fit`` can ever be asked again (:mod:`digital_twin.sim.deferral`). All False when no
        job is posed.
        """
        twin = self._require_twin()
        if twin.current_job is None:
            return np.zeros(self.n_nodes, dtype=bool)
        return twin.candidate_masks([twin.current_job_index])[0]

    def cluster_view(self) -> ClusterView:
        """The present state as online agents may see it: never the future (:mod:`aco_env.views`)."""
        return cluster_view_of(self._require_twin(), self.config.history_ticks, self._telemetry_record)

    def decisions(self) -> list[tuple[str, int | None]]:
        """The episode's decisions so far, in order: ``(job_id, node)``, ``None`` for a deferral.

        :meth:`digital_twin.DigitalTwin.decisions`; invalid actions changed nothing and are not in it.
        """
        return self._require_twin().decisions()

    def known_spec(self) -> TwinSpec:
        """The episode as known now, for online planners (:meth:`digital_twin.DigitalTwin.known_spec`).

        The jobs arrived so far, the telemetry to the current tick (held after it) and the spot
        interruptions so far: nothing of the future.
        """
        return self._require_twin().known_spec()

    def known_twin(self) -> DigitalTwin:
        """The episode as known now, as a twin standing at the current decision, for online planners.

        A twin on :meth:`known_spec` in the env's present state
        (:meth:`digital_twin.DigitalTwin.continued_in`): nothing of the future, and not the env's
        own twin (playing it changes nothing here). A planner continues it into futures of its
        own guessing; cost O(nodes + jobs), not a replay of the episode.
        """
        twin = self._require_twin()
        return twin.continued_in(twin.known_spec())

    # ------------------------------------------------------------------ for subclasses
    def _start_episode(self, twin: DigitalTwin, start_hour: float | None = None) -> None:
        """Make ``twin`` (reset, standing at its first decision) the episode the env poses.

        ``start_hour``: the hour of day at time 0 of the clock features (``None``: the scenario's).
        """
        self._twin = twin
        self._ended = False
        self._telemetry_record = TelemetryRecord(twin.spec.telemetry)
        self._encoder.start_episode(twin.spec, start_hour)

    def _require_twin(self) -> DigitalTwin:
        if self._twin is None:
            raise gym.error.ResetNeeded("call reset() before using the environment")
        return self._twin

    def _require_episode(self) -> DigitalTwin:
        """The twin, for a step: raises ``ResetNeeded`` once a step has ended the episode."""
        if self._ended:
            raise gym.error.ResetNeeded(
                "the episode is over (a step returned terminated or truncated): call reset() before step()"
            )
        return self._require_twin()

    def _ending(self, step: StepResult) -> StepResult:
        """``step`` as returned; remembers whether it ended the episode (see :meth:`_require_episode`)."""
        self._ended = bool(step[2] or step[3])
        return step

    def _observation(self) -> dict[str, np.ndarray]:
        return self._encoder.encode(self._require_twin())
