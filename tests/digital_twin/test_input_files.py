"""Every reader of a user's file: paths that are not regular files, and CSV rows with too few fields.

A directory, a FIFO or ``/dev/zero`` given as a trace, job file, node list or scenario must be
refused at once by ``stat`` (opening a FIFO blocks; ``/dev/zero`` never ends). The FIFO and
device cases run in a subprocess with a timeout, so a missing check fails the test instead of
hanging it. A CSV row that lost its last columns must be refused naming the file and line, even
when those columns are ones the reader does not use (pandas would pad them silently).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from digital_twin._files import first_ragged_row
from digital_twin.errors import TraceError
from digital_twin.scenario import ScenarioError, load_scenario
from digital_twin.traces import (
    read_alibaba_dc_mean,
    read_alibaba_machine_usage,
    read_azure_vm_aggregate,
    read_borg_cell_mean,
    read_borg_instance_usage,
    read_generic,
)
from digital_twin.workloads import (
    load_alibaba_gpu_pods,
    load_azure_llm_requests,
    load_swf_jobs,
    read_swf_header,
)
from tests.hang_guard import HANG_GUARD_S
from tests.paths import ROOT

READERS: dict[str, Callable[[Path], Any]] = {
    "alibaba2018-mean": read_alibaba_dc_mean,
    "alibaba2018-machines": read_alibaba_machine_usage,
    "azure2019-aggregate": read_azure_vm_aggregate,
    "borg2019-instances": read_borg_instance_usage,
    "borg2019-cell": read_borg_cell_mean,
    "generic": partial(read_generic, cpu="cpu", mem="mem"),
    "alibaba-gpu-2023": load_alibaba_gpu_pods,
    "swf": load_swf_jobs,
    "swf-header": read_swf_header,
    "azure-llm": load_azure_llm_requests,
}
"""Every reader of a trace or job file, by a short name."""

# A script run in a subprocess: each reader (and a scenario whose fleet node list or whose own
# file is the path) on each path; prints {reader: message} as JSON.
_PROBE = """
import json, sys
from pathlib import Path
import numpy as np
import yaml
from digital_twin.scenario import load_scenario
from tests.digital_twin.test_input_files import READERS
path = Path(sys.argv[1])
scenario_file = Path(sys.argv[2])
out = {}
def attempt(name, call):
    try:
        call()
        out[name] = "no error"
    except ValueError as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
for name, reader in READERS.items():
    attempt(name, lambda: reader(path))
attempt("scenario-file", lambda: load_scenario(path))
attempt("fleet-node-list", lambda: load_scenario(scenario_file).fleet)
print(json.dumps(out))
"""


def _node_list_scenario(tmp_path: Path, node_list: Path) -> Path:
    """A valid scenario whose fleet is read from ``node_list`` (the Alibaba GPU 2023 format)."""
    data = yaml.safe_load((ROOT / "scenarios" / "toy3.yaml").read_text())
    data["fleet"] = {"alibaba_gpu_csv": {"path": str(node_list), "gpu_only": False}}
    data.pop("spot")
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _probe(tmp_path: Path, path: Path) -> dict[str, str]:
    """Run every reader on ``path`` in a subprocess that must finish within 60 s."""
    scenario = _node_list_scenario(tmp_path, path)
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, str(path), str(scenario)],
        capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.subprocess
def test_readers__fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    """A named pipe is refused by every reader, naming the path and saying it is a FIFO."""
    fifo = tmp_path / "trace.csv"
    os.mkfifo(fifo)
    messages = _probe(tmp_path, fifo)
    assert set(messages) == {*READERS, "scenario-file", "fleet-node-list"}
    for name, message in messages.items():
        assert str(fifo) in message and "FIFO" in message, (name, message)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this system")
@pytest.mark.subprocess
def test_readers__dev_zero_is_refused_without_reading_it(tmp_path: Path) -> None:
    """/dev/zero (endless bytes) is refused by every reader as a character device."""
    messages = _probe(tmp_path, Path("/dev/zero"))
    for name, message in messages.items():
        assert "/dev/zero" in message and "character device" in message, (name, message)


@pytest.mark.parametrize("name", list(READERS))
def test_readers__directory_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    """A directory given as a file is a TraceError that names it and says it is a directory."""
    with pytest.raises(TraceError, match=rf"{re.escape(str(tmp_path))}.*is a directory"):
        READERS[name](tmp_path)


def test_scenario_and_node_list__directory_is_refused_naming_it(tmp_path: Path) -> None:
    """A directory as the scenario file or as the fleet's node list is refused naming it."""
    with pytest.raises(ScenarioError, match=rf"{re.escape(str(tmp_path))}: cannot read scenario file \(is a directory"):
        load_scenario(tmp_path)
    folder = tmp_path / "nodes"
    folder.mkdir()
    with pytest.raises(ScenarioError, match=rf"{re.escape(str(folder))}: cannot open node list \(is a directory"):
        _ = load_scenario(_node_list_scenario(tmp_path, folder)).fleet


# --- short rows ----------------------------------------------------------------------------

