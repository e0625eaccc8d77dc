"""The twin's event log: one entry per event when a twin records (``DigitalTwin(record_events=True)``)."""

from __future__ import annotations

from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import CoreState


def log_event(s: CoreState, c: TwinConstants, event: str, j: int, i: int) -> None:
    """Append ``(time_s, event, job_id, node_id)`` to the event log when recording (-1: no job/node)."""
    if s.events is not None:
        s.events.append((s.time_s, event, c.job_ids[j] if j >= 0 else "", c.node_ids[i] if i >= 0 else ""))
