"""The spot availability reader: the shared SkyPilot files, and written files with each of their anomalies."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from digital_twin.errors import SpecError, TraceError
from digital_twin.spot.replay import SpotGroup, SpotReplay
from digital_twin.traces.spot_availability import identical_traces, read_spot_trace
from tests.paths import TRACES

SKYPILOT = TRACES / "spot-traces-skypilot-2022-2023"
needs_skypilot = pytest.mark.skipif(not SKYPILOT.is_dir(), reason="the SkyPilot spot traces are not present")


def _write(path: Path, document: object, text: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document) if text is None else text)
    return path


@needs_skypilot
def test_shared_files__every_file_reads_with_its_own_tick_and_instance_count() -> None:
    files = sorted(SKYPILOT.rglob("*.json"))
    assert len(files) == 34
    traces = [read_spot_trace(path) for path in files]
    assert {t.gap_s for t in traces} == {30.0, 32.0, 34.0, 195.0, 300.0, 600.0}
    for trace in traces:
        folder = trace.path.parts[-3]
        assert trace.instances == int(folder.split("-")[0])
        assert trace.counts.min() >= 0 and trace.counts.max() <= trace.instances
    assert max(t.counts.max() for t in traces if t.instances == 16) == 16
    assert sum(t.prices_usd_per_hour is not None for t in traces) == 6
    east_1f = next(t for t in traces if t.path.name == "us-east-1f_v100_1.json" and "preemption" in t.path.parts)
    assert east_1f.prices_usd_per_hour is None  # the sibling without prices, ending with a newline
    same = {frozenset((a.path.name, b.path.name)) for a, b in identical_traces(traces)}
    central = ["us-central1-a_c3-88.json", "us-central1-b_c3-88.json", "us-central1-c_c3-88.json"]
    assert same == {frozenset((a, b)) for a in central for b in central if a < b}
    gcp = next(t for t in traces if t.path.name == central[0])
    assert gcp.leading_down_ticks == 1  # one tick before the first launch, then never preempted


def test_values__count_instances_up_or_inverted_under_the_preempted_convention(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.json", {"metadata": {"gap_seconds": 30}, "data": [0, 1, 1, 0]})
    assert read_spot_trace(path).counts.tolist() == [0, 1, 1, 0]
    assert read_spot_trace(path, convention="preempted").counts.tolist() == [1, 0, 0, 1]
    gang = _write(tmp_path / "4-node" / "zone_v100_1.json", {"metadata": {"gap_seconds": 300}, "data": [0, 3, 4]})
    assert read_spot_trace(gang).instances == 4
    assert read_spot_trace(gang, instances=8).instances == 8


BAD_DOCUMENTS = [
    ({"metadata": {}, "data": [1]}, "gap_seconds"),
    ({"metadata": {"gap_seconds": 0}, "data": [1]}, "positive number"),
    ({"metadata": {"gap_seconds": -30}, "data": [1]}, "positive number"),
    ({"metadata": {"gap_seconds": "300"}, "data": [1]}, "positive number"),
    ({"metadata": {"gap_seconds": True}, "data": [1]}, "positive number"),
    ({"metadata": {"gap_seconds": 300, "start": 0}, "data": [1]}, "unknown metadata key"),
    ({"metadata": {"gap_seconds": 300}}, "missing key"),
    ({"data": [1]}, "missing key"),
    ({"metadata": {"gap_seconds": 300}, "data": [1], "zone": "x"}, "unknown key"),
    ({"metadata": {"gap_seconds": 300}, "data": []}, "non-empty list"),
    ({"metadata": {"gap_seconds": 300}, "data": [1, 1, 2]}, "tick 2"),
    ({"metadata": {"gap_seconds": 300}, "data": [1, -1]}, "tick 1"),
    ({"metadata": {"gap_seconds": 300}, "data": [1, 0.5]}, "tick 1"),
    ({"metadata": {"gap_seconds": 300}, "data": [True]}, "tick 0"),
    ({"metadata": {"gap_seconds": 300}, "data": [1, None]}, "tick 1"),
    ({"metadata": {"gap_seconds": 300}, "data": [1, "1"]}, "tick 1"),
    ({"metadata": {"gap_seconds": 300}, "data": [1, 1], "prices": [0.9]}, "one price per tick"),
    ({"metadata": {"gap_seconds": 300}, "data": [1, 1], "prices": [0.9, -1]}, "tick 1"),
    ([1, 0, 1], "JSON object"),
]


@pytest.mark.parametrize(("document", "named"), BAD_DOCUMENTS)
def test_malformed_file__refused_naming_the_file_and_what(tmp_path: Path, document: object, named: str) -> None:
    path = _write(tmp_path / "bad.json", document)
    with pytest.raises(TraceError, match=named) as error:
        read_spot_trace(path)
    assert str(path) in str(error.value)


def test_malformed_text__refused_naming_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "bad.json", None, '{"metadata": {"gap_seconds": 30}, "data": [1, 0,]}')
    with pytest.raises(TraceError, match=rf"{path}:1:\d+: not JSON"):
        read_spot_trace(path)
    nan = _write(tmp_path / "nan.json", None, '{"metadata": {"gap_seconds": 30}, "data": [1, NaN]}')
    with pytest.raises(TraceError, match="tick 1"):
        read_spot_trace(nan)
    newline = _write(tmp_path / "newline.json", None, '{"metadata": {"gap_seconds": 30}, "data": [1, 0]}\n')
    assert read_spot_trace(newline).n_ticks == 2


def test_counts_above_the_folders_instances_and_bad_options__refused(tmp_path: Path) -> None:
    gang = _write(tmp_path / "4-node" / "z.json", {"metadata": {"gap_seconds": 300}, "data": [0, 4, 5]})
    with pytest.raises(TraceError, match=r"tick 2: .* in 0\.\.4"):
        read_spot_trace(gang)
    with pytest.raises(TraceError, match="single-instance"):
        read_spot_trace(gang, instances=5, convention="preempted")
    with pytest.raises(TraceError, match="unknown convention"):
        read_spot_trace(gang, convention="up")
    with pytest.raises(TraceError, match="file not found"):
        read_spot_trace(tmp_path / "absent.json")


def test_traces_shorter_than_the_episode__refused_naming_the_file(tmp_path: Path) -> None:
    short = read_spot_trace(_write(tmp_path / "short.json", {"metadata": {"gap_seconds": 30}, "data": [1] * 10}))
    long = read_spot_trace(_write(tmp_path / "long.json", {"metadata": {"gap_seconds": 600}, "data": [1] * 10}))
    replay = SpotReplay((SpotGroup(short, (0,)), SpotGroup(long, (1,))), n_nodes=2)
    assert replay.latest_start_s(200.0) == 100.0  # the shorter trace bounds the offset
    with pytest.raises(SpecError, match=rf"{tmp_path / 'short.json'}: .* covers 300 s"):
        replay.latest_start_s(301.0)
    fixed = SpotReplay((SpotGroup(long, (1,)),), n_nodes=2, start_s=5000.0)
    with pytest.raises(SpecError, match="start_s = 5000 s"):
        fixed.draw_start_s(np.random.default_rng(0), 1200.0)
    with pytest.raises(SpecError, match="more than one trace"):
        SpotReplay((SpotGroup(short, (0,)), SpotGroup(long, (0,))), n_nodes=2)
