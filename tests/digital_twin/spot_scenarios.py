"""Scenario files on the default fleet whose spot nodes replay written (or shared) availability traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from digital_twin.scenario import Scenario, load_scenario
from tests.paths import ROOT

DEFAULT = ROOT / "scenarios" / "fleet5-synthetic.yaml"
"""The default scenario: its fleet's spot nodes are ``node-arm-02`` and ``node-gpu-05``."""


def write_trace(path: Path, counts: list[int], gap_s: float) -> Path:
    """A trace file in the SkyPilot format."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"metadata": {"gap_seconds": gap_s}, "data": counts}))
    return path


def replayed_default(folder: Path, traces: list[dict[str, Any]], start_s: float | str = "random") -> Scenario:
    """The default scenario with ``spot: {model: trace, traces: traces, start_s: start_s}``, written in ``folder``."""
    document = yaml.safe_load(DEFAULT.read_text())
    document["name"] = "fleet5-replayed-test"
    document["telemetry"]["path"] = str(DEFAULT.parent / document["telemetry"]["path"])
    document["spot"] = {"recovery_s": 600, "model": "trace", "start_s": start_s, "traces": traces}
    path = folder / "replayed.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_scenario(path)


def expected_transitions(
    counts: list[int], gap_s: float, start_s: float, horizon_s: float, instances: int, group: int, rank: int
) -> list[tuple[str, float]]:
    """Node ``rank`` of a ``group``-node group's interruptions and recoveries in ``[0, horizon_s)``, tick by tick.

    Written apart from the replay, from its documented rule: up while ``count * group > rank * instances``.
    """
    first = int(start_s // gap_s)
    up = counts[first] * group > rank * instances
    events = [] if up else [("interruption", 0.0)]
    for k in range(first + 1, len(counts)):
        at = k * gap_s - start_s
        if at >= horizon_s:
            break
        now_up = counts[k] * group > rank * instances
        if now_up != up:
            events.append(("recovery" if now_up else "interruption", at))
            up = now_up
    return events
