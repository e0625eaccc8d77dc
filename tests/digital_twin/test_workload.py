"""Workload: a tuple of JobSpec held as columns, each JobSpec made on demand."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from digital_twin import WORKLOAD_TYPES, JobSpec, SpecError
from digital_twin.workload import Workload
from digital_twin.workloads.job_mix import AZURE_JOB_SIZES
from digital_twin.workloads.synthetic import SyntheticWorkloadConfig, generate_jobs
from tests.strategies import jobs as job_strategy


def _jobs() -> list[JobSpec]:
    return [
        JobSpec("late", 30.0, 60.0, "batch", 2, 4, preemptible=True),
        JobSpec("gpu", 10.0, 120.0, "stream", 8, 32, gpu_count=2, gpu_vram_gb=40.0, allowed_gpu_models=("A100",)),
        JobSpec("tie", 10.0, 5.0, "latency-critical", 1, 2, priority=90, deadline_s=70, required_arch="arm64"),
    ]


def test_of__sorts_by_arrival_keeping_ties_in_order_and_behaves_as_a_tuple() -> None:
    jobs = _jobs()
    workload = Workload.of(jobs)
    expected = (jobs[1], jobs[2], jobs[0])
    assert workload == expected and expected == workload and workload == list(expected)
    assert hash(workload) == hash(expected)
    assert len(workload) == 3 and workload[-1] is jobs[0] and workload[0:2] == expected[:2]
    assert list(workload) == list(expected) and jobs[2] in workload
    assert workload != expected[:2] and workload != (jobs[1], jobs[0], jobs[2])
    with pytest.raises(IndexError):
        workload[3]
    assert Workload.of(workload) is workload


def test_of__columns_hold_every_field() -> None:
    workload = Workload.of(_jobs())
    assert workload.job_ids == ["gpu", "tie", "late"]
    assert workload.arrival_s.tolist() == [10.0, 10.0, 30.0]
    assert workload.cpu_cores.tolist() == [8.0, 1.0, 2.0] and workload.gpu_count.tolist() == [2, 0, 0]
    assert [WORKLOAD_TYPES[w] for w in workload.workload_index] == ["stream", "latency-critical", "batch"]
    assert workload.preemptible.tolist() == [False, False, True]
    assert np.isnan(workload.deadline_s[[0, 2]]).all() and workload.deadline_s[1] == 70.0
    assert workload.deadlines() == [None, 70.0, None]
    assert workload.allowed_gpu_models == [("A100",), None, None] and workload.required_arch == [None, "arm64", None]
    with pytest.raises(ValueError):
        workload.arrival_s[0] = 1.0  # read-only


def _same_columns(a: Workload, b: Workload) -> bool:
    """Every column of ``a`` equals ``b``'s (NaN deadlines equal), lists and arrays alike."""
    names = ("job_ids", "allowed_gpu_models", "required_arch")
    arrays = ("arrival_s", "duration_s", "cpu_cores", "mem_gb", "gpu_count", "gpu_vram_gb", "priority",
              "preemptible", "deadline_s", "workload_index")  # fmt: skip
    same_arrays = (
        getattr(a, name).dtype == getattr(b, name).dtype and np.array_equal(getattr(a, name), getattr(b, name), True)
        for name in arrays
    )
    return all(getattr(a, name) == getattr(b, name) for name in names) and all(same_arrays)


JOB_TUPLES = st.integers(0, 12).flatmap(lambda n: st.tuples(*[job_strategy(i, 3600.0) for i in range(n)]))
"""Up to 12 random jobs."""


@settings(max_examples=60, deadline=None)
@given(JOB_TUPLES, st.integers(0, 13))
def test_head_and_then__are_the_workloads_of_the_parts(jobs: tuple[JobSpec, ...], cut: int) -> None:
    """``head(k)`` is the workload of the first k jobs; a workload ``then`` the rest is the whole, columns too."""
    whole = Workload.of(jobs)
    first, rest = Workload.of(whole[:cut]), Workload.of(whole[cut:])
    assert whole.head(cut) == first and _same_columns(whole.head(cut), first)
    joined = first.then(rest)
    assert joined == whole and _same_columns(joined, whole) and joined.deadlines() == whole.deadlines()
    assert first.then(Workload.of(())) is first and whole.head(len(whole)) is whole


def test_then__refuses_an_earlier_arrival_or_a_reused_id() -> None:
    """The jobs appended must arrive at or after the last one and have ids of their own."""
    workload = Workload.of(_jobs())
    with pytest.raises(SpecError, match="'early' arrives at 5 s, before the last job 'late'"):
        workload.then(Workload.of([JobSpec("early", 5.0, 1.0, "batch", 1, 1)]))
    with pytest.raises(SpecError, match="duplicate job_id 'gpu'"):
        workload.then(Workload.of([JobSpec("gpu", 40.0, 1.0, "batch", 1, 1)]))


