"""Job sources on the real public traces, the synthetic generator and inline lists."""

from __future__ import annotations

import collections
import csv
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from digital_twin.errors import SpecError, TraceError
from digital_twin.fleet import ALIBABA_GPU_MODELS
from digital_twin.jobs import BATCH, LATENCY_CRITICAL, STREAM, JobSpec
from digital_twin.workloads import (
    ALIBABA_QOS_POLICIES,
    API_SIMULATION_MIX,
    AZURE_JOB_SIZES,
    POD_PHASES,
    REFERENCE_QOS_POLICIES,
    RowOrderTiming,
    ServiceTimeModel,
    SyntheticWorkloadConfig,
    generate_jobs,
    jobs_from_dicts,
    load_alibaba_gpu_pods,
    load_azure_llm_requests,
    load_swf_jobs,
    read_swf_header,
)
from digital_twin.workloads.synthetic import _categorical, _cdf
from tests.paths import TRACES

GPU_DIR = "alibaba-gpu-2023"
SWF = "swf-nasa-ipsc-1993/NASA-iPSC-1993-3.1-cln.swf"
AZURE_LLM = "azure-llm-inference-2023-conv/AzureLLMInferenceTrace_conv.csv"
# The upstream pod lists (alibaba/clusterdata cluster-trace-gpu-v2023/csv).
POD_LISTS_11 = [
    "default",
    "cpu0",
    "cpu037",
    "cpu050",
    "cpu072",
    "cpu100",
    "cpu200",
    "cpu235",
    "cpu250",
    "cpu300",
    "gpushare20",
    "gpushare40",
    "gpushare60",
    "gpushare80",
    "gpushare100",
    "gpuspec05",
    "gpuspec10",
    "gpuspec20",
    "gpuspec25",
    "gpuspec33",
]
POD_LISTS_5 = ["multigpu20", "multigpu30", "multigpu40", "multigpu50"]


def real(relative: str) -> Path:
    """The real trace file, or skip the test when the traces are not on this machine."""
    path = TRACES / relative
    if not path.is_file():
        pytest.skip(f"{relative} not present (set ACO_ENV_TRACES to the traces folder)")
    return path


def pod_list(variant: str) -> Path:
    return real(f"{GPU_DIR}/openb_pod_list_{variant}.csv")


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file, read independently of the code under test."""
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def assert_workload(jobs: tuple[JobSpec, ...], start_s: float = 0.0) -> None:
    """The contract of every source: sorted, shifted, unique ids, positive sizes."""
    arrivals = np.array([j.arrival_s for j in jobs])
    assert np.all(np.diff(arrivals) >= 0)
    assert arrivals[0] == start_s
    assert len({j.job_id for j in jobs}) == len(jobs)
    assert all(j.duration_s > 0 and j.cpu_cores > 0 and j.mem_gb > 0 for j in jobs)


# --- Alibaba GPU 2023 -----------------------------------------------------------------------


@pytest.mark.parametrize("variant", POD_LISTS_11)
def test_alibaba_gpu_pods__every_11_column_file_loads_without_pending(variant: str) -> None:
    """Each full pod list loads every non-Pending pod, sorted, with the QoS mapping applied."""
    path = pod_list(variant)
    rows = {r["name"]: r for r in csv_rows(path)}
    jobs = load_alibaba_gpu_pods(path)
    assert_workload(jobs)
    assert len(jobs) == sum(r["pod_phase"] != "Pending" for r in rows.values())
    for job in jobs:
        row = rows[job.job_id]
        policy = ALIBABA_QOS_POLICIES[row["qos"]]
        assert (job.workload, job.priority, job.preemptible) == (
            policy.workload,
            policy.priority,
            policy.preemptible,
        )
        assert job.gpu_count == int(row["num_gpu"])
        assert job.cpu_cores == max(0.5, int(row["cpu_milli"]) / 1000)


def test_alibaba_gpu_pods__default_file_loads_every_pod_with_all_phases() -> None:
    """With every phase selected each of the 8,152 rows is a job (the load time is measured by
    `aco-env bench --only traces`, never asserted)."""
    path = pod_list("default")
    jobs = load_alibaba_gpu_pods(path, phases=POD_PHASES)
    assert_workload(jobs)
    assert len(jobs) == len(csv_rows(path)) == 8152


def test_alibaba_gpu_pods__failed_pods_keep_their_observed_run_time() -> None:
    """A Failed pod's duration is deletion_time - scheduled_time, its arrival creation_time."""
    path = pod_list("default")
    all_rows = csv_rows(path)
    rows = [r for r in all_rows if r["pod_phase"] == "Failed"]
    first_creation = min(int(r["creation_time"]) for r in all_rows if r["pod_phase"] != "Pending")
    jobs = {j.job_id: j for j in load_alibaba_gpu_pods(path)}
    for row in rows[:200]:
        job = jobs[row["name"]]
        run_time = int(row["deletion_time"]) - int(row["scheduled_time"])
        assert job.duration_s == max(1.0, run_time)
        assert job.arrival_s == int(row["creation_time"]) - first_creation


