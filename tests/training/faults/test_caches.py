"""Shared caches under faults: concurrent writers lose nothing, torn or damaged entries are recomputed with a
warning, never a crash (the suite's reference cache and the prediction cache)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from agents.predictor import EmaPredictor
from agents.predictor.cache import PredictionCache, cache_key
from tests.hang_guard import HANG_GUARD_S
from tests.paths import ROOT
from tests.training.cli.test_cli_errors import cli
from training.suite.definition import load_suite
from training.suite.references import CHECKSUM_KEY, ReferenceStore

TINY = Path(__file__).parents[1] / "suite" / "tiny_suite.yaml"
WRITER = """
import sys, time
from pathlib import Path
from training.suite.definition import load_suite
from training.suite.references import ReferenceStore, TaskReference
prefix, cache, go, count = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
store = ReferenceStore(load_suite(Path({tiny!r})), cache)
while not go.exists():
    time.sleep(0.01)
for i in range(count):
    name = f"{{prefix}}-{{i}}"
    entry = TaskReference(name, "tiny-suite v3", "env", "sha", "planted", None, (1,), (2.0,), (1.0,), (1.0,))
    store.put(entry)
"""


@pytest.mark.subprocess
def test_reference_store__two_processes_writing_200_entries_each_keep_all_400(tmp_path: Path) -> None:
    """The probe's form: two writers at once on one cache file; afterwards every one of the 400 entries is there."""
    go = tmp_path / "go"
    script = textwrap.dedent(WRITER.format(tiny=str(TINY)))
    arguments = [[sys.executable, "-c", script, prefix, str(tmp_path / "cache"), str(go), "200"] for prefix in "ab"]
    writers = [_start(argv) for argv in arguments]
    time.sleep(0.5)  # both are importing: let them reach the start line together (not needed for correctness)
    go.touch()
    for writer in writers:
        _, stderr = writer.communicate(timeout=HANG_GUARD_S)
        assert writer.returncode == 0, stderr
    [cache_file] = (tmp_path / "cache").glob("*-references.json")
    tasks = json.loads(cache_file.read_text())["tasks"]
    assert sorted(tasks) == sorted(f"{prefix}-{i}" for prefix in "ab" for i in range(200))
    assert sorted(p.name for p in cache_file.parent.iterdir()) == [cache_file.name, cache_file.name + ".lock"]


def test_reference_store__a_damaged_entry_is_recomputed_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An entry whose checksum does not match its content is left out with a warning and computed again."""
    suite = load_suite(TINY)
    [task] = suite.select(["planted5"], None)
    computed = ReferenceStore(suite, tmp_path).get(task)
    cache_file = tmp_path / ReferenceStore(suite, None).file_name
    document = json.loads(cache_file.read_text())
    assert document["tasks"]["planted5"][CHECKSUM_KEY] == computed.checksum()
    document["tasks"]["planted5"]["baseline_usd"][0] += 1.0  # a torn or hand-edited value
    cache_file.write_text(json.dumps(document))
    with caplog.at_level(logging.WARNING, logger="training.suite.references"):
        again = ReferenceStore(suite, tmp_path).get(task)
    assert "the reference of planted5 is damaged (its checksum does not match its content)" in caplog.text
    assert again.baseline_usd == computed.baseline_usd  # recomputed, not the damaged value


@pytest.mark.subprocess
def test_suite_cli__a_corrupt_cache_file_is_recomputed_with_a_warning_not_a_crash(tmp_path: Path) -> None:
    """Half a JSON document in the cache (a torn write): the run warns, recomputes and writes the file whole."""
    cache = tmp_path / "cache"
    cache.mkdir()
    cache_file = cache / "tiny-suite-v3-references.json"
    cache_file.write_text('{"suite": "tiny-suite v3", "tasks": {"planted5": {"task": "plan')
    result = cli("suite", "--suite", str(TINY), "--agents", "first-fit", "--tasks", "planted5", "--cache", str(cache),
                 "--out", str(tmp_path / "out"), "--backend", "serial", "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "unexpected" not in result.stderr and "Traceback" not in result.stderr
    assert f"warning: {cache_file}: not a references file" in result.stderr
    assert list(json.loads(cache_file.read_text())["tasks"]) == ["planted5"]


def _start(argv: list[str]) -> subprocess.Popen[str]:
    """A writer process with this repository on its path."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(argv, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)


SERIES = np.abs(np.random.default_rng(0).normal(40.0, 10.0, size=(60, 4)))


def test_prediction_cache__a_damaged_file_fails_its_crc_and_is_recomputed_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A byte flipped inside a cached table: the zip CRC-32 catches it; a warning, then the same table again."""
    first = PredictionCache(tmp_path).get(EmaPredictor(), SERIES, seed=0)
    path = PredictionCache(tmp_path).path_of(cache_key(EmaPredictor(), SERIES, 0))
    assert path is not None
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF  # inside an array's bytes
    path.write_bytes(bytes(data))
    cache = PredictionCache(tmp_path)
    with caplog.at_level(logging.WARNING, logger="agents.predictor.cache"):
        again = cache.get(EmaPredictor(), SERIES, seed=0)
    assert f"prediction cache file {path} is damaged" in caplog.text
    assert cache.stats.misses == 1
    np.testing.assert_array_equal(again.predicted_pct, first.predicted_pct)
    assert PredictionCache(tmp_path).get(EmaPredictor(), SERIES, seed=0) is not None  # rewritten whole


PREDICTOR_WRITER = """
import sys
import numpy as np
from agents.predictor import EmaPredictor
from agents.predictor.cache import PredictionCache
series = np.abs(np.random.default_rng(0).normal(40.0, 10.0, size=(60, 4)))
cache = PredictionCache(sys.argv[1])
for i in range(int(sys.argv[2]), int(sys.argv[2]) + 40):
    cache.get(EmaPredictor(alpha=0.01 + i / 1000), series, seed=0)
"""


@pytest.mark.subprocess
def test_prediction_cache__two_processes_writing_one_folder_keep_every_entry(tmp_path: Path) -> None:
    """Two writers, 40 entries each (some the same), one folder: 60 whole files after, no temporary file."""
    writers = [_start([sys.executable, "-c", PREDICTOR_WRITER, str(tmp_path), start]) for start in ("0", "20")]
    for writer in writers:
        _, stderr = writer.communicate(timeout=HANG_GUARD_S)
        assert writer.returncode == 0, stderr
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".npz"] * 60
    cache = PredictionCache(tmp_path)
    for i in range(60):
        cache.get(EmaPredictor(alpha=0.01 + i / 1000), SERIES, seed=0)
    assert cache.stats.disk_hits == 60 and cache.stats.misses == 0
