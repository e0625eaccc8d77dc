"""Encoding a :class:`ClusterView` into the observation: a flat ``Dict`` of float32 boxes.

See :class:`aco_env.env.ClusterSchedulingEnv` for the table of every field. Static per-node
features (price, spot, arch, size) are computed once; each step fills the dynamic columns.
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces

from aco_env.types import ClusterView, EnvConfig
from digital_twin import WORKLOAD_TYPES, JobSpec, NodeSpec
from digital_twin.fleet import ARCHES

NODE_FEATURES = (
    "free_cpu_frac", "free_mem_frac", "free_gpu_frac", "background_cpu", "background_mem",
    "utilization", "price_rel", "is_spot", "interruption_prob", "arch_x86_64", "arch_arm64",
    "arch_gpu_node", "up", "running_latency_critical", "running_batch", "running_stream", "cpu_rel",
)
JOB_FEATURES = (
    "cpu_rel", "mem_rel", "gpu_rel", "vram_per_gpu_100gb", "type_latency_critical", "type_batch",
    "type_stream", "priority", "preemptible", "has_deadline", "deadline_slack_h", "duration_h", "wait_frac",
)
CLOCK_FEATURES = ("hour_sin", "hour_cos", "progress", "queue_length")
_DYNAMIC = slice(0, 6)  # free fractions, background, utilisation
_UP, _RUNNING = 12, slice(13, 16)
_SLACK_LIMIT_H = 24.0


class ObservationEncoder:
    """Builds observations for one fleet.

    Args:
        fleet: The nodes in action order.
        config: Window sizes.
        horizon_s: Episode horizon, for the ``progress`` clock feature.
        queue_ttl_s: Queue TTL (``None`` = none), for the job's ``wait_frac``.
        start_hour: Hour of day at simulated time 0, for the hour-of-day clock.
    """

    def __init__(
        self,
        fleet: tuple[NodeSpec, ...],
        config: EnvConfig,
        horizon_s: float,
        queue_ttl_s: float | None,
        start_hour: float = 0.0,
    ) -> None:
        self.n_nodes = len(fleet)
        self.config = config
        self._horizon_s = horizon_s
        self._ttl_s = queue_ttl_s
        self._start_s = start_hour * 3600.0
        self._cpu = np.array([n.cpu_cores for n in fleet])
        self._mem = np.array([n.mem_gb for n in fleet])
        self._gpus = np.array([n.gpu_count for n in fleet], dtype=np.float64)
        self._max_cpu = float(self._cpu.max())
        self._max_mem = float(self._mem.max())
        self._max_gpus = float(self._gpus.max())
        static = np.zeros((self.n_nodes, len(NODE_FEATURES)), dtype=np.float32)
        max_price = max(n.price_per_hour_usd for n in fleet) or 1.0
        for i, node in enumerate(fleet):
            static[i, 6] = node.price_per_hour_usd / max_price
            static[i, 7] = float(node.is_spot)
            static[i, 8] = node.interruption_prob_per_hour
            static[i, 9 + ARCHES.index(node.arch)] = 1.0
            static[i, 16] = node.cpu_cores / self._max_cpu
        self._static_nodes = static

    def space(self) -> spaces.Dict:
        """The observation space (shapes depend on the fleet size and the config only)."""
        n, k, w = self.n_nodes, self.config.queue_window, self.config.history_ticks
        node_high = np.ones((n, len(NODE_FEATURES)), dtype=np.float32)
        node_high[:, 5] = np.inf  # utilisation may exceed 1 (background + allocation)
        node_high[:, _RUNNING] = np.inf
        job_low = np.zeros(len(JOB_FEATURES), dtype=np.float32)
        job_low[10] = -_SLACK_LIMIT_H
        job_high = np.ones(len(JOB_FEATURES), dtype=np.float32)
        job_high[[3, 11]] = np.inf
        job_high[10] = _SLACK_LIMIT_H
        return spaces.Dict({
            "nodes": spaces.Box(np.zeros_like(node_high), node_high, dtype=np.float32),
            "history": spaces.Box(0.0, 1.0, (n, w), dtype=np.float32),
            "job": spaces.Box(job_low, job_high, dtype=np.float32),
            "queue": spaces.Box(np.tile(job_low, (k, 1)), np.tile(job_high, (k, 1)), dtype=np.float32),
            "queue_mask": spaces.Box(0.0, 1.0, (k,), dtype=np.float32),
            "clock": spaces.Box(
                np.array([-1, -1, 0, 0], dtype=np.float32),
                np.array([1, 1, 1, np.inf], dtype=np.float32),
                dtype=np.float32,
            ),
            "action_mask": spaces.Box(0.0, 1.0, (n + 1,), dtype=np.float32),
        })

    def encode(self, view: ClusterView) -> dict[str, np.ndarray]:
        """The observation for ``view`` (fresh arrays; safe to keep)."""
        nodes = self._static_nodes.copy()
        gpus = self._gpus
        nodes[:, 0] = view.free_cpu_cores / self._cpu
        nodes[:, 1] = view.free_mem_gb / self._mem
        nodes[:, 2] = np.divide(view.free_gpus, gpus, out=np.zeros_like(gpus), where=gpus > 0)
        nodes[:, 3] = view.background_cpu_pct / 100.0
        nodes[:, 4] = view.background_mem_pct / 100.0
        nodes[:, 5] = view.utilization_pct / 100.0
        nodes[:, _UP] = view.up
        nodes[:, _RUNNING] = view.running_by_type
        k = self.config.queue_window
        queue = np.zeros((k, len(JOB_FEATURES)), dtype=np.float32)
        queue_mask = np.zeros(k, dtype=np.float32)
        for row, job in enumerate(view.queue[:k]):
            queue[row] = self._job_features(job, view.time_s)
            queue_mask[row] = 1.0
        job = (
            self._job_features(view.job, view.time_s)
            if view.job is not None
            else np.zeros(len(JOB_FEATURES), dtype=np.float32)
        )
        hour = 2.0 * math.pi * ((self._start_s + view.time_s) % 86_400.0) / 86_400.0
        clock = np.array(
            [math.sin(hour), math.cos(hour), min(view.time_s / self._horizon_s, 1.0), len(view.queue)],
            dtype=np.float32,
        )
        return {
            "nodes": nodes,
            "history": (view.background_cpu_history_pct / 100.0).astype(np.float32),
            "job": job,
            "queue": queue,
            "queue_mask": queue_mask,
            "clock": clock,
            "action_mask": view.action_mask.astype(np.float32),
        }

    def _job_features(self, job: JobSpec, now_s: float) -> np.ndarray:
        features = np.zeros(len(JOB_FEATURES), dtype=np.float32)
        features[0] = min(job.cpu_cores / self._max_cpu, 1.0)
        features[1] = min(job.mem_gb / self._max_mem, 1.0)
        features[2] = min(job.gpu_count / self._max_gpus, 1.0) if self._max_gpus else 0.0
        features[3] = job.gpu_vram_gb / 100.0
        features[4 + WORKLOAD_TYPES.index(job.workload)] = 1.0
        features[7] = job.priority / 100.0
        features[8] = float(job.preemptible)
        if job.deadline_s is not None:
            features[9] = 1.0
            slack_h = (job.deadline_s - now_s) / 3600.0
            features[10] = min(max(slack_h, -_SLACK_LIMIT_H), _SLACK_LIMIT_H)
        features[11] = job.duration_s / 3600.0
        if self._ttl_s is not None:
            features[12] = min(max(now_s - job.arrival_s, 0.0) / self._ttl_s, 1.0)
        return features
