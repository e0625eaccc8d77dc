"""Each task's 0 and 1: the weak baseline's and the reference's objectives on its test seeds, cached.

A :class:`TaskReference` holds, per test seed, the weak baseline's objective, the reference's
(the planted optimum, or the plan of the task's oracle) and the lower bound beside it (the planted
optimum again, or the oracle's bound). Computing one plays the weak baseline and, for an oracle
reference, the oracle on every test seed (:func:`compute_reference`), so references are computed
once and kept in a :class:`ReferenceStore`: JSON files named after the suite and its version
(``aco-suite-v1-references.json``), looked up first in the repository (``training/suite/``: the
references the leaderboard was made with) and then in a cache folder, where new ones are written.
An entry is used only when it was made for the same suite version, environment, scenario file
and seeds; any other is stale and is computed again (with a warning).

The cache folder may be shared by runs at the same time (``--cache``, ``$ACO_ENV_CACHE``): a new
entry is added under a file lock (``<file>.lock``, :func:`training.outputs.shared_file_lock`) that
covers reading the file again, merging the entry into what other runs wrote meanwhile, and
replacing the file atomically (a unique temporary name renamed into place), so no run loses
another's entries and no reader sees half a file. Each entry carries the SHA-256 of its content
(``"sha256"``): an entry whose checksum does not match (torn, hand-edited), or that is not a
reference at all, is ignored with a warning and computed again; a file that is not JSON is
ignored the same way (its readable entries are lost, nothing else) and replaced by the next write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from digital_twin.atomic_files import write_text
from training.evaluation.evaluator import evaluate
from training.execution.backend import Backend
from training.outputs import shared_file_lock
from training.suite.definition import PLANTED, Suite, SuiteError, SuiteTask

logger = logging.getLogger(__name__)

EVALUATOR_LOGGER = "training.evaluation.evaluator"
"""Whose warnings (the oracle decomposing each episode) are quieted while references are computed."""
BUNDLED_DIR = Path(__file__).resolve().parent
"""Where the repository's references live (beside the suite's file)."""
CHECKSUM_KEY = "sha256"
"""The key of an entry's checksum in a references file (:meth:`TaskReference.checksum`; optional when reading)."""


