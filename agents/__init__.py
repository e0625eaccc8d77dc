"""Decision makers behind one Protocol: heuristics, ACO, predictors, the oracle, SB3 models.

``make_agent(name, env)`` (:mod:`agents.build`) builds any registered agent or saved SB3 model;
``agent_names()`` lists the registered ones (:mod:`agents.base`: the ``Agent`` Protocol and the
registry). Importing this package registers the heuristics (:mod:`agents.heuristics`), the ACO
agents (:mod:`agents.aco`), the online lookahead reference (:mod:`agents.lookahead`), the
oracle (:mod:`agents.oracle`) and the planted expert (:mod:`agents.planted`; the last two read
the future: registered with ``hindsight=True``); it never imports torch (the LSTM predictor
imports it on first use). What each objective term charges, for every agent that prices a decision, is
:mod:`agents.charges`.
"""

# agents.aco, .heuristics, .lookahead, .oracle and .planted are imported to register their agents.
import agents.aco
import agents.heuristics
import agents.lookahead
import agents.oracle  # (scipy.optimize loads on the oracle's first solve)
import agents.planted  # noqa: F401
from agents.base import Agent, AgentSpecError, agent_names, register_agent
from agents.build import agent_deferral, check_agent_name, make_agent

__all__ = [
    "Agent",
    "AgentSpecError",
    "agent_deferral",
    "agent_names",
    "check_agent_name",
    "make_agent",
    "register_agent",
]
