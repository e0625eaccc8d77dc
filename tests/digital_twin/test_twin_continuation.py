"""``DigitalTwin.continued_in``: the present continued into another future is a rebuilt twin that replays the past.

The reference is the slow way: a twin built on the other spec from scratch, reset, given the
same decisions (each deferral under the rule it was taken with). The continued twin must then
hold the same state, and give the same objective, metrics and event log bit for bit under any
later actions; a spec whose past differs is refused with a message that says what differs.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import scenarios
from digital_twin import NEW_FIT, NEXT_EVENT, DigitalTwin, JobSpec, PastMismatchError, Telemetry, TwinSpec
from digital_twin.episode_settings import INTERFERENCE_MODELS
from digital_twin.objective import DEADLINE_RULES
from digital_twin.sim.core import Feature, Runs
from digital_twin.sim.event_loop import is_stale
from digital_twin.sim.features.outages import Outages
from digital_twin.workload import Workload
from tests.digital_twin.workflows.test_workflows_in_the_twin import workflow_specs
from tests.paths import ROOT
from tests.strategies import twin_specs
from tests.toy3 import toy3_spec

Action = tuple[int | None, str]
"""``(node, deferral rule)``: a placement (the rule unused) or, node ``None``, a deferral under the rule."""

SCENARIOS = (
    "fleet5-synthetic",
    str(ROOT / "tests/data/fleet5-contention.yaml"),
    "planted5",
    "fleet5-utility",
    "fleet5-workflows",
)
"""Per-episode workloads (drawn at each reset); the contention file has processor sharing on."""


def play(twin: DigitalTwin, rng: np.random.Generator, steps: int | None, log: list[Action] | None = None) -> None:
    """``steps`` random valid actions (all to the end when ``None``): placements, and deferrals under either rule."""
    while not twin.done and (steps is None or steps > 0):
        valid = np.flatnonzero(twin.feasible_mask())
        action: Action = (None, (NEXT_EVENT, NEW_FIT)[int(rng.integers(2))])
        if rng.random() >= 0.3:
            action = (int(valid[int(rng.integers(len(valid)))]), NEXT_EVENT)
        apply(twin, action)
        if log is not None:
            log.append(action)
        steps = None if steps is None else steps - 1


def apply(twin: DigitalTwin, action: Action) -> None:
    node, rule = action
    if node is None:
        twin.defer(rule)
    else:
        twin.place(node)


def rebuilt(spec: TwinSpec, past: list[Action]) -> DigitalTwin:
    """The reference: a twin on ``spec`` from scratch, given the same decisions (it records events)."""
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(12345))  # spec's interruptions are given: nothing is drawn
    for action in past:
        apply(twin, action)
    return twin


def _values(part: object) -> Any:
    """A part of the state as comparable values: its attributes, recursively."""
    if dataclasses.is_dataclass(part):
        return {field.name: _values(getattr(part, field.name)) for field in dataclasses.fields(part)}
    if isinstance(part, Feature | Runs | Outages):
        names = [n for n in dir(part) if not n.startswith("_")]
        return {n: v for n in names if not callable(v := getattr(part, n))}
    if isinstance(part, list):
        return [_values(item) for item in part]
    return part


def state_of(twin: DigitalTwin) -> dict[str, Any]:
    """Every field of the twin's state, the heap as its sorted live entries, the queue as its fields (white box)."""
    state = twin.snapshot()._state
    fields = {field.name: getattr(state, field.name) for field in dataclasses.fields(state)}
    fields["heap"] = sorted(entry for entry in state.heap if not is_stale(state, entry))
    queue = fields.pop("queue")
    fits = [None if fit is None else list(fit) for fit in queue.parked_fit]
    fields["queue"] = (queue.fifo, queue.examine, queue.cursor, queue.parked, fits, queue.waking, queue.position,
                       queue.entered)  # fmt: skip
    values = {name: _values(value) for name, value in fields.items()}
    values["gpus"].pop("fragmented_s")  # weighed by each spec's whole job mix
    values["features"] = [type(feature).__name__ for feature in state.features]  # their values are named above
    return values


def comparable_metrics(twin: DigitalTwin) -> dict[str, float]:
    """The metrics (NaN as ``None``, so that equal means equal: ``node_energy_kwh`` without accounting) but
    ``gpu_fragmentation_rate``, whose past a continued twin weighs by its old spec's job mix."""
    metrics = twin.metrics().items()
    return {name: None if math.isnan(value) else value for name, value in metrics if name != "gpu_fragmentation_rate"}


