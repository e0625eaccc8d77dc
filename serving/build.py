"""Building a placement service from the command line's words: an agent spec and a scenario."""

from __future__ import annotations

from pathlib import Path

import scenarios
from agents import AgentSpecError, check_agent_name, is_hindsight_agent
from serving.live import LiveCluster
from serving.service import PlacementService


def build_service(
    agent: str, fleet: str, seed: int = 0, default_duration_s: float = 3600.0, state: Path | None = None
) -> PlacementService:
    """A service of ``agent`` on the scenario ``fleet``, its journal in ``state`` (replayed when it exists).

    An ``sb3:`` model runs torch on one thread (a small policy: more threads only contend).

    Raises:
        agents.AgentSpecError: An unknown agent; digital_twin.SpecError: a bad scenario;
        serving.service.StateFileError: a state file that cannot be replayed.
    """
    check_agent_name(agent)
    if is_hindsight_agent(agent):
        raise AgentSpecError(
            f"{agent!r} reads the episode's future (a hindsight agent): a live cluster has none to read"
        )
    if agent.startswith("sb3:"):
        import torch

        torch.set_num_threads(1)
    return PlacementService(LiveCluster(scenarios.load(fleet), agent, seed=seed), default_duration_s, state)
