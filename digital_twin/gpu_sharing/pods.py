"""Pod lists of the Alibaba GPU 2023 trace at milli-GPU granularity, and FGD's target workload.

A pod list has the columns ``name,cpu_milli,memory_mib,num_gpu,gpu_milli`` and optionally
``gpu_spec`` (allowed GPU models separated by ``|``; empty = any). Times, QoS and phase are not
used: the capacity-fill experiments sample pods, they do not replay the trace.
"""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from digital_twin._files import read_bounded
from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.gpu_sharing.cluster import MILLI, Request
from digital_twin.gpu_sharing.fragmentation import TaskTypes

POD_LIST_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
"""The columns every pod list has (``gpu_spec`` is optional)."""
DEFAULT_POPULARITY = 1.0
"""Share of pods the target workload's most popular task types cover: every type (the paper's
popularity distribution). FGD's artifact keeps the types covering 95 % of pods (``0.95``), which
drops every multi-GPU type of the default pod list (docs/fragmentation.md)."""


@dataclass(frozen=True, eq=False)
class PodTable:
    """``P`` pods.

    Attributes:
        names: (P,) pod names.
        cpu_milli, mem_mib, num_gpu, gpu_milli: (P,) int64 requests (milli-cores, MiB, GPUs,
            milli-GPUs per GPU: 1..999 only for a shared-GPU pod, 1000 for whole GPUs, 0 without GPUs).
        gpu_spec: (P,) allowed GPU models, ``"A|B"`` (sorted), ``""`` for any.
    """

    names: tuple[str, ...]
    cpu_milli: np.ndarray
    mem_mib: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    gpu_spec: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.names)

    def gpu_demand_milli(self) -> np.ndarray:
        """(P,) int64 milli-GPUs each pod asks for (``num_gpu * gpu_milli``)."""
        return self.num_gpu * self.gpu_milli

    def model_mask(self, models: tuple[str, ...]) -> np.ndarray:
        """(P, len(models) + 1) bool: the models each pod may use.

        The last column (CPU-only nodes) is true iff the pod has no constraint.
        """
        masks = {spec: _spec_mask(spec, models) for spec in set(self.gpu_spec)}
        return np.array([masks[spec] for spec in self.gpu_spec], dtype=bool).reshape(len(self), len(models) + 1)

    def requests(self, models: tuple[str, ...]) -> list[Request]:
        """One :class:`Request` per pod, bound to ``models``."""
        mask = self.model_mask(models)
        return [
            Request(int(c), int(m), int(k), int(g) if k > 0 else 0, mask[i])
            for i, (c, m, k, g) in enumerate(
                zip(self.cpu_milli, self.mem_mib, self.num_gpu, self.gpu_milli, strict=True)
            )
        ]


def _spec_mask(spec: str, models: tuple[str, ...]) -> list[bool]:
    if not spec:
        return [True] * (len(models) + 1)
    allowed = set(spec.split("|"))
    return [m in allowed for m in models] + [False]


def read_pod_list(path: str | Path) -> PodTable:
    """Read a pod list.

    Raises:
        TraceError: Missing file or column, no rows, a non-integer or negative value, or an
            inconsistent GPU request (``gpu_milli`` outside 0..1000, 0 with GPUs or non-zero
            without, below 1000 with several GPUs); the message names the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such pod list file")
    data = read_bounded(path, "pod list")  # within limits.max_trace_bytes, decompressed by suffix
    try:
        frame = pd.read_csv(io.BytesIO(data), dtype={"name": str, "gpu_spec": str}, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise TraceError(f"{path}: cannot read the pod list as CSV ({exc})") from None
    missing = [c for c in POD_LIST_COLUMNS if c not in frame.columns]
    if missing:
        raise TraceError(f"{path}: missing column(s) {missing}; expected {','.join(POD_LIST_COLUMNS)}")
    if frame.empty:
        raise TraceError(f"{path}: the pod list has no rows")
    values = {}
    for column in POD_LIST_COLUMNS[1:]:
        numbers = pd.to_numeric(frame[column], errors="coerce")
        bad = ~np.isfinite(numbers.to_numpy(dtype=float)) | (numbers < 0) | (numbers % 1 != 0)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise TraceError(
                f"{path}:{row + 2}: {column} must be an integer >= 0, got {short_repr(frame[column].iloc[row])}"
            )
        values[column] = numbers.to_numpy(dtype=np.int64)
    num, milli = values["num_gpu"], values["gpu_milli"]
    bad = (milli > MILLI) | ((num > 0) & (milli == 0)) | ((num == 0) & (milli > 0)) | ((num > 1) & (milli < MILLI))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise TraceError(
            f"{path}:{row + 2}: inconsistent GPU request num_gpu={num[row]} gpu_milli={milli[row]} "
            "(gpu_milli must be 1..1000 with GPUs, 1000 with several, 0 without)"
        )
    specs = frame["gpu_spec"] if "gpu_spec" in frame.columns else pd.Series([""] * len(frame))
    return PodTable(
        names=tuple(frame["name"].astype(str)),
        cpu_milli=values["cpu_milli"],
        mem_mib=values["memory_mib"],
        num_gpu=num,
        gpu_milli=milli,
        gpu_spec=tuple("|".join(sorted(set(s.split("|")) - {""})) for s in specs.astype(str)),
    )


def target_workload(pods: PodTable, models: tuple[str, ...], popularity: float = DEFAULT_POPULARITY) -> TaskTypes:
    """The popularity distribution of ``pods``' task types ``(cpu, num_gpu, gpu_milli, gpu_spec)``.

    Types are ranked by count (ties by type, for determinism); the most popular ones that
    together cover at least ``popularity`` of the pods are kept and their shares renormalised
    to sum to 1 (``popularity=1`` keeps every type).

    Raises:
        SpecError: No pods, or ``popularity`` outside (0, 1].
    """
    if len(pods) == 0:
        raise SpecError("target_workload: the pod list is empty")
    if not 0.0 < popularity <= 1.0:
        raise SpecError(f"target_workload: popularity must be in (0, 1], got {popularity!r}")
    keys = zip(pods.cpu_milli.tolist(), pods.num_gpu.tolist(), pods.gpu_milli.tolist(), pods.gpu_spec, strict=True)
    ranked = sorted(Counter(keys).items(), key=lambda item: (-item[1], item[0]))
    counts = np.array([c for _, c in ranked], dtype=np.float64)
    kept = int(np.searchsorted(np.cumsum(counts), popularity * len(pods) - 1e-9)) + 1
    ranked = ranked[:kept]
    return TaskTypes(
        cpu_milli=np.array([k[0] for k, _ in ranked], dtype=np.int64),
        num_gpu=np.array([k[1] for k, _ in ranked], dtype=np.int64),
        gpu_milli=np.array([k[2] for k, _ in ranked], dtype=np.int64),
        allowed=np.array([_spec_mask(k[3], models) for k, _ in ranked], dtype=bool),
        prob=counts[:kept] / counts[:kept].sum(),
    )
