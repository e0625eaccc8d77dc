"""Rollouts from a twin's present: the rollout rule, and the objective each first action leads to.

The lookahead agents (:mod:`agents.lookahead`, :mod:`agents.lookahead_clairvoyant`) judge an
action by taking it in a twin that stands at the current decision and playing on by a fixed
rule, :func:`cheapest_charge`, to the end of the episode; the action's value is the episode's
final objective. :func:`action_objectives` does it for every action from one snapshot.

**A rollout window** bounds the work: played to the horizon, each rollout costs the episode's
remaining decisions, so an episode costs the square of its decisions (thousands of decisions
make that hours). With ``window_s``, a rollout stops at its first decision at or after
``now + window_s`` (every action's at about the same time), and the action's value is the
objective so far plus what the state at the stop has committed (:func:`committed_usd`: the
rest of each running job's run, and the cheapest run of each queued job), so that an action
whose costs fall after the window is not judged cheaper for it. Penalties that would be
counted after the stop (a late start, a TTL) are not charged: within the window they are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from agents.charges import SECONDS_PER_HOUR, Charges, nominal_run_usd
from digital_twin import WORKLOAD_TYPES, DigitalTwin, JobSpec, NodeSpec
from digital_twin.sim.deferral import NEXT_EVENT

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
    a latency-critical job on a spot node (:func:`rule_charge`, computed for every node at once
    with the same float operations); ties to the lowest index.
    """
    job = twin.current_job
    assert job is not None
    fits = np.asarray(twin.feasible_mask(), dtype=bool)
    if not fits.any():
        return None
    charges = rule_charges(twin.spec.fleet, job, Charges(twin.spec.settings.weights).qos(1.0))
    return int(np.argmin(np.where(fits, charges, math.inf)))  # argmin: the first of equal minima


def rule_charges(fleet: Sequence[NodeSpec], job: JobSpec, qos_usd: float) -> np.ndarray:
    """``(N,)`` :func:`rule_charge` of ``job`` on every node of ``fleet``, with its float operations.

    ``inf`` where a GPU job meets a node without GPUs (never a candidate).
    """
    return _FleetColumns.of(fleet).rule_charges(job, qos_usd)


class _FleetColumns:
    """A fleet's prices, shares' denominators and spot flags as arrays, for the rule's charges.

    One fleet is kept (:meth:`of`): rollouts ask thousands of times about the same one.
    """

    _last: _FleetColumns | None = None

    def __init__(self, fleet: Sequence[NodeSpec]) -> None:
        self.fleet = fleet
        self.price_per_hour = np.array([node.price_per_hour_usd for node in fleet], dtype=np.float64)
        self.gpus = np.array([node.gpu_count for node in fleet], dtype=np.int64)
        self.cores = np.array([node.cpu_cores for node in fleet], dtype=np.int64)
        self.spot = np.array([node.is_spot for node in fleet], dtype=bool)

    @classmethod
    def of(cls, fleet: Sequence[NodeSpec]) -> _FleetColumns:
        """The columns of ``fleet`` (built again only for another fleet object)."""
        if cls._last is None or cls._last.fleet is not fleet:
            cls._last = cls(fleet)
        return cls._last

    def rule_charges(self, job: JobSpec, qos_usd: float) -> np.ndarray:
        """``(N,)`` :func:`rule_charge` of ``job`` on every node (see :func:`rule_charges`)."""
        # a GPU job on a GPU-less node: inf or NaN (never a candidate)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = job.gpu_count / self.gpus if job.gpu_count else job.cpu_cores / self.cores
            charges = self.price_per_hour * share * job.duration_s / SECONDS_PER_HOUR
        if job.workload == "latency-critical":
            charges = np.where(self.spot, charges + qos_usd, charges)
        return charges


def rule_charge(node: NodeSpec, job: JobSpec, qos_usd: float) -> float:
    """The rule's charge of ``job`` on ``node``: its nominal run, + ``qos_usd`` if latency-critical on spot."""
    charge = nominal_run_usd(node, job)
    return charge + qos_usd if job.workload == "latency-critical" and node.is_spot else charge


