"""Sweep ``aco-env train`` over hyperparameters and seeds on Ray Tune (``pip install 'aco-env[ray]'``).

Every trial is an ``aco-env train`` run with its own run directory in ``OUT/runs/``. Options
shared by every trial: ``--scenario``, ``--algo``, ``--timesteps`` and ``--set KEY=VALUE`` (any
TrainConfig option, e.g. ``--set n_envs=2``). Varied: ``--grid KEY=V1,V2,...`` (every
combination), ``--random KEY=LOW:HIGH[:log]`` or ``--random KEY=V1,V2,...`` (drawn ``--samples``
times) and ``--seeds``; KEY is a TrainConfig field (``learning_rate``, ``n_steps``, ...) or
``hp.NAME`` for an argument of the algorithm (``hp.clip_range``). ``--config FILE`` reads the same
from YAML (sections ``set``, ``grid``, ``random``, ``seeds``, ``samples``, ``scheduler``,
``grace_period``, ``search_seed``); the command line adds to it. Example:

  aco-env sweep --grid learning_rate=1e-4,3e-4 --grid n_steps=256,512 --seeds 0,1 --timesteps 20000 --out runs/sweep1

The metric is the mean objective (USD, lower is better) on the validation seeds, reported at each
learning-curve point; ``--scheduler asha`` stops the worse trials early. At the end:
``OUT/summary.csv``, ``OUT/summary.md`` and ``OUT/best.json``. Ctrl-C saves the experiment and
says how to resume: ``aco-env sweep --resume OUT`` (or the same command again). Every key and
value is checked before Ray starts.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from training import checks
from training.cli.backend_options import check_backend
from training.errors import DataError, UsageError
from training.execution.interrupts import SAVE_FIRST
from training.scale.sweeps.space import SCHEDULERS, SweepSpec

HELP = "sweep aco-env train over hyperparameters and seeds on Ray Tune (summary, best.json)"
STOP_POLICY = SAVE_FIRST
"""Interrupts (the first Ctrl-C or SIGTERM lets Tune save the experiment; a third stops at once)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The search space, the shared options, the output folder, the scheduler, the Ray address."""
    space = parser.add_argument_group("search space")
    space.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                       help="try every value (every combination of the --grid keys); repeatable")
    space.add_argument("--random", action="append", default=[], metavar="KEY=LOW:HIGH[:log]",
                       help="draw the value from [LOW, HIGH] (log-uniformly with :log; integers for an integer "
                       "key), or from V1,V2,...; repeatable")
    space.add_argument("--samples", type=checks.count(1), help="draws of the --random keys (default: 1)")
    space.add_argument("--seeds", metavar="N,N,...", help="train every combination once per seed (default: 0)")
    space.add_argument("--search-seed", type=int, metavar="N",
                       help="seed of the --random draws: the same seed draws the same trials (default: 0)")
    space.add_argument("--config", type=Path, metavar="FILE", help="a YAML sweep file (the options above, and set:)")
    shared = parser.add_argument_group("options of every trial")
    shared.add_argument("--scenario", help="bundled scenario name or YAML path (default: fleet5-synthetic)")
    shared.add_argument("--algo", help="the algorithm (default: maskable-ppo)")
    shared.add_argument("--timesteps", type=checks.count(0), help="training steps of every trial (default: 100000)")
    shared.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="set_",
                        help="any other aco-env train option, e.g. --set n_envs=2 --set eval_episodes=0; repeatable")
    parser.add_argument("--out", type=Path, help="the sweep folder (default: runs/sweep); "
                        "the same command again on a stopped sweep resumes it")
    parser.add_argument("--resume", type=Path, metavar="SWEEP_DIR", help="continue a stopped sweep")
    parser.add_argument("--scheduler", choices=list(SCHEDULERS), help="fifo: every trial to the end (default); "
                        "asha: stop the worse trials at ASHA's rungs")
    parser.add_argument("--grace-period", type=checks.count(1), metavar="STEPS",
                        help="asha: steps every trial trains before it may be stopped (default: timesteps / 4)")
    parser.add_argument("--address", metavar="HOST:PORT",
                        help="run the trials on this Ray cluster (`ray start --head`); default: a local Ray")


def run(args: argparse.Namespace) -> int:
    """Check everything, run (or resume) the sweep, print the summary and where everything is."""
    check_backend("ray", args.address)  # the address's form, and the ray extra
    sweep_dir, spec, resume = _sweep(args)
    scenarios = _check_trials(spec, sweep_dir)
    from training.scale.sweeps.sweep import BEST_JSON, SUMMARY_CSV, SUMMARY_MD, run_sweep

    print(f"sweep: {spec.trials} trial(s) ({_describe(spec)}) in {sweep_dir}", flush=True)
    result = run_sweep(spec, sweep_dir, scenarios, address=args.address, resume=resume)
    if result.interrupted:
        done = sum(1 for row in result.rows if row.status == "finished")
        raise KeyboardInterrupt(
            f"{done} of {len(result.rows)} trials finished; the experiment is saved; "
            f"continue with: aco-env sweep --resume {sweep_dir}"
        )
    _print_summary(result, spec)
    print(f"summary: {sweep_dir / SUMMARY_MD} and {sweep_dir / SUMMARY_CSV}")
    print(f"best: {sweep_dir / BEST_JSON}" + (f" ({result.best.run_dir})" if result.best else " (no trial reported)"))
    print(f"watch them: tensorboard --logdir {sweep_dir / 'runs'}")
    return 0 if all(row.status in ("finished", "stopped") for row in result.rows) else 1


def _sweep(args: argparse.Namespace) -> tuple[Path, SweepSpec, bool]:
    """The sweep folder, the spec, and whether to resume (``--resume``, or ``--out`` holding the same sweep)."""
    from training.scale.sweeps.sweep import holds_sweep

    if args.resume is not None:
        given = [option for option, value in _space_options(args).items() if value]
        if given or args.out is not None:
            drop = given[0] if given else "--out"
            raise UsageError(f"--resume {args.resume}: a resumed sweep keeps its options and folder; drop {drop}")
        if not holds_sweep(args.resume):
            raise DataError(f"--resume {args.resume}: not a sweep folder of aco-env sweep (no sweep.json)")
        return args.resume, _stored_spec(args.resume), True
    spec = _spec_of(args)
    sweep_dir = args.out or Path("runs/sweep")
    if holds_sweep(sweep_dir):
        if _stored_spec(sweep_dir) != spec:
            raise UsageError(f"--out {sweep_dir}: holds another sweep; continue it with aco-env sweep --resume "
                             f"{sweep_dir}, or give another --out")
        return sweep_dir, spec, True
    checks.writable_dir(sweep_dir, "--out")
    return sweep_dir, spec, False


def _spec_of(args: argparse.Namespace) -> SweepSpec:
    """The spec of the YAML file (if any) with the command line's options added."""
    from training.scale.sweeps.keys import load_sweep_file, parse_value, parse_values
    from training.scale.sweeps.space import check_spec, parse_random

    document: dict[str, Any] = {}
    if args.config is not None:
        try:
            document = load_sweep_file(args.config)
        except OSError as exc:
            raise DataError(f"--config {args.config}: {exc.strerror or exc}") from None
    base = {key: parse_value(key, _text(value)) for key, value in document.get("set", {}).items()}
    grid = {key: parse_values(key, _list_text(values)) for key, values in document.get("grid", {}).items()}
    random = {key: parse_random(key, _list_text(value)) for key, value in document.get("random", {}).items()}
    for option, value in (("scenario", args.scenario), ("algo", args.algo), ("timesteps", args.timesteps)):
        if value is not None:
            base[option] = parse_value(option, str(value))
    for item in args.set_:
        key, text = _key_value(item, "--set")
        base[key] = parse_value(key, text)
    for item in args.grid:
        key, text = _key_value(item, "--grid")
        grid[key] = parse_values(key, text)
    for item in args.random:
        key, text = _key_value(item, "--random")
        random[key] = parse_random(key, text)
    seeds = document.get("seeds", [0])
    if args.seeds is not None:
        try:
            seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
        except ValueError:
            raise UsageError(f"--seeds {args.seeds}: expected comma-separated integers") from None
    spec = SweepSpec(base=base, grid=grid, random=random, seeds=tuple(int(s) for s in seeds),
                     samples=args.samples or document.get("samples", 1),
                     scheduler=args.scheduler or document.get("scheduler", "fifo"),
                     grace_period=args.grace_period or document.get("grace_period", 0),
                     search_seed=args.search_seed if args.search_seed is not None else document.get("search_seed", 0))
    check_spec(spec)
    return spec


