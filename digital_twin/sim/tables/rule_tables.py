"""An episode's placement rules resolved against its fleet and jobs: static masks and :class:`RuleTables`.

:func:`compile_rules` reads the labels (:mod:`digital_twin.placement.labels`), finds the rules
that select each job (all of them apply: required parts must all hold, preferred weights add
up), and splits them in two:

* about the node alone: ``node_selector``, ``node_affinity.required`` (any one term), untolerated
  ``NoSchedule`` taints, and for a required spread constraint the node having its topology key
  (and, for ``max_per_domain: 0`` on a job it selects, no node at all). They give the job's
  *allowed* nodes, which the twin intersects with its static candidates. Preferred node terms
  the node fails and untolerated ``PreferNoSchedule`` taints give the job's static preference
  weight per node.
* about what runs where: pod anti-affinity and spread, as checks on tallies
  (:mod:`digital_twin.sim.tables.rule_checks`). A ``match_label_keys`` key adds the job's own value of it
  to the selector (a key the job lacks adds nothing, as in Kubernetes). Required anti-affinity
  is symmetric: a job that a running job's required term selects is kept out of that job's
  domain by an ``ANTI`` check on an *owner* tally (the running jobs that hold the term), whether
  or not any rule selects the job itself.

Jobs whose fits follow the same rules share a *profile* (0: none), which the twin adds to a
job's shape (jobs of one shape fit the same nodes at every moment).

Errors (:class:`~digital_twin.errors.SpecError`, naming the rule by its path in the section):
a label key that a node-side rule or a topology key names but no node has (a typo would
otherwise silently match nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from digital_twin.errors import SpecError, short_repr
from digital_twin.fleet import NodeSpec
from digital_twin.jobs import JobSpec
from digital_twin.placement.labels import job_labels, node_labels, node_taints
from digital_twin.placement.rules import JobRule, PlacementRules, PodTerm, SpreadConstraint, Taint
from digital_twin.placement.selectors import LabelSelector
from digital_twin.sim.tables.colocation import compile_interference
from digital_twin.sim.tables.interference import InterferenceTables
from digital_twin.sim.tables.rule_checks import ANTI, CAP, SKEW, Check, RuleTables

MEMBER = "member"
OWNER = "owner"
TallyKey = tuple[str, LabelSelector, str]
"""``(role, selector, topology key)``: role :data:`MEMBER` counts the running jobs the selector
selects, :data:`OWNER` the running jobs that hold a required anti-affinity term with it."""
_NEGATIVE = ("NotIn", "DoesNotExist")  # operators that may name a key no node has


@dataclass(frozen=True, eq=False)
class CompiledRules:
    """The rules of one episode, per job (``M`` jobs, ``N`` nodes).

    Attributes:
        tables: What the twin judges at each decision (:class:`~digital_twin.sim.tables.rule_checks.RuleTables`).
        allowed: ``(M,)`` per job, ``(N,)`` bool: the nodes its node-side rules allow (``None``: all).
        profile: ``(M,)`` per job, its profile id (0: no rule bears on its fit).
        rule_paths: ``(M,)`` per job, the paths of the rules that select it (``placement.rules[1]``).
        node_labels: ``(N,)`` each node's labels.
        job_labels: ``(M,)`` each job's labels.
        interference: The co-location slowdowns resolved per job
            (:mod:`digital_twin.sim.tables.colocation`); ``None`` without entries.
    """

    tables: RuleTables
    allowed: list[tuple[bool, ...] | None]
    profile: list[int]
    rule_paths: list[tuple[str, ...]]
    node_labels: tuple[Mapping[str, str], ...]
    job_labels: tuple[Mapping[str, str], ...]
    interference: InterferenceTables | None = None

    def restrict(
        self,
        shape: Sequence[int],
        candidates: Sequence[tuple[int, ...]],
        job_ids: Sequence[str],
        node_ids: Sequence[str],
    ) -> tuple[list[int], list[tuple[int, ...]]]:
        """Each job's shape id with its profile added, and its candidates less the nodes its rules forbid.

        Raises:
            SpecError: A job fits some node by its resources, but its rules allow none of them
                (named with the rules that select it).
        """
        ids: dict[tuple[int, int], int] = {}
        shapes, kept_of = [], []
        for j, (old, nodes) in enumerate(zip(shape, candidates, strict=True)):
            shapes.append(ids.setdefault((old, self.profile[j]), len(ids)))
            allowed = self.allowed[j]
            kept = nodes if allowed is None else tuple(i for i in nodes if allowed[i])
            if nodes and not kept:
                names = [node_ids[i] for i in nodes]
                raise SpecError(
                    f"{', '.join(self.rule_paths[j]) or 'placement'}: job {short_repr(job_ids[j])} fits nodes "
                    f"{short_repr(names)} by its resources, but its placement rules allow none of them "
                    "(its node selector and affinity, the nodes' NoSchedule taints it does not tolerate)"
                )
            kept_of.append(kept)
        return shapes, kept_of


def compile_rules(
    rules: PlacementRules, fleet: Sequence[NodeSpec], jobs: Sequence[JobSpec], where: str = "placement"
) -> CompiledRules:
    """Resolve ``rules`` for ``fleet`` and ``jobs`` (in arrival order); see the module docstring.

    Jobs with equal labels (but their ``job`` id, unless a rule reads it) have equal rules:
    each *kind* of job is compiled once. Cost: O(kinds x (rules + tallies) x nodes + jobs).
    """
    nodes = node_labels(rules, fleet)
    taints = node_taints(rules, fleet)
    labels = job_labels(rules, jobs)
    _check_node_keys(rules, nodes, where)
    by_id = "job" in _job_keys_read(rules)
    kinds: dict[tuple[tuple[str, str], ...], int] = {}
    kind_of = [
        kinds.setdefault(tuple(sorted((k, v) for k, v in job.items() if by_id or k != "job")), len(kinds))
        for job in labels
    ]
    first_of_kind = {kind: j for j, kind in reversed(list(enumerate(kind_of)))}
    per_kind = _compile_kinds(rules, nodes, taints, [labels[first_of_kind[k]] for k in range(len(kinds))])
    allowed = [per_kind.allowed[k] for k in kind_of]
    required = [per_kind.required[k] for k in kind_of]
    preferred = [per_kind.preferred[k] for k in kind_of]
    tables = RuleTables(
        required=required,
        preferred=preferred,
        static_preference=[per_kind.static[k] for k in kind_of],
        updates=[per_kind.updates[k] for k in kind_of],
        domain_of=per_kind.tallies.domain_of,
        n_domains=per_kind.tallies.n_domains,
        dynamic=any(required) or any(preferred),
    )
    profiles: dict[tuple[object, ...], int] = {(None, ()): 0}
    profile = [profiles.setdefault((a, r), len(profiles)) for a, r in zip(allowed, required, strict=True)]
    paths = [tuple(f"{where}.rules[{k}]" for k in per_kind.chosen[kind]) for kind in kind_of]
    return CompiledRules(tables, allowed, profile, paths, nodes, labels, compile_interference(rules, labels))


@dataclass(frozen=True)
class _Kinds:
    """Per kind of job (``K`` kinds): what :class:`RuleTables` holds per job, and the rules that select it.

    (A dataclass, not a ``NamedTuple``: compiled, a named tuple's field types are looked up when
    the module runs, and ``_Tallies`` is defined below it.)
    """

    tallies: _Tallies
    allowed: list[tuple[bool, ...] | None]
    required: list[tuple[Check, ...]]
    preferred: list[tuple[tuple[Check, float], ...]]
    static: list[list[float]]
    updates: list[tuple[int, ...]]
    chosen: list[list[int]]


def _compile_kinds(
    rules: PlacementRules,
    nodes: tuple[Mapping[str, str], ...],
    taints: tuple[tuple[Taint, ...], ...],
    kinds: list[Mapping[str, str]],
) -> _Kinds:
    """The rules of each kind of job (its labels), and the registry of the tallies they read."""
    tallies = _Tallies(nodes)
    chosen = [[k for k, rule in enumerate(rules.rules) if rule.match.matches(job)] for job in kinds]
    owned = [
        sorted({tallies.key(OWNER, term, job) for k in picked for term in rules.rules[k].anti_required}, key=repr)
        for picked, job in zip(chosen, kinds, strict=True)
    ]
    owner_keys = sorted({key for keys in owned for key in keys}, key=repr)
    zeros = [0.0] * len(nodes)
    allowed, required, preferred, static = [], [], [], []
    for picked, job in zip(chosen, kinds, strict=True):
        job_rules = [rules.rules[k] for k in picked]
        job_allowed = _allowed(job_rules, job, nodes, taints)
        allowed.append(job_allowed)
        required.append(
            tallies.required_checks(job_rules, job, job_allowed)
            + tuple((ANTI, tallies.id_of(key), 0, 0, ()) for key in owner_keys if key[1].matches(job))
        )
        preferred.append(tallies.preferred_checks(job_rules, job, job_allowed))
        weights = _static_preference(job_rules, nodes, taints)
        static.append(weights if any(weights) else zeros)
    updates = [tallies.updates(job, keys) for job, keys in zip(kinds, owned, strict=True)]
    return _Kinds(tallies, allowed, required, preferred, static, updates, chosen)


def _job_keys_read(rules: PlacementRules) -> set[str]:
    """The job label keys any rule reads (its ``match``, its pod terms' and spread constraints' selectors and keys)."""
    keys: set[str] = set()
    for rule in rules.rules:
        keys |= rule.match.keys()
        terms: list[PodTerm | SpreadConstraint] = [*rule.anti_required, *rule.anti_preferred, *rule.spread]
        for term in terms:
            keys |= term.label_selector.keys() | set(term.match_label_keys)
    return keys


class _Tallies:
    """The registry of tallies: one id per :data:`TallyKey`, with each key's domains over the nodes."""

    def __init__(self, nodes: tuple[Mapping[str, str], ...]) -> None:
        self.nodes = nodes
        self.ids: dict[TallyKey, int] = {}
        self.domain_of: list[list[int]] = []
        self.n_domains: list[int] = []
        self._domains: dict[str, tuple[list[int], int]] = {}

    def key(self, role: str, term: PodTerm | SpreadConstraint, job: Mapping[str, str]) -> TallyKey:
        """The tally a term of ``job`` reads: its selector with ``match_label_keys`` resolved from ``job``."""
        own = {k: job[k] for k in term.match_label_keys if k in job}
        return role, term.label_selector.with_labels(own), term.topology_key

    def id_of(self, key: TallyKey) -> int:
        """The tally's id (registered on first use)."""
        tally = self.ids.get(key)
        if tally is None:
            tally = self.ids[key] = len(self.ids)
            domain_of, n = self.domains(key[2])
            self.domain_of.append(domain_of)
            self.n_domains.append(n)
        return tally

    def domains(self, topology_key: str) -> tuple[list[int], int]:
        """``(N,)`` each node's domain of ``topology_key`` (-1: lacks it, ids by first node), and their number."""
        if topology_key not in self._domains:
            ids: dict[str, int] = {}
            domain_of = [ids.setdefault(n[topology_key], len(ids)) if topology_key in n else -1 for n in self.nodes]
            self._domains[topology_key] = (domain_of, len(ids))
        return self._domains[topology_key]

    def required_checks(
        self, rules: list[JobRule], job: Mapping[str, str], allowed: tuple[bool, ...] | None
    ) -> tuple[Check, ...]:
        """The job's required anti-affinity terms and ``DoNotSchedule`` spread constraints, as checks."""
        checks = [self._check(ANTI, term, job, allowed) for rule in rules for term in rule.anti_required]
        checks += [self._spread(c, job, allowed) for rule in rules for c in rule.spread if c.required]
        return tuple(checks)

    def preferred_checks(
        self, rules: list[JobRule], job: Mapping[str, str], allowed: tuple[bool, ...] | None
    ) -> tuple[tuple[Check, float], ...]:
        """The job's preferred anti-affinity terms (their weights) and ``ScheduleAnyway`` constraints (1 each)."""
        checks = [(self._check(ANTI, t, job, allowed), t.weight) for rule in rules for t in rule.anti_preferred]
        checks += [(self._spread(c, job, allowed), 1.0) for rule in rules for c in rule.spread if not c.required]
        return tuple(checks)

    def _spread(self, constraint: SpreadConstraint, job: Mapping[str, str], allowed: tuple[bool, ...] | None) -> Check:
        if constraint.max_skew is not None:
            return self._check(SKEW, constraint, job, allowed, constraint.max_skew)
        assert constraint.max_per_domain is not None
        return self._check(CAP, constraint, job, allowed, constraint.max_per_domain)

    def _check(
        self,
        kind: int,
        term: PodTerm | SpreadConstraint,
        job: Mapping[str, str],
        allowed: tuple[bool, ...] | None,
        limit: int = 0,
    ) -> Check:
        key = self.key(MEMBER, term, job)
        tally = self.id_of(key)
        own = int(key[1].matches(job))
        eligible: tuple[int, ...] = ()
        if kind == SKEW:
            domain_of = self.domain_of[tally]
            eligible = tuple(sorted({d for i, d in enumerate(domain_of) if d >= 0 and (allowed is None or allowed[i])}))
        return kind, tally, own, limit, eligible

    def updates(self, job: Mapping[str, str], owned: list[TallyKey]) -> tuple[int, ...]:
        """The tallies ``job`` counts in while it runs: the member tallies that select it and the terms it holds."""
        members = [tally for key, tally in self.ids.items() if key[0] == MEMBER and key[1].matches(job)]
        return tuple(sorted(members + [self.ids[key] for key in owned if key in self.ids]))


