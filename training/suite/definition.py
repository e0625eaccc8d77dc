"""The benchmark suite's definition: tasks, their groups, seed splits and references, read from one file.

The suite (``training/suite/suite.yaml``) names its version, the environment it was made for, the
weak baseline that scores 0, and its tasks. Each :class:`SuiteTask` is a bundled scenario with a
group (``train`` or ``held-out``), three seed ranges (train, validation, test: half-open, disjoint,
each inside the evaluation protocol's range of the same purpose, :mod:`training.evaluation.protocol`)
and a reference that scores 1: ``planted`` (the episode's proven optimum) or a named oracle
configuration (an agent spec such as ``oracle[memory_budget_gb=0.001]``, whose plan is the
reference and whose lower bound is reported beside it).

>>> suite = load_suite()
>>> suite.label, suite.weak_baseline
('aco-suite v2', 'random')
>>> load_suite(SUITE_V1_FILE).superseded_by
2
>>> suite.task("planted5").reference.kind
'planted'
>>> all(task.seeds.test.start >= 100_000 for task in suite.tasks)
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import scenarios
from training.evaluation.protocol import TEST, TRAINING, VALIDATION, SeedRange, SeedRangeError, check_disjoint

SUITE_FILE = Path(__file__).resolve().parent / "suite-v2.yaml"
"""The current suite's definition, in the repository (and installed with the package)."""
SUITE_V1_FILE = Path(__file__).resolve().parent / "suite.yaml"
"""aco-suite v1, superseded by v2 and kept so its numbers stay reproducible (``aco-env suite --suite``)."""
GROUPS = ("train", "held-out")
"""A task's group: ``train`` tasks may be trained and tuned on, ``held-out`` ones never."""
PLANTED = "planted"
"""The reference kind of a task whose scenario plants a proven optimum in every episode."""
SPLIT_PURPOSES: dict[str, SeedRange] = {"train": TRAINING, "validation": VALIDATION, "test": TEST}
"""A task's seed splits and the protocol range each must lie in."""
_TASK_KEYS = frozenset({"name", "scenario", "group", "reference", "about", "seeds"})
_SUITE_KEYS = frozenset(
    {
        "name",
        "version",
        "env",
        "weak_baseline",
        "seeds",
        "tasks",
        "references",
        "min_reference_margin",
        "max_baseline_spread",
        "superseded_by",
    }
)


class SuiteError(ValueError):
    """The suite's file is malformed: the message names the file and the key or task."""


@dataclass(frozen=True)
class TaskSeeds:
    """A task's three seed ranges (half-open, disjoint)."""

    train: SeedRange
    validation: SeedRange
    test: SeedRange

    def ranges(self) -> tuple[SeedRange, SeedRange, SeedRange]:
        """The three, in purpose order."""
        return (self.train, self.validation, self.test)


@dataclass(frozen=True)
class Reference:
    """What scores 1 on a task.

    Attributes:
        kind: ``"planted"`` or the name of an oracle configuration (a key of the suite's ``references``).
        agent: The agent whose episodes give the reference: the oracle's spec; for ``planted``,
            ``None`` (every agent's episode carries the planted optimum).
    """

    kind: str
    agent: str | None

    def describe(self) -> str:
        """One phrase for tables: what the 1 of the task's scale is."""
        return "planted optimum" if self.kind == PLANTED else f"oracle plan ({self.agent})"


@dataclass(frozen=True)
class SuiteTask:
    """One task of the suite.

    Attributes:
        name: The task's name (unique in the suite).
        scenario: The bundled scenario it plays.
        group: ``"train"`` or ``"held-out"``.
        seeds: Its train, validation and test seed ranges.
        reference: What scores 1.
        about: One line on what the task measures.
    """

    name: str
    scenario: str
    group: str
    seeds: TaskSeeds
    reference: Reference
    about: str

    @property
    def test_seeds(self) -> tuple[int, ...]:
        """The seeds every score of the task is measured on."""
        return tuple(range(self.seeds.test.start, self.seeds.test.stop))

    def scenario_sha256(self) -> str:
        """The sha256 of the scenario's file: references made from another file are stale."""
        return hashlib.sha256(scenarios.path_of(self.scenario).read_bytes()).hexdigest()


@dataclass(frozen=True)
class Suite:
    """The suite: its identity, its weak baseline and its tasks, in file order.

    Attributes:
        name: The suite's name (``aco-suite``).
        version: Its version; a task's numbers change only with a new one.
        env: The environment id it was made for (``aco_env/ClusterScheduling-vN``).
        weak_baseline: The agent that scores 0 on every task.
        tasks: The tasks.
        path: The file it was read from.
        min_reference_margin: A task whose reference beats the weak baseline by less than this
            share of the baseline's mean is normalised by the oracle's lower bound instead
            (``None``: always by the reference; v1).
        max_baseline_spread: A task whose weak baseline's normalised episode scores have a
            larger standard deviation than this cannot be in the suite (its reference is refused;
            ``None``: no limit; v1).
        superseded_by: The version that replaces this one (``None``: current).
    """

    name: str
    version: int
    env: str
    weak_baseline: str
    tasks: tuple[SuiteTask, ...]
    path: Path
    min_reference_margin: float | None = None
    max_baseline_spread: float | None = None
    superseded_by: int | None = None

    @property
    def label(self) -> str:
        """How results cite it: ``"aco-suite v1"``."""
        return f"{self.name} v{self.version}"

    def task(self, name: str) -> SuiteTask:
        """The task named ``name``.

        Raises:
            SuiteError: No task has that name (the message lists them).
        """
        for task in self.tasks:
            if task.name == name:
                return task
        raise SuiteError(f"{self.label} has no task {name!r}; its tasks: {', '.join(t.name for t in self.tasks)}")

    def group(self, group: str) -> tuple[SuiteTask, ...]:
        """The tasks of one group, in file order."""
        if group not in GROUPS:
            raise SuiteError(f"no group {group!r}; the groups are {', '.join(GROUPS)}")
        return tuple(task for task in self.tasks if task.group == group)

    def select(self, names: Sequence[str] = (), group: str | None = None) -> tuple[SuiteTask, ...]:
        """The tasks named (in suite order), or a group's, or all of them."""
        chosen = self.tasks if group is None else self.group(group)
        if not names:
            return chosen
        wanted = {self.task(name).name for name in names}
        return tuple(task for task in chosen if task.name in wanted)


