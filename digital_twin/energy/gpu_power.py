"""GPU power: idle and busy watts per GPU, from the board power (TDP) of the fleets' GPU models.

No measured power-vs-utilisation curve of a GPU is at hand (the GPU analogue of SPECpower), so a
GPU is modelled by two numbers, both assumptions:

* **Busy = TDP.** A GPU running a job draws its board power (TDP, the board's power cap). This
  is an upper-end estimate: memory-bound or communication-bound work often draws well below
  the cap, so GPU energy computed with it is an upper bound rather than a typical value.
* **Idle = :data:`GPU_IDLE_FRACTION` x TDP** (0.15). Idle power is in neither public table the
  board powers come from. A fraction of TDP, rather than one fixed figure, keeps a small board
  small: a fixed 30-60 W would put a 70 W T4 at half its cap while doing nothing, yet is
  plausible for a 400 W A100. Idle readings of datacenter boards are often quoted at roughly a
  tenth to a fifth of their TDP (not measured here); 0.15 sits in the middle. Pass another
  fraction to :func:`gpu_power` or :meth:`GpuPower.from_tdp` to test the sensitivity.

Between the two, a node's GPU power is linear in the number of busy GPUs (fractional for GPU
sharing): see :meth:`GpuPower.node_watts`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple, overload

import numpy as np

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.traces._checks import require_finite, require_range
from digital_twin.traces._io import FLOAT, TEXT, check_file, read_csv

GPU_IDLE_FRACTION = 0.15
"""Assumed idle power of a GPU as a fraction of its TDP (see the module docstring)."""
DEFAULT_GPU_TDP_W = 200.0
"""Board power (W) assumed for a GPU model not in :data:`GPU_TDP_W`: Green Algorithms' ``Any`` row
(Lannelongue et al., Adv. Sci. 2021)."""
MAX_PLAUSIBLE_GPU_W = 5_000.0
"""Largest board power (W) :func:`read_gpu_board_power_csv` accepts; a larger one is likely milliwatts."""
MIN_PLAUSIBLE_GPU_W = 1.0
"""Smallest board power (W) :func:`read_gpu_board_power_csv` accepts; a smaller one is likely kilowatts."""

# Board power (TDP, W) of the GPU models the fleets name (digital_twin/fleet.py: the default
# fleet's "A100" and the Alibaba GPU 2023 codes of ALIBABA_GPU_MODELS; plus the names of Alibaba's
# 2026 spot-GPU node table and the families of the two public tables). The figures are those of
# the ML CO2 Impact calculator (mlco2/impact, data/gpus.csv, MIT; Lacoste et al.,
# arXiv:1910.09700) and Green Algorithms (data/latest/TDP_gpu.csv, CC BY 4.0; Lannelongue et
# al., Adv. Sci. 2021). Where the names or the sources disagree, the choice is said per row; it
# leans to the higher figure, like the busy = TDP assumption. The undisclosed codes G1, G2, G3
# (Alibaba 2023) and GPU-series-1/-2 (Alibaba 2026) have no public specs: they get the default.
_BOARDS: tuple[tuple[str, float, str], ...] = (
    # fleet name, TDP W, the source row and why
    ("A100", 400.0, "A100 SXM4 80 GB (mlco2). The fleets' A100s have 80 GB, which exists as SXM4 (400 W) or PCIe "
     "(300 W in Green Algorithms, 250 W in mlco2's 'A100 PCIe 40/80GB'); multi-GPU cloud nodes mostly carry SXM4"),
    ("A100-SXM4-80GB", 400.0, "A100 SXM4 80 GB (mlco2)"),
    ("A800-SXM4-80GB", 400.0, "no row in either source: the A800 is the export A100 SXM4 80 GB (the same board, "
     "NVLink capped), so the A100 SXM4 row"),
    ("V100M32", 300.0, "Tesla V100-SXM2-32GB (mlco2); the V100S PCIe 32 GB is 250 W (Green Algorithms), but the "
     "SXM2 row and Green Algorithms' plain Tesla V100 (300 W) agree"),
    ("V100M16", 300.0, "NVIDIA Tesla V100 (Green Algorithms). mlco2 gives PCIe-16GB 300 W and SXM2-16GB 250 W, a "
     "pair that looks swapped (the SXM2 part is the higher-power one); either way a 16 GB V100 is 250 or 300 W"),
    ("V100", 300.0, "NVIDIA Tesla V100 (Green Algorithms), as for V100M16"),
    ("V100S", 250.0, "NVIDIA Tesla V100S (Green Algorithms)"),
    ("A10", 150.0, "no A10 row in either source: the A10G (mlco2, 150 W) is AWS's variant of the A10"),
    ("A10G", 150.0, "A10G (mlco2)"),
    ("T4", 70.0, "T4 (mlco2) and NVIDIA Tesla T4 (Green Algorithms) agree"),
    ("P100", 250.0, "Tesla P100 (mlco2) and NVIDIA Tesla P100 PCIe (Green Algorithms) agree"),
    ("K80", 300.0, "Tesla K80 (mlco2) and NVIDIA Tesla K80 (Green Algorithms) agree"),
    ("H100", 700.0, "H100 SXM (mlco2)"),
    ("H100-NVL", 400.0, "H100 NVL (mlco2)"),
    ("H800", 700.0, "no row in either source: the H800 is the export H100 SXM (the same board, NVLink capped), "
     "so the H100 SXM row"),
    ("L40S", 350.0, "L40S (mlco2)"),
)
GPU_TDP_W = MappingProxyType({name: tdp for name, tdp, _ in _BOARDS})
"""GPU model name as the fleets write it (``"A100"``, ``"V100M16"``, ``"T4"``) -> board power (TDP), W."""
GPU_TDP_SOURCES = MappingProxyType({name: why for name, _, why in _BOARDS})
"""GPU model name -> the public table row its board power comes from, and why that row (for reports)."""


@dataclass(frozen=True)
class GpuPower:
    """Power of one GPU: ``idle_w`` when it runs nothing, ``busy_w`` when it runs a job.

    Attributes:
        idle_w: Watts of an idle, powered-on GPU (finite, >= 0).
        busy_w: Watts of a busy GPU (finite, >= ``idle_w``).
        model: The GPU model (``"A100"``), for messages.

    >>> power = GpuPower.from_tdp(400.0, "A100")
    >>> power.idle_w, power.busy_w
    (60.0, 400.0)

    Raises:
        SpecError: A negative or non-finite value, or ``busy_w < idle_w``.
    """

    idle_w: float
    busy_w: float
    model: str = "gpu"

    def __post_init__(self) -> None:
        idle, busy = self.idle_w, self.busy_w
        numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (idle, busy))
        if not (numbers and math.isfinite(idle) and math.isfinite(busy) and 0.0 <= idle <= busy):
            raise SpecError(
                f"GPU power {short_repr(self.model)}: needs finite watts with 0 <= idle_w <= busy_w, "
                f"got idle_w={short_repr(idle)}, busy_w={short_repr(busy)}"
            )
        object.__setattr__(self, "idle_w", float(idle))
        object.__setattr__(self, "busy_w", float(busy))

    @classmethod
    def from_tdp(cls, tdp_w: float, model: str = "gpu", idle_fraction: float = GPU_IDLE_FRACTION) -> GpuPower:
        """Busy at the board power ``tdp_w``, idle at ``idle_fraction * tdp_w`` (the module's assumptions).

        Raises:
            SpecError: ``idle_fraction`` outside [0, 1], or a bad ``tdp_w``.
        """
        if not (isinstance(idle_fraction, int | float) and 0.0 <= idle_fraction <= 1.0):
            raise SpecError(
                f"GPU power {short_repr(model)}: idle_fraction must be in [0, 1], got {short_repr(idle_fraction)}"
            )
        return cls(idle_fraction * tdp_w, tdp_w, model)

    @overload
    def node_watts(self, gpu_count: float, busy_gpus: float) -> float: ...

    @overload
    def node_watts(self, gpu_count: np.ndarray | float, busy_gpus: np.ndarray) -> np.ndarray: ...

    def node_watts(self, gpu_count: np.ndarray | float, busy_gpus: np.ndarray | float) -> np.ndarray | float:
        """Watts of ``gpu_count`` such GPUs of which ``busy_gpus`` are busy, vectorised.

        ``gpu_count * idle_w + busy * (busy_w - idle_w)``, with ``busy`` clipped to
        ``[0, gpu_count]``. A fractional ``busy_gpus`` (jobs sharing a GPU) adds its fraction of
        the idle-to-busy range: a linear assumption, like the rest.

        >>> GpuPower(60.0, 400.0).node_watts(4, 1.5)
        750.0
        """
        busy = np.clip(busy_gpus, 0.0, gpu_count)
        watts = np.multiply(gpu_count, self.idle_w) + busy * (self.busy_w - self.idle_w)
        scalar = np.ndim(gpu_count) == 0 and np.ndim(busy_gpus) == 0
        return float(watts) if scalar else np.asarray(watts, dtype=np.float64)


def gpu_tdp_w(model: str) -> float:
    """The board power (W) of ``model`` from :data:`GPU_TDP_W`, else :data:`DEFAULT_GPU_TDP_W`.

    Names are matched exactly, as the fleets write them (``"V100M16"``, not ``"Tesla V100"``).

    >>> gpu_tdp_w("T4"), gpu_tdp_w("G2")
    (70.0, 200.0)
    """
    return GPU_TDP_W.get(model, DEFAULT_GPU_TDP_W)


def uses_default_gpu_power(model: str) -> bool:
    """Whether ``model`` has no board power of its own and gets :data:`DEFAULT_GPU_TDP_W`.

    >>> uses_default_gpu_power("A100"), uses_default_gpu_power("GPU-series-1")
    (False, True)
    """
    return model not in GPU_TDP_W


def gpu_power(model: str, idle_fraction: float = GPU_IDLE_FRACTION) -> GpuPower:
    """The :class:`GpuPower` of ``model``: :func:`gpu_tdp_w` busy, ``idle_fraction`` of it idle.

    An unknown model gets the default board power; :func:`uses_default_gpu_power` says so.

    >>> gpu_power("T4")
    GpuPower(idle_w=10.5, busy_w=70.0, model='T4')
    """
    return GpuPower.from_tdp(gpu_tdp_w(model), model, idle_fraction)


class GpuBoardRow(NamedTuple):
    """One row of a GPU board-power table (see :func:`read_gpu_board_power_csv`)."""

    model: str
    """GPU model as the table names it (``"NVIDIA A100"``)."""
    form_factor: str | None
    """``"SXM4"``, ``"PCIe"``, ... or ``None`` when the row does not say."""
    memory_gb: float | None
    """GPU memory, GB, or ``None`` when the row does not say."""
    tdp_watts: float
    """Board power (TDP), W."""


def read_gpu_board_power_csv(path: str | Path) -> list[GpuBoardRow]:
    """Read a GPU board-power table: a header naming ``gpu_model,form_factor,memory_gb,tdp_watts``.

    Other columns (``source_row_name``, ``source_file``, ...) are read, so a ragged row is
    caught, but not returned. ``form_factor`` and ``memory_gb`` may be empty; ``gpu_model`` and
    ``tdp_watts`` may not. A model may appear on several rows (sources that disagree are kept
    side by side): choosing among them is the caller's decision.

    Returns:
        The rows in file order.

    Raises:
        TraceError: Naming the file, line and column: a missing file or column, an empty
            ``gpu_model``, an empty, non-numeric or NaN ``tdp_watts``, a board power outside
            [:data:`MIN_PLAUSIBLE_GPU_W`, :data:`MAX_PLAUSIBLE_GPU_W`] (kilowatts or
            milliwatts?), a negative, zero or infinite ``memory_gb``.
    """
    path = check_file(path)
    dtypes = {"gpu_model": TEXT, "form_factor": TEXT, "memory_gb": FLOAT, "tdp_watts": FLOAT}
    frame, where = read_csv(path, dtypes=dtypes)
    tdp = require_finite(frame, "tdp_watts", where)
    hint = " (board power in watts: kilowatts or milliwatts?)"
    require_range(frame, "tdp_watts", tdp, where, MIN_PLAUSIBLE_GPU_W, MAX_PLAUSIBLE_GPU_W, hint)
    memory = frame["memory_gb"].to_numpy(dtype=np.float64, na_value=np.nan)
    require_range(frame, "memory_gb", np.where(np.isinf(memory), -1.0, memory), where, 1e-9, math.inf, " (GB)")
    rows = []
    for i, (record, model, form) in enumerate(zip(frame.index, frame["gpu_model"], frame["form_factor"], strict=True)):
        if not isinstance(model, str) or not model.strip():
            raise TraceError(f"{path}: {where(int(record))}, column 'gpu_model': missing value")
        form_factor = form.strip() if isinstance(form, str) and form.strip() else None
        memory_gb = None if np.isnan(memory[i]) else float(memory[i])
        rows.append(GpuBoardRow(model.strip(), form_factor, memory_gb, float(tdp[i])))
    return rows
