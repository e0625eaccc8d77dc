"""Encoding the twin's current decision into the observation: a flat ``Dict`` of float32 boxes.

The feature names below are the one source of the observation's columns: the env's docstring
table lists them (a test checks that it does, in order) and every column is addressed by its
name here. ``obs["nodes"]`` is a table kept up to date row by row (:mod:`aco_env.node_table`),
the history windows are built once per telemetry (a scenario's episodes share it) and the static
per-job features once per episode (:meth:`ObservationEncoder.start_episode`); each step fills
only what changes. This is the env's hot path, where every numpy call costs about a
microsecond: keep it free of per-node Python loops and of needless small numpy calls.
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces

from aco_env.grid_columns import CARBON_CAP, ENERGY_COST_CAP, GRID_FEATURES, GridColumns
from aco_env.node_table import NodeColumns, NodeTable
from aco_env.types import EnvConfig
from digital_twin import WORKLOAD_TYPES, DigitalTwin, EpisodeSettings, NodeSpec, Telemetry, TwinSpec
from digital_twin.fleet import ARCHES
from digital_twin.scenario import Scenario
from digital_twin.sim.node_arrays import VECTOR_FIT_NODES
from digital_twin.workload import Workload


def _snake(name: str) -> str:
    """``"latency-critical"`` -> ``"latency_critical"`` (feature names are identifiers)."""
    return name.replace("-", "_")


NODE_FEATURES: tuple[str, ...] = (
    # DigitalTwin.node_vector()'s seven blocks, in its order (each times a per-node scale):
    "free_cpu_frac",
    "free_mem_frac",
    "free_gpu_frac",
    "up",
    *(f"running_{_snake(w)}" for w in WORKLOAD_TYPES),
    # The telemetry at the current tick, and the utilisation it adds up to with our allocation:
    "background_cpu",
    "background_mem",
    "utilization",
    # What placing the current job there would cost in QoS (it depends on the job):
    "qos_risk",
    # The node's grid now and as forecast from its past, and what its energy costs (aco_env.grid_columns):
    *GRID_FEATURES,
    # Static per fleet:
    "price_rel",
    "is_spot",
    "interruption_prob",
    *(f"arch_{_snake(a)}" for a in ARCHES),
    "cpu_rel",
    "gpu_rel",
)
"""Columns of ``obs["nodes"]`` (meanings: the table in :class:`aco_env.ClusterSchedulingEnv`)."""
JOB_FEATURES: tuple[str, ...] = (
    "cpu_rel",
    "mem_rel",
    "gpu_rel",
    "vram_per_gpu_100gb",
    *(f"type_{_snake(w)}" for w in WORKLOAD_TYPES),
    "priority",
    "preemptible",
    "has_deadline",
    "deadline_slack_h",
    "duration_h",
    "wait_frac",
    # Its place in its workflow, as declared at the workflow's submission (digital_twin/workflows/task_features.py):
    "task",
    "critical_path_h",
    "children",
    "descendants_work_core_h",
    "workflow_weight",
)
"""Columns of ``obs["job"]`` and of each row of ``obs["queue"]``."""
CLOCK_FEATURES: tuple[str, ...] = ("hour_sin", "hour_cos", "progress", "queue_length")
"""Entries of ``obs["clock"]``."""

_N_FROM_TWIN = NODE_FEATURES.index("background_cpu")  # node columns 0.._N_FROM_TWIN-1: node_vector()'s blocks
_RUNNING = slice(NODE_FEATURES.index(f"running_{_snake(WORKLOAD_TYPES[0])}"), _N_FROM_TWIN)
_BACKGROUND = slice(_N_FROM_TWIN, NODE_FEATURES.index("utilization"))  # cpu, mem (Telemetry's order)
_UTILIZATION = NODE_FEATURES.index("utilization")
_QOS_RISK = NODE_FEATURES.index("qos_risk")
_GRID = slice(NODE_FEATURES.index(GRID_FEATURES[0]), NODE_FEATURES.index(GRID_FEATURES[-1]) + 1)
_ENERGY_COST = NODE_FEATURES.index("energy_cost_rel")
_STATIC = slice(NODE_FEATURES.index("price_rel"), len(NODE_FEATURES))  # fixed per fleet
_FIRST_TYPE = JOB_FEATURES.index(f"type_{_snake(WORKLOAD_TYPES[0])}")  # the workload one-hot starts here
_DEADLINE_SLACK = JOB_FEATURES.index("deadline_slack_h")
_WAIT = JOB_FEATURES.index("wait_frac")
_TIME_JOB_FEATURES = ("deadline_slack_h", "wait_frac")  # depend on the decision's time: filled each step
_STATIC_JOB_FEATURES = tuple(  # the rest, besides the workload one-hot: fixed per episode, raw / divisor, capped
    name for name in JOB_FEATURES if not name.startswith("type_") and name not in _TIME_JOB_FEATURES
)
_STATIC_JOB_COLUMNS = np.array([JOB_FEATURES.index(name) for name in _STATIC_JOB_FEATURES])
_SLACK_LIMIT_H = 24.0
COUNT_CAP = 1000.0
"""Counts (running jobs per type, queue length) and hours of duration are clipped here, so that
every box is bounded (Gymnasium's checker warns on infinite bounds)."""
VRAM_CAP = 10.0  # VRAM per GPU / 100 GB is clipped at 10 (1 TB)
_FLOAT32 = np.dtype(np.float32)  # a dtype instance: numpy skips converting the type on every hot-path call
_CLOCK_BOUNDS = {
    "hour_sin": (-1.0, 1.0),
    "hour_cos": (-1.0, 1.0),
    "progress": (0.0, 1.0),
    "queue_length": (0.0, COUNT_CAP),
}


class ObservationEncoder:
    """Builds observations for one fleet.

    Args:
        fleet: The nodes in action order.
        config: Window sizes.
        settings: The episode settings it reads: the horizon (the ``progress`` clock feature),
            the queue TTL (the job's ``wait_frac``) and the start hour (the hour-of-day clock).
    """

    def __init__(self, fleet: tuple[NodeSpec, ...], config: EnvConfig, settings: EpisodeSettings) -> None:
        self.n_nodes = len(fleet)
        self.config = config
        self._horizon_s = settings.horizon_s
        self._ttl_s = settings.queue_ttl_s
        self._scenario_start_s = settings.start_hour * 3600.0
        self._start_s = self._scenario_start_s
        self._cpu = np.array([n.cpu_cores for n in fleet])
        self._mem = np.array([n.mem_gb for n in fleet])
        self._gpus = np.array([n.gpu_count for n in fleet], dtype=np.float64)
        self._max_cpu = float(self._cpu.max())
        self._max_mem = float(self._mem.max())
        self._max_gpus = float(self._gpus.max())
        static = np.zeros((self.n_nodes, len(NODE_FEATURES)), dtype=np.float32)  # only _STATIC is filled
        max_price = max(n.price_per_hour_usd for n in fleet) or 1.0
        column = NODE_FEATURES.index
        for i, node in enumerate(fleet):
            static[i, column("price_rel")] = node.price_per_hour_usd / max_price
            static[i, column("is_spot")] = float(node.is_spot)
            static[i, column("interruption_prob")] = node.interruption_prob_per_hour
            static[i, column(f"arch_{_snake(node.arch)}")] = 1.0
            static[i, column("cpu_rel")] = node.cpu_cores / self._max_cpu
            static[i, column("gpu_rel")] = node.gpu_count / self._max_gpus if self._max_gpus else 0.0
        columns = NodeColumns(slice(0, _N_FROM_TWIN), _BACKGROUND, _UTILIZATION, _QOS_RISK, _GRID)
        self._nodes = NodeTable(fleet, static, columns, COUNT_CAP)
        # Divisor and cap of each of the _STATIC_JOB_FEATURES; the infinite divisor zeroes the GPU
        # column of a fleet without GPUs.
        divisor_and_cap = {
            "cpu_rel": (self._max_cpu, 1.0),
            "mem_rel": (self._max_mem, 1.0),
            "gpu_rel": (self._max_gpus or np.inf, 1.0),
            "vram_per_gpu_100gb": (100.0, VRAM_CAP),
            "priority": (100.0, np.inf),
            "preemptible": (1.0, np.inf),
            "has_deadline": (1.0, np.inf),
            "duration_h": (3600.0, COUNT_CAP),
            "task": (1.0, np.inf),
            "critical_path_h": (3600.0, COUNT_CAP),
            "children": (1.0, COUNT_CAP),
            "descendants_work_core_h": (3600.0, COUNT_CAP),
            "workflow_weight": (1.0, COUNT_CAP),
        }
        self._job_divisor = np.array([divisor_and_cap[name][0] for name in _STATIC_JOB_FEATURES])
        self._job_cap = np.array([divisor_and_cap[name][1] for name in _STATIC_JOB_FEATURES])
        self._queue_shape = (config.queue_window, len(JOB_FEATURES))
        self._telemetry: Telemetry | None = None  # the telemetry the history windows are read from
        self._history_tick = -1  # the tick of _history_now
        self._history_now = np.zeros((self.n_nodes, config.history_ticks), dtype=_FLOAT32)
        self._windows: np.ndarray | None = None  # (T, N, W) every tick's window, for a small telemetry
        self._out: dict[str, np.ndarray] = {}  # where encode_into writes (bind)
        self._written_tick = -1
        self._queue_written = True
        self._fleet = fleet
        self._grid_key: tuple[object, object] | None = None  # the (energy model, weights) of start_episode's _grid

    @classmethod
    def for_scenario(cls, scenario: Scenario, config: EnvConfig) -> ObservationEncoder:
        """The encoder of a scenario's fleet and settings."""
        return cls(scenario.fleet, config, scenario.settings)

    def space(self) -> spaces.Dict:
        """The observation space (shapes depend on the fleet size and the config only)."""
        n, k, w = self.n_nodes, self.config.queue_window, self.config.history_ticks
        node_high = np.ones((n, len(NODE_FEATURES)), dtype=np.float32)
        node_high[:, _UTILIZATION] = 2.0  # background (<= 100 %) + allocation (<= 100 %)
        node_high[:, _RUNNING] = COUNT_CAP
        node_high[:, _GRID] = CARBON_CAP
        node_high[:, _ENERGY_COST] = ENERGY_COST_CAP
        job_low = np.zeros(len(JOB_FEATURES), dtype=np.float32)
        job_low[_DEADLINE_SLACK] = -_SLACK_LIMIT_H
        job_high = np.ones(len(JOB_FEATURES), dtype=np.float32)
        job_high[JOB_FEATURES.index("vram_per_gpu_100gb")] = VRAM_CAP
        for name in ("duration_h", "critical_path_h", "children", "descendants_work_core_h", "workflow_weight"):
            job_high[JOB_FEATURES.index(name)] = COUNT_CAP
        job_high[_DEADLINE_SLACK] = _SLACK_LIMIT_H
        return spaces.Dict(
            {
                "nodes": spaces.Box(np.zeros_like(node_high), node_high, dtype=np.float32),
                "history": spaces.Box(0.0, 1.0, (n, w), dtype=np.float32),
                "job": spaces.Box(job_low, job_high, dtype=np.float32),
                "queue": spaces.Box(np.tile(job_low, (k, 1)), np.tile(job_high, (k, 1)), dtype=np.float32),
                "queue_mask": spaces.Box(0.0, 1.0, (k,), dtype=np.float32),
                "clock": spaces.Box(
                    np.array([_CLOCK_BOUNDS[name][0] for name in CLOCK_FEATURES], dtype=np.float32),
                    np.array([_CLOCK_BOUNDS[name][1] for name in CLOCK_FEATURES], dtype=np.float32),
                    dtype=np.float32,
                ),
                "action_mask": spaces.Box(0.0, 1.0, (n + 1,), dtype=np.float32),
            }
        )

    def start_episode(self, spec: TwinSpec, start_hour: float | None = None) -> None:
        """Precompute the episode's static job features (and the per-tick tables for a new telemetry).

        ``start_hour`` is the hour of day at time 0 for this episode's clock features (``None``:
        the scenario's ``start_hour``).
        """
        self._start_s = self._scenario_start_s if start_hour is None else start_hour * 3600.0
        jobs = spec.jobs
        self._job_static = self._static_job_table(jobs)
        self._job_rows = list(self._job_static)  # n_jobs x (len(JOB_FEATURES),): a list index, not a numpy view
        self._deadline_s = jobs.deadlines()
        self._arrival_s = jobs.arrival_s.tolist()
        self._latency_critical = (jobs.workload_index == WORKLOAD_TYPES.index("latency-critical")).tolist()
        grid_key = (spec.energy_model, spec.settings.weights)
        if self._grid_key is None or any(a is not b for a, b in zip(grid_key, self._grid_key, strict=True)):
            self._grid = GridColumns(spec.energy_model, self._fleet, spec.settings.weights)
            self._grid_key = grid_key
        if spec.telemetry is not self._telemetry:  # episodes of a scenario share it
            self._telemetry = spec.telemetry
            self._history_tick = -1
            self._windows = _all_windows(spec.telemetry, self.config.history_ticks)
        self._written_tick = -1  # (encode_into) write the history window at the episode's first step
        # A node never runs more jobs than the episode has: with few jobs the cap is a no-op.
        self._nodes.start_episode(spec.telemetry, self._grid, cap_counts=len(jobs) > COUNT_CAP)

    def encode(self, twin: DigitalTwin) -> dict[str, np.ndarray]:
        """The observation of the twin's current decision (fresh arrays; safe to keep)."""
        k = twin.tick_index
        now = twin.time_s
        current = twin.current_job_index
        if current >= 0:
            job = self._job_rows[current].copy()
            self._fill_time_features(job, current, now)
            n_behind = twin.queue_length() - 1
        else:  # the episode is over
            job = np.zeros(len(JOB_FEATURES), dtype=_FLOAT32)
            n_behind = twin.queue_length()
        queue = np.zeros(self._queue_shape, dtype=_FLOAT32)
        queue_mask = np.zeros(self.config.queue_window, dtype=_FLOAT32)
        if n_behind and self.config.queue_window:  # rare: most decisions have nobody queued behind
            self._fill_queue(queue, queue_mask, twin.pending_jobs(), current >= 0, now)
        hour = 2.0 * math.pi * ((self._start_s + now) % 86_400.0) / 86_400.0
        clock = np.array(  # in CLOCK_FEATURES order
            [math.sin(hour), math.cos(hour), min(now / self._horizon_s, 1.0), min(n_behind, COUNT_CAP)],
            dtype=_FLOAT32,
        )
        if self.n_nodes < VECTOR_FIT_NODES:  # converting the twin's list is cheapest
            fit = twin.feasible_mask()
            fit.append(True)  # defer
            mask = np.array(fit, dtype=_FLOAT32)
        else:
            mask = np.ones(self.n_nodes + 1, dtype=_FLOAT32)  # the last: defer
            mask[: self.n_nodes] = twin.fit_array()
        # a latency-critical job started on a spot node counts a QoS violation (qos_risk)
        nodes = self._nodes.read(twin, k, now, current >= 0 and self._latency_critical[current])
        return {
            "nodes": nodes,
            "history": self._history_at(k).copy(),
            "job": job,
            "queue": queue,
            "queue_mask": queue_mask,
            "clock": clock,
            "action_mask": mask,
        }

    def bind(self, out: dict[str, np.ndarray]) -> None:
        """Write :meth:`encode_into`'s observations into ``out`` from now on (one env's rows of a batch).

        ``out`` has an array per key of the space, each of its shape (C-contiguous views of a
        batch's buffers); ``obs["nodes"]`` is then kept there and updated in place.
        """
        self._out = out
        self._nodes.bind(out["nodes"])
        self._written_tick = -1  # the tick whose history window out["history"] holds
        self._queue_written = True  # out["queue"] may hold rows to clear

    def encode_into(self, twin: DigitalTwin) -> None:
        """The observation of the twin's current decision, written into the arrays given to :meth:`bind`.

        The same values as :meth:`encode`; only what changed since the last call is written.
        """
        out = self._out
        k = twin.tick_index
        now = twin.time_s
        current = twin.current_job_index
        job = out["job"]
        if current >= 0:
            job[:] = self._job_rows[current]
            self._fill_time_features(job, current, now)
            n_behind = twin.queue_length() - 1
        else:  # the episode is over
            job[:] = 0.0
            n_behind = twin.queue_length()
        if self._queue_written:
            out["queue"][:] = 0.0
            out["queue_mask"][:] = 0.0
            self._queue_written = False
        if n_behind and self.config.queue_window:
            self._fill_queue(out["queue"], out["queue_mask"], twin.pending_jobs(), current >= 0, now)
            self._queue_written = True
        hour = 2.0 * math.pi * ((self._start_s + now) % 86_400.0) / 86_400.0
        out["clock"][:] = (math.sin(hour), math.cos(hour), min(now / self._horizon_s, 1.0), min(n_behind, COUNT_CAP))
        mask = out["action_mask"]
        mask[: self.n_nodes] = twin.feasible_mask() if self.n_nodes < VECTOR_FIT_NODES else twin.fit_array()
        mask[self.n_nodes] = 1.0  # defer
        self._nodes.update(twin, k, now, current >= 0 and self._latency_critical[current])
        if k != self._written_tick:
            out["history"][...] = self._history_at(k)
            self._written_tick = k

    def _history_at(self, k: int) -> np.ndarray:
        """``(N, W)`` tick ``k``'s window, contiguous (made once per tick; the caller copies it)."""
        if self._windows is not None:
            return self._windows[k]
        if k != self._history_tick:
            assert self._telemetry is not None
            self._history_tick = k
            self._history_now = _window(self._telemetry, self.config.history_ticks, np.array([k]))[0]
        return self._history_now

    def _fill_queue(
        self, queue: np.ndarray, queue_mask: np.ndarray, pending: list[int], skip_current: bool, now_s: float
    ) -> None:
        """Write the jobs queued behind the current one (``pending`` starts with it when ``skip_current``)."""
        window = pending[1 : self.config.queue_window + 1] if skip_current else pending[: self.config.queue_window]
        queue[: len(window)] = self._job_static[window]
        for row, j in enumerate(window):
            self._fill_time_features(queue[row], j, now_s)
        queue_mask[: len(window)] = 1.0

    def _fill_time_features(self, row: np.ndarray, job: int, now_s: float) -> None:
        """Write the time-dependent ``deadline_slack_h`` and ``wait_frac`` of ``job`` into ``row``."""
        deadline = self._deadline_s[job]
        if deadline is not None:
            row[_DEADLINE_SLACK] = min(max((deadline - now_s) / 3600.0, -_SLACK_LIMIT_H), _SLACK_LIMIT_H)
        if self._ttl_s is not None:
            row[_WAIT] = min(max((now_s - self._arrival_s[job]) / self._ttl_s, 0.0), 1.0)

    def _static_job_table(self, jobs: Workload) -> np.ndarray:
        """``(n_jobs, len(JOB_FEATURES))`` float32: the features that do not change during the episode."""
        table = np.zeros((len(jobs), len(JOB_FEATURES)), dtype=np.float32)
        raw = {  # each _STATIC_JOB_FEATURES entry's workload column, in the unit its divisor expects
            "cpu_rel": jobs.cpu_cores,
            "mem_rel": jobs.mem_gb,
            "gpu_rel": jobs.gpu_count,
            "vram_per_gpu_100gb": jobs.gpu_vram_gb,
            "priority": jobs.priority,
            "preemptible": jobs.preemptible,
            "has_deadline": ~np.isnan(jobs.deadline_s),
            "duration_h": jobs.declared_or_true_s(),  # what the submitter declared: the true run time is hindsight
        }
        if jobs.has_workflows:  # else every job's workflow columns (the last of _STATIC_JOB_FEATURES) are 0
            tasks = jobs.task_features()
            raw.update(
                task=tasks.is_task,
                critical_path_h=np.where(tasks.is_task, tasks.critical_path_s, 0.0),
                children=tasks.children,
                descendants_work_core_h=tasks.descendants_work_core_s,
                workflow_weight=np.where(tasks.is_task, tasks.weight, 0.0),
            )
        k = len(raw)
        columns = np.array([raw[name] for name in _STATIC_JOB_FEATURES[:k]], dtype=np.float64).T  # (n_jobs, k)
        table[:, _STATIC_JOB_COLUMNS[:k]] = np.minimum(columns / self._job_divisor[:k], self._job_cap[:k])
        table[np.arange(len(jobs)), _FIRST_TYPE + jobs.workload_index] = 1.0
        return table


SMALL_TELEMETRY = 1 << 18
"""A telemetry whose windows (ticks x nodes x W) are at most this many values has them all made at once."""


def _all_windows(telemetry: Telemetry, w: int) -> np.ndarray | None:
    """``(T, N, W)`` float32, every tick's history window (``None`` for a large telemetry: made per tick)."""
    if telemetry.n_ticks * telemetry.n_nodes * w > SMALL_TELEMETRY:
        return None
    windows = _window(telemetry, w, np.arange(telemetry.n_ticks))
    windows.flags.writeable = False
    return windows


def _window(telemetry: Telemetry, w: int, ticks: np.ndarray) -> np.ndarray:
    """``(len(ticks), N, W)`` float32: background cpu / 100 of the W ticks up to each of ``ticks``.

    Oldest first, tick 0 repeated before the start: ``obs["history"]`` as the env's docstring says.
    """
    back = np.maximum(ticks[:, None] + np.arange(1 - w, 1)[None, :], 0)  # (K, W)
    cpu = (telemetry.background_pct[back, :, 0] / 100.0).astype(np.float32)  # (K, W, N)
    return np.ascontiguousarray(cpu.transpose(0, 2, 1))
