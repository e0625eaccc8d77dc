"""Scenario files (YAML) parsed into frozen :class:`Scenario` objects that build twin specs.

Loading is bounded whatever the file holds, and every size a scenario asks for is checked
against :class:`Limits` before anything is allocated (see :mod:`digital_twin.scenario.loader`).
"""

from digital_twin.limits import Limits
from digital_twin.scenario.loader import SCHEMA_VERSION, load_scenario, parse_scenario
from digital_twin.scenario.parsed import Scenario
from digital_twin.scenario.schema import ScenarioError

__all__ = ["SCHEMA_VERSION", "Limits", "Scenario", "ScenarioError", "load_scenario", "parse_scenario"]
