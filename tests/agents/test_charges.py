"""One charge per objective term (agents.charges): a new weight moves every bound and plan through it.

The episode: one latency-critical job of an hour, a cheap spot node and a dear on-demand node.
Every policy runs it on the spot node (its cost plus the QoS penalty), on the on-demand node
(its cost), or rejects it (the rejection penalty, the dearest), so the optimum, every bound and
the hindsight plans are ``min(spot cost + QoS charge, on-demand cost)``, and the lookahead's
rollout rule picks the node of that minimum. A dearer QoS weight, or the one charge function
patched to charge QoS more, moves all of them by what :class:`~agents.charges.Charges` says.
"""

from __future__ import annotations

import numpy as np
import pytest

from agents.charges import Charges, nominal_run_usd
from agents.oracle import solve_oracle
from agents.oracle.bounds.capacity_free import capacity_free_bound
from agents.oracle.bounds.lagrangian import lagrangian_bound
from agents.oracle.model.instance import OracleInstance
from agents.oracle.plans.hindsight_greedy import hindsight_greedy_plan
from agents.rollouts import cheapest_charge
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec
from digital_twin.objective import ObjectiveWeights

SPOT, DEAR = 0, 1
FLEET = (
    NodeSpec("spot", "x86_64", "spot", 4, 16, 0.02, interruption_prob_per_hour=0.1),
    NodeSpec("dear", "x86_64", "on-demand", 4, 16, 0.6),
)
JOB = JobSpec("lc", 0.0, 3600.0, "latency-critical", 2, 4)
QOS = ObjectiveWeights().qos_violation_usd  # 0.25: the spot node is the cheaper (0.01 + 0.25 < 0.30)
DEARER_QOS = 0.15  # 0.40: the on-demand node is the cheaper


def _spec(weights: ObjectiveWeights) -> TwinSpec:
    telemetry = Telemetry.constant(len(FLEET), 10, 10, 7200, 300)
    return TwinSpec(FLEET, (JOB,), telemetry, EpisodeSettings(7200, weights=weights, spot_interruptions=False))


def _outcomes(weights: ObjectiveWeights) -> dict[str, float]:
    """Every bound's and plan's value, and each decision rule's node, on the episode under ``weights``."""
    twin = DigitalTwin(_spec(weights))
    twin.reset(np.random.default_rng(0))
    view = twin.hindsight()
    inst = OracleInstance.from_hindsight(view)
    oracle = solve_oracle(view, replayed_rounds=0)
    decomposed = solve_oracle(view, replayed_rounds=0, memory_budget_bytes=1.0)
    greedy = hindsight_greedy_plan(view, inst)["lc"]
    assert oracle.plan["lc"] is not None and greedy is not None
    return {
        "plan": oracle.plan_objective_usd,
        "exact bound": oracle.lower_bound_usd,
        "capacity-free bound": capacity_free_bound(inst),
        "Lagrangian bound": lagrangian_bound(inst, target_usd=oracle.plan_objective_usd, iterations=50).bound_usd,
        "bound at scale": decomposed.lower_bound_usd,
        "hindsight greedy plan": decomposed.plan_objective_usd,
        "plan node": oracle.plan["lc"][0],
        "hindsight greedy node": greedy[0],
        "rollout node": float(cheapest_charge(twin)),  # the twin stands at the job's first decision
    }


def _expected(charges: Charges) -> dict[str, float]:
    """What the charges say every outcome is: the cheaper of the spot run with its QoS charge and the dear run."""
    spot = nominal_run_usd(FLEET[SPOT], JOB) + charges.qos(1.0)
    dear = nominal_run_usd(FLEET[DEAR], JOB)
    value, node = (spot, SPOT) if spot < dear else (dear, DEAR)
    values = ("plan", "exact bound", "capacity-free bound", "Lagrangian bound", "bound at scale",
              "hindsight greedy plan")
    nodes = ("plan node", "hindsight greedy node", "rollout node")
    return {**dict.fromkeys(values, value), **dict.fromkeys(nodes, float(node))}


@pytest.fixture(scope="module")
def before() -> dict[str, float]:
    return _outcomes(ObjectiveWeights())


def test_charges__every_bound_and_plan_is_what_the_charges_say(before: dict[str, float]) -> None:
    """With the default weights the spot node wins and every value is its cost plus the QoS charge."""
    assert before == pytest.approx(_expected(Charges(ObjectiveWeights())), abs=1e-9)
    assert before["rollout node"] == SPOT


def test_charges__a_new_weight_moves_every_bound_and_choice(before: dict[str, float]) -> None:
    """A dearer QoS weight: every bound and plan moves to the on-demand run, and so do the three choices."""
    weights = ObjectiveWeights(qos_violation_usd=QOS + DEARER_QOS)
    after = _outcomes(weights)
    assert after == pytest.approx(_expected(Charges(weights)), abs=1e-9)
    assert after["rollout node"] == DEAR
    moved = {key: after[key] - before[key] for key in before}
    assert all(delta != 0.0 for delta in moved.values()), moved


def test_charges__patching_the_one_charge_function_moves_them_all_alike(before: dict[str, float]) -> None:
    """Patching :meth:`Charges.usd` alone moves everything alike (all charge through it); unpatched, nothing moved."""
    with pytest.MonkeyPatch.context() as patch:
        usd = Charges.usd

        def dearer(self: Charges, term: str, count: float | np.ndarray) -> float | np.ndarray:
            return usd(self, term, count) + (DEARER_QOS * count if term == "qos" else 0.0)

        patch.setattr(Charges, "usd", dearer)
        patched = _outcomes(ObjectiveWeights())
    assert patched == pytest.approx(_outcomes(ObjectiveWeights(qos_violation_usd=QOS + DEARER_QOS)), abs=1e-9)
    assert _outcomes(ObjectiveWeights()) == before  # unpatched again: bit for bit as before