def test_alibaba_gpu_pods__pending_pods_only_when_asked_with_lifetime_duration() -> None:
    """Pending pods are skipped by default; with phases they last deletion - creation (>= 1 s)."""
    path = pod_list("default")
    pending = {r["name"]: r for r in csv_rows(path) if r["pod_phase"] == "Pending"}
    assert len(pending) == 897
    assert not pending.keys() & {j.job_id for j in load_alibaba_gpu_pods(path)}
    jobs = load_alibaba_gpu_pods(path, phases=("Pending",))
    assert {j.job_id for j in jobs} == pending.keys()
    for job in jobs:
        row = pending[job.job_id]
        assert job.duration_s == max(1.0, int(row["deletion_time"]) - int(row["creation_time"]))
    assert min(j.duration_s for j in jobs) == 1.0  # the pod with creation == deletion


def test_alibaba_gpu_pods__reference_t41_filter_count() -> None:
    """Running+Succeeded GPU pods of gpuspec33 number 4,334, as in the reference's T4.1."""
    jobs = load_alibaba_gpu_pods(
        pod_list("gpuspec33"), phases=("Running", "Succeeded"), qos_policies=REFERENCE_QOS_POLICIES
    )
    gpu_jobs = [j for j in jobs if j.gpu_count >= 1]
    assert len(gpu_jobs) == 4334
    assert {(j.workload, j.priority) for j in gpu_jobs} == {(LATENCY_CRITICAL, 80), (BATCH, 30)}


def test_alibaba_gpu_pods__gpu_spec_gives_allowed_models_and_min_vram() -> None:
    """gpu_spec 'A|B' becomes allowed_gpu_models and the smallest VRAM of those models."""
    path = pod_list("gpuspec33")
    rows = {r["name"]: r for r in csv_rows(path)}
    jobs = load_alibaba_gpu_pods(path, phases=POD_PHASES)
    constrained = [j for j in jobs if j.allowed_gpu_models]
    assert len(constrained) == sum(bool(r["gpu_spec"]) for r in rows.values())
    for job in constrained:
        models = rows[job.job_id]["gpu_spec"].split("|")
        assert set(job.allowed_gpu_models) == set(models)
        assert len(job.allowed_gpu_models) == len(set(models))  # duplicates dropped
        assert job.gpu_vram_gb == min(ALIBABA_GPU_MODELS[m][2] for m in models)
    unconstrained = [j for j in jobs if j.allowed_gpu_models is None]
    assert all(j.gpu_vram_gb == 0.0 for j in unconstrained)


def test_alibaba_gpu_pods__shared_gpu_takes_one_whole_gpu() -> None:
    """A pod with gpu_milli < 1000 (GPU sharing) asks for exactly one whole GPU."""
    path = pod_list("gpushare100")
    shared = {r["name"] for r in csv_rows(path) if 0 < int(r["gpu_milli"]) < 1000}
    jobs = [j for j in load_alibaba_gpu_pods(path, phases=POD_PHASES) if j.job_id in shared]
    assert len(jobs) == len(shared) > 0
    assert all(j.gpu_count == 1 for j in jobs)


