"""Encoding the twin's current decision into the observation: a flat ``Dict`` of float32 boxes.

See :class:`aco_env.env.ClusterSchedulingEnv` for the table of every field. Static per-node
features (price, spot, arch, size) are computed once per fleet, static per-job features and
the background tables once per episode (:meth:`ObservationEncoder.start_episode`); each step
fills only what changes. This is the env's hot path: keep it free of per-node Python loops.
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces

from aco_env.types import EnvConfig
from digital_twin import WORKLOAD_TYPES, DigitalTwin, JobSpec, NodeSpec, TwinSpec
from digital_twin.fleet import ARCHES

NODE_FEATURES = (
    "free_cpu_frac", "free_mem_frac", "free_gpu_frac", "up", "running_latency_critical",
    "running_batch", "running_stream", "background_cpu", "background_mem", "utilization",
    "price_rel", "is_spot", "interruption_prob", "arch_x86_64", "arch_arm64", "arch_gpu_node", "cpu_rel",
)
"""Columns of ``obs["nodes"]``: 10 dynamic ones, then 7 static ones (fixed per fleet)."""
JOB_FEATURES = (
    "cpu_rel", "mem_rel", "gpu_rel", "vram_per_gpu_100gb", "type_latency_critical", "type_batch",
    "type_stream", "priority", "preemptible", "has_deadline", "deadline_slack_h", "duration_h", "wait_frac",
)
CLOCK_FEATURES = ("hour_sin", "hour_cos", "progress", "queue_length")
_N_TWIN = 7  # columns taken from DigitalTwin.node_vector(): free cpu/mem/GPU, up, running x3
_RUNNING = slice(4, 7)
_UTILIZATION = 9
_N_DYNAMIC = 10
_SLACK_LIMIT_H = 24.0
COUNT_CAP = 1000.0
"""Counts (running jobs per type, queue length) and hours of duration are clipped here, so that
every box is bounded (Gymnasium's checker warns on infinite bounds)."""
VRAM_CAP = 10.0  # VRAM per GPU / 100 GB is clipped at 10 (1 TB)


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
        static = np.zeros((self.n_nodes, len(NODE_FEATURES) - _N_DYNAMIC), dtype=np.float32)
        max_price = max(n.price_per_hour_usd for n in fleet) or 1.0
        for i, node in enumerate(fleet):
            static[i, 0] = node.price_per_hour_usd / max_price
            static[i, 1] = float(node.is_spot)
            static[i, 2] = node.interruption_prob_per_hour
            static[i, 3 + ARCHES.index(node.arch)] = 1.0
            static[i, 6] = node.cpu_cores / self._max_cpu
        self._static_nodes = static
        # Row scales turning node_vector() blocks into fractions (millicores, MiB, GPUs) or counts.
        scale = np.ones((_N_TWIN, self.n_nodes))
        scale[0] = 1.0 / (self._cpu * 1000.0)
        scale[1] = 1.0 / (self._mem * 1024.0)
        scale[2] = np.divide(1.0, self._gpus, out=np.zeros(self.n_nodes), where=self._gpus > 0)
        self._twin_scale = scale

    def space(self) -> spaces.Dict:
        """The observation space (shapes depend on the fleet size and the config only)."""
        n, k, w = self.n_nodes, self.config.queue_window, self.config.history_ticks
        node_high = np.ones((n, len(NODE_FEATURES)), dtype=np.float32)
        node_high[:, _UTILIZATION] = 2.0  # background (<= 100 %) + allocation (<= 100 %)
        node_high[:, _RUNNING] = COUNT_CAP
        job_low = np.zeros(len(JOB_FEATURES), dtype=np.float32)
        job_low[10] = -_SLACK_LIMIT_H
        job_high = np.ones(len(JOB_FEATURES), dtype=np.float32)
        job_high[3] = VRAM_CAP
        job_high[11] = COUNT_CAP
        job_high[10] = _SLACK_LIMIT_H
        return spaces.Dict({
            "nodes": spaces.Box(np.zeros_like(node_high), node_high, dtype=np.float32),
            "history": spaces.Box(0.0, 1.0, (n, w), dtype=np.float32),
            "job": spaces.Box(job_low, job_high, dtype=np.float32),
            "queue": spaces.Box(np.tile(job_low, (k, 1)), np.tile(job_high, (k, 1)), dtype=np.float32),
            "queue_mask": spaces.Box(0.0, 1.0, (k,), dtype=np.float32),
            "clock": spaces.Box(
                np.array([-1, -1, 0, 0], dtype=np.float32),
                np.array([1, 1, 1, COUNT_CAP], dtype=np.float32),
                dtype=np.float32,
            ),
            "action_mask": spaces.Box(0.0, 1.0, (n + 1,), dtype=np.float32),
        })

    def start_episode(self, spec: TwinSpec) -> None:
        """Precompute the episode's static tables (job features, background per tick)."""
        jobs = spec.jobs
        self._job_static = self._static_job_table(jobs)
        self._deadline_s = np.array([np.nan if j.deadline_s is None else j.deadline_s for j in jobs])
        self._arrival_s = np.array([j.arrival_s for j in jobs])
        background = spec.telemetry.background_pct / 100.0
        self._background_now = background.astype(np.float32)  # (T, N, 2)
        w = self.config.history_ticks
        cpu = background[:, :, 0].astype(np.float32)
        self._history_padded = np.concatenate([np.repeat(cpu[:1], w - 1, axis=0), cpu])  # (T + W - 1, N)

    def encode(self, twin: DigitalTwin) -> dict[str, np.ndarray]:
        """The observation of the twin's current decision (fresh arrays; safe to keep)."""
        k = twin.tick_index
        now = twin.time_s
        dynamic = np.array(twin.node_vector(), dtype=np.float64).reshape(_N_TWIN, self.n_nodes)
        dynamic *= self._twin_scale
        np.minimum(dynamic[_RUNNING], COUNT_CAP, out=dynamic[_RUNNING])
        nodes = np.empty((self.n_nodes, len(NODE_FEATURES)), dtype=np.float32)
        nodes[:, :_N_TWIN] = dynamic.T
        background = self._background_now[k]
        nodes[:, _N_TWIN : _N_TWIN + 2] = background
        nodes[:, _UTILIZATION] = background[:, 0] + 1.0 - dynamic[0]
        nodes[:, _N_DYNAMIC:] = self._static_nodes
        pending = twin.pending_jobs()
        current = twin.current_job_index
        behind = pending[1:] if current >= 0 else pending
        window = behind[: self.config.queue_window]
        queue = np.zeros((self.config.queue_window, len(JOB_FEATURES)), dtype=np.float32)
        queue_mask = np.zeros(self.config.queue_window, dtype=np.float32)
        if window:
            queue[: len(window)] = self._job_rows(np.array(window), now)
            queue_mask[: len(window)] = 1.0
        job = self._current_job_row(current, now)
        hour = 2.0 * math.pi * ((self._start_s + now) % 86_400.0) / 86_400.0
        clock = np.array(
            [math.sin(hour), math.cos(hour), min(now / self._horizon_s, 1.0), min(len(behind), COUNT_CAP)],
            dtype=np.float32,
        )
        mask = np.array([*twin.feasible_mask(), True], dtype=np.float32)
        return {
            "nodes": nodes,
            "history": self._history_padded[k : k + self.config.history_ticks].T.copy(),
            "job": job,
            "queue": queue,
            "queue_mask": queue_mask,
            "clock": clock,
            "action_mask": mask,
        }

    def _current_job_row(self, job: int, now_s: float) -> np.ndarray:
        """``(13,)`` features of one job (zeros for ``job < 0``), with scalar maths (the hot path)."""
        if job < 0:
            return np.zeros(len(JOB_FEATURES), dtype=np.float32)
        row = self._job_static[job].copy()
        deadline = self._deadline_s[job]
        if deadline == deadline:  # not NaN: the job has a deadline
            row[10] = min(max((deadline - now_s) / 3600.0, -_SLACK_LIMIT_H), _SLACK_LIMIT_H)
        if self._ttl_s is not None:
            row[12] = min(max((now_s - self._arrival_s[job]) / self._ttl_s, 0.0), 1.0)
        return row

    def _job_rows(self, jobs: np.ndarray, now_s: float) -> np.ndarray:
        """``(len(jobs), 13)``: static features plus the time-dependent slack and wait."""
        rows = self._job_static[jobs]
        deadline = self._deadline_s[jobs]
        slack = np.minimum(np.maximum((deadline - now_s) / 3600.0, -_SLACK_LIMIT_H), _SLACK_LIMIT_H)
        rows[:, 10] = np.nan_to_num(slack, nan=0.0)
        if self._ttl_s is not None:
            rows[:, 12] = np.minimum(np.maximum((now_s - self._arrival_s[jobs]) / self._ttl_s, 0.0), 1.0)
        return rows

    def _static_job_table(self, jobs: tuple[JobSpec, ...]) -> np.ndarray:
        """``(n_jobs, 13)`` float32: the features that do not change during the episode."""
        table = np.zeros((len(jobs), len(JOB_FEATURES)), dtype=np.float32)
        if not jobs:
            return table
        column = lambda values: np.array(values, dtype=np.float64)  # noqa: E731
        table[:, 0] = np.minimum(column([j.cpu_cores for j in jobs]) / self._max_cpu, 1.0)
        table[:, 1] = np.minimum(column([j.mem_gb for j in jobs]) / self._max_mem, 1.0)
        if self._max_gpus:
            table[:, 2] = np.minimum(column([j.gpu_count for j in jobs]) / self._max_gpus, 1.0)
        table[:, 3] = np.minimum(column([j.gpu_vram_gb for j in jobs]) / 100.0, VRAM_CAP)
        types = np.array([WORKLOAD_TYPES.index(j.workload) for j in jobs])
        table[np.arange(len(jobs)), 4 + types] = 1.0
        table[:, 7] = column([j.priority for j in jobs]) / 100.0
        table[:, 8] = column([j.preemptible for j in jobs])
        table[:, 9] = column([j.deadline_s is not None for j in jobs])
        table[:, 11] = np.minimum(column([j.duration_s for j in jobs]) / 3600.0, COUNT_CAP)
        return table
