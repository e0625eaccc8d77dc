"""Declared durations: the run time a submitter states at submission, beside the true one.

A job's ``duration_s`` is its true run time, which a real trace knows only in hindsight; the
twin runs it. What a scheduler can know when the job arrives is what the submitter declared
(``declared_duration_s``): a wall-time request, which users set far above the run time, since
a job that overruns its request is killed. Online agents see the declaration only; the oracle,
which plans in hindsight, sees the truth.

Some sources declare durations (an SWF log's ``requested_time``, an explicit job's
``declared_duration_s``); most do not. A scenario's :class:`DeclaredDurations` fills the gaps
(or, with ``from_trace=False``, replaces every declaration) after the jobs are drawn:

* ``exact``: declared = true (the hindsight of earlier versions; a perfect estimate).
* ``noisy`` (default): declared = true / accuracy, with accuracy = run / requested drawn per
  job from a log-normal: ``log(accuracy) ~ N(log(median_accuracy), sigma)``. The default
  ``median_accuracy`` = 0.109 is the published median run/requested ratio of the COARE
  Saliksik SWF log; the only SWF log available here (NASA iPSC 1993) has no
  ``requested_time``, so nothing local could be fitted. ``sigma`` = 1.0 is an assumption
  (:func:`fit_accuracy` fits both from any SWF log with requested times). Accuracy is not
  capped at 1: some jobs are declared shorter than they run, as logs show when a scheduler
  lets jobs overrun. A draw equals the true duration with probability 0 (the log-normal is
  continuous), so with ``noisy`` no declaration is the truth.
* ``class-median``: declared = the median true duration of the job's workload class
  (``latency-critical``, ``batch``, ``stream``) in the same workload: a scenario-level
  statistic (it looks at every job of the episode, as a site's historical median would),
  equal to the truth for a job whose duration is that median.

Randomness comes only from the generator passed to :meth:`DeclaredDurations.apply`; a
scenario passes one spawned from the episode's generator, which leaves the episode's own
draws (spot interruptions...) unchanged.

Example:
    >>> from digital_twin.jobs import JobSpec
    >>> from digital_twin.workload import Workload
    >>> jobs = Workload.of([JobSpec("a", 0.0, 60.0, "batch", 1, 1), JobSpec("b", 1.0, 30.0, "batch", 1, 1,
    ...                                                                       declared_duration_s=90.0)])
    >>> DeclaredDurations(EXACT).apply(jobs, np.random.default_rng(0)).declared_duration_s.tolist()
    [60.0, 90.0]
    >>> DeclaredDurations(CLASS_MEDIAN, from_trace=False).apply(jobs, None).declared_duration_s.tolist()
    [45.0, 45.0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from digital_twin import portable_math
from digital_twin.errors import SettingError, SpecError
from digital_twin.jobs import WORKLOAD_TYPES
from digital_twin.workload import Workload
from digital_twin.workloads.swf import swf_columns

EXACT = "exact"
NOISY = "noisy"
CLASS_MEDIAN = "class-median"
MODELS = (EXACT, NOISY, CLASS_MEDIAN)
"""The estimate models, by the name a scenario file uses."""

COARE_MEDIAN_ACCURACY = 0.109
"""Median run/requested time of the COARE Saliksik SWF log (published figure): the default accuracy."""
DEFAULT_SIGMA = 1.0
"""Standard deviation of log(run/requested): an assumption, fit your own with :func:`fit_accuracy`."""


@dataclass(frozen=True)
class DeclaredDurations:
    """How a scenario fills the jobs' declared durations (``workload.declared_durations`` in a file).

    Attributes:
        model: One of :data:`MODELS` (``"exact"``, ``"noisy"``, ``"class-median"``).
        median_accuracy: ``noisy``: median of run / requested, a finite number > 0 (< 1 means
            users overestimate). Ignored by the other models.
        sigma: ``noisy``: standard deviation of log(run / requested), finite and > 0 (0 would
            make every declaration the same multiple of the truth). Ignored by the others.
        from_trace: Keep the declarations the source gives and fill only the missing ones
            (``True``), or replace every declaration with the model's (``False``).

    Raises:
        SettingError: A bad value; ``error.name`` is the key (``"model"``, ``"sigma"``...).
    """

    model: str = NOISY
    median_accuracy: float = COARE_MEDIAN_ACCURACY
    sigma: float = DEFAULT_SIGMA
    from_trace: bool = True

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise SettingError("model", f"must be one of {list(MODELS)}, got {self.model!r}")
        for name in ("median_accuracy", "sigma"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise SettingError(name, f"must be a finite number > 0, got {value!r}")
        if not isinstance(self.from_trace, bool):
            raise SettingError("from_trace", f"must be true or false, got {self.from_trace!r}")

    def apply(self, jobs: Workload, rng: np.random.Generator | None) -> Workload:
        """``jobs`` with every declared duration filled: each finite and > 0 afterwards.

        Args:
            jobs: The workload as drawn (``declared_duration_s`` NaN where the source declared none).
            rng: ``noisy`` draws one accuracy per job from it, in job order (every job's, so
                the draws do not depend on which jobs the source declared); give a generator of
                its own (e.g. ``episode_rng.spawn(1)[0]``). Unused by the other models (may be ``None``).

        Returns:
            A new workload (the same true columns), or ``jobs`` itself when nothing changes.

        Raises:
            SpecError: ``noisy`` without a generator, or a declaration that overflows (a sigma
                so large that true / accuracy is not finite).
        """
        estimate = self._estimate(jobs, rng)
        declared = jobs.declared_duration_s
        gaps = np.isnan(declared)
        filled = np.where(gaps, estimate, declared) if self.from_trace else estimate
        if not gaps.any() and np.array_equal(filled, declared):  # a gap is always filled: a change
            return jobs
        return jobs.with_declared_durations(filled)

    def _estimate(self, jobs: Workload, rng: np.random.Generator | None) -> np.ndarray:
        """``(n,)`` seconds: the model's declaration for every job (finite and > 0)."""
        true_s = jobs.duration_s
        if self.model == EXACT:
            return np.array(true_s)
        if self.model == CLASS_MEDIAN:
            return class_medians(true_s, jobs.workload_index)
        if rng is None:
            raise SpecError("declared durations: the noisy model needs a random generator")
        accuracy = portable_math.exp(rng.normal(math.log(self.median_accuracy), self.sigma, size=len(jobs)))
        with np.errstate(over="ignore", divide="ignore"):
            estimate: np.ndarray = true_s / accuracy
        bad = ~(np.isfinite(estimate) & (estimate > 0))
        if bad.any():
            j = int(np.argmax(bad))
            raise SpecError(
                f"job {jobs.job_ids[j]!r}: its noisy declared duration is not a finite number > 0 "
                f"(sigma {self.sigma:g} is too large)"
            )
        return estimate