DC_HEAD = "cpu_util_percent,mem_util_percent,net_in,net_out,disk_io_percent\n"
POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
)
USAGE = "\"{'cpus': 0.1, 'memory': 0.2}\""

# (reader, valid file, the same file with one row cut short, the message after the file name).
# In each short file the missing fields are ones the reader ignores or may leave empty.
SHORT_ROWS = [
    ("alibaba2018-mean", DC_HEAD + "20,80,1,1,1\n21,81,1,1,1\n", DC_HEAD + "20,80,1,1,1\n21,81\n",
     r": line 3 has 2 field\(s\), expected 5 \(a short row"),
    ("alibaba2018-machines", "m_1,0,10,20,,,,,\nm_1,60,10,20,,,,,\n", "m_1,0,10,20,,,,,\nm_1,60,10,20\n",
     r": line 2 has 4 field\(s\), expected 9"),
    ("azure2019-aggregate", "timestamp,cpu_usage,assigned_mem,vms\n0,5,5,1\n300,5,5,1\n",
     "timestamp,cpu_usage,assigned_mem,vms\n0,5,5,1\n300,5,5\n", r": line 3 has 3 field\(s\), expected 4"),
    ("borg2019-instances", f"time,average_usage,note\n0,{USAGE},a\n1,{USAGE},b\n",
     f"time,average_usage,note\n0,{USAGE},a\n1,{USAGE}\n", r": line 3 has 2 field\(s\), expected 3"),
    ("borg2019-cell", "cpu,memory,note\n0.5,0.5,a\n0.4,0.5,b\n", "cpu,memory,note\n0.5,0.5,a\n0.4,0.5\n",
     r": line 3 has 2 field\(s\), expected 3"),
    ("generic", "cpu,mem,note\n50,50,a\n40,50,b\n", "cpu,mem,note\n50,50,a\n\n40,50\n",
     r": line 4 has 2 field\(s\), expected 3"),
    ("alibaba-gpu-2023", POD_HEADER + "p0,4000,8192,1,500,,LS,Running,0,100,10\np3,1000,1024,0,0,,BE,Pending,9,30,\n",
     POD_HEADER + "p0,4000,8192,1,500,,LS,Running,0,100,10\np3,1000,1024,0,0,,BE,Pending,9,30\n",
     r":3: the row has 10 fields, the header has 11"),
    ("azure-llm", "TIMESTAMP,ContextTokens,GeneratedTokens,note\n2023-11-16 18:15:46.6805900,374,44,a\n",
     "TIMESTAMP,ContextTokens,GeneratedTokens,note\n2023-11-16 18:15:46.6805900,374,44\n",
     r":2: the row has 3 fields, the header has 4"),
]


@pytest.mark.parametrize(("name", "good", "short", "message"), SHORT_ROWS, ids=[c[0] for c in SHORT_ROWS])
def test_csv_readers__short_row_is_refused_naming_file_and_line(
    tmp_path: Path, name: str, good: str, short: str, message: str
) -> None:
    """The valid file reads; the same file with one row cut short is a TraceError at that line."""
    path = tmp_path / "file.csv"
    path.write_text(good)
    READERS[name](path)
    path.write_text(short)
    with pytest.raises(TraceError, match=r"file\.csv" + message):
        READERS[name](path)


def test_csv_readers__quoted_commas_and_newlines_are_not_field_breaks(tmp_path: Path) -> None:
    """Commas and a newline inside quotes do not make a row look long or short."""
    path = tmp_path / "borg.csv"
    path.write_text(f'time,dist,average_usage\n0,"[0.1,\n0.2]",{USAGE}\n1,"a,b",{USAGE}\n')
    series = read_borg_instance_usage(path)
    assert series.n_ticks == 1


def test_node_list__short_row_is_refused_through_the_scenario(tmp_path: Path) -> None:
    """A node-list row missing its (optional) model column is refused naming the file and line."""
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,32000,131072,0,\nn2,32000,131072,0\n")
    with pytest.raises(ScenarioError, match=r"nodes\.csv:3: the row has 4 fields, the header has 5"):
        _ = load_scenario(_node_list_scenario(tmp_path, nodes)).fleet



RAGGED = [
    ("a,b,c\n1,2,3\n4,5,6\n", None),
    ("a,b,c\r\n1,2,3\r\n4,5,6", None),  # CRLF, no final newline
    ("\ufeffa,b,c\n1,2,3\n\n   \n4,5,6\n", None),  # BOM, blank and whitespace-only lines
    ('a,b,c\n1,"x,y\nz",3\n4,5\n', (4, 2, 3)),  # a quoted comma and newline, then a short row
    ('a,b,c\n1,"say ""hi, there""",3\n', None),  # doubled quotes inside quotes
    ("a,b,c\n1,2,3,4\n", (2, 4, 3)),
]


@pytest.mark.parametrize(("text", "expected"), RAGGED)
def test_first_ragged_row__finds_the_first_record_with_another_field_count(
    tmp_path: Path, text: str, expected: tuple[int, int, int] | None
) -> None:
    """(line, fields, expected fields) of the first ragged record, as the csv module splits records."""
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode("utf-8"))
    assert first_ragged_row(path, None) == expected