def _allowed(
    rules: list[JobRule],
    job: Mapping[str, str],
    nodes: tuple[Mapping[str, str], ...],
    taints: tuple[tuple[Taint, ...], ...],
) -> tuple[bool, ...] | None:
    """``(N,)`` the nodes the job's node-side rules and the nodes' ``NoSchedule`` taints allow (``None``: all).

    Taints keep every job off that does not tolerate them, whether or not a rule selects it.
    """
    tolerations = [t for rule in rules for t in rule.tolerations]
    out = []
    for labels, node_taints_i in zip(nodes, taints, strict=True):
        ok = all(labels.get(k) == v for rule in rules for k, v in rule.node_selector)
        ok = ok and all(not r.required_terms or any(t.matches(labels) for t in r.required_terms) for r in rules)
        ok = ok and all(
            any(t.tolerates(taint) for t in tolerations) for taint in node_taints_i if taint.effect == "NoSchedule"
        )
        for rule in rules:
            for c in rule.spread:
                if c.required and (c.topology_key not in labels or _never_fits(c, job)):
                    ok = False
        out.append(ok)
    allowed = tuple(out)
    return None if all(allowed) else allowed


def _never_fits(constraint: SpreadConstraint, job: Mapping[str, str]) -> bool:
    """``max_per_domain: 0`` on a constraint that selects the job itself: no domain can ever take it."""
    own = {k: job[k] for k in constraint.match_label_keys if k in job}
    return constraint.max_per_domain == 0 and constraint.label_selector.with_labels(own).matches(job)