def test_of__duplicate_ids_name_the_job() -> None:
    with pytest.raises(SpecError, match="duplicate job_id 'a'"):
        Workload.of([JobSpec("a", 0.0, 1.0, "batch", 1, 1), JobSpec("a", 1.0, 1.0, "batch", 1, 1)])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 12).flatmap(lambda n: st.tuples(*[job_strategy(i, 3600.0) for i in range(n)])))
def test_from_columns__builds_the_same_jobs_as_of(jobs: tuple[JobSpec, ...]) -> None:
    """Any job list without GPU-model or arch constraints survives columns -> JobSpec exactly."""
    jobs = tuple(j for j in jobs if j.allowed_gpu_models is None and j.required_arch is None)
    of = Workload.of(jobs)
    rebuilt = Workload.from_columns(
        job_ids=list(of.job_ids), arrival_s=of.arrival_s, duration_s=of.duration_s,
        workload_index=of.workload_index, cpu_cores=of.cpu_cores, mem_gb=of.mem_gb, gpu_count=of.gpu_count,
        gpu_vram_gb=of.gpu_vram_gb, priority=of.priority, preemptible=of.preemptible, deadline_s=of.deadline_s,
    )
    assert rebuilt == of  # every field equal (an int field of the original may come back as a float)
    assert [j.deadline_s is None for j in rebuilt] == [j.deadline_s is None for j in of]


def _columns(n: int = 3, **changes: object) -> dict[str, object]:
    columns: dict[str, object] = {
        "job_ids": [f"j{k}" for k in range(n)],
        "arrival_s": np.arange(n, dtype=float),
        "duration_s": np.full(n, 10.0),
        "workload_index": np.zeros(n, dtype=np.int64),
        "cpu_cores": np.ones(n),
        "mem_gb": np.ones(n),
        "gpu_count": np.zeros(n, dtype=np.int64),
        "gpu_vram_gb": np.zeros(n),
        "priority": np.full(n, 50),
        "preemptible": np.zeros(n, dtype=bool),
        "deadline_s": np.full(n, np.nan),
    }
    columns.update(changes)
    return columns


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"duration_s": np.array([10.0, math.nan, 10.0])}, "job 'j1': bad duration_s"),
        ({"cpu_cores": np.array([1.0, 1.0, -1.0])}, "job 'j2': bad cpu_cores"),
        ({"priority": np.array([0, 50, 50])}, "job 'j0': bad priority"),
        ({"deadline_s": np.array([np.nan, -5.0, np.nan])}, "job 'j1': bad deadline_s"),
        ({"workload_index": np.array([0, 3, 0])}, "job 'j1': bad workload"),
        ({"arrival_s": np.array([0.0, 5.0, 1.0])}, "arrival_s is not sorted"),
        ({"job_ids": ["a", "b", "a"]}, "duplicate job_id 'a'"),
        ({"mem_gb": np.ones(2)}, "column mem_gb has shape"),
    ],
)
def test_from_columns__bad_values_name_the_job_and_field(changes: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        Workload.from_columns(**_columns(**changes))  # type: ignore[arg-type]


def test_jobs_are_made_once_on_first_access_and_survive_pickling() -> None:
    workload = generate_jobs(SyntheticWorkloadConfig(cpu_sizes=AZURE_JOB_SIZES, lc_deadline_slack_s=300.0),
                             np.random.default_rng(3), 7200.0)
    assert all(job is None for job in workload._jobs)
    first = workload[5]
    assert workload[5] is first and sum(job is not None for job in workload._jobs) == 1
    copy = pickle.loads(pickle.dumps(workload))
    assert copy == workload and copy.job_ids == workload.job_ids


def test_workload_take__copies_the_chosen_jobs_and_refers_to_no_other() -> None:
    """take(indices): a workload of those jobs alone, its columns copies; with durations, those replace theirs."""
    jobs = [JobSpec(f"j{k}", float(k), 60.0 + k, "batch", 1, 2, declared_duration_s=600.0) for k in range(5)]
    workload = Workload.of(jobs)
    taken = workload.take([0, 3, 4])
    assert tuple(taken) == (jobs[0], jobs[3], jobs[4]) and taken[1] is workload[3]
    for name in ("arrival_s", "duration_s", "declared_duration_s"):
        assert not np.shares_memory(getattr(taken, name), getattr(workload, name))
    declared = workload.take([1, 2], duration_s=workload.declared_or_true_s()[[1, 2]])
    assert declared.duration_s.tolist() == [600.0, 600.0] and declared[0].declared_duration_s == 600.0
    assert len(workload.take([])) == 0
    with pytest.raises(ValueError, match="shape"):
        workload.take([1, 2], duration_s=np.ones(3))
