"""Decision makers behind one Protocol: heuristics, ACO, predictors, the oracle, SB3 models.

``make_agent(name, env)`` (:mod:`agents.build`) builds any registered agent or saved SB3 model;
``agent_names()`` lists the registered ones (:mod:`agents.base`: the ``Agent`` Protocol and the
registry). Importing this package registers the heuristics (:mod:`agents.heuristics`), the ACO
agents (:mod:`agents.aco`), the online lookahead reference (:mod:`agents.lookahead`), and the
hindsight agents, which read the future and are registered with ``hindsight=True``: the
lookahead's clairvoyant twin (:mod:`agents.lookahead_clairvoyant`), the oracle
(:mod:`agents.oracle`) and the planted expert (:mod:`agents.planted`); it never imports torch
(the LSTM predictor imports it on first use). What each objective term charges, for every agent
that prices a decision, is :mod:`agents.charges`.
"""

# agents.aco, .carbon, .heuristics, .lookahead(_clairvoyant), .oracle, .planted and .workflow_heuristics are
# imported: they register agents.
import agents.aco
import agents.carbon
import agents.heuristics
import agents.lookahead
import agents.lookahead_clairvoyant
import agents.oracle  # (scipy.optimize loads on the oracle's first solve)
import agents.planted
import agents.workflow_heuristics  # noqa: F401
from agents.base import Agent, AgentSpecError, agent_names, is_hindsight_agent, listed_agent_names, register_agent
from agents.build import agent_deferral, check_agent_name, make_agent

__all__ = [
    "Agent",
    "AgentSpecError",
    "agent_deferral",
    "agent_names",
    "check_agent_name",
    "is_hindsight_agent",
    "listed_agent_names",
    "make_agent",
    "register_agent",
]
