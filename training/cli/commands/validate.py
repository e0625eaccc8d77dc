"""Check scenario files: each gets one verdict line, and the exit code says the worst of them.

A file is read, its keys and values validated, and -- when its data is present -- its fleet,
telemetry and one episode's jobs are built (so bad data rows are found too). Verdicts:
``OK`` (exit 0), ``INVALID`` with the file and key or row (exit 1), and ``MISSING DATA`` for a
valid scenario whose trace or job files are not present, naming the first of them (exit 3: the
file itself is fine, but nothing can run until the data is there). Notes the data readers log
(values cleaned, gaps filled) are printed under the file's verdict.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

import scenarios
from digital_twin import SpecError, TwinSpec
from digital_twin.sim.constants import TwinConstants
from training.errors import EXIT_DATA, EXIT_MISSING_DATA, EXIT_OK, message_line

HELP = "validate scenario files (exit 1 when one is invalid, 3 when only data is missing)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """PATH... (files or bundled names)."""
    parser.add_argument("paths", nargs="+", metavar="PATH", help="scenario YAML files or bundled names")


def run(args: argparse.Namespace) -> int:
    """Validate each file; print its verdict and notes; return the worst exit code."""
    codes = [_validate(path) for path in args.paths]
    if EXIT_DATA in codes:
        return EXIT_DATA
    return EXIT_MISSING_DATA if EXIT_MISSING_DATA in codes else EXIT_OK


def _validate(path: str) -> int:
    with _captured_notes() as notes:
        try:
            scenario = scenarios.load(path)
            missing = scenario.missing_data()
            if not missing:
                unplaceable = _jobs_fitting_no_node(scenario.make_spec(np.random.default_rng(scenario.seed)))
        except (SpecError, OSError) as exc:
            print(f"INVALID {message_line(str(exc))}")
            return EXIT_DATA
    if missing:
        unset = "${" in str(missing[0])
        hint = f"set {scenarios.TRACES_ENV} to the folder that holds the traces" if unset else "check the path"
        print(f"MISSING DATA {message_line(f'{path}: valid, but needs {missing[0]} ({hint})')}")
        return EXIT_MISSING_DATA
    if unplaceable:
        notes.append(unplaceable)
    print(f"OK {path}" + "".join(f"\n  {note}" for note in notes))
    return EXIT_OK


def _jobs_fitting_no_node(spec: TwinSpec) -> str:
    """A warning naming the episode's jobs that no node of the fleet can ever hold ("" when none).

    Such a job (a GPU job on a cpu-only fleet, more cores or memory than any node has, an arch
    no node offers) is rejected when it arrives, at the rejection weight, whatever the policy.
    """
    constants = TwinConstants.of(spec)
    never = [j for j in range(constants.n_jobs) if not constants.candidates[j]]
    if not never:
        return ""
    job = spec.jobs[never[0]]
    asks = f"{job.cpu_cores:g} cores, {job.mem_gb:g} GB" + (f", {job.gpu_count} GPU(s)" if job.gpu_count else "")
    if job.required_arch:
        asks += f", arch {job.required_arch}"
    return (
        f"warning: {len(never):,} of {constants.n_jobs:,} jobs of the episode fit no node of "
        f"the fleet and will be rejected on arrival (first: {job.job_id!r}, asking {asks})"
    )


@contextmanager
def _captured_notes() -> Iterator[list[str]]:
    """Collect what the ``digital_twin`` loggers say (warnings prefixed) instead of printing it."""
    notes: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            prefix = "warning: " if record.levelno >= logging.WARNING else ""
            notes.append(prefix + record.getMessage())

    source = logging.getLogger("digital_twin")
    handler = Collect(logging.INFO)
    propagate, level = source.propagate, source.level
    source.addHandler(handler)
    source.propagate = False
    source.setLevel(logging.INFO)
    try:
        yield notes
    finally:
        source.removeHandler(handler)
        source.propagate = propagate
        source.setLevel(level)
