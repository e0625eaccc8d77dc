"""The twin's typed state and constants: construction in one place, an independent copy, frozen constants."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

import scenarios
from digital_twin import DigitalTwin, TwinSpec
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import Feature, Runs
from digital_twin.sim.deferral import NEW_FIT
from digital_twin.sim.event_handlers import start
from digital_twin.sim.event_loop import run_to_decision
from digital_twin.sim.features.outages import Outages
from digital_twin.sim.job_queue import JobQueue
from digital_twin.sim.job_states import FUTURE, JobStates
from digital_twin.sim.nodes import NodeState
from digital_twin.sim.state import TwinState
from tests.toy3 import toy3_spec


def _spec(seed: int = 0) -> TwinSpec:
    return scenarios.load("fleet5-synthetic").make_spec(np.random.default_rng(seed))


def _state_mid_episode(spec: TwinSpec, decisions: int) -> tuple[TwinState, TwinConstants]:
    """A state after ``decisions`` first-fit placements, driven through the loop's own functions."""
    c = TwinConstants.of(spec)
    s = TwinState.initial(c, Outages.none(len(spec.fleet)), record_events=True)
    mask = run_to_decision(s, c)
    for _ in range(decisions):
        if s.done:
            break
        s.queue.take_current()
        start(s, c, s.current, mask.index(True))
        mask = run_to_decision(s, c)
    return s, c


_HOLDERS = (TwinState, NodeState, JobStates, JobQueue, Feature, Runs)
"""The state's parts that hold mutable objects: walked attribute by attribute."""


def _mutable_parts(holder: object) -> list[object]:
    """Every mutable object a state holds: its parts, their lists and dicts, the lists and dicts inside those."""
    parts: list[object] = []
    names = [name for name in dir(holder) if not name.startswith("_") and not callable(getattr(holder, name))]
    for value in (getattr(holder, name) for name in names):
        if isinstance(value, _HOLDERS):
            parts.append(value)
            parts.extend(_mutable_parts(value))
        elif isinstance(value, list | dict):
            parts.append(value)
            items = value.values() if isinstance(value, dict) else value
            parts.extend(item for item in items if isinstance(item, (list, dict, *_HOLDERS)))
    return parts


def test_twin_state__initial_has_every_job_in_the_future_and_no_decision() -> None:
    """TwinState.initial: time 0, full free capacity, all jobs future, nothing scheduled, no decision."""
    spec = _spec()
    c = TwinConstants.of(spec)
    s = TwinState.initial(c, Outages.none(len(spec.fleet)), record_events=False)
    assert s.time_s == 0.0 and s.done and s.current == -1 and s.events is None
    assert s.nodes.free_cpu_m == list(c.cpu_m) and s.nodes.free_cpu_m is not c.cpu_m
    jobs = s.jobs
    assert jobs.status == [FUTURE] * c.n_jobs and jobs.status_counts[FUTURE] == c.n_jobs == sum(jobs.status_counts)
    assert s.heap == [] and s.queue.fifo == [] and all(not running for running in s.nodes.node_jobs)


def test_twin_state__copy_shares_no_mutable_object() -> None:
    """copy() copies every list (and the lists in lists, and the queue's): no mutable object is shared."""
    s, _ = _state_mid_episode(_spec(), decisions=20)
    copy = s.copy()
    original_ids = {id(part) for part in _mutable_parts(s)}
    shared = [part for part in _mutable_parts(copy) if id(part) in original_ids]
    assert shared == []


def test_twin_state__copy_is_equal_and_independent() -> None:
    """A copy holds the same values; running the copy on leaves the original as it was."""
    s, c = _state_mid_episode(_spec(), decisions=20)
    before = pickle.dumps(s)
    copy = s.copy()
    assert pickle.dumps(copy) == before
    mask = run_to_decision(copy, c)  # already at a decision: place it, then run on
    copy.queue.take_current()
    start(copy, c, copy.current, mask.index(True))
    run_to_decision(copy, c)
    assert pickle.dumps(copy) != before
    assert pickle.dumps(s) == before


def test_twin_snapshot__restores_parked_jobs_and_reruns_identically() -> None:
    """Snapshot with jobs parked (deferred until a new fit) and restore: the rest of the episode repeats."""
    twin = DigitalTwin(_spec(3), record_events=True)
    twin.reset(np.random.default_rng(3))
    for k in range(15):
        if k % 3 == 0:
            twin.defer(NEW_FIT)
        else:
            twin.place(twin.feasible_mask().index(True))
    snapshot = twin.snapshot()
    runs = []
    for _ in range(2):
        twin.restore(snapshot)
        while not twin.done:
            twin.place(twin.feasible_mask().index(True))
        runs.append((twin.event_log, twin.objective_dict(), twin.metrics()))
    assert runs[0] == runs[1]


def test_twin_constants__are_frozen_and_consistent() -> None:
    """The constants cannot be reassigned; candidate masks, shapes and units agree with the spec."""
    spec = toy3_spec()
    c = TwinConstants.of(spec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.n_nodes = 4  # type: ignore[misc]  # the point of the test: frozen
    assert c.n_nodes == len(spec.fleet) and c.n_jobs == len(spec.jobs)
    assert c.cpu_m == [round(n.cpu_cores * 1000) for n in spec.fleet]
    for j in range(c.n_jobs):
        assert [i for i, ok in enumerate(c.candidate_mask[j]) if ok] == list(c.candidates[j])
        same_shape = [k for k in range(c.n_jobs) if c.shape[k] == c.shape[j]]
        assert all(c.candidates[k] == c.candidates[j] for k in same_shape)
    assert not any(c.no_fit)
