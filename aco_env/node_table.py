"""``obs["nodes"]``: the ``(N, F)`` float32 table of per-node features, kept up to date row by row.

The table lives across steps. Its static columns (price, spot, arch, size) are written once per
fleet; the telemetry columns (background cpu and memory, and the utilisation they start from)
when the tick changes; the columns read from the twin's node state (free resources, up, running
jobs, utilisation) only for the nodes that changed since the last step (the twin's
:class:`~digital_twin.sim.node_arrays.NodeArrays` says which); ``qos_risk`` when the current job's
class changes; the grid columns when their table changes. A step then costs the nodes that
changed plus one copy of the table, at any fleet size. Each value is what the affine formula of
the env's docstring gives, computed in float64 and rounded to float32 once. The telemetry
columns of a tick are read from the telemetry when it comes (a small telemetry's are made for
every tick at once).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from aco_env.grid_columns import GridColumns
from digital_twin import DigitalTwin, NodeSpec, Telemetry
from digital_twin.sim.node_arrays import FREE_CPU_M, N_COLUMNS, RUNNING, NodeArrays

_FEW = 8  # up to this many changed rows are written scalar by scalar; more with array operations
SMALL_TELEMETRY = 1 << 17
"""A telemetry of at most this many values (ticks x nodes x 2) has its columns made for every tick at once."""


class NodeColumns(NamedTuple):
    """Where the table's columns are (indices into the feature axis)."""

    twin: slice
    """The first 7 columns read from the twin, in :class:`NodeArrays` column order."""
    background: slice
    """Background cpu, background memory (fractions)."""
    utilization: int
    qos_risk: int
    grid: slice


SMALL_FLEET = 64
"""Fleets of at most this many nodes recompute the table whole at each step (:class:`_WholeTable`)."""
_SMALL_BASES = 1 << 20  # ... when their per-tick bases (ticks x nodes x features float64) are at most this many values


class _WholeTable:
    """A small fleet's table, recomputed whole at each step: a gather, two array operations and a cast.

    ``table[i, c] = min(base[k, i, c] + coef[i, c] * values[source[i, c]], cap[i, c])`` (``values``
    the twin's flat ``(7 * N,)`` node arrays): each column of the twin's a node's value times its
    scale, the utilisation ``1 + background`` less the free cpu fraction, everything else the
    per-tick base (telemetry, static and constant grid columns). On a few nodes this costs less
    than keeping rows.
    """

    def __init__(self, static: np.ndarray, scale: np.ndarray, columns: NodeColumns, count_cap: float) -> None:
        n, width = static.shape
        nodes = np.arange(n)
        source = np.zeros((n, width), dtype=np.intp)
        coef = np.zeros((n, width))
        for c in range(N_COLUMNS):
            source[:, columns.twin.start + c] = c * n + nodes
            coef[:, columns.twin.start + c] = scale[c]
        source[:, columns.utilization] = FREE_CPU_M * n + nodes
        coef[:, columns.utilization] = -scale[FREE_CPU_M]
        self._cap = np.full((n, width), np.inf)
        self._cap[:, columns.twin.start + RUNNING : columns.twin.stop] = count_cap
        self._source, self._coef, self._static, self._columns = source, coef, static, columns
        self._bases: list[np.ndarray] = []

    def start(self, telemetry: Telemetry, grid: GridColumns) -> bool:
        """The per-tick bases of ``telemetry`` and ``grid``; False when they would be too large (rows kept then)."""
        if telemetry.n_ticks * self._static.size > _SMALL_BASES:
            self._bases = []
            return False
        columns = self._columns
        ticks = _tick_columns(telemetry, np.arange(telemetry.n_ticks))  # (T, N, 3) float32
        base = np.repeat(self._static[None], telemetry.n_ticks, axis=0)  # (T, N, F) float32
        base[:, :, columns.background] = ticks[:, :, :2]
        base[:, :, columns.utilization] = ticks[:, :, 2]
        if not grid.varies:
            base[:, :, columns.grid] = grid.at(0.0)
        self._bases = list(base.astype(np.float64))  # float32 values held in float64: the sum is done there
        return True

    def read(self, values: np.ndarray, k: int, grid: np.ndarray | None, cap_counts: bool) -> np.ndarray:
        """``(N, F)`` float32 at tick ``k`` (``grid``: the grid columns now, when they vary)."""
        nodes = values.reshape(-1)[self._source]
        nodes *= self._coef
        nodes += self._bases[k]
        if cap_counts:
            np.minimum(nodes, self._cap, out=nodes)
        if grid is not None:
            nodes[:, self._columns.grid] = grid
        return nodes.astype(np.float32)


