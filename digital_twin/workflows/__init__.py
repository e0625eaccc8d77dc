"""Workflows: jobs with dependencies.

A workflow is a DAG of tasks; each task is a :class:`~digital_twin.jobs.JobSpec` naming its
``workflow`` and its ``parents`` (job ids of the same workflow). A task is submitted to the
scheduler once it has arrived (``arrival_s``) and all its parents have completed; a task that
fails, is rejected or is left unserved fails every descendant.

* :mod:`digital_twin.workflows.spec`: :class:`WorkflowSpec` (a workflow's weight and deadline).
* :mod:`digital_twin.workflows.graph`: :func:`check_workflows` (parents exist, one workflow,
  no cycle) and :class:`WorkflowGraph`, the DAG by job index as the twin reads it.
"""

from digital_twin.workflows.graph import WorkflowGraph, check_workflows
from digital_twin.workflows.spec import WorkflowSpec

__all__ = ["WorkflowGraph", "WorkflowSpec", "check_workflows"]