def class_medians(duration_s: np.ndarray, workload_index: np.ndarray) -> np.ndarray:
    """``(n,)`` seconds: per job, the median of ``duration_s`` over the jobs of its workload class.

    Args:
        duration_s: ``(n,)`` true durations, seconds.
        workload_index: ``(n,)`` index into :data:`~digital_twin.jobs.WORKLOAD_TYPES`.
    """
    out = np.empty(len(duration_s), dtype=np.float64)
    for k in range(len(WORKLOAD_TYPES)):
        members = workload_index == k
        if members.any():
            out[members] = np.median(duration_s[members])
    return out


def fit_accuracy(run_s: np.ndarray, requested_s: np.ndarray) -> tuple[float, float]:
    """Fit ``(median_accuracy, sigma)`` of the ``noisy`` model to logged run and requested times.

    Only jobs with both a run time and a requested time > 0 count (an SWF log writes ``-1`` for
    unknown). ``median_accuracy`` is the median of run / requested; ``sigma`` the standard
    deviation of log(run / requested) (population, ``ddof=0``).

    Args:
        run_s: ``(n,)`` run times, seconds (e.g. an SWF log's ``run_time``).
        requested_s: ``(n,)`` requested times, seconds (its ``requested_time``).

    Raises:
        SpecError: Different lengths, or fewer than two jobs with both times > 0.

    >>> fit_accuracy(np.array([10.0, 20.0, 40.0, -1.0]), np.array([100.0, 100.0, 100.0, 100.0]))[0]
    0.2
    """
    run = np.asarray(run_s, dtype=np.float64)
    requested = np.asarray(requested_s, dtype=np.float64)
    if run.shape != requested.shape or run.ndim != 1:
        raise SpecError(
            f"run_s and requested_s must be (n,) arrays of one length, got {run.shape} and {requested.shape}"
        )
    known = np.isfinite(run) & np.isfinite(requested) & (run > 0) & (requested > 0)
    if int(known.sum()) < 2:
        raise SpecError(f"fit_accuracy needs at least 2 jobs with run and requested times > 0, got {int(known.sum())}")
    ratio = run[known] / requested[known]
    return float(np.median(ratio)), float(np.std(np.log(ratio)))


def fit_swf_accuracy(path: str | Path) -> tuple[float, float]:
    """:func:`fit_accuracy` on an SWF log's ``run_time`` and ``requested_time`` columns (fields 4 and 9).

    Raises:
        TraceError: The file is not a readable SWF log (as :func:`~digital_twin.workloads.load_swf_jobs`).
        SpecError: Fewer than two jobs with both times known.
    """
    columns = swf_columns(path)
    return fit_accuracy(columns["run_time"], columns["requested_time"])