def test_alibaba_gpu_pods__unsorted_variant_is_sorted_by_creation_time() -> None:
    """An unsorted variant comes out in creation_time order, first pod at 0."""
    path = pod_list("cpu037")
    rows = [r for r in csv_rows(path) if r["pod_phase"] != "Pending"]
    created = [int(r["creation_time"]) for r in rows]
    assert created != sorted(created)  # the file really is unsorted
    jobs = load_alibaba_gpu_pods(path)
    assert [j.arrival_s for j in jobs] == [t - min(created) for t in sorted(created)]


@pytest.mark.parametrize("variant", POD_LISTS_5)
def test_alibaba_gpu_pods__five_column_file_needs_row_order(variant: str) -> None:
    """A multigpu file is rejected by default and loads in row order with RowOrderTiming."""
    path = pod_list(variant)
    with pytest.raises(TraceError, match=rf"openb_pod_list_{variant}\.csv: .*row_order"):
        load_alibaba_gpu_pods(path)
    rows = csv_rows(path)
    jobs = load_alibaba_gpu_pods(path, row_order=RowOrderTiming(interarrival_s=5, duration_s=60))
    assert_workload(jobs)
    assert [j.job_id for j in jobs] == [r["name"] for r in rows]
    assert [j.arrival_s for j in jobs] == [5.0 * k for k in range(len(rows))]
    assert {(j.duration_s, j.workload, j.preemptible) for j in jobs} == {(60.0, BATCH, True)}


def test_alibaba_gpu_pods__limit_window_and_start() -> None:
    """time_window selects by creation_time, limit keeps the earliest, start_s shifts."""
    path = pod_list("default")
    all_jobs = load_alibaba_gpu_pods(path)
    window = (11_000_000, 11_100_000)
    jobs = load_alibaba_gpu_pods(path, time_window=window, limit=40, start_s=100.0)
    assert len(jobs) == 40
    assert_workload(jobs, start_s=100.0)
    in_window = [
        r["name"]
        for r in sorted(csv_rows(path), key=lambda r: int(r["creation_time"]))
        if r["pod_phase"] != "Pending" and window[0] <= int(r["creation_time"]) < window[1]
    ]
    assert [j.job_id for j in jobs] == in_window[:40]
    assert load_alibaba_gpu_pods(path, limit=0) == ()
    assert load_alibaba_gpu_pods(path, limit=25) == all_jobs[:25]


# --- SWF ----------------------------------------------------------------------------------------


def test_swf__nasa_log_loads_every_job_with_zero_runtimes_raised() -> None:
    """All 18,239 jobs load (173 zero run times become 1 s); batch, sorted, sized from procs."""
    path = real(SWF)
    jobs = load_swf_jobs(path)
    assert len(jobs) == 18_239
    assert_workload(jobs)
    assert sum(j.duration_s == 1.0 for j in jobs) >= 173
    assert {j.workload for j in jobs} == {BATCH}
    assert {j.priority for j in jobs} == {50}
    assert all(j.preemptible for j in jobs)
    cores = {j.cpu_cores for j in jobs}
    assert cores <= {float(2**k) for k in range(8)} and max(cores) == 128
    assert all(j.mem_gb == 2.0 * j.cpu_cores for j in jobs)  # no memory in this log


def test_swf__zero_runtime_jobs_can_be_skipped() -> None:
    """zero_runtime_s=None drops the 173 jobs whose run_time is 0."""
    assert len(load_swf_jobs(real(SWF), zero_runtime_s=None)) == 18_239 - 173


def test_swf__header_metadata_is_parsed() -> None:
    """The '; Key: value' header gives MaxProcs, UnixStartTime, the queues and the notes."""
    header = read_swf_header(real(SWF))
    assert header.max_procs == 128 and header.max_nodes == 128
    assert header.unix_start_time == 749458803
    assert header.queues == {0: "interactive", 1: "batch"}
    assert any("start times" in note for note in header.get_all("Note"))
    assert (header.get("Information") or "").count("http") == 2  # continuation line joined


