"""Trace readers on the real public traces and on small synthetic files with known answers."""

from __future__ import annotations

import csv
import gzip
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from digital_twin.errors import SpecError, TraceError
from digital_twin.telemetry import Telemetry
from digital_twin.traces import (
    ALIBABA_REFERENCE_MAPPING,
    BORG_REFERENCE_MAPPING,
    REFERENCE_P75_TARGET_PCT,
    OffsetScaleBias,
    TraceCleaning,
    TraceSeries,
    read_alibaba_dc_mean,
    read_alibaba_machine_usage,
    read_azure_vm_aggregate,
    read_borg_cell_mean,
    read_borg_instance_usage,
    read_generic,
    telemetry_from_aggregate,
    telemetry_from_machines,
)
from digital_twin.traces.resample import Samples, bin_samples
from tests.paths import TRACES

DC_MEAN = "alibaba-2018-machine-usage-dcavg-300s/machine_usage_days_1_to_8_grouped_300_seconds.csv"
RAW_SAMPLE = "alibaba-2018-machine-usage-sample/machine_usage_sample.csv"
AZURE = "azure-v2-vm-aggregated-300s/vm_cpu_readings_month_aggregated_cpu_mem.csv"


def real(relative: str) -> Path:
    """The real trace file, or skip the test when the traces are not on this machine."""
    path = TRACES / relative
    if not path.is_file():
        pytest.skip(f"{relative} not present (set ACO_ENV_TRACES to the traces folder)")
    return path


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def assert_valid(series: TraceSeries) -> None:
    """Shape, finiteness and range of a series (the contract of every reader)."""
    values = series.values_pct
    assert values.ndim == 3 and values.shape[2] == 2 and values.shape[1] == len(series.machine_ids)
    assert np.isfinite(values).all()
    assert values.min() >= 0.0 and values.max() <= 100.0


# --- real traces ---------------------------------------------------------------------------


REAL_READERS = {
    DC_MEAN: lambda p: read_alibaba_dc_mean(p),
    RAW_SAMPLE: lambda p: read_alibaba_machine_usage(p),
    AZURE: lambda p: read_azure_vm_aggregate(p),
}


@pytest.mark.parametrize("relative", list(REAL_READERS))
def test_real_traces__each_telemetry_file_reads_valid(relative: str) -> None:
    """Every telemetry file under the traces folder reads into a valid series (its load time is
    measured by `aco-env bench --only traces`, never asserted)."""
    path = real(relative)
    series = REAL_READERS[relative](path)
    assert_valid(series)
    assert str(path) in series.source


def test_alibaba_dc_mean__real_file_is_2243_ticks_of_300s() -> None:
    """The reference trace has 2,243 rows -> 2,243 ticks of 300 s within the README's ranges."""
    series = read_alibaba_dc_mean(real(DC_MEAN))
    assert series.values_pct.shape == (2243, 1, 2)
    assert series.tick_s == 300.0
    cpu, mem = series.values_pct[:, 0, 0], series.values_pct[:, 0, 1]
    assert cpu.min() >= 16.0 and cpu.max() <= 79.2  # README ranges, rounded
    assert mem.min() >= 78.2 and mem.max() <= 95.1
    assert series.filled is None


def test_alibaba_dc_mean__values_match_the_csv_rows() -> None:
    """Row i of the file is tick i, unchanged (checked against the stdlib csv module)."""
    path = real(DC_MEAN)
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    series = read_alibaba_dc_mean(path)
    for i in (0, 1000, 2242):
        assert series.values_pct[i, 0, 0] == float(rows[i]["cpu_util_percent"])
        assert series.values_pct[i, 0, 1] == float(rows[i]["mem_util_percent"])


def test_alibaba_machine_usage__real_sample_default_window_is_common_span() -> None:
    """All 8 machines read over the span they all cover (m_1932 starts at 386,640 s)."""
    series = read_alibaba_machine_usage(real(RAW_SAMPLE))
    assert series.machine_ids == tuple(f"m_{i}" for i in range(1932, 1940))
    assert series.start_s == 386_400.0
    assert series.start_s + series.span_s > 691_000.0


