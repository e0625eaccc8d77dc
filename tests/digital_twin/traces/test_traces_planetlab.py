"""The PlanetLab reader (a folder, one file of cpu % lines per VM) and the VM-selecting mappings.

Real data: the shared 20110306 day (200 VMs) through ``ACO_ENV_TRACES`` (skipped when absent).
Bad input: small folders written to ``tmp_path``, each a TraceError naming the file and line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import scenarios
from digital_twin import DigitalTwin
from digital_twin.errors import SpecError, TraceError
from digital_twin.scenario import ScenarioError, load_scenario
from digital_twin.traces import TraceSeries, read_planetlab, sample_groups, telemetry_from_groups
from tests.paths import TRACES

DAY = "planetlab-20110306/cpu"
SPACED = ("aladdin_planetlab_extranet_uni-passau_de_ rnp_dcc_ufjf", "metis_mcs_suffolk_edu_ yale_p4p")
"""Two real file names with a space (the day has 11)."""


def real_day() -> Path:
    """The shared PlanetLab day, or skip when the traces are not on this machine."""
    folder = TRACES / DAY
    if not folder.is_dir():
        pytest.skip(f"{DAY} not present (set ACO_ENV_TRACES to the traces folder)")
    return folder


def lines_of(file: Path) -> list[int]:
    """A VM file's values, read independently of the reader."""
    return [int(line) for line in file.read_text().split()]