def test_swf__cores_per_proc_memory_and_queue_priority(tmp_path: Path) -> None:
    """Procs x cores_per_proc; memory KB per proc; requested procs fallback; queue priorities."""
    lines = [
        "; MaxProcs: 8",
        #  id sub wait run alloc cpu usedmem req reqtime reqmem st u g ex queue part prec think
        "1 10 -1 100 4 -1 1048576 -1 -1 -1 1 1 1 -1 1 -1 -1 -1",
        "2 20 -1 50 -1 -1 -1 2 -1 524288 1 1 1 -1 0 -1 -1 -1",
        "3 30 -1 -1 4 -1 -1 -1 -1 -1 5 1 1 -1 1 -1 -1 -1",
        "4 40 -1 60 -1 -1 -1 -1 -1 -1 0 1 1 -1 1 -1 -1 -1",
        "5\t50\t-1\t70\t1\t-1\t-1\t-1\t-1\t-1\t1\t1\t1\t-1\t-1\t-1\t-1\t-1",
    ]
    path = tmp_path / "small.swf"
    path.write_text("\n".join(lines) + "\n")
    jobs = load_swf_jobs(
        path, cores_per_proc=2.0, queue_priority={0: 90, 1: 10}, preemptible=False, start_s=5.0
    )
    by_id = {j.job_id: j for j in jobs}
    assert set(by_id) == {"swf-1", "swf-2", "swf-5"}  # 3: run time unknown, 4: no procs
    assert (by_id["swf-1"].cpu_cores, by_id["swf-1"].mem_gb) == (8.0, 4.0)
    assert (by_id["swf-2"].cpu_cores, by_id["swf-2"].mem_gb) == (4.0, 1.0)
    assert by_id["swf-5"].mem_gb == 4.0  # mem_gb_per_core x cores
    assert [by_id[k].priority for k in ("swf-1", "swf-2", "swf-5")] == [10, 90, 50]
    assert [j.arrival_s for j in jobs] == [5.0, 15.0, 45.0]
    assert not any(j.preemptible for j in jobs)


# --- Azure LLM -------------------------------------------------------------------------------


def test_azure_llm__every_request_is_a_latency_critical_gpu_job() -> None:
    """19,366 requests over about 58 min become LC one-GPU jobs with the linear service time."""
    path = real(AZURE_LLM)
    jobs = load_azure_llm_requests(path)
    assert len(jobs) == 19_366
    assert_workload(jobs)
    assert 3400 < jobs[-1].arrival_s < 3600
    assert 5.0 < len(jobs) / jobs[-1].arrival_s < 6.0  # about 5.5 requests/s
    assert {(j.workload, j.gpu_count, j.preemptible) for j in jobs} == {
        (LATENCY_CRITICAL, 1, False)
    }
    rows = csv_rows(path)
    model = ServiceTimeModel()
    for k in (0, 1, 5000, 19_365):
        expected = (
            model.overhead_s
            + model.prefill_s_per_token * int(rows[k]["ContextTokens"])
            + model.decode_s_per_token * int(rows[k]["GeneratedTokens"])
        )
        assert math.isclose(jobs[k].duration_s, expected)
        assert jobs[k].job_id == f"llm-{k}"
    assert math.isclose(jobs[1].arrival_s, 4.3145790)  # 18:15:50.9951690 - 18:15:46.6805900


def test_azure_llm__sampling_rate_scale_and_deadlines() -> None:
    """sample_every keeps every k-th request, rate_scale stretches gaps, slack sets deadlines."""
    path = real(AZURE_LLM)
    base = load_azure_llm_requests(path, sample_every=100, limit=30)
    slow = load_azure_llm_requests(
        path, sample_every=100, limit=30, rate_scale=0.5, deadline_slack_s=2.0, start_s=10.0
    )
    assert [j.job_id for j in base] == [f"llm-{100 * k}" for k in range(30)]
    assert [j.job_id for j in slow] == [j.job_id for j in base]
    for a, b in zip(base, slow, strict=True):
        assert math.isclose(b.arrival_s, 10.0 + 2.0 * a.arrival_s)
        assert b.deadline_s == b.arrival_s + 2.0
    window = load_azure_llm_requests(path, time_window=(600, 660), gpu_count=2, gpu_vram_gb=40)
    assert 200 < len(window) < 500
    assert {(j.gpu_count, j.gpu_vram_gb) for j in window} == {(2, 40.0)}


