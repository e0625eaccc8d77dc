"""Scenario files (YAML) parsed into frozen :class:`Scenario` objects that build twin specs."""

from digital_twin.scenario.loader import SCHEMA_VERSION, Scenario, load_scenario, parse_scenario
from digital_twin.scenario.schema import ScenarioError

__all__ = ["SCHEMA_VERSION", "Scenario", "ScenarioError", "load_scenario", "parse_scenario"]
