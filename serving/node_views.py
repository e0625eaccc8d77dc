"""Read-only views of a live cluster's nodes, from its job records (what ``GET /nodes`` shows).

They read the service's records, not the twin: the twin may stand past the last event (at its
next decision, which is not taken yet), the records never do.
"""

from __future__ import annotations

from typing import Any

from serving.events import RUNNING
from serving.live import LiveCluster


def node_rows(cluster: LiveCluster) -> list[dict[str, Any]]:
    """One row per node: size, up, free resources (size minus the running jobs' requests), running job ids."""
    known = cluster.known
    rows = []
    for i, node in enumerate(known.fleet):
        running = [r.job_id for r in cluster.jobs.values() if r.status == RUNNING and r.node_id == node.node_id]
        specs = [known.jobs[known.job_index[job_id]] for job_id in running]
        cpu, mem = known.background_at(i, cluster.time_s)
        rows.append({
            "node_id": node.node_id, "arch": node.arch, "instance": node.instance, "up": not known.is_down(i),
            "cpu_cores": node.cpu_cores, "mem_gb": node.mem_gb, "gpu_count": node.gpu_count,
            "free_cpu_cores": node.cpu_cores - sum(job.cpu_cores for job in specs),
            "free_mem_gb": node.mem_gb - sum(job.mem_gb for job in specs),
            "free_gpus": node.gpu_count - sum(job.gpu_count for job in specs),
            "running": running, "background_cpu_pct": cpu, "background_mem_pct": mem,
        })  # fmt: skip
    return rows


def forecast(cluster: LiveCluster, node_id: str) -> dict[str, Any]:
    """The node's expected releases (running jobs, by start + declared run time) and its held background load."""
    known = cluster.known
    releases = []
    for record in cluster.jobs.values():
        if record.status != RUNNING or record.node_id != node_id or record.started_s is None:
            continue
        job = known.jobs[known.job_index[record.job_id]]
        declared = job.declared_duration_s or job.duration_s
        releases.append({
            "job_id": job.job_id, "expected_end_s": max(record.started_s + declared, cluster.time_s),
            "cpu_cores": job.cpu_cores, "mem_gb": job.mem_gb, "gpu_count": job.gpu_count,
        })  # fmt: skip
    releases.sort(key=lambda release: (release["expected_end_s"], release["job_id"]))
    cpu, mem = known.background_at(known.node_index[node_id], cluster.time_s)
    return {"node_id": node_id, "time_s": cluster.time_s, "background_cpu_pct": cpu, "background_mem_pct": mem,
            "releases": releases}  # fmt: skip