def load_suite(path: str | Path | None = None) -> Suite:
    """Read and check a suite file (default: the repository's :data:`SUITE_FILE`).

    Raises:
        SuiteError: A key is missing, unknown or malformed, a task's scenario is not bundled, a
            reference is not defined, or seed ranges overlap or leave their protocol range;
            the message names the file and the task or key.
    """
    file = Path(path) if path is not None else SUITE_FILE
    try:
        document = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SuiteError(f"{file}: cannot read the suite: {exc}") from None
    if not isinstance(document, dict):
        raise SuiteError(f"{file}: a suite is a mapping with keys {', '.join(sorted(_SUITE_KEYS))}")
    _check_keys(document, _SUITE_KEYS, f"{file}")
    where = str(file)
    references = _mapping(document.get("references", {}), f"{where}: references")
    default_seeds = _mapping(document.get("seeds"), f"{where}: seeds")
    raw_tasks = document.get("tasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise SuiteError(f"{where}: tasks: a non-empty list of tasks")
    tasks = tuple(_task(raw, default_seeds, references, f"{where}: tasks[{k}]") for k, raw in enumerate(raw_tasks))
    names = [task.name for task in tasks]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise SuiteError(f"{where}: tasks: each name once; repeated: {', '.join(repeated)}")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SuiteError(f"{where}: version: a positive integer, got {version!r}")
    margin = document.get("min_reference_margin")
    if margin is not None and (isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 1):
        raise SuiteError(f"{where}: min_reference_margin: a share in [0, 1), got {margin!r}")
    spread = document.get("max_baseline_spread")
    if spread is not None and (isinstance(spread, bool) or not isinstance(spread, int | float) or not spread > 0):
        raise SuiteError(f"{where}: max_baseline_spread: a number > 0, got {spread!r}")
    superseded_by = document.get("superseded_by")
    if superseded_by is not None and (not isinstance(superseded_by, int) or superseded_by <= version):
        raise SuiteError(f"{where}: superseded_by: a later version than {version}, got {superseded_by!r}")
    return Suite(
        name=_text(document, "name", where),
        version=version,
        env=_text(document, "env", where),
        weak_baseline=_text(document, "weak_baseline", where),
        tasks=tasks,
        path=file,
        min_reference_margin=None if margin is None else float(margin),
        max_baseline_spread=None if spread is None else float(spread),
        superseded_by=superseded_by,
    )


def _task(raw: Any, default_seeds: Mapping[str, Any], references: Mapping[str, Any], where: str) -> SuiteTask:
    """One task entry, checked."""
    if not isinstance(raw, dict):
        raise SuiteError(f"{where}: a task is a mapping with keys {', '.join(sorted(_TASK_KEYS))}")
    _check_keys(raw, _TASK_KEYS, where)
    name = _text(raw, "name", where)
    where = f"{where} ({name})"
    scenario = _text(raw, "scenario", where)
    if scenario not in scenarios.names():
        raise SuiteError(f"{where}: scenario: {scenario!r} is not a bundled scenario")
    group = _text(raw, "group", where)
    if group not in GROUPS:
        raise SuiteError(f"{where}: group: one of {', '.join(GROUPS)}, got {group!r}")
    kind = _text(raw, "reference", where)
    if kind != PLANTED and kind not in references:
        raise SuiteError(f"{where}: reference: {PLANTED!r} or one of the suite's references ({', '.join(references)})")
    agent = None if kind == PLANTED else str(references[kind])
    seeds = _seeds({**default_seeds, **_mapping(raw.get("seeds", {}), f"{where}: seeds")}, f"{where}: seeds")
    return SuiteTask(name, scenario, group, seeds, Reference(kind, agent), str(raw.get("about", "")))


def _seeds(raw: Mapping[str, Any], where: str) -> TaskSeeds:
    """The three ranges of a task, each inside its protocol range, pairwise disjoint."""
    _check_keys(raw, frozenset(SPLIT_PURPOSES), where)
    ranges = []
    for split, protocol_range in SPLIT_PURPOSES.items():
        value = raw.get(split)
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        ):
            raise SuiteError(f"{where}: {split}: [start, stop), two integers, got {value!r}")
        chosen = SeedRange(split, value[0], value[1], protocol_range.purpose)
        if not (protocol_range.start <= chosen.start < chosen.stop <= protocol_range.stop):
            raise SuiteError(f"{where}: {split}: {value} must be a non-empty part of the protocol's {protocol_range}")
        ranges.append(chosen)
    try:
        check_disjoint(ranges)
    except SeedRangeError as exc:
        raise SuiteError(f"{where}: {exc}") from None
    return TaskSeeds(*ranges)


def _check_keys(raw: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise SuiteError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise SuiteError(f"{where}: a mapping, got {value!r}")
    return value


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise SuiteError(f"{where}: {key}: a non-empty string, got {value!r}")
    return value
