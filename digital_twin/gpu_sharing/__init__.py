"""GPU sharing at milli-GPU granularity and the fragmentation measure of FGD (ATC'23).

The twin's episodes allocate whole GPUs. This package models the setting of "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent" (Weng et
al., USENIX ATC'23) apart from the episodes: a node's GPUs each have 1000 milli-GPUs; a pod
with ``num_gpu == 1`` and ``gpu_milli < 1000`` takes ``gpu_milli`` of ONE GPU; a pod with
``num_gpu == k`` and ``gpu_milli == 1000`` takes ``k`` wholly free GPUs; every pod also takes
CPU (milli-cores) and memory (MiB) of its node. Tasks never finish (the paper's capacity-fill
experiments). docs/fragmentation.md states the definitions as implemented.

* :mod:`.cluster`: the nodes (:class:`GpuCluster`) and their free resources (:class:`ClusterState`).
* :mod:`.pods`: pod lists (:class:`PodTable`) and the target workload (:func:`target_workload`).
* :mod:`.fragmentation`: task types (:class:`TaskTypes`) and ``F_n(M)`` per node;
  :func:`fragmentation_rate` (in :mod:`.cluster`) is the cluster's rate.
"""

from digital_twin.gpu_sharing.cluster import MILLI, ClusterState, GpuCluster, fragmentation_rate
from digital_twin.gpu_sharing.fragmentation import TaskTypes, node_fragmentation, task_fragmentation
from digital_twin.gpu_sharing.pods import PodTable, read_pod_list, target_workload

__all__ = [
    "MILLI",
    "ClusterState",
    "GpuCluster",
    "PodTable",
    "TaskTypes",
    "fragmentation_rate",
    "node_fragmentation",
    "read_pod_list",
    "target_workload",
    "task_fragmentation",
]
