"""FGD's fragmentation measure (Weng et al., ATC'23, section 3), vectorised over nodes.

For a node ``n`` and a task type ``m`` (CPU ``c_m``, ``k_m`` GPUs of ``g_m`` milli-GPUs each,
allowed GPU models), ``F_n(m)`` is the node's unallocated milli-GPUs that ``m`` cannot use:

* ``m`` asks for no GPU: every unallocated milli-GPU of the node is a fragment (from the view
  of a CPU-only task no GPU is usable), whether or not ``m`` fits the node's CPU;
* the node's GPU model is not allowed for ``m``, or fewer than ``k_m`` of its GPUs have
  ``>= g_m`` free, or its free CPU is below ``c_m``: ``m`` cannot run there, so all its
  unallocated milli-GPUs are fragments;
* otherwise ``m`` can run there, and the fragments are the free milli-GPUs of the GPUs whose
  free amount is below ``g_m``.

The cases follow the paper's and its artifact's (hkust-adsl/kubernetes-scheduler-simulator);
memory plays no part in the measure (as in the artifact). ``F_n(M) = sum_m p_m F_n(m)`` for the
target workload ``M``; the cluster's fragmentation is ``sum_n F_n(M)``, and the fragmentation
rate is that over the cluster's unallocated milli-GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class TaskTypes:
    """The target workload ``M``: ``T`` task types and their popularity.

    Attributes:
        cpu_milli, num_gpu, gpu_milli: (T,) int64 per type (``gpu_milli`` per GPU, 0 without GPUs).
        allowed: (T, num_models + 1) bool, as :meth:`PodTable.model_mask`.
        prob: (T,) float64 ``p_m``, summing to 1.
    """

    cpu_milli: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    allowed: np.ndarray
    prob: np.ndarray


def task_fragmentation(
    cpu_free: np.ndarray, gpu_free: np.ndarray, model_index: np.ndarray, types: TaskTypes
) -> np.ndarray:
    """``F_n(m)`` for ``K`` node states and every task type.

    Args:
        cpu_free: (K,) free milli-cores.
        gpu_free: (K, G) free milli-GPUs per GPU slot (0 on padded slots).
        model_index: (K,) GPU model index (``len(models)`` for a node without GPUs).
        types: ``T`` task types (models indexed as ``model_index``).

    Returns:
        (K, T) float64 fragments in milli-GPUs (0 where the node has nothing unallocated).
    """
    gpu_free = np.asarray(gpu_free)
    unallocated = gpu_free.sum(axis=1).astype(np.float64)  # (K,)
    fits_gpu = gpu_free[:, :, None] >= types.gpu_milli[None, None, :]  # (K, G, T)
    enough_gpus = fits_gpu.sum(axis=1) >= types.num_gpu[None, :]  # (K, T)
    runs = (
        enough_gpus
        & (np.asarray(cpu_free)[:, None] >= types.cpu_milli[None, :])
        & types.allowed.T[np.asarray(model_index)]
        & (types.num_gpu > 0)[None, :]
    )
    below = np.where(fits_gpu, 0, gpu_free[:, :, None]).sum(axis=1)  # (K, T)
    return np.where(runs, below, unallocated[:, None])


def node_fragmentation(
    cpu_free: np.ndarray, gpu_free: np.ndarray, model_index: np.ndarray, types: TaskTypes
) -> np.ndarray:
    """(K,) ``F_n(M) = sum_m p_m F_n(m)`` in milli-GPUs; arguments as :func:`task_fragmentation`."""
    return task_fragmentation(cpu_free, gpu_free, model_index, types) @ types.prob
