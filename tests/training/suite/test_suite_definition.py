"""The suite's definition: the repository's file loads and holds together; malformed files are refused.

Every task's seed ranges are disjoint and inside the evaluation protocol's range of the same
purpose; every task's scenario validates (where its data is present); the suite is made for the
registered environment; the repository's references were made from this very suite (same version,
environment, scenario files and seeds), and each reference beats the weak baseline.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import yaml
from gymnasium.utils import seeding

import scenarios
from aco_env import ClusterSchedulingEnv
from aco_env.registration import CLUSTER_SCHEDULING_ID
from training.evaluation.protocol import TEST, TRAINING, VALIDATION
from training.suite.definition import GROUPS, SUITE_FILE, SUITE_V1_FILE, SuiteError, load_suite
from training.suite.references import BUNDLED_DIR, ReferenceStore

SUITE = load_suite()
V1 = load_suite(SUITE_V1_FILE)


def test_suite__seed_ranges_never_overlap_and_lie_in_the_protocol_ranges_of_their_purpose() -> None:
    for task in SUITE.tasks:
        ranges = task.seeds.ranges()
        for first, second in itertools.combinations(ranges, 2):
            assert set(range(first.start, first.stop)).isdisjoint(range(second.start, second.stop)), task.name
        for chosen, protocol in zip(ranges, (TRAINING, VALIDATION, TEST), strict=True):
            assert protocol.start <= chosen.start < chosen.stop <= protocol.stop, (task.name, chosen)
        assert task.test_seeds == tuple(range(task.seeds.test.start, task.seeds.test.stop))


def test_suite__is_made_for_the_registered_environment_and_names_its_tasks_once() -> None:
    assert SUITE.env == CLUSTER_SCHEDULING_ID
    names = [task.name for task in SUITE.tasks]
    assert len(names) == len(set(names))
    assert {task.group for task in SUITE.tasks} == set(GROUPS)
    assert SUITE.path == SUITE_FILE
    assert (SUITE.version, SUITE.superseded_by, V1.version, V1.superseded_by) == (2, None, 1, 2)


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda task: task.name)
def test_suite__every_task_validates(task) -> None:  # type: ignore[no-untyped-def]
    scenario = scenarios.load(task.scenario)
    if scenario.missing_data():
        pytest.skip(f"{task.scenario}: trace data absent ({scenario.missing_data()[0]})")
    scenario.make_spec(np.random.default_rng(scenario.seed))  # what `aco-env validate` checks
    env = ClusterSchedulingEnv(scenario)
    observation, _ = env.reset(seed=task.test_seeds[0])
    assert env.observation_space.contains(observation)
    env.close()
    assert (task.reference.kind == "planted") == scenario.planted


@pytest.mark.parametrize(
    ("suite", "task"),
    [(suite, task) for suite in (SUITE, V1) for task in suite.tasks],
    ids=lambda x: x.label.replace(" ", "-") if hasattr(x, "label") else x.name,
)
def test_suite__the_repository_s_reference_of_every_task_was_made_from_its_suite(suite, task) -> None:  # type: ignore[no-untyped-def]
    """v2 and the superseded v1: every shipped reference matches its suite, scenario files and seeds."""
    store = ReferenceStore(suite, cache_dir=None)
    entry = store._entries.get(task.name)
    assert entry is not None, f"{task.name}: no reference in {BUNDLED_DIR / store.file_name}"
    assert entry.matches(suite, task) is None, f"{task.name}: {entry.matches(suite, task)}: bump the suite's version"
    assert entry.reference_mean < entry.baseline_mean
    assert all(bound <= reference + 1e-6 for bound, reference in zip(entry.bound_usd, entry.reference_usd, strict=True))


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda task: task.name)
def test_suite_v2__one_random_episode_s_score_has_a_standard_deviation_of_at_most_1(task) -> None:  # type: ignore[no-untyped-def]
    """The margin rule keeps every task's scale wide enough: the weak baseline's normalised scores spread <= 1."""
    entry = ReferenceStore(SUITE, cache_dir=None)._entries[task.name]
    span = entry.baseline_mean - entry.one_mean
    scores = (entry.baseline_mean - np.array(entry.baseline_usd)) / span
    assert scores.std() <= 1.0
    assert (entry.normalised_by == "bound") == (entry.margin < (SUITE.min_reference_margin or 0.0))


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda task: task.name)
def test_suite_v2__every_test_seed_plays_its_own_jobs(task) -> None:  # type: ignore[no-untyped-def]
    """No two test seeds of a v2 task give the same job list (ids, arrivals, sizes)."""
    scenario = scenarios.load(task.scenario)
    if scenario.missing_data():
        pytest.skip(f"{task.scenario}: trace data absent ({scenario.missing_data()[0]})")
    seeds = task.test_seeds if len(scenario.fleet) <= 50 else task.test_seeds[:5]  # 500 nodes: bound the work
    lists = set()
    for seed in seeds:
        generator, _ = seeding.np_random(seed)  # the env's reset(seed=...) generator
        jobs = scenario.make_spec(generator).jobs
        lists.add(tuple((job.job_id, job.arrival_s, job.cpu_cores, job.gpu_count) for job in jobs))
    assert len(lists) == len(seeds)


def _write(tmp_path: Path, change) -> Path:  # type: ignore[no-untyped-def]
    document = yaml.safe_load(SUITE_FILE.read_text())
    change(document)
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _task(document: dict, index: int = 0) -> dict:  # type: ignore[type-arg]
    return document["tasks"][index]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: _task(d).update(seeds={"test": [4000, 4020]}), r"tasks\[0\] \(default-synthetic\): seeds: test"),
        (lambda d: _task(d).update(seeds={"train": [0, 6000]}), r"default-synthetic\): seeds: train: \[0, 6000\]"),
        (lambda d: _task(d).update(seeds={"validation": [5010, 5000]}), r"validation: \[5010, 5000\]"),
        (lambda d: _task(d).update(scenario="no-such-scenario"), r"default-synthetic\): scenario: 'no-such"),
        (lambda d: _task(d).update(reference="exact-oracle"), r"reference: 'planted' or one of"),
        (lambda d: _task(d).update(group="dev"), r"group: one of train, held-out"),
        (lambda d: _task(d).update(colour="red"), r"unknown key\(s\) colour"),
        (lambda d: _task(d, 1).update(name="default-synthetic"), r"each name once; repeated: default-synthetic"),
        (lambda d: d.update(version=0), r"version: a positive integer"),
        (lambda d: d.pop("tasks"), r"tasks: a non-empty list"),
    ],
)
def test_load_suite__refuses_a_malformed_file_naming_file_task_and_key(tmp_path: Path, change, message: str) -> None:  # type: ignore[no-untyped-def]
    path = _write(tmp_path, change)
    with pytest.raises(SuiteError, match=message) as caught:
        load_suite(path)
    assert str(path) in str(caught.value)


def test_load_suite__refuses_a_file_that_is_not_yaml(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("tasks: [\n")
    with pytest.raises(SuiteError, match=r"broken\.yaml: cannot read the suite"):
        load_suite(path)
