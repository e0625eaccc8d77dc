"""Bad inputs that tests/training/cli/test_fuzz_inputs.py found answered with a traceback-like or unclear message.

Each test pins one finding at the reader or check where the bad input is first seen: the error
is a :class:`~digital_twin.errors.SpecError` (or ``TraceError``) on one line that names the file
and, where it applies, the line, row or key.
"""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from digital_twin._files import not_a_file_reason
from digital_twin.errors import SpecError, TraceError
from digital_twin.fleet import NodeSpec, fleet_from_alibaba_gpu_csv
from digital_twin.jobs import JobSpec
from digital_twin.scenario import ScenarioError, load_scenario
from digital_twin.traces import read_alibaba_dc_mean, read_borg_cell_mean, read_generic, read_planetlab
from digital_twin.workloads import load_alibaba_gpu_pods
from digital_twin.workloads.alibaba_gpu2023 import POD_COLUMNS
from tests.hang_guard import HANG_GUARD_S
from tests.paths import ROOT


def _scenario_error(path: Path) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert "\n" not in message, message
    assert message.startswith(f"{path}: "), message
    return message


@pytest.mark.subprocess
def test_validate__a_binary_file_is_named_with_its_problem(tmp_path: Path) -> None:
    """`aco-env validate` on random bytes: INVALID naming the file and the bytes, not "unexpected ReaderError"."""
    path = tmp_path / "binary.yaml"
    path.write_bytes(bytes(range(128, 256)) * 8)
    result = subprocess.run(
        [sys.executable, "-m", "training.cli.main", "validate", str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=HANG_GUARD_S,
    )
    assert result.returncode == 1, result
    assert "error" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert result.stdout.splitlines() == [
        f"INVALID {path}: not UTF-8 text: byte 0x80 at line 1 (byte offset 0) cannot be decoded "
        "(invalid start byte); a scenario file is YAML text: save it as UTF-8"
    ]


@pytest.mark.parametrize(("data", "fragments"), [
    (b"name: caf\xe9\n", ["not UTF-8 text", "byte 0xe9 at line 1"]),  # Latin-1
    ("name: x\n".encode("utf-32"), ["control character U+0000 at line 1", "UTF-32"]),
    (b"name: x\nseed: \x00\n", ["control character U+0000 at line 2"]),
    (b"\xff\xfen\x00a\x00m", ["not UTF-16-LE text", "truncated data"]),  # UTF-16, cut mid-character
])
def test_scenario_file__bytes_that_are_not_yaml_text_name_the_encoding_and_line(
    tmp_path: Path, data: bytes, fragments: list[str]
) -> None:
    """Latin-1, UTF-32, a NUL byte, truncated UTF-16: one line naming the file, the byte or character and the line."""
    path = tmp_path / "s.yaml"
    path.write_bytes(data)
    message = _scenario_error(path)
    for fragment in fragments:
        assert fragment in message


def test_scenario_file__utf16_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """UTF-16 with a BOM is YAML text (PyYAML reads it): the keys are checked as usual."""
    path = tmp_path / "s.yaml"
    path.write_bytes("schema_version: 2\n".encode("utf-16"))
    assert "horizon_s: is required" in _scenario_error(path)


def test_scenario_file__a_syntax_error_is_one_line_with_line_and_column(tmp_path: Path) -> None:
    """PyYAML's multi-line message (with a snippet and carets) becomes one line: where, what, and the context."""
    path = tmp_path / "s.yaml"
    path.write_text("a: [1, 2\nb: 3\n")
    assert _scenario_error(path) == (
        f"{path}: not valid YAML: line 2, column 2: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence at line 1, column 4)"
    )


@pytest.mark.parametrize(("text", "shown"), [
    ("seed: !!timestamp x\n", "cannot read 'x' as timestamp"),  # PyYAML: AttributeError
    ("seed: 2001-13-45\n", "cannot read '2001-13-45' as timestamp"),  # implicit timestamp: ValueError
    ("seed: !!bool maybe\n", "cannot read 'maybe' as bool"),  # KeyError
    ("seed: !!int ''\n", "cannot read '' as int"),  # IndexError
    ("seed: !!int abc\n", "cannot read 'abc' as int"),  # ValueError
    ("seed: !!float .\n", "cannot read '.' as float"),
    ("seed: " + "9" * 5000 + "\n", "as int"),  # beyond Python's int-from-text digit limit
])
def test_scenario_file__a_scalar_yaml_cannot_convert_is_located(tmp_path: Path, text: str, shown: str) -> None:
    """A tagged or implicitly typed scalar PyYAML's constructor fails on: its line and column, not a crash."""
    path = tmp_path / "s.yaml"
    path.write_text("schema_version: 2\n" + text)
    message = _scenario_error(path)
    assert "not valid YAML: line 2, column 7: " in message
    assert shown in message


def test_scenario_file__nesting_beyond_the_depth_limit_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5,000 nested brackets took PyYAML's quadratic scanner seconds: refused after composing ~100 of them."""
    from digital_twin.scenario import yaml_file

    composed = []
    compose = yaml_file._Bounds.compose_node

    def counted(self: Any, parent: Any, index: object) -> Any:
        composed.append(1)
        return compose(self, parent, index)

    monkeypatch.setattr(yaml_file._Bounds, "compose_node", counted)
    path = tmp_path / "s.yaml"
    path.write_text("schema_version: 2\nname: " + "[" * 5000 + "]" * 5000 + "\n")
    message = _scenario_error(path)
    assert "nested too deeply to read: lists and mappings more than 100 deep" in message
    assert len(composed) <= 2 * (yaml_file.MAX_DEPTH + 5)  # the work done: each loader stops at depth 101


NODE_LIST = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,2,T4\nn1,32000,131072,0,\n"


def test_node_list__bytes_that_are_not_utf8_name_the_file_byte_and_line(tmp_path: Path) -> None:
    """A gzip-compressed (or Latin-1) node list was an unexpected UnicodeDecodeError: now the file, byte and line."""
    path = tmp_path / "nodes.csv"
    path.write_bytes(gzip.compress(NODE_LIST.encode()))
    with pytest.raises(TraceError, match=r"nodes\.csv: the node list is not UTF-8 text: byte 0x8b on line 1"):
        fleet_from_alibaba_gpu_csv(path)
    path.write_bytes(NODE_LIST.encode() + "n2,1000,1024,0,caf\u00e9\n".encode("latin-1"))
    with pytest.raises(TraceError, match=r"nodes\.csv: the node list is not UTF-8 text: byte 0xe9 on line 4"):
        fleet_from_alibaba_gpu_csv(path)


def test_node_list__a_byte_order_mark_is_not_part_of_the_first_column(tmp_path: Path) -> None:
    """A UTF-8 BOM before the header is dropped (it made the first column '\\ufeffsn', a missing column)."""
    path = tmp_path / "nodes.csv"
    path.write_bytes(b"\xef\xbb\xbf" + NODE_LIST.encode())
    assert [n.node_id for n in fleet_from_alibaba_gpu_csv(path)] == ["n0", "n1"]


def test_node_list__a_repeated_sn_names_the_file_and_both_lines(tmp_path: Path) -> None:
    """A repeated row said "duplicate node_id 'n0' in fleet", naming neither the node list nor a line."""
    path = tmp_path / "nodes.csv"
    path.write_text(NODE_LIST + "n0,1000,1024,0,\n")
    with pytest.raises(TraceError, match=r"nodes\.csv:4: duplicate sn 'n0' \(first on line 2\)"):
        fleet_from_alibaba_gpu_csv(path)


def _with_fleet(tmp_path: Path, fleet: str, telemetry: str = "{reader: constant, cpu_pct: 5, mem_pct: 5}") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        f"schema_version: 2\nname: s\nhorizon_s: 3600\nfleet: {fleet}\ntelemetry: {telemetry}\n"
        "workload: {source: jobs, jobs: [{job_id: a, arrival_s: 0, duration_s: 60, workload: batch, "
        "cpu_cores: 1, mem_gb: 1}]}\n"
    )
    return path