class NodeTable:
    """The node table of one fleet; :meth:`start_episode` then :meth:`read` at each step.

    Args:
        fleet: The nodes, in action order.
        static: ``(N, F)`` float32 with the static columns filled (the rest is overwritten).
        columns: Where things go.
        count_cap: Running counts above it are shown as it (when an episode can reach it).
    """

    def __init__(self, fleet: tuple[NodeSpec, ...], static: np.ndarray, columns: NodeColumns, count_cap: float):
        n = len(fleet)
        cpu = np.array([node.cpu_cores for node in fleet], dtype=np.float64)
        mem = np.array([node.mem_gb for node in fleet], dtype=np.float64)
        gpus = np.array([node.gpu_count for node in fleet], dtype=np.float64)
        self._table = static.copy()
        # Per node and twin column, what the column is multiplied by: free resources to fractions
        # of the node's (millicores, MiB, GPUs; 0 for the GPUs of a node without any), the flag
        # and the counts as they are.
        scale = np.ones((N_COLUMNS, n))
        scale[FREE_CPU_M] = 1.0 / (cpu * 1000.0)
        scale[FREE_CPU_M + 1] = 1.0 / (mem * 1024.0)
        scale[FREE_CPU_M + 2] = np.divide(1.0, gpus, out=np.zeros(n), where=gpus > 0)
        self._scale = scale  # (7, N), as the twin's arrays
        self._scale_lists = [scale[c].tolist() for c in range(3)]  # the fractions' scales, for few rows
        self._cells = self._table.reshape(-1).data.cast("B").cast("f")  # a few scalars written without numpy's overhead
        self._n_features = self._table.shape[1]
        self._is_spot = np.array([float(node.is_spot) for node in fleet], dtype=np.float32)
        assert columns.twin.stop - columns.twin.start == N_COLUMNS
        self._twin = columns.twin
        self._background = columns.background
        self._utilization = columns.utilization
        self._qos_risk = columns.qos_risk
        self._grid = columns.grid
        self._count_cap = count_cap
        self._cap_counts = False
        self._telemetry: Telemetry | None = None
        self._every_tick: np.ndarray | None = None  # (T, N, 3) _tick_columns of every tick, for a small telemetry
        self._util_now = np.zeros(n, dtype=np.float32)  # the tick's 1 + background cpu: the utilisation's start
        self._arrays: NodeArrays | None = None  # the twin arrays read last, and the update they were read at
        self._seen = 0
        self._tick = -1
        self._qos = False
        self._util_start: list[float] = []  # the current tick's (1 + background cpu) per node, for few rows
        self._grid_columns: GridColumns | None = None
        self._grid_table: np.ndarray | None = None
        self._whole = _WholeTable(static, scale, columns, count_cap) if n <= SMALL_FLEET else None
        self._whole_ready = False  # its bases are those of the episode's telemetry and grid
        self._whole_telemetry: Telemetry | None = None
        self._whole_grid: GridColumns | None = None

    def __getstate__(self) -> dict[str, object]:
        """Pickled without the views of its own table and the twin's arrays (the next read reads every row)."""
        state = dict(self.__dict__)
        state.update(_cells=None, _arrays=None, _seen=-1, _tick=-1)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._cells = self._table.reshape(-1).data.cast("B").cast("f")

    def start_episode(self, telemetry: Telemetry, grid: GridColumns, cap_counts: bool) -> None:
        """A new episode on ``telemetry`` and ``grid``; ``cap_counts``: whether running counts may exceed the cap."""
        if telemetry is not self._telemetry:
            self._telemetry = telemetry
            small = telemetry.background_pct.size <= SMALL_TELEMETRY
            self._every_tick = _tick_columns(telemetry, np.arange(telemetry.n_ticks)) if small else None
        if grid is not self._grid_columns:
            self._grid_columns = grid
            self._grid_table = None
            if not grid.varies:  # constant columns: written once
                self._table[:, self._grid] = grid.at(0.0)
        self._cap_counts = cap_counts
        self._arrays = None  # every row is read again
        self._tick = -1
        if self._whole is not None and (telemetry is not self._whole_telemetry or grid is not self._whole_grid):
            self._whole_ready = self._whole.start(telemetry, grid)
            self._whole_telemetry, self._whole_grid = telemetry, grid

    def bind(self, out: np.ndarray) -> None:
        """Keep the table in ``out`` from now on (``(N, F)`` float32, C-contiguous: one env's rows of a batch)."""
        out[...] = self._table
        self._table = out
        self._cells = out.reshape(-1).data.cast("B").cast("f")

    def read(self, twin: DigitalTwin, k: int, now_s: float, latency_critical: bool) -> np.ndarray:
        """A fresh ``(N, F)`` float32 table of the twin's state at tick ``k``, time ``now_s``.

        ``latency_critical``: whether the current job is (``qos_risk`` marks the spot nodes then).
        """
        if self._whole_ready:
            return self._read_whole(twin, k, now_s, latency_critical)
        self.update(twin, k, now_s, latency_critical)
        return self._table.copy()

    def _read_whole(self, twin: DigitalTwin, k: int, now_s: float, latency_critical: bool) -> np.ndarray:
        """:meth:`read` of a small fleet (:class:`_WholeTable`)."""
        assert self._whole is not None and self._grid_columns is not None
        grid = self._grid_columns.at(now_s) if self._grid_columns.varies else None
        nodes = self._whole.read(twin.node_arrays().values, k, grid, self._cap_counts)
        if latency_critical:
            nodes[:, self._qos_risk] = self._is_spot
        return nodes

    def update(self, twin: DigitalTwin, k: int, now_s: float, latency_critical: bool) -> None:
        """Bring the table up to date in place (:meth:`read` without the copy)."""
        if self._whole_ready:
            self._table[...] = self._read_whole(twin, k, now_s, latency_critical)
            return
        table = self._table
        arrays = twin.node_arrays()
        values = arrays.values
        if arrays is not self._arrays:
            self._arrays, self._seen = arrays, -1
        new_tick = k != self._tick
        if new_tick:
            assert self._telemetry is not None
            self._tick = k
            columns = self._every_tick[k] if self._every_tick is not None else _tick_columns(self._telemetry, [k])[0]
            table[:, self._background] = columns[:, :2]
            self._util_now = columns[:, 2]
            self._util_start = []
        every_row = self._seen < 0
        if every_row:
            self._write_rows(values, slice(None), k)
        elif arrays.updates != self._seen:
            last = arrays.last
            if arrays.updates == self._seen + 1 and last is not None and len(last) <= _FEW:
                self._write_few(arrays.cells, last, k)
            else:
                self._write_rows(values, np.flatnonzero(arrays.changed_at > self._seen), k)
        if new_tick and not every_row:  # every node's utilisation starts from the new background
            table[:, self._utilization] = self._util_now - values[FREE_CPU_M] * self._scale[FREE_CPU_M]
        self._seen = arrays.updates
        if latency_critical != self._qos:
            self._qos = latency_critical
            table[:, self._qos_risk] = self._is_spot if latency_critical else 0.0
        grid = self._grid_columns
        if grid is not None and grid.varies:
            now = grid.at(now_s)
            if now is not self._grid_table:
                self._grid_table = now
                table[:, self._grid] = now

    def _write_few(self, values: memoryview[float], rows: list[int], k: int) -> None:
        """:meth:`_write_rows` for a few rows, scalar by scalar (the same float64 arithmetic, rounded once)."""
        if not self._util_start:
            self._util_start = self._util_now.tolist()
        cells, width, twin, n = self._cells, self._n_features, self._twin.start, len(self._scale_lists[0])
        scale_cpu, scale_mem, scale_gpus = self._scale_lists
        cap = self._count_cap if self._cap_counts else float("inf")
        util_at = self._utilization
        for i in rows:
            out = i * width + twin
            free_cpu = values[i] * scale_cpu[i]
            cells[out] = free_cpu
            cells[out + 1] = values[n + i] * scale_mem[i]
            cells[out + 2] = values[2 * n + i] * scale_gpus[i]
            cells[out + 3] = values[3 * n + i]
            for c in range(RUNNING, N_COLUMNS):
                count = values[c * n + i]
                cells[out + c] = count if count < cap else cap
            cells[i * width + util_at] = self._util_start[i] - free_cpu

    def _write_rows(self, values: np.ndarray, rows: np.ndarray | slice, k: int) -> None:
        """The twin's columns and the utilisation of ``rows`` at tick ``k`` (all rows for a slice)."""
        twin = (values[:, rows] * self._scale[:, rows]).T  # (R, 7) float64
        if self._cap_counts:
            np.minimum(twin[:, RUNNING:], self._count_cap, out=twin[:, RUNNING:])
        self._table[rows, self._twin] = twin
        self._table[rows, self._utilization] = self._util_now[rows] - twin[:, FREE_CPU_M]


def _tick_columns(telemetry: Telemetry, ticks: np.ndarray | list[int]) -> np.ndarray:
    """``(len(ticks), N, 3)`` float32 per tick: background cpu and memory (fractions), and ``1 + cpu``.

    The last is where the utilisation starts (the free cpu fraction is taken from it), rounded
    to float32 as the background is.
    """
    background = (telemetry.background_pct[ticks] / 100.0).astype(np.float32)  # (K, N, 2)
    columns = np.empty((*background.shape[:2], 3), dtype=np.float32)
    columns[:, :, :2] = background
    columns[:, :, 2] = background[:, :, 0] + 1.0
    return columns
