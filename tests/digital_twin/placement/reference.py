"""An independent reading of placement rules, for tests: replays an event log and judges every start.

It shares with the twin only the parsed rules, the labels (:mod:`digital_twin.placement.labels`)
and selector matching; which nodes are allowed, the domains, the counts, the skew, the
symmetry of anti-affinity and the preference weights are recomputed here, naively, from the
set of jobs running at each start.
"""

from __future__ import annotations

from collections.abc import Mapping

from digital_twin import TwinSpec
from digital_twin.placement.labels import job_labels, node_labels, node_taints
from digital_twin.placement.rules import JobRule, PodTerm, SpreadConstraint

Labels = Mapping[str, str]


class RuleReferee:
    """Judges starts against ``spec.rules`` given the jobs running (job id -> node id)."""

    def __init__(self, spec: TwinSpec) -> None:
        assert spec.rules is not None
        self.rules = spec.rules
        self.node_ids = [n.node_id for n in spec.fleet]
        self.nodes = dict(zip(self.node_ids, node_labels(spec.rules, spec.fleet), strict=True))
        self.taints = dict(zip(self.node_ids, node_taints(spec.rules, spec.fleet), strict=True))
        labels = job_labels(spec.rules, spec.jobs)
        self.jobs = {job.job_id: job_labels_j for job, job_labels_j in zip(spec.jobs, labels, strict=True)}

    def rules_of(self, job: str) -> list[JobRule]:
        return [rule for rule in self.rules.rules if rule.match.matches(self.jobs[job])]

    def node_side_ok(self, job: str, node: str) -> bool:
        """Node selector, required terms, NoSchedule taints, required spread keys."""
        labels, rules = self.nodes[node], self.rules_of(job)
        tolerations = [t for r in rules for t in r.tolerations]
        if any(labels.get(k) != v for r in rules for k, v in r.node_selector):
            return False
        if any(r.required_terms and not any(t.matches(labels) for t in r.required_terms) for r in rules):
            return False
        for taint in self.taints[node]:
            if taint.effect == "NoSchedule" and not any(t.tolerates(taint) for t in tolerations):
                return False
        return all(c.topology_key in labels for r in rules for c in r.spread if c.required)

    def broken_required(self, job: str, node: str, running: Mapping[str, str]) -> list[str]:
        """What placing ``job`` on ``node`` breaks, with ``running`` the jobs running before it."""
        broken = [] if self.node_side_ok(job, node) else ["node-side rule"]
        for rule in self.rules_of(job):
            broken += [f"anti-affinity {t}" for t in rule.anti_required if self._anti_broken(job, node, t, running)]
            broken += [f"spread {c}" for c in rule.spread if c.required and self._spread_broken(job, node, c, running)]
        for other, other_node in running.items():  # their required terms keep this job away too
            for rule in self.rules_of(other):
                for term in rule.anti_required:
                    key = term.topology_key
                    same = key in self.nodes[node] and self.nodes[node].get(key) == self.nodes[other_node].get(key)
                    if same and self._selector(term, other).matches(self.jobs[job]):
                        broken.append(f"{other}'s anti-affinity")
        return broken

    def preference_weight(self, job: str, node: str, running: Mapping[str, str]) -> float:
        """What placing ``job`` on ``node`` counts in the preferences term."""
        labels, rules = self.nodes[node], self.rules_of(job)
        tolerations = [t for r in rules for t in r.tolerations]
        weight = sum(w for r in rules for w, term in r.preferred_terms if not term.matches(labels))
        weight += sum(
            1.0
            for taint in self.taints[node]
            if taint.effect == "PreferNoSchedule" and not any(t.tolerates(taint) for t in tolerations)
        )
        for rule in rules:
            weight += sum(t.weight for t in rule.anti_preferred if self._anti_broken(job, node, t, running))
            weight += sum(1.0 for c in rule.spread if not c.required and self._spread_broken(job, node, c, running))
        return weight

    def _selector(self, term: PodTerm | SpreadConstraint, job: str) -> object:
        own = {k: self.jobs[job][k] for k in term.match_label_keys if k in self.jobs[job]}
        return term.label_selector.with_labels(own)

    def _anti_broken(self, job: str, node: str, term: PodTerm, running: Mapping[str, str]) -> bool:
        key = term.topology_key
        if key not in self.nodes[node]:
            return False
        selector = self._selector(term, job)
        return any(
            self.nodes[other_node].get(key) == self.nodes[node][key] and selector.matches(self.jobs[other])
            for other, other_node in running.items()
        )

    def _spread_broken(self, job: str, node: str, c: SpreadConstraint, running: Mapping[str, str]) -> bool:
        key = c.topology_key
        if key not in self.nodes[node]:
            return False
        selector = self._selector(c, job)
        count: dict[str, int] = {}
        for other, other_node in running.items():
            if key in self.nodes[other_node] and selector.matches(self.jobs[other]):
                domain = self.nodes[other_node][key]
                count[domain] = count.get(domain, 0) + 1
        own = 1 if selector.matches(self.jobs[job]) else 0
        here = count.get(self.nodes[node][key], 0) + own
        if c.max_per_domain is not None:
            return here > c.max_per_domain
        eligible = {self.nodes[m][key] for m in self.node_ids if key in self.nodes[m] and self.node_side_ok(job, m)}
        eligible.add(self.nodes[node][key])
        assert c.max_skew is not None
        return here - min(count.get(d, 0) for d in eligible) > c.max_skew


def judge_log(spec: TwinSpec, log: list[tuple]) -> tuple[list[str], float, int]:
    """Replay ``log``: every broken required rule (described), the total preference weight, the starts."""
    referee = RuleReferee(spec)
    running: dict[str, str] = {}
    broken: list[str] = []
    weight, starts = 0.0, 0
    for t, event, job, node in log:
        if event == "start":
            broken += [f"t={t} {job} on {node}: {b}" for b in referee.broken_required(job, node, running)]
            weight += referee.preference_weight(job, node, running)
            running[job] = node
            starts += 1
        elif event in ("completion", "evicted-failed", "evicted-requeued"):
            del running[job]
    return broken, weight, starts
