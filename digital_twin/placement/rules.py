"""Placement rules as a scenario declares them: node labels and taints, job labels, and per-job rules.

The ``placement`` section of a scenario (and :meth:`PlacementRules.parse`) reads::

    placement:
      topology: {zones: [a, b, c], racks_per_zone: 2}   # labels `zone` and `rack` in fleet order
      nodes:                                 # applied in order (a later entry overrides a label)
        - match: {match_labels: {arch: gpu-node}}
          labels: {accelerator: a100}
          taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
      job_labels:
        - match: {match_labels: {workload: latency-critical}}
          set: {app: [web, api, cache]}      # a list is cycled over the matching jobs, in arrival order
      rules:                                 # every rule whose `match` selects a job applies to it
        - match: {match_labels: {workload: latency-critical}}
          node_selector: {instance: on-demand}
          node_affinity:
            required: [{match_expressions: [{key: zone, operator: In, values: [a, b]}]}]   # terms, any one
            preferred: [{weight: 2, preference: {match_labels: {rack: a-r0}}}]
          tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]
          pod_anti_affinity:
            required: [{label_selector: {match_labels: {workload: batch}}, topology_key: node}]
            preferred: [{weight: 1, pod_affinity_term: {match_label_keys: [app], topology_key: zone}}]
          topology_spread_constraints:
            - {max_skew: 1, topology_key: zone, when_unsatisfiable: DoNotSchedule, match_label_keys: [app]}
            - {max_per_domain: 2, topology_key: node, label_selector: {match_labels: {workload: batch}}}
      interference:                          # co-location slowdowns (digital_twin/sim/tables/interference.py)
        - {victim: {match_labels: {workload: latency-critical}}, aggressor: {match_labels: {kind: replay-buffer}},
           slowdown: 0.5}                    # the victim runs 1.5 x slower while an aggressor shares its node

Field names and semantics are Kubernetes' (snake_case), with these differences:

* ``node_affinity.required`` is the list of node selector terms itself (Kubernetes nests it in
  ``requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``) and ``preferred`` the
  list of ``{weight, preference}``; a term may use ``match_labels`` too.
* Every label is a plain key; built-in ones: a node's ``node`` (its id, Kubernetes'
  ``kubernetes.io/hostname``), ``arch``, ``instance`` and ``gpu_model``; a job's ``job`` (its
  id), ``workload`` (its class) and ``gpus`` (its GPU count). ``topology`` adds ``zone`` and ``rack``.
* Taint effects are ``NoSchedule`` and ``PreferNoSchedule``; ``NoExecute`` (evicting running
  jobs) is not modelled and refused.
* Rules are judged when a job is placed and never evict (Kubernetes' "IgnoredDuringExecution").
  Required pod anti-affinity holds both ways, as Kubernetes' scheduler enforces it: a job is
  not placed next to a running job whose required term selects it either.
* ``topology_spread_constraints`` also take ``max_per_domain`` (at most that many matching jobs
  per domain, the job itself included if it matches) in place of ``max_skew``. Skew is counted
  over the domains of the nodes the job's node affinity, node selector and taints allow
  (Kubernetes' default ``nodeAffinityPolicy: Honor``, ``nodeTaintsPolicy: Honor``), and nodes
  without the topology key never take a job with a required constraint on it.
* A ``preferred`` term, a ``ScheduleAnyway`` spread constraint and an untolerated
  ``PreferNoSchedule`` taint are soft: each one a placement breaks counts its weight (1 for a
  taint and a spread constraint) in the objective's ``preferences`` term.
* No pod affinity (required co-location) and no ``min_domains``.
* ``interference`` is not Kubernetes': a declared slowdown between the jobs two selectors pick
  when they share a node (:mod:`digital_twin.sim.tables.interference`), beyond the cpu sharing of
  :mod:`digital_twin.sim.tables.contention`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from digital_twin.errors import SpecError, short_repr
from digital_twin.placement.selectors import LabelSelector, label_key, label_map, label_value, list_of, mapping_of

T = TypeVar("T")

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule")
TOLERATION_OPERATORS = ("Equal", "Exists")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint: jobs that do not tolerate it are kept off (``NoSchedule``) or pay (``PreferNoSchedule``)."""

    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    """A job's toleration; ``key`` ``None`` with ``Exists`` tolerates every taint, ``effect`` ``None`` every effect."""

    key: str | None
    operator: str
    value: str
    effect: str | None

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' rule: same key (or none, with ``Exists``), same value unless ``Exists``, same or any effect."""
        if self.effect is not None and self.effect != taint.effect:
            return False
        if self.key is None:
            return True  # only with Exists (checked on parsing)
        return self.key == taint.key and (self.operator == "Exists" or self.value == taint.value)