NODE = "{node_id: a, arch: x86_64, instance: on-demand, cpu_cores: 4, mem_gb: 8, price_per_hour_usd: 0.1}"


@pytest.mark.parametrize(("fleet", "expected"), [
    # A number where a node belongs: was "'float' object is not iterable", naming no key.
    ("{nodes: [1.5]}", "fleet.nodes[0]: expected a mapping of node fields, got float 1.5"),
    # A string: its characters were listed as unknown keys.
    ("{nodes: ['node a']}", "fleet.nodes[0]: expected a mapping of node fields, got str 'node a'"),
    # A missing field: was "NodeSpec.__init__() missing 1 required positional argument: 'mem_gb'".
    ("{nodes: [{node_id: a, arch: x86_64, instance: spot, cpu_cores: 4, price_per_hour_usd: 0}]}",
     "fleet.nodes[0]: missing key(s) ['mem_gb']"),
    # A number as a key next to strings: sorting the unknown keys raised a TypeError.
    ("{nodes: [{node_id: a, 1: 2, zz: 3}]}", "fleet.nodes[0]: unknown key(s) [1, 'zz']"),
    # The same node twice: was "duplicate node_id 'a' in fleet", naming no item.
    (f"{{nodes: [{NODE}, {NODE}]}}", "fleet.nodes[1]: duplicate node_id 'a' (also fleet.nodes[0])"),
    # A generated type's error named its path twice ("fleet.generate.types: fleet.generate.types.t: ...").
    ("{generate: {types: {t: {arch: x86_64}}, counts: {t: 1}}}",
     "fleet.generate.types.t: missing key(s) ['instance', 'cpu_cores', 'mem_gb', 'price_per_hour_usd']"),
])
def test_scenario_fleet__bad_node_items_name_the_item_and_the_problem(
    tmp_path: Path, fleet: str, expected: str
) -> None:
    path = _with_fleet(tmp_path, fleet)
    assert _scenario_error(path).startswith(f"{path}: {expected}")