def roll_out(twin: DigitalTwin, deferral: str = NEXT_EVENT, until_s: float = math.inf) -> None:
    """Play ``twin`` by :func:`cheapest_charge` (deferring when nothing fits) to its end.

    With ``until_s``, stop at the first decision at or after it if the episode is not over by then.
    """
    while not twin.done and twin.time_s < until_s:
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


def action_objectives(
    twin: DigitalTwin, actions: Sequence[Action], deferral: str = NEXT_EVENT, window_s: float | None = None
) -> np.ndarray:
    """``(len(actions),)`` the objective (USD) each action taken now leads to by :func:`roll_out`.

    ``twin`` stands at a decision; each rollout starts from its snapshot, and ``twin`` is left
    at the end of the last one. ``window_s`` ``None``: each rollout plays to the end, and its
    value is the final objective; else it stops at its first decision at or after
    ``now + window_s`` and its value is the objective so far plus :func:`committed_usd`.
    """
    present = twin.snapshot()
    until_s = math.inf if window_s is None else twin.time_s + window_s
    objectives = np.zeros(len(actions))
    for k, action in enumerate(actions):
        twin.restore(present)
        take(twin, action, deferral)
        roll_out(twin, deferral, until_s)
        objectives[k] = twin.objective_usd() + (0.0 if twin.done else committed_usd(twin))
    return objectives


def committed_usd(twin: DigitalTwin) -> float:
    """What ``twin``'s present commits after now, USD, at nominal speed and up to the horizon.

    Each running job: the rest of its run (:meth:`~digital_twin.DigitalTwin.runs_left`) at its
    prorated rate on its node, or, under ``active-nodes``, each busy node's price while its
    longest run lasts. Each queued job: its run where :func:`cheapest_charge` would charge
    least if every node had room (:func:`nominal_run_usd`, plus the QoS penalty for a
    latency-critical job on a spot node), a lower bound of what serving it costs. Runs are cut
    at the horizon, as the twin charges them.
    """
    spec = twin.spec
    left_s = float(spec.settings.horizon_s) - twin.time_s
    fleet, jobs = spec.fleet, spec.jobs
    total = 0.0
    if spec.settings.active_nodes:
        longest: dict[int, float] = {}
        for _, node, seconds in twin.runs_left():
            longest[node] = max(longest.get(node, 0.0), seconds)
        total += sum(fleet[i].price_per_hour_usd * min(s, left_s) / SECONDS_PER_HOUR for i, s in longest.items())
    else:
        for j, node, seconds in twin.runs_left():
            job = jobs[j]
            total += nominal_run_usd(fleet[node], job) * min(seconds, left_s) / job.duration_s
    return total + _queued_usd(twin, left_s)


def _queued_usd(twin: DigitalTwin, left_s: float) -> float:
    """Over the queued jobs, the sum of each one's least :func:`rule_charge` on a node it could ever run on.

    Each run is cut at ``left_s`` seconds. Computed for all at once (an overloaded queue holds
    thousands); a test checks it against :func:`rule_charge` job by job.
    """
    queued = twin.pending_jobs()
    if not queued:
        return 0.0
    spec = twin.spec
    jobs, nodes = spec.jobs, _FleetColumns.of(spec.fleet)
    job_gpus, job_cores = jobs.gpu_count[queued][:, None], jobs.cpu_cores[queued][:, None]
    run_s = np.minimum(jobs.duration_s[queued], left_s)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):  # GPU shares of GPU-less nodes (never candidates): inf, NaN
        share = np.where(job_gpus > 0, job_gpus / nodes.gpus, job_cores / nodes.cores)
        charge = nodes.price_per_hour * share * run_s / SECONDS_PER_HOUR
    latency_critical = (jobs.workload_index[queued] == WORKLOAD_TYPES.index("latency-critical"))[:, None]
    charge += Charges(spec.settings.weights).qos(1.0) * (latency_critical & nodes.spot)
    charge[~twin.candidate_masks(queued)] = math.inf
    return float(charge.min(axis=1).sum())