def day(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    """A folder holding one file per VM with the given contents."""
    folder = tmp_path / "day"
    folder.mkdir(parents=True)
    for name, content in files.items():
        target = folder / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    return folder


# --- the real day ---------------------------------------------------------------------------


def test_planetlab__real_day_reads_all_200_vms_as_the_files_hold_them() -> None:
    """All 200 VMs, 288 ticks of 300 s, named by file (spaces kept), every value equal to its line."""
    folder = real_day()
    series = read_planetlab(folder)
    files = sorted(folder.iterdir())
    assert series.values_pct.shape == (288, 200, 2) and series.tick_s == 300.0 and series.filled is None
    assert series.machine_ids == tuple(f.name for f in files)
    assert sum(" " in name for name in series.machine_ids) == 11 and set(SPACED) <= set(series.machine_ids)
    expected = np.array([lines_of(f) for f in files], dtype=np.float64).T  # (288, 200)
    np.testing.assert_array_equal(series.values_pct[:, :, 0], expected)
    assert (series.values_pct[:, :, 1] == 0.0).all()  # no memory in the trace: mem_pct default 0
    assert expected.min() == 0 and expected.max() == 99  # the README's range


def test_planetlab__vm_line_k_is_the_twin_background_at_tick_k(tmp_path: Path) -> None:
    """Through a scenario (names with spaces in the YAML list), node n's background at tick k is line
    start + k of its VM's file, in the twin's hindsight and in its present utilisation."""
    folder = real_day()
    vms = [SPACED[0], "fobos_cecalc_ula_ve_root", SPACED[1], "pl-node-0_csl_sri_com_irisaple_wup",
           "146-179_surfsnel_dsl_internl_net_root"]
    data = yaml.safe_load((scenarios.CATALOGUE_DIR / "fleet5-planetlab.yaml").read_text())
    data["telemetry"]["path"] = str(folder)
    data["telemetry"]["mapping"] = {"kind": "per-machine", "machines": vms}
    path = tmp_path / "planetlab.yaml"
    path.write_text(yaml.safe_dump(data))
    twin = DigitalTwin(load_scenario(path).make_spec(np.random.default_rng(0)))
    twin.reset(np.random.default_rng(0))
    first_line = 8 * 12  # options.start_hour: 8 -> 96 lines of 300 s skipped
    background = twin.hindsight().background_cpu_pct
    assert background.shape == (48, 5)
    for node, vm in enumerate(vms):
        values = lines_of(folder / vm)
        for k in range(48):
            assert background[k, node] == values[first_line + k], (vm, k)
    k = twin.tick_index  # nothing placed yet: utilisation is the background alone
    assert twin.utilization_pct().tolist() == [lines_of(folder / vm)[first_line + k] for vm in vms]


def test_planetlab__bundled_scenario_samples_the_same_vms_for_the_same_seed() -> None:
    """fleet5-planetlab's seeded sample gives the same 5 VMs every load; their values are the files'."""
    folder = real_day()
    scenario = scenarios.load("fleet5-planetlab")
    one = scenario.telemetry.background_pct
    assert one.shape == (48, 5, 2) and (one[..., 1] == 20.0).all()
    series = read_planetlab(folder, start_hour=8)
    groups = sample_groups(series, 5, 1, seed=7)
    for node, (vm,) in enumerate(groups):
        np.testing.assert_array_equal(one[:, node, 0], lines_of(folder / vm)[96:144])
    np.testing.assert_array_equal(scenarios.load("fleet5-planetlab").telemetry.background_pct, one)
    assert sample_groups(series, 5, 1, seed=8) != groups


# --- small folders ---------------------------------------------------------------------------


def test_planetlab__names_with_spaces_crlf_and_trailing_blank_lines_read(tmp_path: Path) -> None:
    """A name with a space is a VM like any other; CRLF and blank lines after the data are fine."""
    folder = day(tmp_path, {"host_ slice": "10\r\n20\r\n30\r\n\r\n\n", "b": "1\n2\n3\n", ".DS_Store": "x"})
    series = read_planetlab(folder, vms=["host_ slice"], tick_s=60)
    assert series.machine_ids == ("host_ slice",) and series.tick_s == 60.0
    assert series.values_pct[:, 0, 0].tolist() == [10, 20, 30]
    assert read_planetlab(folder).machine_ids == ("b", "host_ slice")  # hidden files skipped, sorted


def test_planetlab__start_hour_skips_whole_ticks_and_mem_is_constant(tmp_path: Path) -> None:
    """start_hour=1 at 1800 s per line skips 2 lines; start_s is 3600; mem_pct fills the memory."""
    folder = day(tmp_path, {"vm": "1\n2\n3\n4\n5\n"})
    series = read_planetlab(folder, start_hour=1, tick_s=1800, mem_pct=35)
    assert series.values_pct[:, 0].tolist() == [[3, 35], [4, 35], [5, 35]] and series.start_s == 3600.0
    with pytest.raises(SpecError, match=r"start_hour=0.25 is 0.5 lines"):
        read_planetlab(folder, start_hour=0.25, tick_s=1800)
    with pytest.raises(TraceError, match=r"start_hour=3 skips 6 lines .* only 5 lines"):
        read_planetlab(folder, start_hour=3, tick_s=1800)


def test_mapping__group_mean_and_seeded_sample() -> None:
    """A group's background is the mean of its machines; a seeded sample is the same for the same seed."""
    values = np.zeros((2, 4, 2))
    values[:, :, 0] = [[10, 20, 30, 40], [50, 60, 70, 80]]
    series = TraceSeries(values, 300.0, ("a", "b c", "d", "e"), "toy")
    telemetry = telemetry_from_groups(series, [["a", "b c"], ["e"], ["a", "d", "e"]], 600.0)
    np.testing.assert_allclose(telemetry.background_pct[:, :, 0], [[15, 40, 80 / 3], [55, 80, 200 / 3]])
    drawn = sample_groups(series, 2, 2, seed=3)
    assert drawn == sample_groups(series, 2, 2, seed=3)
    assert len({m for g in drawn for m in g}) == 4  # without replacement
    with pytest.raises(SpecError, match=r"needs 6 machines, the series has 4"):
        sample_groups(series, 3, 2, seed=0)
    with pytest.raises(TraceError, match=r"toy: machine\(s\) \['zz'\] not in the trace"):
        telemetry_from_groups(series, [["zz"]], 300.0)


BAD_FOLDERS = [
    # (name, files, reader kwargs, message after the file name)
    ("empty_file", {"a": "1\n", "b": ""}, {}, r"day/b: empty file \(0 bytes\)"),
    ("only_blank_lines", {"a": "\n\n \n"}, {}, r"day/a: no values \(only blank lines\)"),
    ("non_integer", {"a": "5\n7\n12.5\n"}, {}, r"day/a: line 3: '12.5' is not a whole percent"),
    ("text_value", {"a": "5\nabc\n"}, {}, r"day/a: line 2: 'abc' is not a whole percent"),
    ("fractions", {"a": "0.35\n0.4\n"}, {}, r"day/a: line 1: '0.35' .* a fraction: multiply by 100"),
    ("digit_separator", {"a": "5\n1_0\n"}, {}, r"day/a: line 2: '1_0' is not a whole percent"),
    ("above_100", {"a": "5\n101\n"}, {}, r"day/a: line 2: value 101 is outside \[0, 100\] %"),
    ("negative", {"a": "-1\n5\n-3\n"}, {}, r"day/a: line 1: value -1 is outside \[0, 100\] % \(2 such lines\)"),
    ("blank_line_inside", {"a": "5\n\n7\n"}, {}, r"day/a: line 2: blank line before the last value"),
    ("uneven_lengths", {"a": "1\n2\n3\n", "b c": "1\n2\n"}, {}, r"day/b c: 2 lines, but 'a' has 3"),
    ("not_utf8", {"a": b"\xff\xfe5\n"}, {}, r"day/a: cannot read as UTF-8"),
    ("name_without_its_space", {"host_ slice": "5\n"}, {"vms": ["host_slice"]},
     r"no VM file named 'host_slice' \(did you mean 'host_ slice'\?"),
    ("unknown_name", {"a": "5\n"}, {"vms": ["zz"]}, r"day: no VM file named 'zz' \(1 VM files"),
    ("no_vm_files", {}, {}, r"day: no VM files"),
]


@pytest.mark.parametrize(("name", "files", "kwargs", "match"), BAD_FOLDERS, ids=[c[0] for c in BAD_FOLDERS])
def test_planetlab__bad_folder_raises_trace_error_naming_file_and_line(
    tmp_path: Path, name: str, files: dict[str, str | bytes], kwargs: dict, match: str
) -> None:
    """Each malformed day gives a TraceError whose message names the file (and line)."""
    del name
    folder = day(tmp_path, files)
    with pytest.raises(TraceError, match=match):
        read_planetlab(folder, **kwargs)


def test_planetlab__path_must_be_a_day_folder(tmp_path: Path) -> None:
    """A missing folder, a file instead of a folder, and the folder above the day are each explained."""
    with pytest.raises(TraceError, match=r"nowhere: folder not found"):
        read_planetlab(tmp_path / "nowhere")
    (tmp_path / "vm").write_text("5\n")
    with pytest.raises(TraceError, match=r"vm: not a folder"):
        read_planetlab(tmp_path / "vm")
    parent = tmp_path / "parent"
    (parent / "cpu").mkdir(parents=True)
    (parent / "README.md").write_text("# PlanetLab\n")
    with pytest.raises(TraceError, match=r"README.md: line 1: .*holds the folder\(s\) \['cpu'\]"):
        read_planetlab(parent)
    (parent / "README.md").unlink()
    with pytest.raises(TraceError, match=r"parent: no VM files .*holds the folder\(s\) \['cpu'\]"):
        read_planetlab(parent)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"vms": "a"}, "vms must be a non-empty list"), ({"vms": ["a", "a"]}, "vms names a VM twice"),
     ({"start_hour": 24}, r"start_hour must be a number in \[0, 24\)"), ({"tick_s": 0}, "tick_s must be"),
     ({"mem_pct": 101}, r"mem_pct must be a number in \[0, 100\]")],
)
def test_planetlab__bad_options_raise_spec_error(tmp_path: Path, kwargs: dict, match: str) -> None:
    """An invalid option is a SpecError before or without reading the files."""
    folder = day(tmp_path, {"a": "5\n"})
    with pytest.raises(SpecError, match=match):
        read_planetlab(folder, **kwargs)