def _check_trials(spec: SweepSpec, sweep_dir: Path) -> dict[str, Any]:
    """``aco-env train``'s checks on every trial's config; returns each scenario of the sweep, loaded once."""
    import dataclasses

    from training.learning.train_checks import check_train_config
    from training.scale.sweeps.space import TRIAL_DEFAULTS, trial_config

    scenarios: dict[str, Any] = {}
    checked: set[str] = set()
    for point in spec.points():
        config = dataclasses.replace(trial_config({**TRIAL_DEFAULTS, **spec.base}, point), logdir=sweep_dir / "runs")
        # The checks read the scenario: once per distinct config apart from the seed
        key = dataclasses.replace(config, seed=0).to_json()
        if key not in checked:
            checked.add(key)
            scenarios.setdefault(config.scenario, check_train_config(config).scenario)
    return scenarios


def _stored_spec(sweep_dir: Path) -> SweepSpec:
    from training.scale.sweeps.sweep import read_spec

    try:
        return read_spec(sweep_dir)
    except (OSError, ValueError, TypeError) as exc:
        raise DataError(f"{sweep_dir}/sweep.json: not a readable sweep ({type(exc).__name__}: {exc})") from None


def _space_options(args: argparse.Namespace) -> dict[str, Any]:
    return {"--grid": args.grid, "--random": args.random, "--samples": args.samples, "--seeds": args.seeds,
            "--config": args.config, "--scenario": args.scenario, "--algo": args.algo,
            "--timesteps": args.timesteps, "--set": args.set_, "--scheduler": args.scheduler,
            "--grace-period": args.grace_period, "--search-seed": args.search_seed}