def other_future(
    twin: DigitalTwin, rng: np.random.Generator, keep_spot_setting: bool = False, later_jobs: int | None = None
) -> TwinSpec:
    """``twin.known_spec()`` with another future: more jobs, other interruptions, other telemetry after now.

    ``later_jobs`` jobs arrive after now (default: 0 to 8 at random); ``keep_spot_setting``
    keeps ``spot_interruptions`` on (``known_spec`` turns it off: its interruptions are given).

    Later arrivals and interruptions are at whole seconds, often on a tick or on each other
    (equal-time events are where the tie-break matters); some fall at or past the horizon.
    """
    known, now = twin.known_spec(), twin.time_s
    horizon, tick_s = float(known.settings.horizon_s), known.telemetry.tick_s
    first = float(np.floor(now)) + 1.0

    def later_time() -> float:
        on_tick = tick_s * np.ceil(first / tick_s + rng.integers(0, 4))
        return float(on_tick if rng.random() < 0.3 else first + rng.integers(0, int(horizon * 1.1 - first) + 2))

    templates = list(known.jobs)
    tag = int(rng.integers(2**31))  # a future's own job ids (a continued twin's known jobs include earlier futures')
    later = []
    for k in range(int(rng.integers(0, 9)) if later_jobs is None else later_jobs):
        job = templates[int(rng.integers(len(templates)))]
        at = later_time()
        deadline = None if job.deadline_s is None else at + float(rng.integers(0, 900))
        duration = float(rng.integers(1, 3600))
        changes = {"job_id": f"later-{tag}-{k}", "arrival_s": at, "duration_s": duration, "deadline_s": deadline,
                   "declared_duration_s": duration, "workflow": None, "parents": ()}  # fmt: skip
        later.append(dataclasses.replace(job, **changes))
    past_interruptions = known.fixed_interruptions_s or tuple(() for _ in known.fleet)
    interruptions = tuple(
        (*times, *sorted(later_time() for _ in range(int(rng.integers(0, 4))))) if node.is_spot else times
        for node, times in zip(known.fleet, past_interruptions, strict=True)
    )
    background = known.telemetry.background_pct.copy()
    after = twin.tick_index + 1
    background[after:, :, :] = rng.uniform(0.0, 100.0, background[after:].shape)
    spec = dataclasses.replace(
        known,
        jobs=Workload.of((*templates, *later), known.jobs.workflows.values()),
        telemetry=Telemetry(background, tick_s),
        fixed_interruptions_s=interruptions,
    )
    return spec.with_settings(spot_interruptions=True) if keep_spot_setting else spec


def assert_continues(twin: DigitalTwin, spec: TwinSpec, past: list[Action], seed: int) -> None:
    """``twin.continued_in(spec)`` holds the rebuilt twin's state and plays on identically to the end."""
    before = state_of(twin)
    continued = twin.continued_in(spec)
    assert state_of(twin) == before  # the twin continued from is unchanged
    reference = rebuilt(spec, past)
    ours, theirs = state_of(continued), state_of(reference)
    assert [(name, ours[name], theirs[name]) for name in ours if ours[name] != theirs[name]] == []
    assert continued.feasible_mask() == reference.feasible_mask()
    futures = []
    for played in (continued, reference):
        actions: list[Action] = []
        play(played, np.random.default_rng(seed), None, actions)
        metrics = comparable_metrics(played)
        futures.append((actions, played.objective_dict(), metrics, played.event_log, played.decisions()))
    assert futures[0] == futures[1]


def declared_exactly(spec: TwinSpec) -> TwinSpec:
    """``spec`` with every job declaring its true duration.

    ``known_spec()`` gives the jobs that have not completed their declared durations (a running
    one's expected), so a twin continued into a spec built from it moves its running jobs' ends,
    which matches the rebuilt twin to rounding only (tested apart); with exact declarations
    nothing moves and the continued twin is the rebuilt one bit for bit, as checked here.
    """
    return dataclasses.replace(spec, jobs=spec.jobs.with_declared_durations(spec.jobs.duration_s))


def reached(spec: TwinSpec, seed: int, steps: int | None) -> tuple[DigitalTwin, list[Action]]:
    """A recording twin on ``spec`` after ``steps`` random actions (``None``: all); its interruptions from ``seed``."""
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(seed))
    past: list[Action] = []
    play(twin, np.random.default_rng(seed), steps, past)
    return twin, past