# --- the scenario mapping ---------------------------------------------------------------------


def _scenario(tmp_path: Path, mapping: dict) -> Path:
    """A 2-node scenario on a 3-VM day with the given telemetry mapping."""
    folder = day(tmp_path, {"v a": "10\n20\n", "v b": "30\n40\n", "v c": "50\n60\n"})
    data = {
        "schema_version": 2, "name": "pl", "horizon_s": 600,
        "fleet": {"nodes": [{"node_id": f"n{i}", "arch": "x86_64", "instance": "on-demand", "cpu_cores": 4,
                             "mem_gb": 16, "price_per_hour_usd": 1} for i in range(2)]},
        "telemetry": {"reader": "planetlab", "path": str(folder), "mapping": mapping},
        "workload": {"source": "jobs", "jobs": [{"job_id": "j", "arrival_s": 0, "duration_s": 60,
                                                  "workload": "batch", "cpu_cores": 1, "mem_gb": 1}]},
    }
    path = tmp_path / "pl.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_scenario_mapping__group_mean_sample_and_names(tmp_path: Path) -> None:
    """group-mean averages the named VMs per node; sample draws distinct VMs per node."""
    path = _scenario(tmp_path, {"kind": "group-mean", "groups": [["v a", "v c"], ["v b"]]})
    background = load_scenario(path).telemetry.background_pct
    assert background[:, :, 0].tolist() == [[30, 30], [40, 40]]
    sampled = _scenario(tmp_path / "s", {"kind": "sample", "seed": 1})
    cpu = load_scenario(sampled).telemetry.background_pct[0, :, 0]
    assert len(set(cpu.tolist())) == 2 and set(cpu.tolist()) <= {10, 30, 50}