def _key_value(item: str, option: str) -> tuple[str, str]:
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{option} {item}: expected KEY=VALUE")
    return key.strip(), text


def _text(value: Any) -> str:
    """A YAML value as the command line would give it (lists as ``[...]``)."""
    import json

    return json.dumps(value) if isinstance(value, list | dict | bool) else str(value)


def _list_text(value: Any) -> str:
    """A YAML list (or the command line's text) as ``V1,V2,...``."""
    import json

    return ",".join(json.dumps(item) for item in value) if isinstance(value, list) else str(value)


def _describe(spec: SweepSpec) -> str:
    axes = [f"{key} x{len(values)}" for key, values in spec.grid.items()]
    axes += [f"{key} random" for key in spec.random]
    axes.append(f"seeds {','.join(map(str, spec.seeds))}")
    if spec.samples > 1:
        axes.append(f"{spec.samples} samples")
    return f"{'; '.join(axes)}; scheduler {spec.scheduler}"


def _print_summary(result: Any, spec: SweepSpec) -> None:
    from training.evaluation.tables import new_table, print_table

    keys = spec.swept
    table = new_table(["trial", *keys, "status", "steps", "objective_usd"], right_aligned_from=len(keys) + 2)
    for row in result.rows:
        values = [str(row.params.get(key, "")) for key in keys]
        objective = "" if row.objective_usd is None else f"{row.objective_usd:.4f}"
        table.add_row(row.trial_id, *values, row.status, str(row.timesteps or ""), objective)
    print_table(table, notes=["objective_usd: mean on the validation seeds (USD, lower is better), best first"])