# --- Synthetic ------------------------------------------------------------------------------


def test_synthetic__same_seed_same_jobs_different_seed_different() -> None:
    """The generator is a pure function of (config, seed, horizon)."""
    config = SyntheticWorkloadConfig(cpu_sizes=AZURE_JOB_SIZES, lc_deadline_slack_s=30.0)
    a = generate_jobs(config, np.random.default_rng(7), 86_400.0)
    b = generate_jobs(config, np.random.default_rng(7), 86_400.0)
    c = generate_jobs(config, np.random.default_rng(8), 86_400.0)
    assert a == b
    assert a != c
    assert_workload(a, start_s=a[0].arrival_s)
    assert all(0 <= j.arrival_s < 86_400.0 for j in a)


def test_synthetic__limit_keeps_a_prefix_of_the_unlimited_run() -> None:
    """generate_jobs(limit=n) equals the first n jobs of the same seed without a limit."""
    config = SyntheticWorkloadConfig()
    full = generate_jobs(config, np.random.default_rng(3), 20_000.0)
    assert generate_jobs(config, np.random.default_rng(3), 20_000.0, limit=25) == full[:25]


def _peak_to_trough(amplitude: float) -> float:
    config = SyntheticWorkloadConfig(base_rate_per_s=1 / 60, diurnal_amplitude=amplitude)
    jobs = generate_jobs(config, np.random.default_rng(11), 20 * 86_400.0)
    hour = (np.array([j.arrival_s for j in jobs]) % 86_400.0) / 3600.0

    def within_3h_of(centre: float) -> int:
        distance = np.abs((hour - centre + 12.0) % 24.0 - 12.0)  # circular, in hours
        return int(np.sum(distance < 3.0))

    return within_3h_of(14.0) / within_3h_of(2.0)  # the default peak is 14:00, trough 02:00


def test_synthetic__diurnal_rate_has_more_arrivals_near_the_peak() -> None:
    """With amplitude 0.5, +-3 h around the peak gets ~2.6x the trough's arrivals; flat ~1x."""
    assert 2.0 < _peak_to_trough(0.5) < 3.4
    assert 0.85 < _peak_to_trough(0.0) < 1.15


def test_synthetic__mean_rate_matches_base_rate() -> None:
    """Over whole days the arrival count is base_rate x horizon (within 5 %)."""
    config = SyntheticWorkloadConfig(base_rate_per_s=1 / 30)
    jobs = generate_jobs(config, np.random.default_rng(5), 10 * 86_400.0)
    assert abs(len(jobs) / (10 * 86_400 / 30) - 1) < 0.05


def test_synthetic__mix_proportions_follow_the_reference_mix() -> None:
    """Uniform API mix: 1/2 batch, 1/4 LC, 1/4 stream, 1/8 GPU; batch 30 % preemptible."""
    config = SyntheticWorkloadConfig(base_rate_per_s=1 / 30)
    jobs = generate_jobs(config, np.random.default_rng(2), 10 * 86_400.0)
    n = len(jobs)
    share = collections.Counter(j.workload for j in jobs)
    assert abs(share[BATCH] / n - 0.5) < 0.03
    assert abs(share[LATENCY_CRITICAL] / n - 0.25) < 0.03
    assert abs(share[STREAM] / n - 0.25) < 0.03
    gpu = [j for j in jobs if j.gpu_count]
    assert abs(len(gpu) / n - 0.125) < 0.02
    assert all(
        (j.gpu_count, j.cpu_cores, j.mem_gb, j.allowed_gpu_models) == (1, 4, 16, None) for j in gpu
    )
    batch = [j for j in jobs if j.workload == BATCH]
    assert abs(sum(j.preemptible for j in batch) / len(batch) - 0.3) < 0.03
    assert not any(j.preemptible for j in jobs if j.workload != BATCH)
    classes = {(c.workload, c.cpu_cores, c.mem_gb, c.priority) for c in API_SIMULATION_MIX}
    assert {(j.workload, j.cpu_cores, j.mem_gb, j.priority) for j in jobs} == classes


