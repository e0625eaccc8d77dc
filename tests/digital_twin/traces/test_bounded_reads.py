"""Readers bounded before they allocate: a decompression bomb, a 2 GB sparse file and a file over the byte cap are
refused with the file and the limit named, holding a bounded amount of memory (traced allocations), and the
scenario's own ``limits:`` reach its readers."""

from __future__ import annotations

import gzip
import io
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from digital_twin import TraceError
from digital_twin._files import read_at_most, read_bounded
from digital_twin.fleet_spot_gpu2026 import fleet_from_spot_gpu_2026_csv
from digital_twin.limits import Limits, applied_limits
from digital_twin.scenario import ScenarioError, load_scenario
from digital_twin.traces import read_alibaba_dc_mean
from digital_twin.workloads import load_azure_llm_requests

HEADER = "cpu_util_percent,mem_util_percent,net_in,net_out,disk_io_percent\n"
ROW = "16.126976521322472,87.13895543842837,34.88905126976521,27.657513176808816,4.08672735984667\n"
MEMORY_BOUND = 500 * 1024 * 1024
"""The acceptance bound on what refusing a bomb or a sparse file may allocate."""


def _bomb(path: Path, decompressed_gb: float) -> Path:
    """A gzip trace (a header, one row repeated) expanding to ``decompressed_gb`` GB: 1 MiB members, concatenated."""
    block = gzip.compress((ROW * (1024 * 1024 // len(ROW))).encode(), compresslevel=9)
    with path.open("wb") as file:
        file.write(gzip.compress(HEADER.encode()))
        for _ in range(int(decompressed_gb * 1024)):
            file.write(block)
    return path


def _traced_peak(call: object) -> tuple[BaseException | None, int]:
    """Run ``call()``; what it raised and the peak of Python's traced allocations meanwhile."""
    tracemalloc.start()
    try:
        call()  # type: ignore[operator]
    except BaseException as exc:  # returned to the test, which checks it
        return exc, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return None, 0


def test_read_alibaba_dc_mean__a_gzip_bomb_is_refused_by_the_ratio_with_bounded_memory(tmp_path: Path) -> None:
    """1.5 GB behind 5 MB of gzip: refused as it decompresses (limits.max_decompression_ratio), under 500 MB."""
    path = _bomb(tmp_path / "trace.csv.gz", 1.5)
    assert path.stat().st_size < 10_000_000
    error, peak = _traced_peak(lambda: read_alibaba_dc_mean(path))
    assert isinstance(error, TraceError), error
    assert str(error).startswith(f"{path}: the trace expands more than limits.max_decompression_ratio = 100 times")
    assert "raise it with `limits: {max_decompression_ratio: N}` in the scenario" in str(error)
    assert peak < MEMORY_BOUND, peak


def test_read_alibaba_dc_mean__a_2gb_sparse_file_is_refused_by_stat_alone(tmp_path: Path) -> None:
    """A 2 GB sparse trace: refused before it is opened (limits.max_trace_bytes), allocating next to nothing."""
    path = tmp_path / "sparse.csv"
    with path.open("wb") as file:
        file.truncate(2 * 1024**3)
    error, peak = _traced_peak(lambda: read_alibaba_dc_mean(path))
    assert isinstance(error, TraceError), error
    assert str(error) == (
        f"{path}: the trace has 2,147,483,648 bytes, above limits.max_trace_bytes = 1,073,741,824; "
        "raise it with `limits: {max_trace_bytes: N}` in the scenario"
    )
    assert peak < 10 * 1024 * 1024, peak


def test_readers__job_files_and_node_lists_are_bounded_too(tmp_path: Path) -> None:
    """The job readers and the node-list reader refuse a file over the cap by stat, naming it."""
    sparse = tmp_path / "big.csv"
    with sparse.open("wb") as file:
        file.truncate(2 * 1024**3)
    for read in (load_azure_llm_requests, fleet_from_spot_gpu_2026_csv):
        with pytest.raises(TraceError, match=r"big\.csv: .* above limits\.max_trace_bytes = 1,073,741,824"):
            read(sparse)


def test_read_bounded__a_compressed_file_over_the_cap_is_refused_while_it_decompresses(tmp_path: Path) -> None:
    """A gzip file of ordinary ratio (random numbers) that decompresses past max_trace_bytes is refused by it."""
    rows = "\n".join(",".join(f"{v:.6f}" for v in row) for row in np.random.default_rng(0).random((40_000, 5)) * 100)
    path = tmp_path / "trace.csv.gz"
    path.write_bytes(gzip.compress((HEADER + rows + "\n").encode()))
    assert len(read_alibaba_dc_mean(path).values_pct) == 40_000  # under the default cap: read
    with applied_limits(Limits(max_trace_bytes=1_000_000)), pytest.raises(TraceError) as raised:
        read_alibaba_dc_mean(path)
    assert "holds more than limits.max_trace_bytes = 1,000,000 bytes (decompressed)" in str(raised.value)


def test_scenario__its_limits_reach_the_trace_readers(tmp_path: Path) -> None:
    """`limits: {max_trace_bytes: 100}` in a scenario refuses its 2 KB trace, naming the file, the limit and the key."""
    trace = tmp_path / "trace.csv"
    trace.write_text(HEADER + ROW * 20)
    scenario = tmp_path / "small-cap.yaml"
    scenario.write_text(
        "schema_version: 2\nname: small-cap\nhorizon_s: 3600\nlimits: {max_trace_bytes: 100}\n"
        "fleet: {preset: default-5}\n"
        f"telemetry: {{reader: alibaba2018-mean, path: {trace},\n"
        "            mapping: {kind: offset-scale-bias, nodes: reference-alibaba}}\n"
        "workload: {source: synthetic}\n"
    )
    loaded = load_scenario(scenario)
    with pytest.raises(ScenarioError) as raised:
        loaded.telemetry  # noqa: B018 (read on first use)
    assert str(raised.value).startswith(f"{scenario}: {trace}: the trace has ")
    assert "above limits.max_trace_bytes = 100; raise it with `limits: {max_trace_bytes: N}`" in str(raised.value)


def test_read_bounded__a_small_file_allocates_about_its_size_not_the_cap(tmp_path: Path) -> None:
    """A 2 KB trace read under the 1 GiB cap: the read allocates kilobytes (``read(cap + 1)`` would take 1 GiB)."""
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + ROW * 20)
    data, peak = None, 0
    tracemalloc.start()
    try:
        data = read_bounded(path, "trace")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert data == path.read_bytes() and peak < 1024 * 1024, peak


def test_read_at_most__a_file_that_grew_since_stat_is_read_whole_or_refused_past_the_cap() -> None:
    """``expected`` is stat's size; bytes beyond it are still read, and never more than ``cap + 1``."""
    assert read_at_most(io.BytesIO(b"x" * 100), cap=1000, expected=100) == b"x" * 100
    assert read_at_most(io.BytesIO(b"x" * 5000), cap=10_000, expected=100) == b"x" * 5000  # it grew
    assert len(read_at_most(io.BytesIO(b"x" * 5000), cap=1000, expected=100)) == 1001  # grew past the cap
    assert len(read_at_most(io.BytesIO(b"x" * 5000), cap=1000, expected=9000)) == 1001  # shrank, still over
    assert read_at_most(io.BytesIO(b""), cap=1000, expected=0) == b""
