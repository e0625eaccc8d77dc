"""Malformed trace files: each gives a TraceError naming the file and the line/column, or a
documented cleaning with a log record that counts what was dropped."""

from __future__ import annotations

import gzip
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from digital_twin.errors import SpecError, TraceError
from digital_twin.traces import (
    TraceCleaning,
    read_alibaba_dc_mean,
    read_alibaba_machine_usage,
    read_azure_vm_aggregate,
    read_borg_cell_mean,
    read_borg_instance_usage,
    read_generic,
)

DC = read_alibaba_dc_mean
RAW = read_alibaba_machine_usage
AZ = read_azure_vm_aggregate
BORG = read_borg_instance_usage
CELL = read_borg_cell_mean
GEN = partial(read_generic, cpu="cpu", mem="mem", time="t")

DC_HEAD = "cpu_util_percent,mem_util_percent,net_in,net_out,disk_io_percent\n"
AZ_HEAD = "timestamp,cpu_usage,assigned_mem\n"
BORG_HEAD = "time,average_usage\n"


def usage(cpus: object, memory: object = 0.1) -> str:
    """A Borg ``average_usage`` cell, quoted for CSV."""
    return f"\"{{'cpus': {cpus}, 'memory': {memory}}}\""


def parquet(frame: pd.DataFrame) -> Callable[[Path], None]:
    return lambda path: frame.to_parquet(path)


