"""Scenarios built in code for the full-twin reproductions, through the scenario file schema.

A tier writes the mapping a scenario YAML file would hold (fleet, telemetry, workload, horizon,
settings) and :func:`code_scenario` validates it with :func:`digital_twin.scenario.parse_scenario`,
so a code-built scenario obeys exactly the rules (and error messages) of a file. Its ``source``
is a pseudo path ``<reproduce:NAME>`` and its ``content_hash`` the SHA-256 of the mapping.

Example:
    >>> from digital_twin import default_fleet
    >>> scenario = code_scenario(
    ...     "demo", default_fleet(),
    ...     telemetry={"reader": "constant", "cpu_pct": 0.0, "mem_pct": 0.0, "tick_s": 600.0},
    ...     workload={"source": "jobs", "jobs": [job_dict(JobSpec("j0", 0.0, 60.0, "batch", 1, 2))]},
    ...     horizon_s=600.0,
    ... )
    >>> scenario.name, len(scenario.fleet), scenario.jobs(None)[0].job_id
    ('demo', 5, 'j0')
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from digital_twin import JobSpec, NodeSpec
from digital_twin.scenario import SCHEMA_VERSION, Scenario, parse_scenario


def node_dict(node: NodeSpec) -> dict[str, Any]:
    """The scenario-file mapping of one node (every :class:`NodeSpec` field)."""
    return dataclasses.asdict(node)


def job_dict(job: JobSpec) -> dict[str, Any]:
    """The scenario-file mapping of one job (``allowed_gpu_models`` as a list)."""
    out = dataclasses.asdict(job)
    if out["allowed_gpu_models"] is not None:
        out["allowed_gpu_models"] = list(out["allowed_gpu_models"])
    return out


def code_scenario(
    name: str,
    fleet: Sequence[NodeSpec],
    *,
    telemetry: Mapping[str, Any],
    workload: Mapping[str, Any],
    horizon_s: float,
    queue_ttl_s: float | None = 1800.0,
    spot_interruptions: bool = True,
    interference: str = "processor-sharing",
    job_budget: int | None = None,
    description: str = "",
    seed: int = 0,
) -> Scenario:
    """A validated :class:`Scenario` from the parts of a scenario file.

    Args:
        name: Scenario name (also in its pseudo source path).
        fleet: The nodes, in action order.
        telemetry: The ``telemetry:`` mapping (e.g. ``{"reader": "constant", ...}``); paths
            should be absolute (a relative path would resolve against the working folder).
        workload: The ``workload:`` mapping (``source: jobs`` with a list, or ``synthetic``).
        horizon_s: Episode length in simulated seconds.
        queue_ttl_s: Queue timeout in seconds (``None`` = none).
        spot_interruptions: False disables spot interruptions.
        interference: ``"processor-sharing"`` (the full twin's physics) or ``"none"``.
        job_budget: Keep at most this many jobs (``None`` = all).
        description: Free text.
        seed: The scenario's default seed.

    Raises:
        digital_twin.scenario.ScenarioError: The mapping breaks the scenario schema.
    """
    mapping: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "description": description,
        "seed": seed,
        "horizon_s": float(horizon_s),
        "queue_ttl_s": queue_ttl_s,
        "interference": interference,
        "spot": {"interruptions": spot_interruptions},
        "fleet": {"nodes": [node_dict(node) for node in fleet]},
        "telemetry": dict(telemetry),
        "workload": dict(workload),
    }
    if job_budget is not None:
        mapping["job_budget"] = job_budget
    digest = hashlib.sha256(json.dumps(mapping, sort_keys=True, default=str).encode()).hexdigest()
    return parse_scenario(mapping, Path(f"<reproduce:{name}>"), digest)


def constant_background(cpu_pct: float, mem_pct: float, tick_s: float) -> dict[str, Any]:
    """A ``telemetry:`` mapping of a flat background (``reader: constant``)."""
    return {"reader": "constant", "cpu_pct": cpu_pct, "mem_pct": mem_pct, "tick_s": tick_s}


def aggregate_trace(path: Path, nodes: str | list[dict[str, Any]], *, wrap: bool = False) -> dict[str, Any]:
    """A ``telemetry:`` mapping reading an Alibaba-2018-format mean trace with per-node offsets.

    Args:
        path: The CSV (``cpu_util_percent``, ``mem_util_percent`` columns), absolute.
        nodes: ``"evenly-spread"`` or one ``{"offset", "scale", "bias_pct"}`` mapping per node.
        wrap: Read the trace cyclically when an offset runs past its end.
    """
    return {
        "reader": "alibaba2018-mean",
        "path": str(Path(path).resolve()),
        "mapping": {"kind": "offset-scale-bias", "nodes": nodes, "wrap": wrap},
    }
