"""Rollouts from a twin's present: the rollout rule, and the objective each first action leads to.

The lookahead agents (:mod:`agents.lookahead`, :mod:`agents.lookahead_clairvoyant`) judge an
action by taking it in a twin that stands at the current decision and playing on by a fixed
rule, :func:`cheapest_charge`, to the end of the episode; the action's value is the episode's
final objective. :func:`action_objectives` does it for every action from one snapshot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from agents.charges import Charges, nominal_run_usd
from digital_twin import DigitalTwin
from digital_twin.deferral import NEXT_EVENT

Action = int | None
"""A node index, or ``None`` to defer."""


@runtime_checkable
class KnownTwinSource(Protocol):
    """An env that gives online planners the episode as known now (:meth:`aco_env.TwinEnv.known_twin`)."""

    def known_twin(self) -> DigitalTwin:
        """A twin of the episode as known now, standing at the current decision."""
        ...


def cheapest_charge(twin: DigitalTwin) -> int | None:
    """The rollout rule: the fitting node of least prorated cost of the nominal run plus QoS; ``None`` if none fits.

    The charge is the node's price times the job's share (GPU share for GPU jobs, cpu share
    otherwise, as the twin charges under ``prorated``) times the run, plus the QoS penalty for
    a latency-critical job on a spot node; ties to the lowest index.
    """
    job = twin.current_job
    assert job is not None
    qos = Charges(twin.spec.settings.weights).qos(1.0)
    best, best_charge = None, math.inf
    for i, fits in enumerate(twin.feasible_mask()):
        if not fits:
            continue
        node = twin.spec.fleet[i]
        charge = nominal_run_usd(node, job)
        if job.workload == "latency-critical" and node.is_spot:
            charge += qos
        if charge < best_charge:
            best, best_charge = i, charge
    return best


def roll_out(twin: DigitalTwin, deferral: str = NEXT_EVENT) -> None:
    """Play ``twin`` to the end of its episode by :func:`cheapest_charge` (deferring when nothing fits)."""
    while not twin.done:
        node = cheapest_charge(twin)
        if node is None:
            twin.defer(deferral)
        else:
            twin.place(node)


def take(twin: DigitalTwin, action: Action, deferral: str = NEXT_EVENT) -> None:
    """Place the current job on node ``action``, or defer it under ``deferral`` (``action`` ``None``)."""
    if action is None:
        twin.defer(deferral)
    else:
        twin.place(action)


def action_objectives(twin: DigitalTwin, actions: Sequence[Action], deferral: str = NEXT_EVENT) -> np.ndarray:
    """``(len(actions),)`` the final objective (USD) of each action taken now, then :func:`roll_out`.

    ``twin`` stands at a decision; each rollout starts from its snapshot, and ``twin`` is left
    at the end of the last one.
    """
    present = twin.snapshot()
    objectives = np.zeros(len(actions))
    for k, action in enumerate(actions):
        twin.restore(present)
        take(twin, action, deferral)
        roll_out(twin, deferral)
        objectives[k] = twin.objective_usd()
    return objectives
