"""Latency-critical inference jobs from the Azure LLM inference trace 2023 (Splitwise, ISCA'24).

The file (``AzureLLMInferenceTrace_conv.csv`` / ``_code.csv``) has one request per row:
``TIMESTAMP,ContextTokens,GeneratedTokens`` with timestamps like
``2023-11-16 18:15:46.6805900`` (7 fractional digits, 100 ns; no time zone). Python's
``datetime.strptime`` accepts at most 6; pandas parses all 9 nanosecond digits.

Each request becomes one latency-critical :class:`~digital_twin.jobs.JobSpec` (not
preemptible) holding ``gpu_count`` whole GPUs for its service time, given by
:class:`ServiceTimeModel`::

    duration_s = overhead_s + prefill_s_per_token * ContextTokens
                 + decode_s_per_token * GeneratedTokens

The default model is a 7B-parameter decoder in 16-bit precision served on one A100 (these
are estimates from first principles, not measurements; pass your own model to change them):

* prefill is compute-bound: ``2 x 7e9`` FLOP per token at about 40 % of the A100's
  312 TFLOP/s dense BF16 -> about 0.11 ms per context token
  (:data:`PREFILL_S_PER_TOKEN` = 1.2e-4 s);
* decode is memory-bound: each step streams the 14 GB of weights at about 2 TB/s (7 ms), and
  continuous batching with a dozen concurrent requests plus their KV-cache reads puts the
  per-request time between tokens near 20 ms, typical of vLLM-style serving
  (:data:`DECODE_S_PER_TOKEN` = 0.02 s);
* tokenisation, scheduling and network add :data:`OVERHEAD_S` = 0.05 s.

Declared durations: the trace declares none (``declared_duration_s`` is ``None``; the scenario's
estimate model fills it, :mod:`digital_twin.declared_durations`).

On the conversation trace (mean 1,155 context and 211 generated tokens) this gives a mean
service time of about 4.4 s; at its 5.5 requests/s that keeps about 24 GPUs busy, so
scenarios on a small fleet should thin the stream with ``sample_every``, ``rate_scale``
or ``limit``. Each request holds a whole GPU (the twin does not model batching of requests
onto one GPU); the default VRAM minimum, :data:`DEFAULT_VRAM_GB` = 24 GB, fits the 14 GB of
weights plus a KV cache.

Selection order: ``time_window`` (seconds since the file's earliest timestamp), then every
``sample_every``-th request, then ``limit``; then arrivals are shifted so the first kept
request arrives at ``start_s`` and gaps are divided by ``rate_scale``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.jobs import LATENCY_CRITICAL, JobSpec
from digital_twin.workloads import _common as c
from digital_twin.workloads import _csv

COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
PREFILL_S_PER_TOKEN = 1.2e-4
"""Seconds per prompt token (7B model, one A100, compute-bound prefill)."""
DECODE_S_PER_TOKEN = 0.02
"""Seconds per generated token (7B model, one A100, batched memory-bound decode)."""
OVERHEAD_S = 0.05
"""Fixed seconds per request (tokenisation, scheduling, network)."""
DEFAULT_VRAM_GB = 24.0
"""Minimum per-GPU VRAM in GB: 14 GB of 16-bit 7B weights plus KV cache."""
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
"""The trace's timestamp format (pandas accepts up to 9 digits for ``%f``)."""


@dataclass(frozen=True, slots=True)
class ServiceTimeModel:
    """Linear service time of one request, in seconds.

    Attributes:
        prefill_s_per_token: Seconds per context (prompt) token (>= 0).
        decode_s_per_token: Seconds per generated token (>= 0).
        overhead_s: Fixed seconds per request (> 0, so every duration is positive).
    """

    prefill_s_per_token: float = PREFILL_S_PER_TOKEN
    decode_s_per_token: float = DECODE_S_PER_TOKEN
    overhead_s: float = OVERHEAD_S

    def __post_init__(self) -> None:
        name = "ServiceTimeModel."
        c.check_positive(f"{name}prefill_s_per_token", self.prefill_s_per_token, allow_zero=True)
        c.check_positive(f"{name}decode_s_per_token", self.decode_s_per_token, allow_zero=True)
        c.check_positive(f"{name}overhead_s", self.overhead_s)

    def duration_s(self, context_tokens: np.ndarray, generated_tokens: np.ndarray) -> np.ndarray:
        """Service times for arrays of token counts.

        >>> ServiceTimeModel().duration_s(np.array([1000]), np.array([100])).round(3).tolist()
        [2.17]
        """
        return (
            self.overhead_s
            + self.prefill_s_per_token * np.asarray(context_tokens, dtype=np.float64)
            + self.decode_s_per_token * np.asarray(generated_tokens, dtype=np.float64)
        )


DEFAULT_SERVICE_TIME = ServiceTimeModel()
"""The default 7B-on-A100 service-time model."""