@pytest.mark.parametrize(("job", "expected"), [
    ("{job_id: a, arrival_s: 0, workload: batch, cpu_cores: 1, mem_gb: 1}",
     "workload.jobs[0]: missing key(s) ['duration_s']"),
    ("{job_id: a, 1: 2, zz: 3}", "workload.jobs[0]: unknown key(s) [1, 'zz']; known: ['allowed_gpu_models', "),
])
def test_scenario_jobs__bad_job_items_name_the_item_and_the_problem(tmp_path: Path, job: str, expected: str) -> None:
    """An inline job lacking a field (was JobSpec.__init__()'s text), or with a number as a key (a TypeError)."""
    path = tmp_path / "s.yaml"
    path.write_text(
        f"schema_version: 2\nname: s\nhorizon_s: 3600\nfleet: {{nodes: [{NODE}]}}\n"
        f"telemetry: {{reader: constant, cpu_pct: 5, mem_pct: 5}}\nworkload: {{source: jobs, jobs: [{job}]}}\n"
    )
    assert _scenario_error(path).startswith(f"{path}: {expected}")


def test_scenario_telemetry__a_machine_id_that_is_not_a_string_is_named(tmp_path: Path) -> None:
    """mapping.machines with a mapping in it was an unexpected TypeError (unhashable type: 'dict')."""
    trace = tmp_path / "trace.csv"
    trace.write_text("time,machine,cpu,mem\n" + "".join(f"{t},m1,10,20\n{t},m2,10,20\n" for t in range(0, 7200, 300)))
    telemetry = (
        "{reader: generic, path: trace.csv, options: {cpu: cpu, mem: mem, time: time, machine: machine}, "
        "mapping: {kind: per-machine, machines: [m1, {m2: 1}]}}"
    )
    path = _with_fleet(tmp_path, f"{{nodes: [{NODE}]}}", telemetry)
    assert _scenario_error(path) == (
        f"{path}: telemetry.mapping.machines[1]: must be a machine id (a string), got {{'m2': 1}}"
    )


