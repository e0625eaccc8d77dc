"""Training callbacks: ``scheduling/*`` episode metrics, the config as TensorBoard text, checkpoints, progress.

Episode metrics reach the logger through a documented channel, not ``self.locals``: the
:class:`EpisodeMetricsRecorder` VecEnv wrapper keeps ``info["episode_metrics"]`` of finished
episodes, and :class:`SchedulingMetricsCallback` drains it at the end of each rollout.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger, TensorBoardOutputFormat
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from aco_env.metrics import EPISODE_METRICS, scheduling_key
from training.learning.interrupt import StopRequest
from training.learning.run_dir import checkpoint_path, save_model
from training.progress import Progress, on_terminal


class EpisodeMetricsRecorder(VecEnvWrapper):
    """Keeps the ``episode_metrics`` of every finished episode (all sub-envs) until drained."""

    def __init__(self, venv: VecEnv, maxlen: int = 10_000) -> None:
        super().__init__(venv)
        self.finished: deque[dict[str, float]] = deque(maxlen=maxlen)

    def reset(self) -> Any:
        """Reset the wrapped VecEnv."""
        return self.venv.reset()

    def step_wait(self) -> Any:
        """Step, and copy the metrics of every episode that ended."""
        observations, rewards, dones, infos = self.venv.step_wait()
        for done, info in zip(dones, infos, strict=True):
            if done and "episode_metrics" in info:
                self.finished.append(dict(info["episode_metrics"]))
        return observations, rewards, dones, infos

    def drain(self) -> list[dict[str, float]]:
        """The metrics recorded since the last drain."""
        out = list(self.finished)
        self.finished.clear()
        return out


class SchedulingMetricsCallback(BaseCallback):
    """Logs the mean of each episode metric as ``scheduling/<metric>`` after every rollout.

    Args:
        recorder: The recorder wrapping the training VecEnv.
    """

    def __init__(self, recorder: EpisodeMetricsRecorder) -> None:
        super().__init__()
        self.recorder = recorder

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self._log_finished()

    def _on_training_end(self) -> None:
        self._log_finished()

    def _log_finished(self) -> None:
        episodes = self.recorder.drain()
        if not episodes:
            return
        for metric in EPISODE_METRICS:
            values = [e[metric] for e in episodes if metric in e]
            if values:
                self.logger.record(scheduling_key(metric), float(np.mean(values)))
        self.logger.record("scheduling/episodes", len(episodes))


class ConfigTextCallback(BaseCallback):
    """Writes a Markdown table (the run's config) as TensorBoard text when training starts."""

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.markdown = markdown

    def _on_training_start(self) -> None:
        write_text(self.logger, "config", self.markdown)

    def _on_step(self) -> bool:
        return True


class StepGridCallback(BaseCallback):
    """Calls :meth:`_on_grid_point` each time the step count passes a multiple of ``every``.

    The grid is absolute (multiples of ``every`` since step 0), so a resumed run keeps it.
    Subclasses implement :meth:`_on_grid_point` (and call ``super()._on_training_start()`` if
    they override it).

    Args:
        every: Environment steps between grid points (>= 1).
    """

    def __init__(self, every: int) -> None:
        super().__init__()
        self.every = every
        self._passed_multiple = 0

    def _on_training_start(self) -> None:
        self._passed_multiple = self.model.num_timesteps // self.every

    def _on_step(self) -> bool:
        multiple = self.num_timesteps // self.every
        if multiple > self._passed_multiple:
            self._passed_multiple = multiple
            self._on_grid_point()
        return True

    def _on_grid_point(self) -> None:
        raise NotImplementedError


class PeriodicCheckpoint(StepGridCallback):
    """Saves ``RUN/checkpoints/model_<steps>_steps.zip`` each time the step count passes a multiple of ``every``.

    Args:
        every: Environment steps between checkpoints (>= 1).
        run_dir: The run directory.
    """

    def __init__(self, every: int, run_dir: Path) -> None:
        super().__init__(every)
        self.run_dir = run_dir

    def _on_grid_point(self) -> None:
        save_model(self.model, checkpoint_path(self.run_dir, self.num_timesteps))


class StopOnRequest(BaseCallback):
    """Ends ``model.learn`` at the next environment step once ``stop`` is requested (Ctrl-C, SIGTERM)."""

    def __init__(self, stop: StopRequest) -> None:
        super().__init__()
        self.stop = stop

    def _on_step(self) -> bool:
        return not self.stop.requested


class TrainingProgress(BaseCallback):
    """Training progress: a bar on a terminal, otherwise a line per tenth of the steps and ``training: N steps in T s``.

    A run stopped early (Ctrl-C) logs no summary: the interruption message says where it stopped.

    Args:
        total_steps: Environment steps this ``learn`` call is to train.
        enabled: False shows nothing.
    """

    def __init__(self, total_steps: int, enabled: bool = True) -> None:
        super().__init__()
        self.total_steps = total_steps
        self.enabled = enabled
        self.progress: Progress | None = None

    def _on_training_start(self) -> None:
        self.progress = Progress(self.total_steps, "training", "step", enabled=self.enabled)

    def _on_step(self) -> bool:
        if self.progress is not None:
            self.progress.update(self.training_env.num_envs)
        return True

    def _on_training_end(self) -> None:
        if self.progress is not None and (self.progress.done >= self.total_steps or on_terminal()):
            self.progress.close()


def write_text(logger: Logger, tag: str, markdown: str) -> None:
    """Write ``markdown`` as TensorBoard text under ``tag`` (SB3's logger has no text records)."""
    for output in logger.output_formats:
        if isinstance(output, TensorBoardOutputFormat):
            output.writer.add_text(tag, markdown, 0)
            output.writer.flush()
