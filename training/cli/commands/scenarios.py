"""List the bundled scenarios, then every telemetry reader and workload source a scenario can name.

Scenarios: name, nodes, jobs, horizon, telemetry reader and whether their data is present.
Readers and sources: one line each, from their functions' docstrings
(:func:`digital_twin.scenario.sources.describe_sources`).
"""

from __future__ import annotations

import argparse
import os

import scenarios
from digital_twin.scenario import ScenarioError
from digital_twin.scenario.sources import describe_sources
from training.evaluation.tables import new_table, print_table

HELP = "list the bundled scenarios, and the trace readers and job sources a scenario can use"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options."""
    del parser


def run(args: argparse.Namespace) -> int:
    """Print one row per bundled scenario, then one per reader and source."""
    del args
    headers = ("name", "nodes", "jobs", "horizon", "telemetry", "data")
    table = new_table(headers, right_aligned_from=len(headers))
    for name in scenarios.names():
        try:
            scenario = scenarios.load(name)
        except ScenarioError as exc:
            table.add_row(name, "?", "?", "?", "?", f"not loadable: {exc}")
            continue
        missing = scenario.missing_data()
        if not missing:
            present = "present"
        elif os.environ.get(scenarios.TRACES_ENV):
            present = f"missing: {missing[0]}"
        else:
            present = f"missing (set {scenarios.TRACES_ENV})"
        nodes = str(len(scenario.fleet)) if not missing else "?"
        jobs = (f"<= {scenario.job_budget}" if scenario.job_budget else "all") + (
            " per episode" if scenario.per_episode_workload else ""
        )
        hours = f"{scenario.settings.horizon_s / 3600:g} h"
        table.add_row(name, nodes, jobs, hours, scenario.telemetry_source, present)
    print_table(table)
    print()
    sources = new_table(("scenario key", "name", "reads"), right_aligned_from=3)
    for key, entries in describe_sources().items():
        for name, line in entries:
            sources.add_row(key, name, line)
    print_table(sources)
    return 0
