"""FGD's per-node fragmentation and its Kubernetes score, pinned to values worked by hand from the artifact's rules.

The artifact (hkust-adsl/kubernetes-scheduler-simulator) classes a task type on a node as: no GPU
asked -> every idle milli-GPU is a fragment; GPU model not allowed -> all; not enough GPUs with
``>= gpu_milli`` free, or too little CPU -> all; else the free milli-GPUs of the GPUs below
``gpu_milli``. ``F_n(M) = sum_m p_m F_n(m)``. Its FGD plugin scores a node
``int(100 x sigmoid((F_before - F_after) / 1000))`` and takes, on the chosen node, the lowest GPU
of the best score.
"""

from __future__ import annotations

import numpy as np

from agents.gpu_sharing import make_policy
from digital_twin.gpu_sharing import ClusterState, TaskTypes, node_fragmentation
from tests.digital_twin.gpu_sharing.helpers import cluster, pods

# Three task types, by hand: a 500-milli shared-GPU type (p 0.5), a whole-GPU type asking 16 cores
# (p 0.3) and a CPU-only type (p 0.2); models A and B, none of them restricted.
TYPES = TaskTypes(
    cpu_milli=np.array([4000, 16000, 2000]),
    num_gpu=np.array([1, 1, 0]),
    gpu_milli=np.array([500, 1000, 0]),
    allowed=np.ones((3, 3), dtype=bool),
    prob=np.array([0.5, 0.3, 0.2]),
)


def test_node_fragmentation__equals_the_hand_worked_value() -> None:
    """A node with 8 free cores and GPUs free [1000, 500, 200, 0]: 0.5 x 200 + 0.3 x 1700 + 0.2 x 1700 = 950.

    Shared type: it runs (a GPU with >= 500 free, 4 <= 8 cores); fragments are the GPUs below 500:
    200 + 0. Whole-GPU type: 16 cores > 8 free, so every idle milli-GPU (1,700). CPU-only type:
    every idle milli-GPU (1,700).
    """
    frag = node_fragmentation(np.array([8000]), np.array([[1000, 500, 200, 0]]), np.array([0]), TYPES)
    assert frag.tolist() == [950.0]
    # with 16 cores free the whole-GPU type runs too: its fragments are the GPUs below 1000 (700)
    roomy = node_fragmentation(np.array([16000]), np.array([[1000, 500, 200, 0]]), np.array([0]), TYPES)
    assert roomy.tolist() == [0.5 * 200 + 0.3 * 700 + 0.2 * 1700]


def test_fgd_kubernetes_score__picks_the_node_and_gpu_the_artifact_s_rule_gives() -> None:
    """A 500-milli pod of 1 core on two 4-GPU nodes of 8 cores.

    Node 0, GPUs [1000, 500, 200, 0] (F = 950): on GPU 0 or GPU 1 the idle GPU drops to 1,200 and
    F to 0.5 x 200 + 0.5 x 1200 = 700 (7 cores left: the whole-GPU type still lacks CPU), so
    Delta = -250, score int(100 sigmoid(0.25)) = 56 on both; the artifact takes GPU 0, the
    lowest. Node 1, idle [1000] x 4 (F = 0.5 x 0 + 0.5 x 4000 = 2000): any GPU gives F = 0.5 x 0
    + 0.5 x 3500 = 1750, Delta = -250, score 56 too: a tie between the nodes, drawn at random.
    Exact FGD sees the same tie; the artifact's score also ties candidates within ~40 milli-GPUs.
    """
    two = cluster([4, 4], cpu=[8000, 8000])
    state = ClusterState(two, TYPES)
    state.allocate(0, (1,), pods([(0, 0, 1, 500)]).requests(two.models)[0])
    state.allocate(0, (2,), pods([(0, 0, 1, 800)]).requests(two.models)[0])
    state.allocate(0, (3,), pods([(0, 0, 1, 1000)]).requests(two.models)[0])
    assert state.gpu_free[0].tolist() == [1000, 500, 200, 0]
    assert state.node_frag.tolist() == [950.0, 2000.0]
    request = pods([(1000, 1, 1, 500)]).requests(two.models)[0]
    assert int(100.0 / (1.0 + np.exp(-250.0 / 1000.0))) == 56
    choices = {(p.node, p.gpus) for p in (make_policy("fgd-k8s", s).place(state, request) for s in range(20))}
    assert choices == {(0, (0,)), (1, (0,))}
    exact = {make_policy("fgd", s).place(state, request).node for s in range(20)}
    assert exact == {0, 1}