@pytest.mark.parametrize(
    ("mapping", "match"),
    [({"kind": "group-mean", "groups": [["v a"]]}, r"telemetry.mapping.groups: has 1 groups for a fleet of 2"),
     ({"kind": "group-mean", "groups": [["v a"], []]}, r"telemetry.mapping.groups\[1\]: must be a non-empty list"),
     ({"kind": "group-mean", "groups": [["v a"], ["nope"]]}, r"machine\(s\) \['nope'\] not in the trace"),
     ({"kind": "sample", "seed": 0, "per_node": 2}, r"telemetry.mapping: .*needs 4 machines, the series has 3"),
     ({"kind": "sample"}, r"telemetry.mapping.seed: is required"),
     ({"kind": "sample", "seed": -1}, r"telemetry.mapping.seed: must be an integer >= 0"),
     ({"kind": "sample", "seed": 0, "per_node": 0}, r"telemetry.mapping.per_node: must be an integer >= 1"),
     ({"kind": "sample", "seed": 0, "nodes": 2}, r"telemetry.mapping: unknown key\(s\) \['nodes'\]"),
     ({"kind": "random"}, r"telemetry.mapping.kind: unknown mapping 'random'; known: \['offset-scale-bias', "
                          r"'per-machine', 'group-mean', 'sample'\]")],
)
def test_scenario_mapping__bad_mapping_names_the_file_and_key(tmp_path: Path, mapping: dict, match: str) -> None:
    """A bad VM-selecting mapping fails at load or first use, naming the scenario file and the key."""
    path = _scenario(tmp_path, mapping)
    with pytest.raises(ScenarioError, match=match) as info:
        load_scenario(path).telemetry  # noqa: B018 - the property reads the trace
    assert str(path) in str(info.value)