def test_synthetic__azure_sizes_durations_and_deadlines() -> None:
    """AZURE_JOB_SIZES cores with 2 GB/core, lognormal medians per type, LC deadlines."""
    config = SyntheticWorkloadConfig(
        base_rate_per_s=1 / 30, cpu_sizes=AZURE_JOB_SIZES, lc_deadline_slack_s=45.0
    )
    jobs = generate_jobs(config, np.random.default_rng(4), 10 * 86_400.0)
    cpu_jobs = [j for j in jobs if j.gpu_count == 0]
    sizes = collections.Counter(j.cpu_cores for j in cpu_jobs)
    assert set(sizes) <= set(AZURE_JOB_SIZES.sizes)
    assert abs(sizes[2] / len(cpu_jobs) - 0.45) < 0.03
    assert all(j.mem_gb == 2.0 * j.cpu_cores for j in cpu_jobs)
    for workload, median in ((LATENCY_CRITICAL, 120.0), (BATCH, 900.0), (STREAM, 1800.0)):
        observed = np.median([j.duration_s for j in jobs if j.workload == workload])
        assert abs(observed / median - 1) < 0.1
    for job in jobs:
        expected = job.arrival_s + 45.0 if job.workload == LATENCY_CRITICAL else None
        assert job.deadline_s == expected


def test_synthetic__lc_deadline_prob_decouples_the_deadline_from_the_class() -> None:
    """Below 1, about that share of LC jobs has the deadline (no other job does); the other columns are unchanged."""
    always = SyntheticWorkloadConfig(base_rate_per_s=1 / 30, lc_deadline_slack_s=60.0)
    half = SyntheticWorkloadConfig(base_rate_per_s=1 / 30, lc_deadline_slack_s=60.0, lc_deadline_prob=0.5)
    a = generate_jobs(always, np.random.default_rng(9), 5 * 86_400.0)
    b = generate_jobs(half, np.random.default_rng(9), 5 * 86_400.0)
    assert [dataclasses.replace(j, deadline_s=None) for j in a] == [dataclasses.replace(j, deadline_s=None) for j in b]
    lc = [j for j in b if j.workload == LATENCY_CRITICAL]
    assert abs(sum(j.deadline_s is not None for j in lc) / len(lc) - 0.5) < 0.05
    assert all(j.deadline_s in (None, j.arrival_s + 60.0) for j in lc)
    assert all(j.deadline_s is None for j in b if j.workload != LATENCY_CRITICAL)
    limited = generate_jobs(half, np.random.default_rng(9), 5 * 86_400.0, limit=40)
    assert limited == b[:40]
    with pytest.raises(SpecError, match="lc_deadline_prob"):
        SyntheticWorkloadConfig(lc_deadline_prob=1.5)


def test_synthetic__bad_arguments_raise_spec_error() -> None:
    """Bad rng, horizon, limit and config values are SpecErrors naming the parameter."""
    config = SyntheticWorkloadConfig()
    with pytest.raises(SpecError, match="rng"):
        generate_jobs(config, 42, 100.0)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="horizon_s"):
        generate_jobs(config, np.random.default_rng(0), 0.0)
    with pytest.raises(SpecError, match="limit"):
        generate_jobs(config, np.random.default_rng(0), 100.0, limit=-1)
    with pytest.raises(SpecError, match="diurnal_amplitude"):
        SyntheticWorkloadConfig(diurnal_amplitude=1.5)
    with pytest.raises(SpecError, match="max_duration_s"):
        SyntheticWorkloadConfig(min_duration_s=10.0, max_duration_s=5.0)