@st.composite
def episodes(draw: st.DrawFn) -> TwinSpec:
    """A random spec (``twin_specs``) with random physics and deadline rule, its interruptions often given."""
    spec = draw(twin_specs()).with_settings(
        interference=draw(st.sampled_from(INTERFERENCE_MODELS)), deadline_rule=draw(st.sampled_from(DEADLINE_RULES))
    )
    if draw(st.booleans()):
        horizon = int(spec.settings.horizon_s)
        times = st.lists(st.integers(0, horizon).map(float), max_size=4)
        given_times = tuple(tuple(draw(times)) if node.is_spot else () for node in spec.fleet)
        spec = dataclasses.replace(spec, fixed_interruptions_s=given_times)
    return spec


@pytest.mark.heavy  # seconds of CPU: the rest layer (make test), not make test-fast
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=episodes(), seed=st.integers(0, 2**32 - 1), part=st.floats(0.0, 0.99), keep_spot=st.booleans())
def test_continued_in__another_future_plays_as_a_rebuilt_twin(
    spec: TwinSpec, seed: int, part: float, keep_spot: bool
) -> None:
    """Random episodes, a random part of each played: continued into another random future, it is the rebuilt twin."""
    decisions = len(reached(spec, seed, None)[1])
    event(f"decisions: {'none' if decisions == 0 else 'some'}")
    if decisions == 0:
        return
    twin, past = reached(spec, seed, int(part * decisions))
    assert_continues(twin, other_future(twin, np.random.default_rng(seed), keep_spot), past, seed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=workflow_specs(), seed=st.integers(0, 2**32 - 1), part=st.floats(0.0, 0.99))
def test_continued_in__workflows_play_as_a_rebuilt_twin(spec: TwinSpec, seed: int, part: float) -> None:
    """Random workflow episodes (tasks held back, released, rejected upstream), continued part-way: the rebuilt twin."""
    spec = declared_exactly(spec)
    decisions = len(reached(spec, seed, None)[1])
    if decisions == 0:
        return
    twin, past = reached(spec, seed, int(part * decisions))
    truth = dataclasses.replace(spec, fixed_interruptions_s=twin.hindsight().interruptions_s)
    assert_continues(twin, truth, past, seed)
    assert_continues(twin, other_future(twin, np.random.default_rng(seed)), past, seed)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_continued_in__the_scenarios_per_episode_workloads(scenario: str) -> None:
    """Each scenario, six episodes: continued into the true future (the episode itself) and into another one."""
    loaded = scenarios.load(scenario)
    for seed in range(6):
        spec = declared_exactly(loaded.make_spec(np.random.default_rng(seed)))
        twin, past = reached(spec, seed, steps=5 + 7 * seed)
        assert not twin.done
        truth = dataclasses.replace(spec, fixed_interruptions_s=twin.hindsight().interruptions_s)
        assert_continues(twin, truth, past, seed)
        assert_continues(twin, other_future(twin, np.random.default_rng(seed)), past, seed)


def test_continued_in__twice_is_the_rebuilt_twin_of_the_last_spec() -> None:
    """Continue, play on, continue again: the last continued twin is the rebuilt twin of the last spec."""
    spec = declared_exactly(scenarios.load(SCENARIOS[1]).make_spec(np.random.default_rng(3)))
    twin, past = reached(spec, 3, steps=10)
    rng = np.random.default_rng(3)
    for _ in range(3):
        twin = twin.continued_in(other_future(twin, rng, later_jobs=20))
        play(twin, rng, 6, past)
        assert not twin.done
    assert_continues(twin, other_future(twin, rng), past, seed=3)


def test_continued_in__no_recording_when_the_twin_does_not_record() -> None:
    """The continued twin records iff the twin does; the known spec (the past alone) continues too."""
    spec = declared_exactly(scenarios.load("fleet5-synthetic").make_spec(np.random.default_rng(0)))
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    play(twin, np.random.default_rng(0), 10)
    known = twin.continued_in(twin.known_spec())
    assert not known.record_events and known.event_log == []
    assert known.current_job == twin.current_job and known.objective_dict() == twin.objective_dict()
    assert len(known.spec.jobs) == len(spec.jobs) - twin.job_counts()["future"]


def _refused(twin: DigitalTwin, spec: TwinSpec, match: str) -> None:
    with pytest.raises(PastMismatchError, match=match):
        twin.continued_in(spec)


