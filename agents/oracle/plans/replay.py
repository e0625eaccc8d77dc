"""The plan played through the twin: the rules the oracle agent follows, and the plan's objective.

The plan program charges each run one duration. Without cpu contention that is what the twin
does, and the replay's objective equals the program's value (but energy and carbon, which
the program charges from below, :mod:`agents.oracle.model.energy`); under contention runs last
longer than the nominal plan assumed, so a planned start may find its node still busy. The
job then either waits for its planned node (often a short wait, on the node the plan chose) or
is *repaired*: started on the cheapest node that can take it (waiting can delay the jobs
planned after it, in cascade, until some hit their TTL). The oracle replays each plan both
ways and keeps the cheaper (:attr:`~agents.oracle.solve.OracleResult.plan_repairs`); the
worst-case plan (:mod:`agents.oracle.model.stretch`) never finds its node busy. The objective the
oracle reports for its plan is always this replay's: what the twin charges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from aco_env.fit_rules import cheapest_fit
from digital_twin import DigitalTwin, HindsightView
from digital_twin.objective import ObjectiveBreakdown

Plan = Mapping[str, tuple[int, float] | None]
"""``job_id -> (node_index, start_s)``, ``None`` for a job the plan leaves unserved."""
FirstRuns = Mapping[str, tuple[int, float, float]]
"""``job_id -> (node_index, start_s, evicted_at_s)``: a first run that a spot interruption evicts."""


def planned_node(
    plan: Plan,
    job_id: str,
    time_s: float,
    fits: Sequence[bool],
    repair_prices: Sequence[float] | None,
    first_runs: FirstRuns | None = None,
) -> int | None:
    """The node to start ``job_id`` on now, or ``None`` to defer.

    The planned node, once the planned start has come and while the node can take the job.
    A due job whose planned node cannot take it (under contention, an earlier run there lasted
    longer than planned) waits for it when ``repair_prices`` is ``None``; otherwise it goes to
    the cheapest node that can take it, by those prices (each node's USD/h;
    :func:`aco_env.fit_rules.cheapest_fit`). ``None`` for a job the plan leaves unserved, one
    not yet due, or one that waits.

    A job with a planned first run (``first_runs``, :mod:`agents.oracle.plans.rerun`) takes that
    run's node from its start until the interruption that evicts it (never repaired: the run
    is only worth its eviction), and its planned node, as above, after the eviction.
    """
    first = None if first_runs is None else first_runs.get(job_id)
    if first is not None and first[1] <= time_s < first[2]:
        return first[0] if fits[first[0]] else None
    planned = plan.get(job_id)
    if planned is None or time_s < planned[1]:
        return None
    node = planned[0]
    if fits[node]:
        return node
    if repair_prices is None:
        return None
    valid = [i for i, ok in enumerate(fits) if ok]
    return cheapest_fit(valid, repair_prices) if valid else None


def replay_plan(
    view: HindsightView, plan: Plan, repair: bool = False, first_runs: FirstRuns | None = None
) -> ObjectiveBreakdown:
    """The objective the twin charges for ``plan`` (and its ``first_runs``) in the episode ``view`` describes.

    The episode is replayed with its own spot interruptions (``view.interruptions_s``), and each
    decision follows :func:`planned_node` (repairing busy planned nodes when ``repair``) with the
    twin's default deferral (as the ``oracle`` agent in the env).
    """
    return _played(view, plan, repair, first_runs, record_events=False).objective()


def replayed_runs(
    view: HindsightView, plan: Plan, repair: bool = False, first_runs: FirstRuns | None = None
) -> dict[str, tuple[int, float]]:
    """``job_id -> (node_index, seconds)``: how long each completed run lasted in :func:`replay_plan`'s episode.

    The last completed run of each job (an evicted or unfinished run is not in it).
    """
    twin = _played(view, plan, repair, first_runs, record_events=True)
    node_index = {node.node_id: i for i, node in enumerate(view.spec.fleet)}
    started: dict[str, float] = {}
    runs: dict[str, tuple[int, float]] = {}
    for time_s, event, job_id, node_id in twin.event_log:
        if event == "start":
            started[job_id] = time_s
        elif event == "completion":
            runs[job_id] = (node_index[node_id], time_s - started[job_id])
    return runs


def _played(
    view: HindsightView, plan: Plan, repair: bool, first_runs: FirstRuns | None, record_events: bool
) -> DigitalTwin:
    """The twin after playing the episode by :func:`planned_node` (see :func:`replay_plan`)."""
    spec = view.replayable_spec()
    prices = [node.price_per_hour_usd for node in spec.fleet] if repair else None
    twin = DigitalTwin(spec, record_events=record_events)
    twin.reset(np.random.default_rng(0))  # the interruptions are fixed: nothing is drawn
    while not twin.done:
        job = twin.current_job
        assert job is not None  # a decision is asked until the episode is done
        node = planned_node(plan, job.job_id, twin.time_s, twin.feasible_mask(), prices, first_runs)
        if node is None:
            twin.defer()
        else:
            twin.place(node)
    return twin
