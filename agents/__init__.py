"""Decision makers behind one Protocol: heuristics, ACO, predictors, the oracle, SB3 models.

``make_agent(name, env)`` builds any registered agent; ``agent_names()`` lists them. Importing
this package registers the heuristics (:mod:`agents.heuristics`) and the ACO agents
(:mod:`agents.aco`); it never imports torch (the LSTM predictor imports it on first use).
"""

# agents.aco and agents.heuristics are imported for their side effect: registering agents.
import agents.aco
import agents.heuristics  # noqa: F401
from agents.base import Agent, agent_names, make_agent, register_agent

__all__ = ["Agent", "agent_names", "make_agent", "register_agent"]
