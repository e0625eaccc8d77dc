"""Job sources: each returns the jobs sorted by arrival.

The trace readers return a ``tuple[JobSpec, ...]``; the generator, drawn at every env reset,
returns a :class:`~digital_twin.workload.Workload` (columns; each ``JobSpec`` made on demand).

* :func:`load_alibaba_gpu_pods`: Alibaba GPU cluster trace v2023 pod lists.
* :func:`load_swf_jobs` (+ :func:`read_swf_header`): Standard Workload Format logs.
* :func:`load_azure_llm_requests`: Azure LLM inference request arrivals.
* :func:`load_azure_vm_requests`: Azure Public Dataset VM table (V1 2017, V2 2019), one job per VM.
* :func:`load_alibaba2017_batch_tasks`: Alibaba cluster-trace-v2017 ``batch_task``, one job per task
  instance.
* :func:`generate_jobs`: seeded synthetic jobs (diurnal Poisson arrivals).
* :func:`jobs_from_dicts`: an inline list, as in a scenario file.

The trace readers share the selection arguments ``limit``, ``time_window`` (in the trace's
own seconds) and ``start_s`` (arrival of the first kept job), and raise
:class:`~digital_twin.errors.TraceError` naming the file and line or column for bad input. Rows
dropped by a documented rule are counted in one ``WARNING`` log record per rule (the load report).
"""

from digital_twin.workloads.alibaba2017 import load_alibaba2017_batch_tasks
from digital_twin.workloads.alibaba2018_batch import load_alibaba2018_batch_workflows
from digital_twin.workloads.alibaba_gpu2023 import (
    ALIBABA_QOS_POLICIES,
    POD_PHASES,
    REFERENCE_QOS_POLICIES,
    QosPolicy,
    RowOrderTiming,
    load_alibaba_gpu_pods,
)
from digital_twin.workloads.azure_llm import ServiceTimeModel, load_azure_llm_requests
from digital_twin.workloads.azure_vm import AZURE_CATEGORY_POLICIES, load_azure_vm_requests
from digital_twin.workloads.explicit import jobs_from_dicts
from digital_twin.workloads.job_mix import API_SIMULATION_MIX, AZURE_JOB_SIZES, CpuSizeDistribution, JobClass
from digital_twin.workloads.swf import SwfHeader, load_swf_jobs, read_swf_header
from digital_twin.workloads.synthetic import SyntheticWorkloadConfig, generate_jobs
from digital_twin.workloads.workflows import WorkflowConfig, generate_workflows

__all__ = [
    "ALIBABA_QOS_POLICIES",
    "API_SIMULATION_MIX",
    "AZURE_CATEGORY_POLICIES",
    "AZURE_JOB_SIZES",
    "POD_PHASES",
    "REFERENCE_QOS_POLICIES",
    "CpuSizeDistribution",
    "JobClass",
    "QosPolicy",
    "RowOrderTiming",
    "ServiceTimeModel",
    "SwfHeader",
    "SyntheticWorkloadConfig",
    "WorkflowConfig",
    "generate_jobs",
    "generate_workflows",
    "jobs_from_dicts",
    "load_alibaba2017_batch_tasks",
    "load_alibaba2018_batch_workflows",
    "load_alibaba_gpu_pods",
    "load_azure_llm_requests",
    "load_azure_vm_requests",
    "load_swf_jobs",
    "read_swf_header",
]