def _static_preference(
    rules: list[JobRule], nodes: tuple[Mapping[str, str], ...], taints: tuple[tuple[Taint, ...], ...]
) -> list[float]:
    """``(N,)`` the weight of the preferred node terms each node fails, plus 1 per untolerated ``PreferNoSchedule``."""
    tolerations = [t for rule in rules for t in rule.tolerations]
    out = []
    for labels, node_taints_i in zip(nodes, taints, strict=True):
        weight = sum((w for rule in rules for w, term in rule.preferred_terms if not term.matches(labels)), 0.0)
        weight += sum(
            1.0
            for taint in node_taints_i
            if taint.effect == "PreferNoSchedule" and not any(t.tolerates(taint) for t in tolerations)
        )
        out.append(float(weight))
    return out


def _check_node_keys(rules: PlacementRules, nodes: tuple[Mapping[str, str], ...], where: str) -> None:
    """Refuse a node label key that a node-side rule or a topology key names and no node has."""
    known = {key for labels in nodes for key in labels}
    for k, rule in enumerate(rules.rules):
        here = f"{where}.rules[{k}]"
        named = [(f"{here}.node_selector", key) for key, _ in rule.node_selector]
        for n, term in enumerate(rule.required_terms):
            named += [(f"{here}.node_affinity.required[{n}]", key) for key in _positive_keys(term)]
        for n, (_, term) in enumerate(rule.preferred_terms):
            named += [(f"{here}.node_affinity.preferred[{n}]", key) for key in _positive_keys(term)]
        for n, pod_term in enumerate(rule.anti_required + rule.anti_preferred):
            named.append((f"{here}.pod_anti_affinity (term {n})", pod_term.topology_key))
        for n, constraint in enumerate(rule.spread):
            named.append((f"{here}.topology_spread_constraints[{n}]", constraint.topology_key))
        for path, key in named:
            if key not in known:
                raise SpecError(
                    f"{path}: label key {short_repr(key)} is on no node (node label keys: {sorted(known)})"
                )


def _positive_keys(selector: LabelSelector) -> list[str]:
    """The keys a selector needs present (not those of ``NotIn`` and ``DoesNotExist``)."""
    keys = [key for key, _ in selector.match_labels]
    return keys + [e.key for e in selector.match_expressions if e.operator not in _NEGATIVE]