def _past_job_changed(spec: TwinSpec, **changes: Any) -> TwinSpec:
    jobs = list(spec.jobs)
    jobs[0] = dataclasses.replace(jobs[0], **changes)
    return dataclasses.replace(spec, jobs=jobs)


def test_continued_in__refuses_a_spec_whose_past_differs() -> None:
    """Each way a past can differ is refused, and the message names it."""
    spec = toy3_spec()
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    while twin.time_s < 1200.0:
        twin.defer()
    known = twin.known_spec()
    assert twin.time_s >= 1200.0 and known.fixed_interruptions_s == ((), (1200.0,), ())
    fleet = list(known.fleet)
    fleet[2] = dataclasses.replace(fleet[2], price_per_hour_usd=1.0)
    _refused(twin, dataclasses.replace(known, fleet=tuple(fleet)), "fleet differs at node 2")
    _refused(twin, known.with_settings(queue_ttl_s=60.0), "settings differ in queue_ttl_s")
    background = known.telemetry.background_pct.copy()
    background[1, 0, 0] += 1.0
    _refused(twin, dataclasses.replace(known, telemetry=Telemetry(background, 600.0)), "telemetry differs at tick 1")
    _refused(twin, _past_job_changed(known, priority=7), r"arrived job 0 \('A'\) differs in priority")
    _refused(twin, dataclasses.replace(known, jobs=tuple(known.jobs)[:-1]), "fewer than the 5 arrived")
    early = JobSpec("early", twin.time_s, 60.0, "batch", 1, 1)
    _refused(twin, dataclasses.replace(known, jobs=(*known.jobs, early)), "'early' arrives at .* not after now")
    _refused(twin, dataclasses.replace(known, fixed_interruptions_s=((), (), ())), r"node 1's interruptions")
    _refused(twin, dataclasses.replace(known, fixed_interruptions_s=((), (600.0, 1200.0), ())), r"node 1's")
    drawn = dataclasses.replace(known, fixed_interruptions_s=None).with_settings(spot_interruptions=True)
    _refused(twin, drawn, "draws its spot interruptions at reset")


@pytest.mark.parametrize("interference", ["none", "processor-sharing"])
def test_continued_in__takes_new_durations_of_the_jobs_that_have_not_completed(interference: str) -> None:
    """A queued job's duration may change; a running one's only to more than its work done; a completed one's not.

    The continued twin then plays as a twin rebuilt on the new durations, to rounding.
    """
    spec = toy3_spec().with_settings(interference=interference)
    twin, past = DigitalTwin(spec), []
    twin.reset(np.random.default_rng(0))
    n = len(spec.jobs)
    while not ({"completed", "running"} <= {twin.job_status(j) for j in range(n)}):
        valid = np.flatnonzero(twin.feasible_mask())
        past.append((int(valid[0]), NEXT_EVENT) if len(valid) else (None, NEXT_EVENT))
        apply(twin, past[-1])
    known = twin.known_spec()
    completed = next(j for j in range(len(known.jobs)) if twin.job_status(j) == "completed")
    running = next(j for j in range(len(known.jobs)) if twin.job_status(j) == "running")
    _refused(twin, _job_changed(known, completed, duration_s=known.jobs[completed].duration_s + 1.0),
             rf"completed job {completed} .* differs in duration_s")  # fmt: skip
    _refused(twin, _job_changed(known, running, duration_s=1e-3), rf"running job {running} .* has done")
    longer = _job_changed(known, running, duration_s=known.jobs[running].duration_s + 500.0)
    moved, reference = twin.continued_in(longer), rebuilt(longer, past)
    while not moved.done:
        assert moved.time_s == pytest.approx(reference.time_s)
        assert moved.current_job_index == reference.current_job_index
        moved.defer()
        reference.defer()
    assert reference.done and moved.objective_usd() == pytest.approx(reference.objective_usd())


def _job_changed(spec: TwinSpec, j: int, **changes: Any) -> TwinSpec:
    jobs = list(spec.jobs)
    jobs[j] = dataclasses.replace(jobs[j], **changes)
    return dataclasses.replace(spec, jobs=jobs)


def test_continued_in__refuses_a_twin_at_no_decision() -> None:
    """Before its reset and once its episode is over, a twin stands at no decision to continue."""
    spec = toy3_spec()
    twin = DigitalTwin(spec)
    _refused(twin, spec, "no decision")
    twin.reset(np.random.default_rng(0))
    play(twin, np.random.default_rng(0), None)
    _refused(twin, spec, "no decision")
