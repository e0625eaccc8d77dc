"""List the bundled scenarios: name, nodes, jobs, telemetry source and whether their data is present."""

from __future__ import annotations

import argparse

import scenarios
from digital_twin.scenario import ScenarioError
from training.tables import new_table, print_table

HELP = "list the bundled scenarios"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options."""
    del parser


def run(args: argparse.Namespace) -> int:
    """Print one row per bundled scenario."""
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
        present = "present" if not missing else f"missing (set {scenarios.TRACES_ENV})"
        nodes = str(len(scenario.fleet)) if not missing else "?"
        jobs = (f"<= {scenario.job_budget}" if scenario.job_budget else "all") + (
            " per episode" if scenario.per_episode_workload else ""
        )
        table.add_row(name, nodes, jobs, f"{scenario.horizon_s / 3600:g} h", scenario.telemetry_source, present)
    print_table(table)
    return 0
