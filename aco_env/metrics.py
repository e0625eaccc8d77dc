"""One metric vocabulary: the episode metrics the env reports and their TensorBoard names.

The env puts ``info["episode_metrics"]`` (a dict with exactly these keys) on the final step;
training logs each as ``scheduling/<key>`` and evaluation as ``eval/<agent>/<key>``.
"""

from __future__ import annotations

from digital_twin.objective import COUNT_KEYS, OBJECTIVE_KEY, USD_KEYS

EPISODE_METRICS: tuple[str, ...] = (
    OBJECTIVE_KEY,  # the episode objective (lower is better); return = -objective_usd
    *USD_KEYS,  # compute cost, then each penalty term in USD (digital_twin.objective.PENALTIES)
    *COUNT_KEYS,  # what each penalty term counted (its unit: PENALTIES[k].unit)
    "qos_compliance",  # share of started latency-critical jobs never placed on spot
    "completed_jobs",
    "failed_jobs",
    "rejected_jobs",
    "running_jobs",  # still running at the horizon
    "pending_jobs",  # still queued at the horizon
    "future_jobs",  # arriving at or after the horizon (never submitted)
    "mean_wait_s",  # first start - arrival, over started jobs
    "utilization_cpu",  # time-averaged allocated cpu / fleet cpu
    "gpu_allocation_ratio",  # time-averaged allocated GPUs / fleet GPUs; 0 without GPUs
    "gpu_fragmentation_rate",  # time-averaged FGD fragmented share of the up nodes' free GPUs (whole GPUs)
    "node_energy_kwh",  # the nodes' whole energy (energy_kwh is our jobs' share); NaN without accounting
    "node_carbon_kg",  # the nodes' whole emissions (carbon_kg is our jobs' share)
    "workflow_makespan_s",  # mean over workflows of submission to end (horizon if failed); 0 without workflows
    "sim_time_s",
    "decisions",  # env steps taken
    "invalid_actions",
    "invalid_action_rate",
)

SCHEDULING_PREFIX = "scheduling/"
EVAL_PREFIX = "eval/"
"""Evaluation values: ``aco-env evaluate --tensorboard``, and a training run's learning curve (validation seeds)."""
TEST_PREFIX = "test/"
"""A training run's final evaluation on the held-out evaluation seeds (``RUN/eval.json``)."""


def scheduling_key(metric: str) -> str:
    """TensorBoard name of an episode metric during training, e.g. ``scheduling/objective_usd``."""
    return SCHEDULING_PREFIX + metric
