"""Training callbacks: ``scheduling/*`` episode metrics and the config as TensorBoard text.

Episode metrics reach the logger through a documented channel, not ``self.locals``: the
:class:`EpisodeMetricsRecorder` VecEnv wrapper keeps ``info["episode_metrics"]`` of finished
episodes, and :class:`SchedulingMetricsCallback` drains it at the end of each rollout.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger, TensorBoardOutputFormat
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from aco_env.metrics import EPISODE_METRICS, scheduling_key


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


def write_text(logger: Logger, tag: str, markdown: str) -> None:
    """Write ``markdown`` as TensorBoard text under ``tag`` (SB3's logger has no text records)."""
    for output in logger.output_formats:
        if isinstance(output, TensorBoardOutputFormat):
            output.writer.add_text(tag, markdown, 0)
            output.writer.flush()
