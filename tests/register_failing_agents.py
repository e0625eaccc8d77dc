"""Importing this module registers the failing agents of :mod:`tests.failing_agents` (in worker processes only)."""

from tests.failing_agents import register

register()
