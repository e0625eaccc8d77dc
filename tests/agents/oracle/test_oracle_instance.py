"""The oracle's copy of the twin's arithmetic (candidates, SLA threshold) agrees with the twin."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.oracle.model.instance import OracleInstance
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec
from tests.strategies import twin_specs


@settings(max_examples=40, deadline=None)
@given(twin_specs(max_nodes=4, max_jobs=6))
def test_instance__candidates_match_the_twins_mask_on_an_empty_fleet(spec: TwinSpec) -> None:
    """Each job alone at time 0 on an idle fleet may go exactly on the oracle's candidates."""
    for job in spec.jobs:
        first = dataclasses.replace(job, arrival_s=0.0, deadline_s=None)
        alone = TwinSpec(
            spec.fleet,
            (first,),
            spec.telemetry,
            EpisodeSettings(spec.settings.horizon_s, spot_interruptions=False),
        )
        twin = DigitalTwin(alone)
        twin.reset(np.random.default_rng(0))
        twin_mask = twin.feasible_mask() if twin.current_job is not None else [False] * len(spec.fleet)
        inst = OracleInstance.from_hindsight(twin.hindsight())
        assert [i in inst.candidates[0] for i in range(len(spec.fleet))] == twin_mask


@settings(max_examples=60, deadline=None)
@given(
    background=st.floats(0.0, 100.0),
    threshold=st.floats(1.0, 200.0),
    cores=st.sampled_from((0.5, 2, 3, 7, 16, 96)),
)
def test_instance__sla_allowance_is_the_last_load_the_twin_accepts(
    background: float, threshold: float, cores: float
) -> None:
    """``allowed`` passes the twin's float test ``bg + 100 * L / C > thr`` and ``allowed + 1`` fails it."""
    fleet = (NodeSpec("n0", "x86_64", "on-demand", cores, 8, 0.1),)
    telemetry = Telemetry(np.full((1, 1, 2), background), 600.0)
    spec = TwinSpec(
        fleet,
        (JobSpec("j", 0.0, 60.0, "batch", 0.5, 1),),
        telemetry,
        EpisodeSettings(600.0, sla_threshold_pct=threshold),
    )
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    allowed = int(OracleInstance.from_hindsight(twin.hindsight()).sla_allowed_cpu_m[0, 0])
    capacity = round(cores * 1000)

    def violates(load: int) -> bool:
        return background + 100.0 * load / capacity > threshold

    assert -1 <= allowed <= capacity
    assert allowed == -1 or not violates(allowed)
    assert allowed == capacity or violates(allowed + 1)