def test_alibaba_machine_usage__real_long_gap_raises_naming_machine_and_line() -> None:
    """A gap > 1 h in m_1934 raises with the default policy, naming the machine and the line."""
    with pytest.raises(TraceError, match=r"machine_usage_sample\.csv.*'m_1934'.*line 10618"):
        read_alibaba_machine_usage(real(RAW_SAMPLE), machines=["m_1934"])


def test_alibaba_machine_usage__real_gap_policy_holds_with_fill(caplog: pytest.LogCaptureFixture) -> None:
    """Observed ticks are the mean of their samples; filled ticks hold the previous value."""
    path = real(RAW_SAMPLE)
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        series = read_alibaba_machine_usage(path, machines=["m_1934"], on_long_gap="fill")
    assert [r.cleaning.rule for r in caplog.records] == ["long-gap"]
    assert "filled" in caplog.records[0].getMessage()
    raw = pd.read_csv(path, header=None, usecols=[0, 1, 2, 3], names=["m", "t", "cpu", "mem"])
    raw = raw[raw["m"] == "m_1934"]
    tick = ((raw["t"] - series.start_s) // series.tick_s).astype(int)
    expected = raw.groupby(tick)[["cpu", "mem"]].mean()
    expected = expected[(expected.index >= 0) & (expected.index < series.n_ticks)]
    values, filled = series.values_pct[:, 0], series.filled[:, 0]
    np.testing.assert_allclose(values[expected.index.to_numpy()], expected.to_numpy())
    assert not filled[expected.index.to_numpy()].any()
    held = np.flatnonzero(filled[1:, 0]) + 1
    assert held.size > 0
    np.testing.assert_array_equal(values[held], values[held - 1])


def test_azure__real_file_normalised_into_0_100_with_peak_90() -> None:
    """The sums become percent: 8,640 ticks, each column's maximum maps to 90 %."""
    series = read_azure_vm_aggregate(real(AZURE))
    assert series.values_pct.shape == (8640, 1, 2)
    np.testing.assert_allclose(series.values_pct.max(axis=(0, 1)), [90.0, 90.0])
    assert series.values_pct.min() > 50.0  # the load never drops near zero in this month


def test_azure__capacity_rule_divides_by_capacity() -> None:
    """With capacity given, pct = value / capacity x 100 (first row checked by hand)."""
    path = real(AZURE)
    series = read_azure_vm_aggregate(path, capacity=(1e7, 4e6))
    first = pd.read_csv(path, nrows=1).iloc[0]
    np.testing.assert_allclose(
        series.values_pct[0, 0], [first["cpu_usage"] / 1e5, first["assigned_mem"] / 4e4]
    )


def test_mapping__alibaba_reference_mapping_on_real_trace() -> None:
    """The 5-node reference mapping applies cpu*scale+bias and mem*0.5 at each node's offset."""
    series = read_alibaba_dc_mean(real(DC_MEAN))
    telemetry = telemetry_from_aggregate(series, ALIBABA_REFERENCE_MAPPING, horizon_s=86_400)
    assert isinstance(telemetry, Telemetry)
    assert telemetry.background_pct.shape == (288, 5, 2)
    raw = series.values_pct[:, 0]
    for node, params in enumerate(ALIBABA_REFERENCE_MAPPING.values()):
        k = 17
        cpu = min(100.0, raw[params.offset + k, 0] * params.scale + params.bias_pct)
        assert telemetry.background_pct[k, node, 0] == pytest.approx(cpu)
        assert telemetry.background_pct[k, node, 1] == pytest.approx(raw[params.offset + k, 1] / 2)


def test_mapping__real_trace_shorter_than_two_days_needs_wrap() -> None:
    """Two days from offset 1791 exceed 2,243 ticks: an error naming the file, or wrap=True."""
    series = read_alibaba_dc_mean(real(DC_MEAN))
    with pytest.raises(TraceError, match=r"grouped_300_seconds\.csv.*shorter than the horizon"):
        telemetry_from_aggregate(series, ALIBABA_REFERENCE_MAPPING, horizon_s=2 * 86_400)
    wrapped = telemetry_from_aggregate(series, ALIBABA_REFERENCE_MAPPING, 2 * 86_400, wrap=True)
    assert wrapped.background_pct[2243 - 1791, 4, 1] == pytest.approx(
        series.values_pct[0, 0, 1] / 2
    )


def test_generic__reads_real_dc_mean_like_the_dedicated_reader() -> None:
    """The generic reader with the Alibaba column names gives the same values."""
    path = real(DC_MEAN)
    generic = read_generic(path, cpu="cpu_util_percent", mem="mem_util_percent")
    np.testing.assert_array_equal(generic.values_pct, read_alibaba_dc_mean(path).values_pct)


# --- synthetic files: exact resampling -----------------------------------------------------


def test_alibaba_machine_usage__two_samples_in_one_tick_average(tmp_path: Path) -> None:
    """Samples at 0 s and 100 s fall in tick 0 of 300 s and are averaged per channel."""
    path = write(
        tmp_path / "mu.csv", "m_1,0,10,40,,,1,1,1\nm_1,100,20,60,,,1,1,1\nm_1,300,50,50,,,1,1,1\n"
    )
    series = read_alibaba_machine_usage(path)
    np.testing.assert_allclose(series.values_pct[:, 0], [[15.0, 50.0], [50.0, 50.0]])
    assert series.filled is None


def test_alibaba_machine_usage__short_gap_is_held(tmp_path: Path) -> None:
    """Two empty ticks (600 s <= max_gap_s) take the last observed value and are flagged."""
    path = write(tmp_path / "mu.csv", "m_1,0,10,40,,,,,\nm_1,900,30,20,,,,,\n")
    series = read_alibaba_machine_usage(path, max_gap_s=600)
    np.testing.assert_allclose(series.values_pct[:, 0, 0], [10, 10, 10, 30])
    assert series.filled[:, 0, 0].tolist() == [False, True, True, False]


def test_alibaba_machine_usage__rows_in_any_order_give_the_same_series(tmp_path: Path) -> None:
    """Rows grouped per machine, shuffled or sorted: the resampled series is identical."""
    rows = [
        f"m_{m},{t},{(m * 7 + t // 60) % 100},{50 + m},,,,,"
        for m in (1, 2)
        for t in range(0, 1800, 60)
    ]
    grouped = read_alibaba_machine_usage(write(tmp_path / "a.csv", "\n".join(rows) + "\n"))
    shuffled = [rows[i] for i in np.random.default_rng(0).permutation(len(rows))]
    mixed = read_alibaba_machine_usage(write(tmp_path / "b.csv", "\n".join(shuffled) + "\n"))
    np.testing.assert_array_equal(grouped.values_pct, mixed.values_pct)
    assert grouped.machine_ids == ("m_1", "m_2")


def test_alibaba_machine_usage__error_code_drops_only_its_channel(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """cpu = -1 is dropped from the cpu mean but the row's mem still counts."""
    path = write(tmp_path / "mu.csv", "m_1,0,-1,40,,,,,\nm_1,60,20,60,,,,,\n")
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        series = read_alibaba_machine_usage(path)
    assert caplog.records[0].cleaning == TraceCleaning(str(path), "error-code", 1)
    assert "1 of 2 rows" in caplog.text and "cpu_util_percent: 1" in caplog.text
    np.testing.assert_allclose(series.values_pct[0, 0], [20.0, 50.0])


def test_alibaba_machine_usage__explicit_window_backfills_leading_ticks(tmp_path: Path) -> None:
    """A window starting before the first sample takes the first value there (within max_gap_s)."""
    path = write(tmp_path / "mu.csv", "m_1,600,10,40,,,,,\nm_1,900,30,20,,,,,\n")
    series = read_alibaba_machine_usage(path, start_s=0, end_s=1200)
    np.testing.assert_allclose(series.values_pct[:, 0, 0], [10, 10, 10, 30])
    assert series.start_s == 0.0


def test_alibaba_machine_usage__gzip_file_reads_like_plain(tmp_path: Path) -> None:
    """A .gz copy reads to the same series as the plain file."""
    text = "m_1,0,10,40,,,,,\nm_1,300,30,20,,,,,\n"
    plain = read_alibaba_machine_usage(write(tmp_path / "mu.csv", text))
    packed = tmp_path / "mu.csv.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    np.testing.assert_array_equal(read_alibaba_machine_usage(packed).values_pct, plain.values_pct)


def test_alibaba_dc_mean__crlf_and_extra_columns_are_fine(tmp_path: Path) -> None:
    """Windows line endings and extra columns do not change the values."""
    path = tmp_path / "dc.csv"
    path.write_bytes(b"net_in,cpu_util_percent,mem_util_percent\r\n1,20.5,80\r\n2,30,90\r\n")
    np.testing.assert_allclose(read_alibaba_dc_mean(path).values_pct[:, 0], [[20.5, 80], [30, 90]])


def test_borg_instance_usage__resamples_by_time_and_converts_fractions(tmp_path: Path) -> None:
    """Rows at the same time average; microseconds are detected; fractions become percent."""
    path = write(
        tmp_path / "borg.csv",
        (
            "time,average_usage\n"
            "600000000,\"{'cpus': 0.1, 'memory': 0.2}\"\n"
            "600000000,\"{'cpus': 0.3, 'memory': 0.4}\"\n"
            '900000000,"{""cpus"": 0.5, ""memory"": 0.5}"\n'
        ),
    )
    series = read_borg_instance_usage(path)
    assert "time in us" in series.source
    assert series.start_s == 600.0
    np.testing.assert_allclose(series.values_pct[:, 0], [[20.0, 30.0], [50.0, 50.0]])


def test_borg_instance_usage__nanoseconds_detected_and_explicit_unit_agrees(tmp_path: Path) -> None:
    """Times above 62 days in us are read as ns, and time_unit='ns' gives the same series."""
    lines = [
        f"{t * 300 * 10**9 + 6 * 10**14},\"{{'cpus': 0.{t + 1}, 'memory': 0.1}}\"" for t in range(3)
    ]
    path = write(tmp_path / "borg.csv", "time,average_usage\n" + "\n".join(lines) + "\n")
    auto = read_borg_instance_usage(path)
    explicit = read_borg_instance_usage(path, time_unit="ns")
    np.testing.assert_array_equal(auto.values_pct, explicit.values_pct)
    np.testing.assert_allclose(auto.values_pct[:, 0, 0], [10, 20, 30])


def test_borg_instance_usage__memory_none_drops_only_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A row with memory None still counts for cpu, with a log record counting it."""
    path = write(
        tmp_path / "borg.csv",
        "time,average_usage\n"
        "0,\"{'cpus': 0.1, 'memory': None}\"\n"
        "1,\"{'cpus': 0.3, 'memory': 0.4}\"\n",
    )
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        series = read_borg_instance_usage(path)
    assert "memory (1)" in caplog.text
    np.testing.assert_allclose(series.values_pct[0, 0], [20.0, 40.0])


def test_borg_instance_usage__p75_scaling_hits_the_target(tmp_path: Path) -> None:
    """With the reference P75 option, each channel's 75th percentile becomes 40 % / 50 %."""
    lines = [
        f"{t * 300_000_000},\"{{'cpus': {0.01 * (t % 7 + 1)}, 'memory': {0.02 * (t % 5 + 1)}}}\""
        for t in range(40)
    ]
    path = write(tmp_path / "borg.csv", "time,average_usage\n" + "\n".join(lines) + "\n")
    series = read_borg_instance_usage(path, p75_target_pct=REFERENCE_P75_TARGET_PCT)
    np.testing.assert_allclose(np.percentile(series.values_pct[:, 0], 75, axis=0), [40.0, 50.0])
    assert_valid(series)


def test_borg_cell_mean__fractions_become_percent(tmp_path: Path) -> None:
    """Row i is tick i and fractions are multiplied by 100; column names are configurable."""
    path = write(tmp_path / "cell.csv", "c,m\n0.25,0.5\n0.125,1\n")
    series = read_borg_cell_mean(path, cpu_column="c", mem_column="m", tick_s=60)
    np.testing.assert_allclose(series.values_pct[:, 0], [[25.0, 50.0], [12.5, 100.0]])
    assert series.tick_s == 60


def test_generic__parquet_with_machine_and_ms_time(tmp_path: Path) -> None:
    """Parquet, millisecond time and a machine column resample per machine."""
    frame = pd.DataFrame(
        {
            "ts": [0, 30_000, 60_000, 0, 60_000],
            "host": ["a", "a", "a", "b", "b"],
            "c": [0.1, 0.3, 0.5, 0.9, 0.7],
            "m": [0.2, 0.2, 0.2, 0.4, 0.4],
        }
    )
    path = tmp_path / "trace.parquet"
    frame.to_parquet(path)
    series = read_generic(
        path,
        cpu="c",
        mem="m",
        time="ts",
        machine="host",
        units="fraction",
        time_unit="ms",
        tick_s=60,
    )
    assert series.machine_ids == ("a", "b")
    np.testing.assert_allclose(series.values_pct[:, :, 0], [[20.0, 90.0], [50.0, 70.0]])


def test_generic__row_per_tick_with_machine_column(tmp_path: Path) -> None:
    """Without a time column each machine's rows, in file order, are its ticks."""
    path = write(tmp_path / "g.csv", "host,cpu,mem\na,1,2\nb,3,4\na,5,6\nb,7,8\n")
    series = read_generic(path, cpu="cpu", mem="mem", machine="host", tick_s=10)
    np.testing.assert_allclose(series.values_pct[:, 1], [[3, 4], [7, 8]])


def test_series__resample_coarser_means_and_finer_holds() -> None:
    """Coarsening by 2 averages pairs (partial last block kept); refining by 3 repeats."""
    series = TraceSeries(np.arange(10.0).reshape(5, 1, 2), 60.0, ("x",), "test")
    coarse = series.resample(120.0)
    np.testing.assert_allclose(coarse.values_pct[:, 0, 0], [1.0, 5.0, 8.0])
    fine = series.resample(20.0)
    assert fine.n_ticks == 15 and fine.values_pct[4, 0, 0] == 2.0
    with pytest.raises(SpecError, match="whole multiple"):
        series.resample(90.0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3599), st.floats(0, 100), st.floats(0, 100)),
        min_size=1,
        max_size=60,
    )
)
def test_bin_samples__observed_ticks_are_means_and_gaps_hold(rows: list) -> None:
    """Property: each observed tick is its samples' mean; each empty tick equals the one before."""
    times = np.array([r[0] for r in rows], dtype=float)
    values = np.array([[r[1], r[2]] for r in rows])
    samples = Samples(
        times, np.zeros(len(rows), dtype=np.int64), values, np.arange(len(rows)), ("x",)
    )
    series = bin_samples(
        samples,
        tick_s=300.0,
        start_s=0.0,
        n_ticks=12,
        max_gap_s=1e9,
        on_long_gap="error",
        where=lambda r: f"row {r + 1}",
        source="prop",
    )
    tick = (times // 300).astype(int)
    out = series.values_pct[:, 0]
    for k in range(12):
        if (tick == k).any():
            np.testing.assert_allclose(out[k], values[tick == k].mean(axis=0), rtol=1e-9, atol=1e-9)
        elif k > 0 and (tick < k).any():
            np.testing.assert_array_equal(out[k], out[k - 1])
        else:
            np.testing.assert_allclose(out[k], values[tick == tick.min()].mean(axis=0), atol=1e-9)


# --- mapping -------------------------------------------------------------------------------


def _ramp(n_ticks: int = 10) -> TraceSeries:
    values = np.stack([np.arange(n_ticks) * 10.0, np.full(n_ticks, 80.0)], axis=-1)[:, None, :]
    return TraceSeries(values, 300.0, ("agg",), str(Path("ramp.csv")))


def test_mapping__offset_scale_bias_formula_and_clip() -> None:
    """cpu = clip(raw[offset+k]*scale+bias), mem = raw*mem_scale, one column per node."""
    telemetry = telemetry_from_aggregate(
        _ramp(),
        [OffsetScaleBias(0), OffsetScaleBias(2, 0.5, 5.0), OffsetScaleBias(1, 2.0, 0.0)],
        horizon_s=1500,
        mem_scale=0.5,
    )
    pct = telemetry.background_pct
    assert pct.shape == (5, 3, 2)
    np.testing.assert_allclose(pct[:, 1, 0], [15, 20, 25, 30, 35])
    np.testing.assert_allclose(pct[:, 2, 0], [20, 40, 60, 80, 100])  # 100 is clipped from 100
    np.testing.assert_allclose(pct[..., 1], 40.0)


def test_mapping__bias_clips_at_100_and_wrap_repeats() -> None:
    """A large bias clips to 100; wrap=True reads the series modulo its length."""
    telemetry = telemetry_from_aggregate(_ramp(), [OffsetScaleBias(8, 1.0, 95.0)], 1200, wrap=True)
    np.testing.assert_allclose(telemetry.background_pct[:, 0, 0], [100, 100, 95, 100])


def test_mapping__short_trace_error_names_file_and_needed_ticks() -> None:
    """offset + horizon beyond the trace raises a TraceError naming the file, unless wrap."""
    with pytest.raises(TraceError, match=r"ramp\.csv.*shorter than the horizon.*needs 12"):
        telemetry_from_aggregate(_ramp(), [OffsetScaleBias(7)], horizon_s=1500)


def test_mapping__one_machine_per_node(tmp_path: Path) -> None:
    """telemetry_from_machines keeps the values and the requested order (repeats allowed)."""
    path = write(
        tmp_path / "mu.csv", "a,0,10,20,,,,,\nb,0,30,40,,,,,\na,300,50,60,,,,,\nb,300,70,80,,,,,\n"
    )
    series = read_alibaba_machine_usage(path)
    telemetry = telemetry_from_machines(series, 600, machines=["b", "a", "b"])
    np.testing.assert_allclose(telemetry.background_pct[1], [[70, 80], [50, 60], [70, 80]])
    with pytest.raises(TraceError, match=r"mu\.csv.*\['zz'\] not in the trace"):
        telemetry_from_machines(series, 600, machines=["zz"])


def test_mapping__multi_machine_aggregate_needs_machine_argument(tmp_path: Path) -> None:
    """An aggregate mapping of a multi-machine series must say which machine to use."""
    path = write(tmp_path / "mu.csv", "a,0,10,20,,,,,\nb,0,30,40,,,,,\n")
    series = read_alibaba_machine_usage(path)
    with pytest.raises(TraceError, match=r"mu\.csv.*2 machines; pass machine="):
        telemetry_from_aggregate(series, BORG_REFERENCE_MAPPING, 300)
    telemetry = telemetry_from_aggregate(
        series, BORG_REFERENCE_MAPPING, 300, machine="b", wrap=True
    )
    assert telemetry.background_pct.shape == (1, 5, 2)


def test_mapping__bad_parameters_raise_spec_error() -> None:
    """A negative offset, a NaN scale or an empty node list is rejected up front."""
    with pytest.raises(SpecError, match="offset"):
        OffsetScaleBias(-1)
    with pytest.raises(SpecError, match="scale"):
        OffsetScaleBias(0, float("nan"))
    with pytest.raises(SpecError, match="non-empty"):
        telemetry_from_aggregate(_ramp(), [], 300)


def test_readers__no_log_record_on_clean_synthetic_input(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A clean file reads without any log record (they are reserved for cleaning)."""
    path = write(tmp_path / "mu.csv", "m_1,0,10,40,,,,,\nm_1,300,30,20,,,,,\n")
    with caplog.at_level(logging.DEBUG, logger="digital_twin"):
        read_alibaba_machine_usage(path)
    assert caplog.records == []
