"""Running the suite: fixed agents score the same on two runs and on every backend; references are cached.

The tests play a two-task suite (``tiny_suite.yaml``: the planted 5-node task and the default
scenario with the oracle at scale as reference, two test seeds each).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from training.execution.backend import Backend, SerialBackend
from training.execution.registry import make_backend
from training.suite import references
from training.suite.definition import SuiteError, load_suite
from training.suite.references import ReferenceStore
from training.suite.results_file import read_suite_run, suite_run_json, without_seconds, write_suite_run
from training.suite.runner import SuiteRun, run_suite

TINY = load_suite(Path(__file__).parent / "tiny_suite.yaml")
AGENTS = ["first-fit", "cheapest", "aco"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder shared by the module's tests: each task's reference is computed once."""
    return tmp_path_factory.mktemp("references")


def _run(cache: Path, backend: Backend | None = None, agents: list[str] = AGENTS) -> SuiteRun:
    store = ReferenceStore(TINY, cache, bundled_dir=cache / "none")
    return run_suite(TINY, agents, TINY.tasks, store, backend=backend, progress=False)


@pytest.fixture(scope="module")
def serial_run(cache: Path) -> SuiteRun:
    return _run(cache)


def test_run_suite__a_fixed_agent_scores_the_same_on_two_runs(cache: Path, serial_run: SuiteRun) -> None:
    again = _run(cache)
    assert without_seconds(suite_run_json(again)) == without_seconds(suite_run_json(serial_run))


def test_run_suite__scores_are_normalised_by_the_task_s_baseline_and_reference(serial_run: SuiteRun) -> None:
    planted, default = serial_run.tasks
    assert planted.reference.kind == "planted" and default.reference.kind == "oracle-at-scale"
    for task_run in serial_run.tasks:
        reference = task_run.reference
        assert reference.seeds == task_run.task.test_seeds == (100_000, 100_001)
        for agent in AGENTS:
            objectives = np.array(task_run.agents[agent].objectives_usd)
            expected = (np.mean(reference.baseline_usd) - objectives) / (
                np.mean(reference.baseline_usd) - np.mean(reference.reference_usd)
            )
            np.testing.assert_allclose(task_run.scores(agent), expected)
        assert task_run.bound_score() >= 1.0 - 1e-9  # the bound is below the reference
    # the planted reference is the proven optimum: no agent beats it on any episode
    optimum = np.array(planted.reference.reference_usd)
    for agent in AGENTS:
        assert np.all(np.array(planted.agents[agent].objectives_usd) >= optimum - 1e-6)


def test_suite_results__read_back_give_the_same_document(tmp_path: Path, serial_run: SuiteRun) -> None:
    path = write_suite_run(serial_run, tmp_path)
    assert suite_run_json(read_suite_run(path, TINY)) == json.loads(path.read_text())


def test_reference_store__a_task_is_computed_once_then_read_from_the_cache(
    cache: Path, serial_run: SuiteRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    del serial_run  # it filled the cache
    monkeypatch.setattr(references, "compute_reference", _must_not_compute)
    store = ReferenceStore(TINY, cache, bundled_dir=cache / "none")
    for task in TINY.tasks:
        assert store.get(task).seeds == task.test_seeds


def test_reference_store__a_stale_entry_is_computed_again_with_a_warning(
    tmp_path: Path, cache: Path, serial_run: SuiteRun, caplog: pytest.LogCaptureFixture
) -> None:
    del serial_run
    document = json.loads((cache / "tiny-suite-v3-references.json").read_text())
    stale = document["tasks"]["planted5"]
    stale["scenario_sha256"] = "0" * 64  # made for another version of the scenario file
    stale[references.CHECKSUM_KEY] = references.TaskReference.from_json(stale).checksum()  # and written whole
    (tmp_path / "tiny-suite-v3-references.json").write_text(json.dumps(document))
    store = ReferenceStore(TINY, None, bundled_dir=tmp_path)
    with caplog.at_level(logging.WARNING):
        entry = store.get(TINY.task("planted5"))
    assert "planted5: the stored reference is stale (its scenario_sha256 differs)" in caplog.text
    assert entry.scenario_sha256 == TINY.task("planted5").scenario_sha256()


def _must_not_compute(*args: object) -> None:
    raise AssertionError("the reference was computed again instead of read from the cache")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Backend]:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    with make_backend("ray") as backend:
        yield backend


@pytest.mark.ray
def test_run_suite__the_ray_backend_gives_the_scores_of_serial(
    cache: Path, serial_run: SuiteRun, local_ray: Backend
) -> None:
    on_ray = _run(cache, local_ray)
    assert without_seconds(suite_run_json(on_ray)) == without_seconds(suite_run_json(serial_run))


@pytest.mark.subprocess
def test_run_suite__the_process_pool_gives_the_scores_of_serial(cache: Path, serial_run: SuiteRun) -> None:
    with make_backend("processes") as pool:
        in_pool = _run(cache, pool)
    assert without_seconds(suite_run_json(in_pool)) == without_seconds(suite_run_json(serial_run))


def test_run_suite__merging_runs_of_other_agents_gives_the_run_of_them_all(cache: Path, serial_run: SuiteRun) -> None:
    first = _run(cache, SerialBackend(), agents=["first-fit"])
    rest = _run(cache, SerialBackend(), agents=["cheapest", "aco"])
    merged = first.merged(rest)
    assert without_seconds(suite_run_json(merged)) == without_seconds(suite_run_json(serial_run))


def test_run_suite__an_agent_added_on_some_tasks_has_aggregates_only_over_groups_it_played(
    cache: Path, serial_run: SuiteRun
) -> None:
    store = ReferenceStore(TINY, cache, bundled_dir=cache / "none")
    only_default = run_suite(TINY, ["random"], [TINY.task("default")], store, progress=False)
    merged = serial_run.merged(only_default)
    assert merged.missing("random") == ("planted5",)
    assert "random" in merged.aggregates("held-out")
    assert "random" not in merged.aggregates("train") and "random" not in merged.aggregates("all")
    assert set(merged.aggregates("all")) == set(AGENTS)
    with pytest.raises(SuiteError, match="played in both runs: random on default"):
        merged.merged(only_default)
    on_planted = run_suite(TINY, ["random"], [TINY.task("planted5")], store, progress=False)
    in_parts = merged.merged(on_planted)  # one agent, played in two parts
    assert in_parts.agents == (*AGENTS, "random") and not in_parts.missing("random")
    reversed_order = only_default.merged(serial_run)  # the tasks of either, in the suite's order
    assert [run.task.name for run in reversed_order.tasks] == ["planted5", "default"]
    assert reversed_order.missing("random") == ("planted5",)