@dataclass(frozen=True, slots=True)
class PodTerm:
    """A pod (anti-)affinity term: the running jobs ``label_selector`` selects, in the job's ``topology_key`` domain.

    Attributes:
        label_selector: Which running jobs the term is about.
        match_label_keys: Keys whose values the job's own labels add to the selector.
        topology_key: The node label whose value is the domain (``node``, ``rack``, ``zone``, ...).
        weight: What breaking a preferred term counts (1 for a required term, never counted).
    """

    label_selector: LabelSelector
    match_label_keys: tuple[str, ...]
    topology_key: str
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A topology spread constraint: ``max_skew`` (Kubernetes) or ``max_per_domain`` (ours), exactly one set."""

    label_selector: LabelSelector
    match_label_keys: tuple[str, ...]
    topology_key: str
    max_skew: int | None
    max_per_domain: int | None
    required: bool  # when_unsatisfiable: DoNotSchedule


@dataclass(frozen=True, slots=True)
class JobRule:
    """The rules of the jobs ``match`` selects (every field may be empty)."""

    match: LabelSelector
    node_selector: tuple[tuple[str, str], ...]
    required_terms: tuple[LabelSelector, ...]  # any one must match the node (none: no requirement)
    preferred_terms: tuple[tuple[float, LabelSelector], ...]
    tolerations: tuple[Toleration, ...]
    anti_required: tuple[PodTerm, ...]
    anti_preferred: tuple[PodTerm, ...]
    spread: tuple[SpreadConstraint, ...]


@dataclass(frozen=True, slots=True)
class NodeEntry:
    """Labels and taints for the nodes ``match`` selects (by their labels so far)."""

    match: LabelSelector
    labels: tuple[tuple[str, str], ...]
    taints: tuple[Taint, ...]


@dataclass(frozen=True, slots=True)
class JobLabelling:
    """Labels for the jobs ``match`` selects: per key, one value, or values cycled over the matching jobs."""

    match: LabelSelector
    values: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True, slots=True)
class Interference:
    """A co-location slowdown (:mod:`digital_twin.sim.tables.interference`).

    A job ``victim`` selects runs ``1 + slowdown`` times slower while another job that
    ``aggressor`` selects runs on its node.
    """

    victim: LabelSelector
    aggressor: LabelSelector
    slowdown: float


@dataclass(frozen=True, slots=True)
class Topology:
    """Zones and racks in fleet order: node ``k`` is in zone ``zones[k % Z]``, rack ``<zone>-r<(k // Z) % R>``."""

    zones: tuple[str, ...]
    racks_per_zone: int


@dataclass(frozen=True, slots=True)
class PlacementRules:
    """A scenario's ``placement`` section, checked (see the module docstring).

    Which nodes and jobs the entries select is resolved per episode
    (:mod:`digital_twin.sim.tables.rule_tables`), where rules no node can satisfy are named.
    """

    topology: Topology | None = None
    nodes: tuple[NodeEntry, ...] = ()
    job_labels: tuple[JobLabelling, ...] = ()
    rules: tuple[JobRule, ...] = ()
    interference: tuple[Interference, ...] = ()

    @property
    def judges(self) -> bool:
        """Whether anything here can change an episode: a rule, a taint or an interference entry.

        Labels alone (``topology``, ``nodes`` entries without taints, ``job_labels``) only name
        things for rules to select: the twin builds no tables for them.
        """
        return bool(self.rules or self.interference or any(entry.taints for entry in self.nodes))

    @classmethod
    def parse(cls, data: object, where: str = "placement") -> PlacementRules:
        """From the section's mapping; every error names the key (``placement.rules[1].tolerations[0]``)."""
        section = mapping_of(data, where, ("topology", "nodes", "job_labels", "rules", "interference"))
        topology = section.get("topology")
        return cls(
            None if topology is None else _topology(topology, f"{where}.topology"),
            _each(section, "nodes", where, _node_entry),
            _each(section, "job_labels", where, _labelling),
            _each(section, "rules", where, _rule),
            _each(section, "interference", where, _interference),
        )


def _items(section: Mapping[str, object], key: str, where: str) -> list[object]:
    return list_of(section.get(key, []), f"{where}.{key}")


def _topology(data: object, where: str) -> Topology:
    section = mapping_of(data, where, ("zones", "racks_per_zone"))
    zones = list_of(section.get("zones"), f"{where}.zones")
    if not zones:
        raise SpecError(f"{where}.zones: needs at least one zone")
    names = tuple(label_value(z, f"{where}.zones[{k}]") for k, z in enumerate(zones))
    if len(set(names)) != len(names):
        raise SpecError(f"{where}.zones: zone names repeat: {short_repr(list(names))}")
    return Topology(names, _count(section.get("racks_per_zone", 1), f"{where}.racks_per_zone", least=1))


def _node_entry(data: object, where: str) -> NodeEntry:
    section = mapping_of(data, where, ("match", "labels", "taints"))
    labels = label_map(section.get("labels", {}), f"{where}.labels")
    return NodeEntry(_selector(section, "match", where), labels, _each(section, "taints", where, _taint))


def _labelling(data: object, where: str) -> JobLabelling:
    section = mapping_of(data, where, ("match", "set"))
    values = section.get("set")
    if not isinstance(values, Mapping) or not values:
        raise SpecError(f"{where}.set: expected a non-empty mapping of label keys to a value or a list, "
                        f"got {short_repr(values)}")
    out = []
    for key, value in values.items():
        here = f"{where}.set.{key}"
        listed = value if isinstance(value, list) else [value]
        if not listed:
            raise SpecError(f"{here}: the list of values is empty")
        out.append((label_key(key, here), tuple(label_value(v, here) for v in listed)))
    return JobLabelling(_selector(section, "match", where), tuple(sorted(out)))


_RULE_KEYS = (
    "match", "node_selector", "node_affinity", "tolerations", "pod_anti_affinity", "topology_spread_constraints"
)


def _rule(data: object, where: str) -> JobRule:
    section = mapping_of(data, where, _RULE_KEYS)
    here_aff, here_anti = f"{where}.node_affinity", f"{where}.pod_anti_affinity"
    affinity = mapping_of(section.get("node_affinity", {}), here_aff, ("required", "preferred"))
    anti = mapping_of(section.get("pod_anti_affinity", {}), here_anti, ("required", "preferred"))
    return JobRule(
        match=_selector(section, "match", where),
        node_selector=label_map(section.get("node_selector", {}), f"{where}.node_selector"),
        required_terms=_each(affinity, "required", here_aff, LabelSelector.parse),
        preferred_terms=_each(affinity, "preferred", here_aff, _preferred_node_term),
        tolerations=_each(section, "tolerations", where, _toleration),
        anti_required=_each(anti, "required", here_anti, _pod_term),
        anti_preferred=_each(anti, "preferred", here_anti, _weighted_pod_term),
        spread=_each(section, "topology_spread_constraints", where, _spread),
    )


def _each(section: Mapping[str, object], key: str, where: str, parse: Callable[[object, str], T]) -> tuple[T, ...]:
    """``parse`` of each item of the list at ``key`` (absent: none), each told its own path."""
    return tuple(parse(item, f"{where}.{key}[{k}]") for k, item in enumerate(_items(section, key, where)))


def _selector(section: Mapping[str, object], key: str, where: str) -> LabelSelector:
    return LabelSelector.parse(section.get(key, {}), f"{where}.{key}")


def _preferred_node_term(data: object, where: str) -> tuple[float, LabelSelector]:
    section = mapping_of(data, where, ("weight", "preference"))
    if "preference" not in section:
        raise SpecError(f"{where}: missing key 'preference'")
    return _weight(section, where), LabelSelector.parse(section["preference"], f"{where}.preference")


def _pod_term(data: object, where: str, weight: float = 1.0) -> PodTerm:
    section = mapping_of(data, where, ("label_selector", "match_label_keys", "topology_key"))
    selector = _selector(section, "label_selector", where)
    return PodTerm(selector, _keys(section, where), _topology_key(section, where), weight)


def _weighted_pod_term(data: object, where: str) -> PodTerm:
    section = mapping_of(data, where, ("weight", "pod_affinity_term"))
    if "pod_affinity_term" not in section:
        raise SpecError(f"{where}: missing key 'pod_affinity_term'")
    return _pod_term(section["pod_affinity_term"], f"{where}.pod_affinity_term", _weight(section, where))


def _spread(data: object, where: str) -> SpreadConstraint:
    known = ("max_skew", "max_per_domain", "topology_key", "when_unsatisfiable", "label_selector", "match_label_keys")
    section = mapping_of(data, where, known)
    has_skew, has_cap = "max_skew" in section, "max_per_domain" in section
    if has_skew == has_cap:
        raise SpecError(f"{where}: give exactly one of max_skew and max_per_domain")
    when = section.get("when_unsatisfiable", "DoNotSchedule")
    if when not in WHEN_UNSATISFIABLE:
        raise SpecError(f"{where}.when_unsatisfiable: {short_repr(when)} is not one of {WHEN_UNSATISFIABLE}")
    return SpreadConstraint(
        _selector(section, "label_selector", where),
        _keys(section, where),
        _topology_key(section, where),
        _count(section["max_skew"], f"{where}.max_skew", least=1) if has_skew else None,
        _count(section["max_per_domain"], f"{where}.max_per_domain", least=0) if has_cap else None,
        when == "DoNotSchedule",
    )


def _interference(data: object, where: str) -> Interference:
    section = mapping_of(data, where, ("victim", "aggressor", "slowdown"))
    for key in ("victim", "aggressor", "slowdown"):
        if key not in section:
            raise SpecError(f"{where}: missing key {key!r}")
    slowdown = section["slowdown"]
    if isinstance(slowdown, bool) or not isinstance(slowdown, int | float) or not 0 < slowdown < float("inf"):
        raise SpecError(f"{where}.slowdown: must be a finite number > 0, got {short_repr(slowdown)}")
    return Interference(_selector(section, "victim", where), _selector(section, "aggressor", where), float(slowdown))


def _taint(data: object, where: str) -> Taint:
    section = mapping_of(data, where, ("key", "value", "effect"))
    effect = section.get("effect")
    if effect == "NoExecute":
        raise SpecError(f"{where}.effect: NoExecute (evicting running jobs) is not modelled; use NoSchedule")
    if effect not in TAINT_EFFECTS:
        raise SpecError(f"{where}.effect: {short_repr(effect)} is not one of {TAINT_EFFECTS}")
    key = label_key(section.get("key"), f"{where}.key")
    return Taint(key, label_value(section.get("value", ""), f"{where}.value"), effect)


def _toleration(data: object, where: str) -> Toleration:
    section = mapping_of(data, where, ("key", "operator", "value", "effect"))
    operator = section.get("operator", "Equal")
    if operator not in TOLERATION_OPERATORS:
        raise SpecError(f"{where}.operator: {short_repr(operator)} is not one of {TOLERATION_OPERATORS}")
    key = section.get("key")
    if key is None and operator != "Exists":
        raise SpecError(f"{where}: a toleration without a key must use operator Exists (it tolerates every taint)")
    if operator == "Exists" and "value" in section:
        raise SpecError(f"{where}.value: operator Exists takes no value")
    effect = section.get("effect")
    if effect is not None and effect not in TAINT_EFFECTS:
        raise SpecError(f"{where}.effect: {short_repr(effect)} is not one of {TAINT_EFFECTS}")
    return Toleration(
        None if key is None else label_key(key, f"{where}.key"),
        operator,
        label_value(section.get("value", ""), f"{where}.value"),
        effect,
    )


def _weight(section: Mapping[str, object], where: str) -> float:
    weight = section.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight < float("inf"):
        raise SpecError(f"{where}.weight: must be a finite number > 0, got {short_repr(weight)}")
    return float(weight)


def _keys(section: Mapping[str, object], where: str) -> tuple[str, ...]:
    keys = list_of(section.get("match_label_keys", []), f"{where}.match_label_keys")
    return tuple(label_key(k, f"{where}.match_label_keys[{n}]") for n, k in enumerate(keys))


def _topology_key(section: Mapping[str, object], where: str) -> str:
    if "topology_key" not in section:
        raise SpecError(f"{where}: missing key 'topology_key'")
    return label_key(section["topology_key"], f"{where}.topology_key")


def _count(value: object, where: str, *, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise SpecError(f"{where}: must be an integer >= {least}, got {short_repr(value)}")
    return value