def gzipped(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(gzip.compress(text.encode()))


@dataclass(frozen=True)
class Case:
    """One malformed file: what to write, which reader, and what the error must say."""

    name: str
    reader: Callable[..., Any]
    content: str | bytes | Callable[[Path], None] | None  # None = do not create the file
    match: str  # regex after the file name
    kwargs: dict[str, Any] = field(default_factory=dict)
    suffix: str = ".csv"

    def write(self, tmp_path: Path) -> Path:
        path = tmp_path / f"{self.name}{self.suffix}"
        if callable(self.content):
            self.content(path)
        elif isinstance(self.content, bytes):
            path.write_bytes(self.content)
        elif isinstance(self.content, str):
            path.write_text(self.content)
        return path


ERRORS = [
    # files that are not there or hold nothing
    Case("missing_file", DC, None, "file not found"),
    Case("empty_file", DC, "", r"empty file \(0 bytes\)"),
    Case("blank_first_line", DC, "\n\n", "line 1 is blank"),
    Case("header_only", DC, DC_HEAD, "no data rows"),
    Case("binary_garbage", DC, b"\xff\xfe\x00\x81garbage\n", "cannot read as UTF-8"),
    # header problems
    Case("no_header", DC, "20,80,30,30,5\n21,81,30,30,5\n", "line 1 is a data row"),
    Case(
        "renamed_column", DC, "cpu,mem_util_percent\n20,80\n", r"missing column.*'cpu_util_percent'"
    ),
    Case(
        "wrong_case_column",
        DC,
        "CPU_UTIL_PERCENT,mem_util_percent\n20,80\n",
        r"'cpu_util_percent' \(found 'CPU_UTIL_PERCENT': check case",
    ),
    Case(
        "semicolon_delimiter",
        DC,
        "cpu_util_percent;mem_util_percent\n20;80\n",
        r"line 1 has 1 comma-separated column\(s\) but contains ';': wrong delimiter",
    ),
    Case(
        "tab_delimiter",
        DC,
        "cpu_util_percent\tmem_util_percent\n20\t80\n",
        "contains tab: wrong delimiter",
    ),
    # bad values, each at a known line and column
    Case(
        "empty_value",
        DC,
        DC_HEAD + "20,80,1,1,1\n,81,1,1,1\n",
        r"line 3, column 'cpu_util_percent': missing value",
    ),
    Case(
        "nan_value",
        DC,
        DC_HEAD + "20,80,1,1,1\n21,NaN,1,1,1\n",
        r"line 3, column 'mem_util_percent': missing value",
    ),
    Case(
        "text_value",
        DC,
        DC_HEAD + "20,80,1,1,1\n20,80,1,1,1\n20,abc,1,1,1\n",
        r"line 4, column 'mem_util_percent': non-numeric value 'abc'",
    ),
    Case(
        "negative_pct",
        DC,
        DC_HEAD + "-3,80,1,1,1\n",
        r"line 2, column 'cpu_util_percent': value -3 is outside \[0, 100\]",
    ),
    Case(
        "pct_over_100",
        DC,
        DC_HEAD + "20,80,1,1,1\n100.5,80,1,1,1\n",
        r"line 3, column 'cpu_util_percent': value 100.5",
    ),
    Case(
        "infinite_value",
        DC,
        DC_HEAD + "inf,80,1,1,1\n",
        r"line 2, column 'cpu_util_percent': infinite value",
    ),
    Case(
        "extra_field",
        DC,
        "cpu_util_percent,mem_util_percent\n20,80\n20,80,7\n",
        "line 3 has 3 fields, expected 2",
    ),
    Case(
        "short_row",
        DC,
        "cpu_util_percent,mem_util_percent\n20,80\n20\n",
        r"line 3 has 1 field\(s\), expected 2 \(a short row",
    ),
    Case(
        "blank_line_counts",
        DC,
        DC_HEAD + "20,80,1,1,1\n\n20,x,1,1,1\n",
        r"line 4, column 'mem_util_percent': non-numeric",
    ),
    Case(
        "gzip_bad_value",
        DC,
        gzipped(DC_HEAD + "20,80,1,1,1\n20,180,1,1,1\n"),
        r"line 3, column 'mem_util_percent': value 180",
        suffix=".csv.gz",
    ),
    Case(
        "gzip_not_gzip",
        DC,
        "cpu_util_percent,mem_util_percent\n",
        r"cannot read \(BadGzipFile",
        suffix=".csv.gz",
    ),
    # Alibaba raw machine_usage (no header, 9 columns)
    Case(
        "raw_with_header",
        RAW,
        "machine_id,time_stamp,cpu_util_percent,mem_util_percent,mem_gps,mkpi,net_in,net_out,disk_io_percent\nm_1,0,1,2,,,,,\n",
        "line 1 looks like a header",
    ),
    Case(
        "raw_four_columns", RAW, "m_1,0,10,20\n", r"line 1 has 4 column\(s\), expected at least 9"
    ),
    Case("raw_semicolon", RAW, "m_1;0;10;20;;;;;\n", "wrong delimiter"),
    Case(
        "raw_cpu_150",
        RAW,
        "m_1,0,10,20,,,,,\nm_1,60,150,20,,,,,\n",
        r"line 2, column 'cpu_util_percent': value 150 is outside",
    ),
    Case(
        "raw_mem_negative",
        RAW,
        "m_1,0,10,-5,,,,,\n",
        r"line 1, column 'mem_util_percent': value -5 is outside",
    ),
    Case(
        "raw_empty_cpu",
        RAW,
        "m_1,0,10,20,,,,,\nm_1,60,,20,,,,,\n",
        r"line 2, column 'cpu_util_percent': missing value",
    ),
    Case(
        "raw_text_time",
        RAW,
        "m_1,0,10,20,,,,,\nm_1,later,10,20,,,,,\n",
        r"line 2, column 'time_stamp': non-numeric value 'later'",
    ),
    Case(
        "raw_negative_time",
        RAW,
        "m_1,-60,10,20,,,,,\n",
        r"line 1, column 'time_stamp': value -60 is outside",
    ),
    Case(
        "raw_missing_machine",
        RAW,
        "m_1,0,10,20,,,,,\n,60,10,20,,,,,\n",
        r"line 2, column 'machine_id': missing value",
    ),
    Case(
        "raw_duplicate_time",
        RAW,
        "m_1,0,10,20,,,,,\nm_2,0,10,20,,,,,\nm_1,0,11,20,,,,,\n",
        r"line 3, column 'time_stamp': duplicate timestamp \(t=0 s\) for machine 'm_1' "
        r"\(also on line 1\)",
    ),
    Case(
        "raw_ragged_row",
        RAW,
        "m_1,0,10,20,,,,,\nm_1,60,10,20,,,,,,\n",
        "line 2 has 10 fields, expected 9",
    ),
    Case(
        "raw_unknown_machine",
        RAW,
        "m_1,0,10,20,,,,,\n",
        r"\['m_9'\] not in column 'machine_id'",
        {"machines": ["m_9"]},
    ),
    Case(
        "raw_long_gap",
        RAW,
        "m_1,0,10,20,,,,,\nm_1,7200,10,20,,,,,\n",
        r"machine 'm_1', cpu: no sample from t=300 s to t=7200 s.*after the sample on line 1",
    ),
    # Azure VM aggregate (sums)
    Case(
        "azure_unsorted",
        AZ,
        AZ_HEAD + "0,5,5\n300,5,5\n0,5,5\n",
        r"line 4, column 'timestamp': timestamp 0 is earlier than 300 on line 3",
    ),
    Case(
        "azure_duplicate_time",
        AZ,
        AZ_HEAD + "0,5,5\n300,5,5\n300,6,5\n",
        r"line 4, column 'timestamp': duplicate timestamp 300 \(also on line 3\)",
    ),
    Case(
        "azure_negative_sum",
        AZ,
        AZ_HEAD + "0,5,5\n300,-5,5\n",
        r"line 3, column 'cpu_usage': value -5 is outside",
    ),
    Case(
        "azure_missing_column", AZ, "timestamp,cpu_usage\n0,5\n", r"missing column.*'assigned_mem'"
    ),
    Case(
        "azure_over_capacity",
        AZ,
        AZ_HEAD + "0,50,5\n300,150,5\n",
        r"line 3, column 'cpu_usage': value 150 is outside \[0, 100\]",
        {"capacity": (100.0, 100.0)},
    ),
    Case(
        "azure_all_zero", AZ, AZ_HEAD + "0,0,5\n300,0,5\n", "column 'cpu_usage' is zero everywhere"
    ),
    # Borg 2019
    Case(
        "borg_no_cpus_key",
        BORG,
        BORG_HEAD + "0,\"{'memory': 0.1}\"\n",
        r"line 2, column 'average_usage': no 'cpus' entry",
    ),
    Case(
        "borg_cpus_over_one",
        BORG,
        BORG_HEAD + f"0,{usage(0.1)}\n1,{usage(1.5)}\n",
        r"line 3, column 'average_usage\[cpus\]': value 1.5 is outside \[0, 1\]",
    ),
    Case(
        "borg_text_cpus",
        BORG,
        BORG_HEAD + f"0,{usage('lots')}\n",
        r"line 2, column 'average_usage': non-numeric 'cpus' value 'lots'",
    ),
    Case(
        "borg_empty_time",
        BORG,
        BORG_HEAD + f"0,{usage(0.1)}\n,{usage(0.1)}\n",
        r"line 3, column 'time': missing value",
    ),
    Case(
        "borg_missing_usage_column",
        BORG,
        "time,maximum_usage\n0,1\n",
        r"missing column.*'average_usage'",
    ),
    Case(
        "borg_multiline_field_counts",
        BORG,
        'time,dist,average_usage\n0,"[0.1\n0.2]",' + usage(0.1) + "\n1,x," + usage(2) + "\n",
        r"line 4, column 'average_usage\[cpus\]': value 2 is outside",
    ),
    Case(
        "cell_fraction_over_one",
        CELL,
        "cpu,memory\n0.5,0.5\n1.2,0.5\n",
        r"line 3, column 'cpu': value 1.2 is outside \[0, 1\]",
    ),
    # generic reader
    Case(
        "generic_unsorted_time",
        GEN,
        "t,cpu,mem\n0,1,1\n600,1,1\n300,1,1\n",
        r"line 4, column 't': timestamp 300 is earlier",
    ),
    Case(
        "generic_wrong_time_unit",
        GEN,
        "t,cpu,mem\n0,1,1\n2700000000000000,1,1\n",
        r"grid would have .* ticks x 1 machine\(s\).*check the time unit",
    ),
    Case("generic_missing_mapped_column", GEN, "time,cpu,mem\n0,1,1\n", r"missing column.*'t'"),
    Case(
        "generic_unequal_machines",
        partial(read_generic, cpu="cpu", mem="mem", machine="host"),
        "host,cpu,mem\na,1,1\nb,1,1\na,1,1\n",
        r"column 'host'.*same number of rows; 'b' has 1",
    ),
    Case(
        "parquet_missing_column",
        GEN,
        parquet(pd.DataFrame({"t": [0.0], "cpu": [1.0]})),
        r"missing column\(s\) \['mem'\]",
        suffix=".parquet",
    ),
    Case(
        "parquet_text_value",
        GEN,
        parquet(pd.DataFrame({"t": [0, 1], "cpu": ["1", "high"], "mem": [1.0, 2.0]})),
        r"row 2, column 'cpu': non-numeric value 'high'",
        suffix=".parquet",
    ),
    Case(
        "parquet_nan_value",
        GEN,
        parquet(pd.DataFrame({"t": [0, 1], "cpu": [1.0, np.nan], "mem": [1.0, 2.0]})),
        r"row 2, column 'cpu': missing value",
        suffix=".parquet",
    ),
    Case("not_parquet", GEN, "t,cpu,mem\n0,1,1\n", "cannot read as Parquet", suffix=".parquet"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c.name for c in ERRORS])
def test_readers__malformed_file_raises_trace_error_naming_file_and_place(
    case: Case, tmp_path: Path
) -> None:
    """Each malformed file gives a TraceError whose message names the file and the problem."""
    path = case.write(tmp_path)
    with pytest.raises(TraceError, match=re.escape(path.name) + ".*" + case.match):
        case.reader(path, **case.kwargs)


def test_readers__trace_error_is_a_value_error(tmp_path: Path) -> None:
    """TraceError subclasses ValueError, so generic callers can catch it."""
    with pytest.raises(ValueError, match="file not found"):
        read_alibaba_dc_mean(tmp_path / "nope.csv")


def test_readers__directory_is_rejected(tmp_path: Path) -> None:
    """A directory passed as a trace file is named as such."""
    with pytest.raises(TraceError, match="not a regular file"):
        read_alibaba_dc_mean(tmp_path)


CLEANINGS = [
    Case(
        "raw_error_codes",
        RAW,
        "m_1,0,-1,20,,,,,\nm_1,60,10,101,,,,,\nm_1,120,12,22,,,,,\n",
        r"2 of 3 rows hold the error code -1 or 101 \(cpu_util_percent: 1, mem_util_percent: 1\)",
    ),
    Case(
        "raw_long_gap_filled",
        RAW,
        "m_1,0,10,20,,,,,\nm_1,7200,30,40,,,,,\n",
        r"filled 2 gap\(s\) longer than max_gap_s=3600 s",
        {"on_long_gap": "fill"},
    ),
    Case(
        "borg_sentinel_times",
        BORG,
        BORG_HEAD
        + f"-1,{usage(0.5)}\n0,{usage(0.1)}\n9223372036854775807,{usage(0.5)}\n1,{usage(0.2)}\n",
        r"dropped 2 of 4 rows with a sentinel 'time'",
    ),
    Case(
        "borg_empty_usage",
        BORG,
        BORG_HEAD + f"0,{usage(0.1)}\n1,\n2,{usage(0.2)}\n",
        r"dropped 1 of 3 rows with an empty 'average_usage'",
    ),
    Case(
        "borg_memory_none",
        BORG,
        BORG_HEAD + f"0,{usage(0.1, None)}\n1,{usage(0.2)}\n",
        r"1 of 2 rows have no value for cpus \(0\) or memory \(1\)",
    ),
]


@pytest.mark.parametrize("case", CLEANINGS, ids=[c.name for c in CLEANINGS])
def test_readers__documented_cleaning_logs_once_with_counts(
    case: Case, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Documented cleaning logs one WARNING (file, counts, a TraceCleaning) and gives a valid series."""
    path = case.write(tmp_path)
    with caplog.at_level(logging.WARNING, logger="digital_twin"):
        series = case.reader(path, **case.kwargs)
    assert len(caplog.records) == 1
    record = caplog.records[0]
    assert record.name.startswith("digital_twin.traces")
    assert re.search(re.escape(path.name) + ".*" + case.match, record.getMessage())
    assert isinstance(record.cleaning, TraceCleaning) and record.cleaning.count > 0
    assert path.name in record.cleaning.path
    assert np.isfinite(series.values_pct).all()
    assert series.values_pct.min() >= 0.0 and series.values_pct.max() <= 100.0


OPTIONS = [
    (RAW, {"tick_s": 0}, "tick_s"),
    (RAW, {"on_long_gap": "ignore"}, "on_long_gap"),
    (RAW, {"max_gap_s": -1}, "max_gap_s"),
    (RAW, {"start_s": 600, "end_s": 0}, "start_s < end_s"),
    (RAW, {"machines": "m_1"}, "machines"),
    (RAW, {"machines": ["m_1", "m_1"]}, "twice"),
    (GEN, {"units": "permille"}, "units"),
    (GEN, {"time_unit": "h"}, "time_unit"),
    (BORG, {"time_unit": "ms"}, "time_unit"),
    (BORG, {"p75_target_pct": (40.0, 0.0)}, "p75_target_pct"),
    (AZ, {"capacity": (0.0, 1.0)}, "capacity"),
    (AZ, {"peak_pct": (120.0, 90.0)}, "peak_pct"),
]


@pytest.mark.parametrize(("reader", "kwargs", "name"), OPTIONS)
def test_readers__invalid_option_raises_spec_error(
    reader: Callable[..., Any], kwargs: dict[str, Any], name: str, tmp_path: Path
) -> None:
    """An invalid option is a SpecError naming the option, before or after reading the file."""
    path = tmp_path / "ok.csv"
    path.write_text("m_1,0,10,20,,,,,\n")
    with pytest.raises(SpecError, match=re.escape(name)):
        reader(path, **kwargs)


def test_read_csv__a_long_first_row_starting_with_text_is_named_as_a_long_row(tmp_path: Path) -> None:
    """pandas reads such a row as having an index column; the error is its length, not a ValueError."""
    path = tmp_path / "long.csv"
    path.write_text("machine,t,cpu,mem\nm1,0,5,5,extra\nm2,300,5,5\n")
    with pytest.raises(TraceError, match=r"long\.csv: line 2 has 5 field\(s\), expected 4 \(a long row"):
        read_generic(path, cpu="cpu", mem="mem", time="t", machine="machine")
