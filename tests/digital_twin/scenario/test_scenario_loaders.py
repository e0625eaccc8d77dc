"""A scenario's data loaders are named, typed, frozen objects: they pickle, compare, and give typed data.

Each section (fleet, telemetry, workload) is parsed into one loader per source kind; none is a
lambda or a closure, so a :class:`~digital_twin.scenario.Scenario` pickles with the standard
library and a loader reads as what it is (``SyntheticJobs(config=..., horizon_s=...)``).
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import scenarios
from digital_twin import NodeSpec, Telemetry
from digital_twin.limits import Limits
from digital_twin.scenario.fleet_section import fleet_loader
from digital_twin.scenario.schema import Section
from digital_twin.scenario.telemetry_section import telemetry_loader
from digital_twin.scenario.workload_section import jobs_loader
from digital_twin.workload import Workload

HORIZON_S = 3600.0
NODE = {
    "node_id": "n0",
    "arch": "x86_64",
    "instance": "on-demand",
    "cpu_cores": 4,
    "mem_gb": 16,
    "price_per_hour_usd": 1,
}
JOB = {"job_id": "j0", "arrival_s": 0, "duration_s": 600, "workload": "batch", "cpu_cores": 1, "mem_gb": 2}
SWF_LINE = "{id} {submit} -1 {run} 4 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"


def _section(data: dict[str, Any], where: str) -> Section:
    return Section(data, scenarios.CATALOGUE_DIR / "loaders-test.yaml", where)


def _assert_named_frozen_and_picklable(loader: object) -> None:
    """A frozen dataclass of a module-level class (no lambda, no closure) that round-trips through pickle."""
    assert dataclasses.is_dataclass(loader)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(loader, dataclasses.fields(loader)[0].name, None)
    assert "<" not in type(loader).__qualname__, type(loader).__qualname__
    assert pickle.loads(pickle.dumps(loader)) == loader


FLEETS = {
    "preset": {"preset": "default-5"},
    "nodes": {"nodes": [NODE]},
    "generate": {
        "generate": {"types": {"small": {k: v for k, v in NODE.items() if k != "node_id"}}, "counts": {"small": 2}}
    },
}


@pytest.mark.parametrize("kind", sorted(FLEETS))
def test_fleet_loader__is_a_named_frozen_object_giving_nodes(kind: str) -> None:
    """Every fleet kind parses into a picklable loader that gives a tuple of NodeSpec."""
    loader = fleet_loader(_section(FLEETS[kind], "fleet"), [], Limits())
    _assert_named_frozen_and_picklable(loader)
    nodes = loader()
    assert nodes and all(isinstance(node, NodeSpec) for node in nodes)


TELEMETRY = {
    "constant": {"reader": "constant", "cpu_pct": 30, "mem_pct": 40, "tick_s": 600},
    "trace": {
        "reader": "alibaba2018-mean",
        "path": "data/synthetic_dc_mean_300s.csv",
        "mapping": {"kind": "offset-scale-bias", "nodes": "evenly-spread"},
    },
}


@pytest.mark.parametrize("kind", sorted(TELEMETRY))
def test_telemetry_loader__is_a_named_frozen_object_giving_telemetry(kind: str) -> None:
    """Each telemetry reader parses into a picklable loader that gives a Telemetry for the fleet's size."""
    loader = telemetry_loader(_section(TELEMETRY[kind], "telemetry"), HORIZON_S, [], Limits())
    _assert_named_frozen_and_picklable(loader)
    telemetry = loader(3)
    assert isinstance(telemetry, Telemetry) and telemetry.n_nodes == 3 and telemetry.span_s >= HORIZON_S


def _workload_section(kind: str, tmp_path: Path) -> dict[str, Any]:
    if kind == "synthetic":
        return {"source": "synthetic", "options": {"base_rate_per_s": 0.01}}
    if kind == "jobs":
        return {"source": "jobs", "jobs": [JOB, {**JOB, "job_id": "j1", "arrival_s": 60}]}
    swf = tmp_path / "jobs.swf"
    swf.write_text("; a tiny SWF log\n" + "".join(SWF_LINE.format(id=k, submit=100 * k, run=300) for k in range(1, 4)))
    return {"source": "swf", "path": str(swf)}


@pytest.mark.parametrize("kind", ["synthetic", "jobs", "swf"])
def test_jobs_loader__is_a_named_frozen_object_giving_a_workload(kind: str, tmp_path: Path) -> None:
    """Each workload source parses into a picklable loader called with the rng; it gives a Workload."""
    loader, _ = jobs_loader(_section(_workload_section(kind, tmp_path), "workload"), HORIZON_S, None, [], Limits())
    _assert_named_frozen_and_picklable(loader)
    one, other = loader(np.random.default_rng(1)), loader(np.random.default_rng(1))
    assert isinstance(one, Workload) and len(one) > 0 and one == other


def test_jobs_loader__fixed_jobs_are_cut_to_the_budget() -> None:
    """An inline list keeps the first ``job_budget`` jobs by arrival."""
    section = {"source": "jobs", "jobs": [{**JOB, "job_id": f"j{k}", "arrival_s": 10 * k} for k in range(5)]}
    loader, per_episode = jobs_loader(_section(section, "workload"), HORIZON_S, 2, [], Limits())
    assert not per_episode
    assert loader(np.random.default_rng(0)).job_ids == ["j0", "j1"]