@dataclass(frozen=True)
class TaskReference:
    """A task's normalisation constants, per test seed.

    Attributes:
        task: The task's name.
        suite: The suite's label (``"aco-suite v1"``).
        env: The environment id they were measured in.
        scenario_sha256: The sha256 of the task's scenario file then.
        kind: ``"planted"`` or the oracle configuration's name.
        agent: The reference's agent spec (``None`` for planted).
        seeds: The test seeds, in order.
        baseline_usd: The weak baseline's objective on each seed.
        reference_usd: The reference's objective on each seed (planted optimum or oracle plan).
        bound_usd: A lower bound on every policy's objective on each seed (the planted optimum,
            or the oracle's bound).
        seconds: Wall time it took to compute (not compared).
        normalised_by: What scores 1: ``"reference"`` (its mean), or ``"bound"`` (the bound's
            mean) where the reference beats the weak baseline by less than the suite's
            ``min_reference_margin``.
    """

    task: str
    suite: str
    env: str
    scenario_sha256: str
    kind: str
    agent: str | None
    seeds: tuple[int, ...]
    baseline_usd: tuple[float, ...]
    reference_usd: tuple[float, ...]
    bound_usd: tuple[float, ...]
    seconds: float = 0.0
    normalised_by: str = "reference"

    @property
    def baseline_mean(self) -> float:
        """The task's 0: the weak baseline's mean objective (USD)."""
        return float(np.mean(self.baseline_usd))

    @property
    def reference_mean(self) -> float:
        """The task's 1: the reference's mean objective (USD)."""
        return float(np.mean(self.reference_usd))

    @property
    def bound_mean(self) -> float:
        """The mean lower bound (USD)."""
        return float(np.mean(self.bound_usd))

    @property
    def one_mean(self) -> float:
        """What scores 1 (USD): the reference's mean, or the bound's (``normalised_by``)."""
        return self.bound_mean if self.normalised_by == "bound" else self.reference_mean

    @property
    def baseline_spread(self) -> float:
        """The standard deviation of the weak baseline's normalised episode scores."""
        span = self.baseline_mean - self.one_mean
        return float(np.std(np.array(self.baseline_usd)) / span) if span > 0 else float("inf")

    @property
    def margin(self) -> float:
        """How much the reference beats the weak baseline, as a share of the baseline's mean."""
        return (self.baseline_mean - self.reference_mean) / self.baseline_mean if self.baseline_mean else 0.0

    def matches(self, suite: Suite, task: SuiteTask) -> str | None:
        """Why this entry cannot serve ``task`` of ``suite`` (``None``: it can)."""
        expected = {
            "suite": suite.label,
            "env": suite.env,
            "scenario_sha256": task.scenario_sha256(),
            "kind": task.reference.kind,
            "agent": task.reference.agent,
            "seeds": task.test_seeds,
        }
        for key, value in expected.items():
            if getattr(self, key) != value:
                return f"its {key} differs"
        return None

    def to_json(self) -> dict[str, Any]:
        """The entry as JSON values (sequences as lists)."""
        return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> TaskReference:
        """The entry of :meth:`to_json`'s output (a ``"sha256"`` key beside it is not part of it)."""
        values = {key: value for key, value in raw.items() if key != CHECKSUM_KEY}
        for key in ("seeds", "baseline_usd", "reference_usd", "bound_usd"):
            values[key] = tuple(values[key])
        return cls(**values)

    def checksum(self) -> str:
        """The SHA-256 of the entry's JSON (keys sorted), kept beside it in a references file."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()


def compute_reference(suite: Suite, task: SuiteTask, backend: Backend | None = None) -> TaskReference:
    """Play the weak baseline (and the task's oracle) on every test seed of ``task``.

    Raises:
        SuiteError: The reference does not score below the weak baseline on average (the task has
            no scale), or the oracle left the episodes out (too large for its memory budget).
    """
    started = time.perf_counter()
    agents = [suite.weak_baseline] + ([task.reference.agent] if task.reference.agent is not None else [])
    seeds = task.test_seeds
    logger.warning("%s: computing its reference (%s on %d test seeds)", task.name, " and ".join(agents), len(seeds))
    with _quiet(EVALUATOR_LOGGER):  # one warning per decomposed oracle episode: expected of an oracle at scale
        evaluation = evaluate(task.scenario, agents, len(seeds), seeds[0], progress=False, backend=backend)
    if evaluation.skipped:
        raise SuiteError(f"{task.name}: the reference could not be computed: {evaluation.skipped}")
    baseline = evaluation.agents[suite.weak_baseline].episodes
    if task.reference.kind == PLANTED:
        optima = [episode.planted.optimum_usd for episode in baseline if episode.planted is not None]
        if len(optima) != len(seeds):
            raise SuiteError(f"{task.name}: reference planted, but scenario {task.scenario} plants no optimum")
        reference, bound = optima, optima
    else:
        oracle = [episode.oracle for episode in evaluation.agents[str(task.reference.agent)].episodes]
        reference = [episode.plan_objective_usd for episode in oracle if episode is not None]
        bound = [episode.lower_bound_usd for episode in oracle if episode is not None]
    result = TaskReference(
        task=task.name,
        suite=suite.label,
        env=suite.env,
        scenario_sha256=task.scenario_sha256(),
        kind=task.reference.kind,
        agent=task.reference.agent,
        seeds=seeds,
        baseline_usd=tuple(float(episode.metrics["objective_usd"]) for episode in baseline),
        reference_usd=tuple(float(value) for value in reference),
        bound_usd=tuple(float(value) for value in bound),
        seconds=time.perf_counter() - started,
    )
    margin = suite.min_reference_margin
    if margin is not None and result.margin < margin and result.bound_mean < result.baseline_mean:
        logger.warning(
            "%s: the reference beats %s by %.1f %% (< %.0f %%): the task is normalised by the oracle's bound",
            task.name,
            suite.weak_baseline,
            100 * result.margin,
            100 * margin,
        )
        result = dataclasses.replace(result, normalised_by="bound")
    spread = suite.max_baseline_spread
    if spread is not None and result.baseline_spread > spread:
        raise SuiteError(
            f"{task.name}: one {suite.weak_baseline} episode's normalised score has a standard deviation of "
            f"{result.baseline_spread:.2f} > {spread:g} (max_baseline_spread): the task cannot be in {suite.label}"
        )
    if not result.reference_mean < result.baseline_mean:
        raise SuiteError(
            f"{task.name}: the reference ({result.reference_mean:.4f} USD) does not beat the weak baseline "
            f"{suite.weak_baseline} ({result.baseline_mean:.4f} USD): the task has no scale"
        )
    return result


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Only errors from the logger ``name`` while the block runs.

    A filter, not a level: records re-logged from worker processes skip the logger's level.
    """
    quieted = logging.getLogger(name)

    def errors_only(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR

    quieted.addFilter(errors_only)
    try:
        yield
    finally:
        quieted.removeFilter(errors_only)


class ReferenceStore:
    """References by task, from the repository's file and a cache folder (new ones go to the cache).

    Args:
        suite: The suite the references are for.
        cache_dir: Where computed references are written (``None``: nowhere; they are still
            computed and used). Its file is read after the repository's.
        bundled_dir: Where the repository's references are read from.
    """

    def __init__(self, suite: Suite, cache_dir: Path | None, bundled_dir: Path = BUNDLED_DIR) -> None:
        self.suite = suite
        self.file_name = f"{suite.name}-v{suite.version}-references.json"
        self.cache_file = cache_dir / self.file_name if cache_dir is not None else None
        self._entries: dict[str, TaskReference] = {}
        for file in dict.fromkeys(f for f in (bundled_dir / self.file_name, self.cache_file) if f is not None):
            self._entries.update(_read(file))

    def get(self, task: SuiteTask, backend: Backend | None = None, recompute: bool = False) -> TaskReference:
        """``task``'s reference: a stored one that matches it, else computed now and cached.

        The cache file is read again first when this store has no matching entry: another run
        sharing the cache may have computed it since.
        """
        entry = self._entries.get(task.name)
        if (entry is None or entry.matches(self.suite, task) is not None) and self.cache_file is not None:
            entry = _read(self.cache_file).get(task.name, entry)
        if entry is not None and not recompute:
            stale = entry.matches(self.suite, task)
            if stale is None:
                return entry
            logger.warning("%s: the stored reference is stale (%s); computing it again", task.name, stale)
        entry = compute_reference(self.suite, task, backend)
        self._entries[task.name] = entry
        if self.cache_file is not None:
            self.put(entry)
        return entry

    def put(self, entry: TaskReference) -> None:
        """Add ``entry`` to the cache file, merged with what other runs wrote there (under the file's lock).

        Raises:
            OSError: The file (or its lock) cannot be written; the file there before is unchanged.
        """
        if self.cache_file is None:
            raise ValueError("this store has no cache folder to write to")
        self._entries[entry.task] = entry
        with shared_file_lock(self.cache_file):
            entries = _read(self.cache_file)  # what the other runs wrote since this one read it
            entries[entry.task] = entry
            document = {
                "suite": self.suite.label,
                "made_by": "aco-env suite (training/suite/references.py)",
                "tasks": {name: _with_checksum(entries[name]) for name in sorted(entries)},
            }
            write_text(self.cache_file, json.dumps(document, indent=1) + "\n")


def _with_checksum(entry: TaskReference) -> dict[str, Any]:
    return {**entry.to_json(), CHECKSUM_KEY: entry.checksum()}


def _read(file: Path) -> dict[str, TaskReference]:
    """The entries of one references file (none when it does not exist).

    An entry whose checksum does not match or that is not a reference, and a file that cannot be
    read as JSON, are left out with a warning (they will be computed again).
    """
    if not file.exists():
        return {}
    try:
        document = json.loads(file.read_text())
        raw_tasks = document["tasks"]
        if not isinstance(raw_tasks, dict):
            raise TypeError("its tasks are not a mapping")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("%s: not a references file (%s); its references will be computed again", file, exc)
        return {}
    entries = {}
    for name, raw in raw_tasks.items():
        problem = _entry_problem(raw)
        if problem is None:
            entries[name] = TaskReference.from_json(raw)
        else:
            logger.warning("%s: the reference of %s is %s; it will be computed again", file, name, problem)
    return entries


def _entry_problem(raw: object) -> str | None:
    """Why ``raw`` is not a usable entry (``None``: it is)."""
    try:
        entry = TaskReference.from_json(raw)  # type: ignore[arg-type]  # checked by what it raises
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        return f"not a reference ({exc})"
    recorded = raw.get(CHECKSUM_KEY) if isinstance(raw, dict) else None
    if recorded is not None and recorded != entry.checksum():
        return "damaged (its checksum does not match its content)"
    return None
