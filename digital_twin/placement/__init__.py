"""Placement rules, Kubernetes-shaped: what a scenario declares and how an episode resolves it.

* :mod:`~digital_twin.placement.selectors`: label selectors (``match_labels``, ``match_expressions``).
* :mod:`~digital_twin.placement.rules`: the ``placement`` section (:class:`PlacementRules`) and
  where it differs from Kubernetes.
* :mod:`~digital_twin.placement.labels`: the labels and taints of an episode's nodes and jobs.
* :mod:`~digital_twin.sim.tables.rule_tables`: the rules resolved for one episode: each job's allowed
  nodes and the tables :mod:`digital_twin.sim.tables.rule_checks` judges at each decision.
"""

from digital_twin.placement.rules import PlacementRules

__all__ = ["PlacementRules"]
