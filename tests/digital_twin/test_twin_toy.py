"""The hand-worked toy instance (tests/toy3.py), every term asserted exactly, both cost models."""

from __future__ import annotations

import numpy as np
import pytest

from digital_twin import DigitalTwin
from tests.toy3 import TOY3_ACTIONS, toy3_spec


def play_toy3(cost_model: str) -> DigitalTwin:
    twin = DigitalTwin(toy3_spec(cost_model), record_events=True)
    twin.reset(np.random.default_rng(0))
    for action in TOY3_ACTIONS:
        assert not twin.done
        if action is None:
            twin.defer()
        else:
            twin.place(action)
    assert twin.done
    return twin


@pytest.mark.parametrize(
    ("cost_model", "cost_usd"),
    [("prorated", 0.435), ("active-nodes", 0.444)],
)
def test_toy3__every_term_matches_the_hand_computation(cost_model: str, cost_usd: float) -> None:
    """The walk-through below, asserted term by term.

    Nodes: n0 4c $0.0001/s, n1 4c spot $0.00002/s (interrupted at 1200 s, down 600 s),
    n2 2c $0.0002/s; background cpu 50/10/80 %; ticks every 600 s; TTL 900 s.

    t=0    A(LC 2c) -> n2; B(batch 2c, not preemptible) -> n1; D(4c, deadline 200) deferred.
    t=300  C arrives. D -> n0 (late: deadline penalty); C(LC 1c) -> n1 (spot: QoS penalty).
    t=600  tick: n2 = 80 % + 2/2 = 180 % > 90 %, A violates the SLA; n1 = 10 % + 3/4 = 85 %.
           E(4c 16 GB) arrives and fits nowhere (n0 full, n1 has 1 core, n2 too small).
    t=900  C and D complete; E fits n0 -> deferred.
    t=1200 n1 interrupted: B fails (eviction penalty). E deferred again.
    t=1500 E's TTL (600 + 900) expires: rejected.
    t=1800 A completes; every job is terminal: terminated.

    prorated cost: A 0.0002*1*1800 = 0.36, B 0.00002*(2/4)*1200 = 0.012,
    C 0.00002*(1/4)*600 = 0.003, D 0.0001*1*600 = 0.06; total 0.435.
    active-nodes: n0 300..900 = 0.06, n1 0..1200 = 0.024, n2 0..1800 = 0.36; total 0.444.
    Penalties (toy weights): SLA 0.1 + QoS 0.2 + eviction 0.3 + deadline 0.4 + rejection 0.5.
    """
    twin = play_toy3(cost_model)
    objective = twin.objective()
    assert objective.cost_usd == pytest.approx(cost_usd, abs=1e-12)
    assert (objective["sla_usd"], objective["qos_usd"], objective["eviction_usd"]) == pytest.approx((0.1, 0.2, 0.3))
    assert (objective["deadline_usd"], objective["rejection_usd"]) == pytest.approx((0.4, 0.5))
    assert (objective["sla_violations"], objective["qos_violations"], objective["evictions"]) == (1, 1, 1)
    assert (objective["deadline_misses"], objective["rejections"]) == (1, 1)
    assert objective.total_usd == pytest.approx(cost_usd + 1.5, abs=1e-12)
    assert twin.terminated and not twin.truncated
    assert twin.time_s == 1800.0
    assert twin.job_counts() == {
        "future": 0, "pending": 0, "running": 0, "completed": 3, "failed": 1, "rejected": 1,
    }


@pytest.mark.smoke
def test_toy3__event_log_follows_the_walk_through() -> None:
    """The log shows the interruption, the failure, the SLA hit and the TTL rejection at their times."""
    twin = play_toy3("prorated")
    log = [(t, event, job, node) for t, event, job, node in twin.event_log]
    assert (600.0, "sla-violation", "A", "n2") in log
    assert (1200.0, "evicted-failed", "B", "n1") in log
    assert (1500.0, "rejected-ttl", "E", "") in log
    assert (1800.0, "recovery", "", "n1") in log
    starts = [(t, job, node) for t, event, job, node in log if event == "start"]
    assert starts == [(0.0, "A", "n2"), (0.0, "B", "n1"), (300.0, "D", "n0"), (300.0, "C", "n1")]
