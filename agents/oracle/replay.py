"""The plan played through the twin: the rule the oracle agent follows, and the plan's objective.

The plan program charges each run its nominal duration. Without cpu contention that is what
the twin does, and the replay's objective equals the program's value; under contention runs
last longer, so a planned start may find its node still busy. The rule below then starts the
job on its planned node as soon as the node can take it (while the job is still queued). The
objective the oracle reports for its plan is always this replay's: what the twin charges.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from digital_twin import DigitalTwin, HindsightView
from digital_twin.objective import ObjectiveBreakdown

Plan = Mapping[str, tuple[int, float] | None]
"""``job_id -> (node_index, start_s)``, ``None`` for a job the plan leaves unserved."""


def planned_node(plan: Plan, job_id: str, time_s: float, fits: Sequence[bool]) -> int | None:
    """The node to start ``job_id`` on now, or ``None`` to defer.

    The planned node, once the planned start has come and while the node can take the job;
    ``None`` for a job the plan leaves unserved or one not yet due.
    """
    planned = plan.get(job_id)
    if planned is None:
        return None
    node, start_s = planned
    return node if time_s >= start_s and fits[node] else None


def replay_plan(view: HindsightView, plan: Plan) -> ObjectiveBreakdown:
    """The objective the twin charges for ``plan`` in the episode ``view`` describes.

    The episode is replayed with its own spot interruptions (``view.interruptions_s``), and each
    decision follows :func:`planned_node` with the twin's default deferral (as the ``oracle``
    agent in the env).
    """
    spec = dataclasses.replace(view.spec, fixed_interruptions_s=view.interruptions_s)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))  # the interruptions are fixed: nothing is drawn
    while not twin.done:
        job = twin.current_job
        assert job is not None  # a decision is asked until the episode is done
        node = planned_node(plan, job.job_id, twin.time_s, twin.feasible_mask())
        if node is None:
            twin.defer()
        else:
            twin.place(node)
    return twin.objective()
