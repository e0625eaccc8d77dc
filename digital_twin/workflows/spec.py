"""A workflow's own attributes: its weight in the completion-time term and its deadline."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from digital_twin._from_mapping import from_mapping
from digital_twin.errors import SpecError, short_repr


@dataclass(frozen=True, slots=True)
class WorkflowSpec:
    """One workflow: its id, how much its completion time weighs, and when it is due.

    Attributes:
        workflow_id: The id its tasks name in ``JobSpec.workflow``.
        weight: Multiplies the workflow's hours from submission to completion in the objective's
            ``workflow`` term (finite, > 0; 1 by default).
        deadline_s: The latest completion of its last task, in simulated seconds from the
            episode start (``None``: no deadline); missing it costs the ``workflow_deadline`` penalty.
    """

    workflow_id: str
    weight: float = 1.0
    deadline_s: float | None = None

    def __post_init__(self) -> None:
        where = f"workflow {short_repr(self.workflow_id)}"
        if not isinstance(self.workflow_id, str) or not self.workflow_id:
            raise SpecError(f"workflow_id must be a non-empty string, got {short_repr(self.workflow_id)}")
        if not _finite(self.weight) or self.weight <= 0:
            raise SpecError(f"{where}: weight must be a finite number > 0, got {short_repr(self.weight)}")
        if self.deadline_s is not None and (not _finite(self.deadline_s) or self.deadline_s < 0):
            raise SpecError(f"{where}: deadline_s must be a finite number >= 0, got {short_repr(self.deadline_s)}")


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def workflow_from_dict(data: Mapping[str, Any], where: str = "workflow") -> WorkflowSpec:
    """Build a :class:`WorkflowSpec` from a mapping of its field names (unknown keys are errors).

    Raises:
        SpecError: ``"<where>: ..."``: not a mapping, an unknown or missing key, a bad value.
    """
    return from_mapping(WorkflowSpec, data, where, "workflow")


def workflows_by_id(workflows: Iterable[WorkflowSpec]) -> dict[str, WorkflowSpec]:
    """The workflow specs by id; a repeated id is a :class:`SpecError`."""
    described: dict[str, WorkflowSpec] = {}
    for spec in workflows:
        if spec.workflow_id in described:
            raise SpecError(f"duplicate workflow_id {spec.workflow_id!r}")
        described[spec.workflow_id] = spec
    return described
