"""The checks ``aco-env train`` and ``aco-env run`` make before any work starts.

:func:`check_train_config` looks at everything a training run would otherwise trip over after
minutes of work: the scenario and its data, the ``--hp`` keys (against the algorithm's
constructor), the baselines to evaluate, the run to resume, whether the seed leaves each of its
episodes in the protocol's range (:func:`check_seed_ranges`), and whether the output folder can be
written. It raises :class:`~training.errors.UsageError` or :class:`~training.errors.DataError`
with one line naming the option. (Integer ranges and ``--hp KEY=VALUE`` syntax are argparse
types; :class:`~training.learning.config.TrainConfig` itself raises ``ValueError`` for library callers.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.algorithms import ALGORITHMS
from agents.sb3_agent import ModelFileError, check_model_file
from digital_twin.scenario import Scenario
from training import checks
from training.errors import DataError, UsageError
from training.evaluation.protocol import IMITATION, TEST, TRAINING, VALIDATION, SeedRange, SeedRangeError, seeds
from training.learning.config import RESUME_OPTIONS, TrainConfig
from training.learning.experts import expert_for
from training.learning.run_dir import find_resume_point, resumed_config, stored_config


def given_options(config: TrainConfig) -> set[str]:
    """The fields of ``config`` that differ from the defaults: the options the user set.

    (An option given with its default value counts as not given: the parsed values cannot tell.)
    """
    defaults = TrainConfig()
    return {f.name for f in dataclasses.fields(TrainConfig) if getattr(config, f.name) != getattr(defaults, f.name)}


@dataclass(frozen=True)
class CheckedRun:
    """A training run that passed every check: its config and its scenario, loaded once.

    Attributes:
        config: The config to train with (on resume: the run's, with the resume options given).
        scenario: ``config.scenario``, loaded and with its data present (pass it to
            :func:`training.learning.train.train`, so the scenario is not read again).
        train_scenarios: ``config.train_scenarios``, loaded and checked (the same).
    """

    config: TrainConfig
    scenario: Scenario
    train_scenarios: tuple[Scenario, ...] = ()


def check_train_config(config: TrainConfig, given: Collection[str] = ()) -> CheckedRun:
    """The config a run will train with, and its scenario, after every check that can fail before training.

    Args:
        config: From the command line.
        given: The options set on the command line. On ``--resume`` the run keeps its own
            options, so one of these outside :data:`~training.learning.config.RESUME_OPTIONS` that differs
            from the run's ``config.json`` is a usage error rather than silently ignored; the
            resume options not given keep the run's values (``--timesteps``: its planned total).

    Returns:
        ``config`` (on resume the run's stored config with the resume options given here) and
        its loaded scenario.

    Raises:
        UsageError: An unknown scenario, ``--hp`` key, baseline, or a conflict with a resumed run.
        DataError: Scenario data missing, a resume path that is missing or broken, an unwritable folder.
    """
    point = None
    if config.resume is not None:
        point = find_resume_point(config.resume)
        stored = stored_config(point.run_dir)
        conflicts = [
            name
            for name in sorted(given)
            if name not in (*RESUME_OPTIONS, "logdir") and getattr(config, name) != getattr(stored, name)
        ]
        if conflicts:
            listed = ", ".join(
                f"--{name.replace('_', '-')} (the run has {getattr(stored, name)})" for name in conflicts
            )
            raise UsageError(
                f"--resume {config.resume}: a resumed run keeps its options; drop {listed}, or start a new run"
            )
        kept = {name: getattr(stored, name) for name in RESUME_OPTIONS if name not in given and name != "resume"}
        config = resumed_config(point, dataclasses.replace(config, **kept))
    if config.suite_group and point is None:
        config = with_suite_group(config, given)
    scenario = checks.scenario(config.scenario)
    train_scenarios = check_train_scenarios(config, scenario)
    if config.eval_episodes > 0 and config.eval_agents:
        checks.agent_list(",".join(config.eval_agents), "--eval-agents")
        checks.agents_fit_scenario(config.eval_agents, scenario, "--eval-agents")
    check_imitation(config, (scenario, *train_scenarios))
    if config.curve_interval and config.curve_baselines and ALGORITHMS[config.algo].reinforcement_learning:
        checks.agent_list(",".join(config.curve_baselines), "--curve-baselines")
        checks.agents_fit_scenario(config.curve_baselines, scenario, "--curve-baselines")
    check_behaviour_cloning(config, scenario)
    if config.init_from is not None and point is None:
        check_starting_weights(config.init_from)
    check_seed_ranges(config)
    if point is not None:
        checks.writable_dir(point.run_dir, "--resume")
    else:
        checks.writable_dir(config.logdir, "--logdir")
    check_hyperparameters(config.algo, config.hyperparameters)
    return CheckedRun(config, scenario, train_scenarios)


def check_imitation(config: TrainConfig, tasks: tuple[Scenario, ...]) -> None:
    """DAgger only for MaskablePPO policies, with an expert that can label every task's states.

    Raises:
        UsageError: ``--dagger-iterations`` for another algorithm, an unknown expert or one that
            does not fit a task, or the oracle (it cannot label the student's states).
    """
    if config.dagger_iterations and not config.dagger_rounds:
        raise UsageError(
            f"--dagger-iterations: DAgger warm-starts a MaskablePPO policy (maskable-ppo, dagger), not {config.algo}"
        )
    if not config.dagger_rounds:
        return
    for task in tasks:
        expert = expert_for(config.dagger_expert, task)
        checks.agent_list(expert, "--dagger-expert")
        checks.agents_fit_scenario([expert], task, "--dagger-expert")
    if config.dagger_expert == "oracle":
        raise UsageError(
            "--dagger-expert oracle: the oracle replays its own plan and cannot label the states the student "
            "visits; use an online agent (lookahead, aco, ...)"
        )


def check_starting_weights(path: Path) -> None:
    """``--init-from``: a complete model zip (its weights' fit is checked when they are loaded).

    Raises:
        DataError: Missing, not a zip, truncated or not an SB3 model.
    """
    try:
        check_model_file(path)
    except ModelFileError as exc:
        raise DataError(f"--init-from: {exc}") from None


def with_suite_group(config: TrainConfig, given: Collection[str]) -> TrainConfig:
    """``config`` with ``--scenario`` and ``--train-scenarios`` set to the suite group's scenarios.

    Raises:
        UsageError: ``--scenario`` or ``--train-scenarios`` was given too.
    """
    from training.suite.definition import load_suite

    both = [f"--{name.replace('_', '-')}" for name in ("scenario", "train_scenarios") if name in given]
    if both:
        raise UsageError(f"--suite-group {config.suite_group} sets {' and '.join(both)}; give one or the other")
    names = [task.scenario for task in load_suite().group(config.suite_group)]
    return dataclasses.replace(config, scenario=names[0], train_scenarios=tuple(names[1:]))


def check_train_scenarios(config: TrainConfig, scenario: Scenario) -> tuple[Scenario, ...]:
    """``--train-scenarios``, loaded: each loads and has its data, and fits into the training batch.

    Fleets of other sizes than ``scenario``'s fit only where the envs pad them into one batch (the
    set policy in the batched env).

    Raises:
        UsageError: The first that does not, named.
    """
    loaded = []
    for name in config.train_scenarios:
        task = checks.scenario(name)
        why = _why_one_fleet_size(config)
        if why and len(task.fleet) != len(scenario.fleet):
            raise UsageError(
                f"--train-scenarios {name}: {len(task.fleet)} nodes, but {config.scenario} has "
                f"{len(scenario.fleet)}; {why}"
            )
        loaded.append(task)
    return tuple(loaded)


def _why_one_fleet_size(config: TrainConfig) -> str | None:
    """Why the run's training envs need one fleet size (``None``: they pad smaller fleets to the largest)."""
    if config.policy_kind != "set":
        return "a flat mlp policy's weights fix the fleet size"
    if config.vec_env != "batched":
        return "subprocess envs cannot pad their fleets into one batch; use --vec-env batched"
    return None


def check_seed_ranges(config: TrainConfig) -> None:
    """Every episode the run will play for a purpose is inside that purpose's protocol range.

    From the run's seed: the final evaluation's ``eval_episodes`` test seeds, the learning
    curve's ``curve_episodes`` validation seeds, DAgger's ``dagger_rounds x dagger_episodes``
    imitation seeds and behaviour cloning's ``bc_samples`` training seeds
    (:mod:`training.evaluation.protocol`). The training envs' seeds are folded into the training
    range and always fit.

    Raises:
        UsageError: Naming the option, the range and what fits.
    """
    uses: list[tuple[str, SeedRange, int]] = [
        ("--eval-episodes", TEST, config.eval_episodes),
        ("--dagger-iterations/--dagger-episodes", IMITATION, config.dagger_rounds * config.dagger_episodes),
        ("--bc-samples", TRAINING, config.bc_samples),
    ]
    if config.curve_interval and ALGORITHMS[config.algo].reinforcement_learning:
        uses.append(("--curve-episodes", VALIDATION, config.curve_episodes))
    for option, seed_range, episodes in uses:
        offset = 0 if seed_range is TRAINING else config.seed  # behaviour cloning's seeds are folded in
        try:
            seeds(seed_range, episodes, offset)
        except SeedRangeError as exc:
            raise UsageError(f"--seed {config.seed} with {option} {episodes}: {exc}") from None


def check_hyperparameters(algo: str, hyperparameters: dict[str, Any]) -> None:
    """Each ``--hp`` key must be a keyword argument of the algorithm's constructor (imports SB3).

    Raises:
        UsageError: A key the algorithm does not take (the message lists the ones it does).
    """
    if not hyperparameters:
        return
    algorithm = ALGORITHMS[algo]
    valid = algorithm.parameters()  # imports SB3 and torch: only when --hp is given
    unknown = [key for key in hyperparameters if key not in valid]
    if unknown:
        raise UsageError(
            f"--hp {unknown[0]}: {algorithm.class_name} ({algo}) has no such parameter; valid: {', '.join(valid)}"
        )


def check_behaviour_cloning(config: TrainConfig, scenario: Scenario) -> None:
    """``--bc-samples`` or ``--bc-dataset`` (one of them) with an algorithm that has an action distribution.

    Raises:
        UsageError: Both are given, or the algorithm is value-based, or the dataset is of another env.
        DataError: The dataset cannot be read.
    """
    for option, value in (("--bc-samples", config.bc_samples), ("--bc-dataset", config.bc_dataset)):
        if value and ALGORITHMS[config.algo].value_based:
            raise UsageError(
                f"{option}: behaviour cloning needs a policy with an action distribution; not with {config.algo}"
            )
    if config.bc_dataset is not None:
        if config.bc_samples:
            raise UsageError("--bc-dataset and --bc-samples: behaviour cloning fits one set of labels; give one")
        check_bc_dataset(config.bc_dataset, scenario)


def check_bc_dataset(path: Path, scenario: Scenario) -> None:
    """The planted dataset at ``path`` can be read and has the observations of ``scenario``'s env.

    Raises:
        DataError: The file cannot be read or is not a planted dataset.
        UsageError: Its observations have other shapes than the scenario's (another fleet size,
            queue window or history).
    """
    from aco_env import ClusterSchedulingEnv
    from training.learning.planted_dataset import PlantedDatasetError, load_planted_dataset

    try:
        dataset = load_planted_dataset(path)
    except OSError as exc:
        raise DataError(f"--bc-dataset {path}: cannot read it ({exc.strerror or exc})") from None
    except PlantedDatasetError as exc:
        raise DataError(f"--bc-dataset {exc}") from None
    space = ClusterSchedulingEnv(scenario).observation_space
    for key, box in space.spaces.items():  # type: ignore[attr-defined]  # a Dict space
        shape = dataset.observations.get(key, np.zeros(0)).shape[1:]
        if shape != box.shape:
            raise UsageError(
                f"--bc-dataset {path}: its {key!r} observations are {shape}, the env of {scenario.name} has "
                f"{box.shape} (the dataset is of {dataset.meta.get('scenario')}; export one of {scenario.name})"
            )