# --- Explicit list ---------------------------------------------------------------------------

JOB = {
    "job_id": "a",
    "arrival_s": 30.0,
    "duration_s": 60.0,
    "workload": "batch",
    "cpu_cores": 2,
    "mem_gb": 4,
}


def test_explicit__jobs_are_sorted_and_kept_or_shifted() -> None:
    """Inline jobs come back sorted; arrivals are kept unless start_s is given."""
    items = [
        JOB,
        {
            **JOB,
            "job_id": "b",
            "arrival_s": 10.0,
            "deadline_s": 20.0,
            "gpu_count": 1,
            "allowed_gpu_models": ["T4"],
        },
    ]
    jobs = jobs_from_dicts(items)
    assert [j.job_id for j in jobs] == ["b", "a"]
    assert jobs[0].allowed_gpu_models == ("T4",)
    shifted = jobs_from_dicts(items, start_s=0.0)
    assert [(j.arrival_s, j.deadline_s) for j in shifted] == [(0.0, 10.0), (20.0, None)]


@pytest.mark.parametrize(
    ("items", "match"),
    [
        ([JOB, {**JOB, "job_id": "b", "cpu_cores": -1}], r"scenario\.yaml: jobs\[1\]: .*cpu_cores"),
        ([JOB, {**JOB, "colour": "red"}], r"scenario\.yaml: jobs\[1\]: unknown key"),
        ([JOB, "not a job"], r"scenario\.yaml: jobs\[1\]: expected a mapping"),
        (
            [JOB, JOB],
            r"scenario\.yaml: jobs\[1\]: duplicate job_id 'a' \(also scenario\.yaml: jobs\[0\]\)",
        ),
        ([{k: v for k, v in JOB.items() if k != "mem_gb"}], r"scenario\.yaml: jobs\[0\]: .*mem_gb"),
    ],
    ids=["negative-cpu", "unknown-key", "not-a-mapping", "duplicate-id", "missing-key"],
)
def test_explicit__errors_name_the_list_index(items: list, match: str) -> None:
    """A bad inline job raises SpecError naming the list and the 0-based index."""
    with pytest.raises(SpecError, match=match):
        jobs_from_dicts(items, where="scenario.yaml: jobs")


def test_synthetic__config_accepts_mappings_as_from_a_scenario_file() -> None:
    """mix and cpu_sizes given as plain mappings/lists build the same config as the objects."""
    from_objects = SyntheticWorkloadConfig(mix=API_SIMULATION_MIX[:2], cpu_sizes=AZURE_JOB_SIZES)
    from_mappings = SyntheticWorkloadConfig(
        mix=[
            {
                "workload": c.workload,
                "cpu_cores": c.cpu_cores,
                "mem_gb": c.mem_gb,
                "gpu_count": c.gpu_count,
                "priority": c.priority,
            }
            for c in API_SIMULATION_MIX[:2]
        ],
        cpu_sizes={"sizes": list(AZURE_JOB_SIZES.sizes), "weights": list(AZURE_JOB_SIZES.weights)},
    )
    assert from_mappings == from_objects
    with pytest.raises(SpecError, match=r"mix\[0\]"):
        SyntheticWorkloadConfig(mix=[{"workload": "batch", "cpu": 2}])


@pytest.mark.parametrize("weights", [(1.0,) * 8, (0.18, 0.45, 0.08, 0.24, 0.03, 0.02), (0.0, 2.0, 0.0, 1.0), (5.0,)])
def test_synthetic__categorical_draw_matches_numpy_choice(weights: tuple[float, ...]) -> None:
    """The generator's inverse-CDF draw gives the numbers rng.choice gives (the workloads predate it)."""
    p = np.asarray(weights) / sum(weights)
    for seed in range(20):
        expected = np.random.default_rng(seed).choice(len(weights), size=seed * 7, p=p)
        assert (_categorical(np.random.default_rng(seed), _cdf(weights), seed * 7, seed * 7) == expected).all()
