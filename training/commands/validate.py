"""Check scenario files: exit 0 when every file is valid, 1 with a message naming the file and key or row.

A file is read, its keys and values validated, and -- when its data is present -- its fleet,
telemetry and one episode's jobs are built (so bad data rows are found too).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import scenarios
from digital_twin import SpecError, TraceError

HELP = "validate scenario files (exit 1 on the first problem of each file)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """PATH... (files or bundled names)."""
    parser.add_argument("paths", nargs="+", metavar="PATH", help="scenario YAML files or bundled names")


def run(args: argparse.Namespace) -> int:
    """Validate each file; print OK or the problem."""
    status = 0
    for path in args.paths:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                scenario = scenarios.load(path)
                missing = scenario.missing_data()
                if not missing:
                    scenario.make_spec(np.random.default_rng(scenario.seed))
        except (SpecError, TraceError, OSError) as exc:
            print(f"INVALID {exc}")
            status = 1
            continue
        notes = [f"data not present: {missing[0]}"] if missing else []
        notes += [f"warning: {w.message}" for w in caught]
        print(f"OK {path}" + "".join(f"\n  {note}" for note in notes))
    return status