def load_azure_llm_requests(
    path: str | Path,
    *,
    service_time: ServiceTimeModel | Mapping[str, Any] = DEFAULT_SERVICE_TIME,
    gpu_count: int = 1,
    gpu_vram_gb: float = DEFAULT_VRAM_GB,
    cpu_cores: float = 2.0,
    mem_gb: float = 8.0,
    priority: int = 90,
    deadline_slack_s: float | None = None,
    sample_every: int = 1,
    rate_scale: float = 1.0,
    limit: int | None = None,
    time_window: c.TimeWindow | None = None,
    start_s: float = 0.0,
) -> tuple[JobSpec, ...]:
    """Read an Azure LLM inference trace into latency-critical GPU jobs sorted by arrival.

    Args:
        path: The CSV file (header ``TIMESTAMP,ContextTokens,GeneratedTokens``).
        service_time: Token counts -> duration (see the module docstring); a
            :class:`ServiceTimeModel` or a mapping of its fields.
        gpu_count: Whole GPUs per request (>= 1).
        gpu_vram_gb: Minimum VRAM per GPU in GB (>= 0).
        cpu_cores: CPU cores per request (> 0).
        mem_gb: Host memory per request in GB (> 0).
        priority: 1..100 (the reference's latency-critical jobs use 90-95).
        deadline_slack_s: When given, each job's ``deadline_s`` (latest start) is its arrival
            plus this many seconds (>= 0); ``None`` = no deadline.
        sample_every: Keep every k-th request of the (windowed) stream (>= 1).
        rate_scale: Arrival-rate multiplier (> 0): gaps between arrivals are divided by it,
            so 0.1 spreads the requests over 10x the time.
        limit: Keep at most this many requests, earliest first (``None`` = all).
        time_window: ``(t0, t1)`` in seconds since the file's earliest timestamp.
        start_s: Arrival of the first kept request in episode seconds (>= 0).

    Returns:
        Jobs named ``"llm-<k>"`` (k = file line - 2, i.e. 0 for the first request), sorted
        by arrival.

    Raises:
        TraceError: Missing/empty file, missing column, unparsable timestamp, missing or
            negative or fractional token count; the message names the file and line.
        SpecError: A bad argument.
    """
    c.check_selection(limit, time_window, start_s)
    model = c.coerce(ServiceTimeModel, service_time, "service_time")
    c.check_int("gpu_count", gpu_count, 1)
    c.check_int("sample_every", sample_every, 1)
    c.check_int("priority", priority, 1, 100)
    c.check_positive("gpu_vram_gb", gpu_vram_gb, allow_zero=True)
    c.check_positive("cpu_cores", cpu_cores)
    c.check_positive("mem_gb", mem_gb)
    c.check_positive("rate_scale", rate_scale)
    if deadline_slack_s is not None:
        c.check_positive("deadline_slack_s", deadline_slack_s, allow_zero=True)
    path = Path(path)
    frame = _csv.read_csv_strings(path, "LLM request trace")
    c.require_columns(frame, path, COLUMNS, "LLM request trace")
    seconds = _timestamps_s(path, frame)
    context = c.numeric_column(frame, path, "ContextTokens", integer=True, min_value=0)
    generated = c.numeric_column(frame, path, "GeneratedTokens", integer=True, min_value=0)
    duration = model.duration_s(context, generated)

    keep = np.ones(len(frame), dtype=bool)
    pos = c.select_positions(
        seconds, keep, time_window=time_window, limit=limit, every=sample_every
    )
    arrival = c.shift(seconds[pos], start_s, rate_scale)
    jobs: list[JobSpec] = []
    for p, t, run_s in zip(pos.tolist(), arrival.tolist(), duration[pos].tolist(), strict=True):
        try:
            job = JobSpec(
                job_id=f"llm-{frame.index[p]}", arrival_s=t, duration_s=run_s,
                workload=LATENCY_CRITICAL, cpu_cores=cpu_cores, mem_gb=mem_gb,
                gpu_count=gpu_count, gpu_vram_gb=gpu_vram_gb, priority=priority,
                preemptible=False,
                deadline_s=None if deadline_slack_s is None else t + deadline_slack_s,
            )
        except SpecError as exc:
            raise TraceError(f"{path}:{c.line_of(frame, p)}: {exc}") from None
        jobs.append(job)
    return c.finish(jobs, path)


def _timestamps_s(path: Path, frame: pd.DataFrame) -> np.ndarray:
    """Parse ``TIMESTAMP`` into float seconds since the earliest timestamp of the file."""
    c.require_values(frame, path, "TIMESTAMP")
    raw = frame["TIMESTAMP"]
    parsed = pd.to_datetime(raw.str.strip(), format=TIMESTAMP_FORMAT, errors="coerce")
    bad = parsed.isna().to_numpy()
    if bad.any():
        pos = int(np.argmax(bad))
        raise TraceError(
            f"{path}:{c.line_of(frame, pos)}: column 'TIMESTAMP': {short_repr(raw.iloc[pos])} is not a time "
            "like '2023-11-16 18:15:46.6805900'"
        )
    nanoseconds = parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    return (nanoseconds - nanoseconds.min()) / 1e9