@pytest.mark.parametrize("cpu_pct", ["[5, /dev/zero]", "[5, true]", "[5, [5]]", "[5]"])
def test_scenario_telemetry__a_constant_per_node_value_that_is_not_a_number_is_named(
    tmp_path: Path, cpu_pct: str
) -> None:
    """A string in ``cpu_pct``'s per-node list was an unexpected ValueError (could not convert string to float)."""
    path = _with_fleet(tmp_path, f"{{nodes: [{NODE}, {NODE.replace('node_id: a', 'node_id: b')}]}}",
                       f"{{reader: constant, cpu_pct: {cpu_pct}, mem_pct: 5}}")
    scenario = load_scenario(path)
    with pytest.raises(ScenarioError) as caught:
        scenario.telemetry  # noqa: B018  (built on first use)
    message = str(caught.value)
    assert message.startswith(f"{path}: telemetry: cpu_pct must be one number or a list of 2 (one per node), got")


def test_scenario_paths__a_nul_character_is_refused_naming_the_key(tmp_path: Path) -> None:
    """A data path holding NUL was an unexpected ValueError (embedded null byte) from stat."""
    path = _with_fleet(tmp_path, f"{{nodes: [{NODE}]}}", '{reader: generic, path: "a\\0b.csv", mapping: {kind: x}}')
    assert _scenario_error(path) == f"{path}: telemetry.path: a path cannot hold a NUL character, got 'a\\x00b.csv'"
    assert not_a_file_reason(Path("a\0b")) == "the path holds a NUL character"


@pytest.mark.parametrize(("line", "expected"), [
    ("9" * 400, "line 3: value 99999"),  # beyond float64: was an unexpected OverflowError
    ("9" * 5000, "line 3: a number of 5,000 digits is not a whole percent in [0, 100]"),  # beyond int()'s digit limit
])
def test_planetlab__a_huge_integer_line_is_named_with_its_line(tmp_path: Path, line: str, expected: str) -> None:
    folder = tmp_path / "day"
    folder.mkdir()
    (folder / "vm").write_text(f"10\n20\n{line}\n30\n")
    with pytest.raises(TraceError) as caught:
        read_planetlab(folder)
    assert str(caught.value).startswith(f"{folder / 'vm'}: {expected}")


def test_trace_csv__utf16_without_a_byte_order_mark_is_named_as_such(tmp_path: Path) -> None:
    """UTF-16 without a BOM decodes as UTF-8 with NULs: it was "missing column(s) ... found ['\\x00c\\x00p...']"."""
    path = tmp_path / "mean.csv"
    path.write_bytes("cpu_util_percent,mem_util_percent\n10,20\n".encode("utf-16-le"))
    with pytest.raises(TraceError, match=r"mean\.csv: line 1 holds NUL characters: a binary file, or text saved as"):
        read_alibaba_dc_mean(path)


def test_scenario_fleet__a_node_id_that_is_not_a_string_is_refused_when_read(tmp_path: Path) -> None:
    """node_id: 1.0e+300 passed validation, then every episode failed in the twin (TypeError: str object expected)."""
    path = _with_fleet(tmp_path, "{nodes: [" + NODE.replace("node_id: a", "node_id: 1.0e+300") + "]}")
    assert _scenario_error(path) == f"{path}: fleet.nodes[0]: node_id must be a non-empty string, got 1e+300"
    with pytest.raises(SpecError, match=r"job_id must be a non-empty string, got 7"):
        JobSpec(job_id=7, arrival_s=0.0, duration_s=1.0, workload="batch", cpu_cores=1.0, mem_gb=1.0)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match=r"gpu_model must be a non-empty string, got 5"):
        NodeSpec("g", "gpu-node", "on-demand", 8, 32, 1.0, gpu_count=1, gpu_model=5)  # type: ignore[arg-type]


@pytest.mark.parametrize(("options", "expected"), [
    ("{cpu: .nan, mem: mem}", "telemetry.options: cpu must name a column (a non-empty string), got nan"),
    ("{cpu: cpu, mem: mem, time: 3}", "telemetry.options: time must name a column (a non-empty string), got 3"),
])
def test_generic_reader__a_column_option_that_is_not_a_name_is_refused(
    tmp_path: Path, options: str, expected: str
) -> None:
    """cpu: .nan was an unexpected AttributeError ('float' object has no attribute 'lower') in the header check."""
    (tmp_path / "trace.csv").write_text("cpu,mem\n10,20\n")
    path = _with_fleet(
        tmp_path, f"{{nodes: [{NODE}]}}",
        f"{{reader: generic, path: trace.csv, options: {options}, mapping: {{kind: per-machine}}}}",
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path).make_spec(np.random.default_rng(0))  # the trace is read on first use
    assert str(caught.value) == f"{path}: {expected}"
    with pytest.raises(SpecError, match=r"cpu_column must name a column"):
        read_borg_cell_mean(tmp_path / "trace.csv", cpu_column=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("build", [
    lambda: JobSpec("a", 0.0, 60.0, "batch", 1.0, 1e297),
    lambda: JobSpec("a", 0.0, 60.0, "batch", 1e13, 1.0),
    lambda: JobSpec("a", 0.0, 60.0, "batch", 1.0, 1.0, gpu_count=10**30),
    lambda: NodeSpec("n", "x86_64", "on-demand", 8, 1e300, 1.0),
    lambda: NodeSpec("g", "gpu-node", "on-demand", 8, 8, 1.0, gpu_count=10**30, gpu_model="A100"),
])
def test_sizes__beyond_what_the_twin_counts_exactly_are_refused(build: Any) -> None:
    """A pod of 1e+300 MiB read as a job, then overflowed the twin's int64 MiB (a RuntimeWarning, -2**63 MiB)."""
    with pytest.raises(SpecError, match=r"above 1e\+12 \(the twin counts millicores and MiB in 64-bit integers\)"):
        build()


def test_pod_list__a_huge_memory_request_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text(",".join(POD_COLUMNS) + "\np0,1000,1e300,0,0,,LS,Running,0,60,0\n")
    with pytest.raises(TraceError, match=r"pods\.csv:2: job 'p0': mem_gb is 9.76563e\+296, above 1e\+12"):
        load_alibaba_gpu_pods(path)


def test_generic_reader__a_broken_parquet_file_is_one_line(tmp_path: Path) -> None:
    """pyarrow's message for corrupt Parquet metadata ends in a newline: the verdict took two lines."""
    path = tmp_path / "trace.parquet"
    buffer = io.BytesIO()
    pd.DataFrame({"cpu": [10.0, 20.0], "mem": [30.0, 40.0]}).to_parquet(buffer)
    path.write_bytes(buffer.getvalue().replace(b"\n", b"\r\n"))
    with pytest.raises(TraceError) as caught:
        read_generic(path, cpu="cpu", mem="mem")
    assert str(caught.value).startswith(f"{path}: cannot read as Parquet (")
    assert "\n" not in str(caught.value)


def test_generic_reader__a_timestamp_beyond_int64_ticks_is_outside_the_grid_without_a_warning(tmp_path: Path) -> None:
    """A time of 1e308 s (rows in any order, with a machine column) made numpy warn "invalid value ... in cast"."""
    path = tmp_path / "trace.csv"
    rows = "".join(f"{t},{m},10,20\n" for t in range(0, 3600, 300) for m in ("m1", "m2"))
    path.write_text("time,machine,cpu,mem\n" + rows + "1e308,m1,50,50\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        series = read_generic(path, cpu="cpu", mem="mem", time="time", machine="machine", on_long_gap="fill")
    assert series.n_ticks >= 11 and np.all(series.values_pct[..., 0] == 10.0)


def test_pod_list__a_missing_column_is_named_in_the_header_line(tmp_path: Path) -> None:
    """Like the telemetry readers ("in the header (line 1)"): the job sources said only "in the pod list"."""
    path = tmp_path / "pods.csv"
    path.write_text(",".join(POD_COLUMNS).replace("name,", "nom,", 1) + "\np0,1000,1024,0,0,,LS,Running,0,60,0\n")
    with pytest.raises(TraceError, match=r"pods\.csv: missing column\(s\) \['name'\] in the header \(line 1\) of"):
        load_alibaba_gpu_pods(path)


def test_an_integer_beyond_the_float_range__is_refused_as_not_finite() -> None:
    """A job's or a node's amount of 10^400 (YAML reads it as an int) is a SpecError, not an OverflowError."""
    huge = 10**400
    with pytest.raises(SpecError, match="mem_gb must be a finite number > 0"):
        JobSpec("E", 0.0, 600.0, "batch", 1, huge)
    with pytest.raises(SpecError, match="mem_gb must be a positive finite number"):
        NodeSpec("n0", "x86_64", "on-demand", 4, huge, 0.36)
