"""Where each agent puts each class of job: on-demand, spot or deferred, and whether it had a choice.

    python examples/placement_by_class.py                                  # fleet5-synthetic
    python examples/placement_by_class.py --scenario fleet5-synthetic --scenario fleet5-azure-llm
        --agents sb3:runs/.../model.zip,aco,first-fit --seeds 0-1 --probe     # (one line)

For every decision of every episode the job's class (its workload type and whether it needs
GPUs) and the action are read from the observation alone (``obs["job"]``'s type one-hot and
``gpu_rel``, ``obs["nodes"]``'s ``is_spot``, ``obs["action_mask"]``), so any agent can be
counted. The first table counts decisions per (scenario, agent, class): placed on an on-demand
node, on a spot node, deferred, and how many of the spot placements had a feasible on-demand
node (``spot|od ok``: the QoS penalty was avoidable right then; ``od none`` counts decisions
whose mask held no on-demand node at all). A latency-critical job started on a spot node is a
QoS violation (:mod:`digital_twin.sim.event_handlers`), so ``spot`` of a ``latency-critical``
class is what the objective's ``qos`` column charges.

The second table gives each job feature's range (min..max over decisions) per scenario and
class, to compare a scenario's features with the training scenario's. ``--probe`` adds, for
each ``sb3:`` agent, a counterfactual test on its decisions with both a spot and an on-demand
node feasible: the share of them it sends to spot as observed, and with one feature edited
(the job relabelled to another workload type, its duration set to another value, its GPU
column zeroed), i.e. which input the policy's spot choice actually depends on.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict

import numpy as np

import scenarios
from aco_env import ClusterSchedulingEnv, EnvConfig
from aco_env.observation import JOB_FEATURES, NODE_FEATURES
from agents import agent_deferral, make_agent
from digital_twin import WORKLOAD_TYPES

Observation = dict[str, np.ndarray]
_TYPE = JOB_FEATURES.index("type_latency_critical")
_GPU = JOB_FEATURES.index("gpu_rel")
_SPOT = NODE_FEATURES.index("is_spot")
COLUMNS = ("on-demand", "spot", "defer", "spot|od ok", "od none")

def _type(workload: str) -> dict[str, float]:
    """The job-feature values of the workload one-hot for ``workload``."""
    return {f"type_{w.replace('-', '_')}": float(w == workload) for w in WORKLOAD_TYPES}


PROBES: dict[str, dict[str, float]] = {
    "as observed": {},
    **{f"type={w}": _type(w) for w in WORKLOAD_TYPES},
    "duration=4 s": {"duration_h": 4.4 / 3600},
    "duration=10 min": {"duration_h": 600 / 3600},
    "deadline 5 min": {"has_deadline": 1.0, "deadline_slack_h": 300 / 3600},
    "no deadline": {"has_deadline": 0.0, "deadline_slack_h": 0.0},
    "vram=0": {"vram_per_gpu_100gb": 0.0},
    "vram=24 GB": {"vram_per_gpu_100gb": 0.24},
    "gpu_rel=0": {"gpu_rel": 0.0},
    "as training LC": {"has_deadline": 1.0, "deadline_slack_h": 300 / 3600, "vram_per_gpu_100gb": 0.0,
                       "duration_h": 600 / 3600},
}
"""Name -> job features set to a value, for ``--probe`` (the training scenario's latency-critical jobs
all have a 5-minute deadline, no VRAM minimum and last 4 min to 20 min)."""


def edited(obs: Observation, values: dict[str, float]) -> Observation:
    """A copy of ``obs`` whose job has the feature ``values``."""
    job = obs["job"].copy()
    for name, value in values.items():
        job[JOB_FEATURES.index(name)] = value
    return {**obs, "job": job}


def job_class(obs: Observation) -> str:
    """``"latency-critical/gpu"``, ``"batch/cpu"``, ...: the decision's job, from its observation."""
    job = obs["job"]
    workload = WORKLOAD_TYPES[int(np.argmax(job[_TYPE : _TYPE + len(WORKLOAD_TYPES)]))]
    return f"{workload}/{'gpu' if job[_GPU] > 0 else 'cpu'}"


def outcome(obs: Observation, action: int) -> list[str]:
    """The :data:`COLUMNS` one decision counts in."""
    mask = obs["action_mask"][:-1] > 0
    spot = obs["nodes"][:, _SPOT] > 0
    od_ok = bool((mask & ~spot).any())
    counted = [] if od_ok else ["od none"]
    if action == len(mask):
        return [*counted, "defer"]
    if spot[action]:
        return [*counted, "spot", *(["spot|od ok"] if od_ok else [])]
    return [*counted, "on-demand"]


def play(env: ClusterSchedulingEnv, agent_name: str, seeds: range, probe: bool) -> tuple[Counter, dict, Counter]:
    """Counts per (class, column), job feature rows per class, and spot choices per probe."""
    agent = make_agent(agent_name, env)
    counts: Counter = Counter()
    features: dict[str, list[np.ndarray]] = defaultdict(list)
    probes: Counter = Counter()
    model = getattr(agent, "model", None) if probe else None
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        agent.reset(seed)
        done = False
        while not done:
            action = int(agent.predict(obs, deterministic=True)[0])
            cls = job_class(obs)
            counts[cls, "decisions"] += 1
            for column in outcome(obs, action):
                counts[cls, column] += 1
            features[cls].append(obs["job"].copy())
            if model is not None:
                _count_probes(model, obs, cls, probes)
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
    return counts, features, probes


def _count_probes(model: object, obs: Observation, cls: str, probes: Counter) -> None:
    """At a decision with both a spot and an on-demand node feasible, count each probe's spot choices."""
    mask = obs["action_mask"] > 0
    spot = obs["nodes"][:, _SPOT] > 0
    if not ((mask[:-1] & spot).any() and (mask[:-1] & ~spot).any()):
        return
    probes[cls, "decisions"] += 1
    predict = model.predict  # type: ignore[attr-defined]  # an SB3 model
    for name, values in PROBES.items():
        action = int(predict(edited(obs, values), action_masks=mask, deterministic=True)[0])
        where = "defer" if action == len(spot) else "spot" if spot[action] else "od"
        probes[cls, name, where] += 1


def seed_range(text: str) -> range:
    """``"0-4"`` -> ``range(0, 5)``; ``"3"`` -> ``range(3, 4)``."""
    first, _, last = text.partition("-")
    return range(int(first), int(last or first) + 1)


def main() -> None:
    """Print the tables (Markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", help="bundled name or YAML path (repeatable)")
    parser.add_argument("--agents", default="aco,first-fit", help="comma-separated names or sb3:PATH")
    parser.add_argument("--seeds", type=seed_range, default=seed_range("0-2"))
    parser.add_argument("--background-cpu-pct", type=float, help="constant background cpu on every node")
    parser.add_argument("--probe", action="store_true", help="counterfactual feature edits for sb3: agents")
    args = parser.parse_args()
    rows, ranges, probe_rows = [], [], []
    for name in args.scenario or ["fleet5-synthetic"]:
        scenario = scenarios.load(name)
        if args.background_cpu_pct is not None:
            scenario = scenario.with_background_cpu(args.background_cpu_pct)
        features: dict[str, list[np.ndarray]] = defaultdict(list)
        for agent_name in args.agents.split(","):
            env = ClusterSchedulingEnv(scenario, config=EnvConfig(deferral=agent_deferral(agent_name)))
            counts, agent_features, probes = play(env, agent_name, args.seeds, args.probe)
            short = agent_name if len(agent_name) < 24 else f"...{agent_name[-20:]}"
            for cls in sorted({key[0] for key in counts}):
                cells = " | ".join(str(counts[cls, column]) for column in COLUMNS)
                rows.append(f"| {scenario.name} | {short} | {cls} | {counts[cls, 'decisions']} | {cells} |")
            for cls in sorted({key[0] for key in probes}):
                n = probes[cls, "decisions"]
                cells = " | ".join(f"{probes[cls, p, 'spot'] / n:.0%} / {probes[cls, p, 'defer'] / n:.0%}"
                                   for p in PROBES)
                probe_rows.append(f"| {scenario.name} | {short} | {cls} | {n} | {cells} |")
            for cls, rows_of_class in agent_features.items():
                features[cls] += rows_of_class
        for cls in sorted(features):
            table = np.array(features[cls])
            cells = " | ".join(f"{lo:.3g}..{hi:.3g}" for lo, hi in zip(table.min(0), table.max(0), strict=True))
            ranges.append(f"| {scenario.name} | {cls} | {cells} |")
    print(f"| scenario | agent | class | decisions | {' | '.join(COLUMNS)} |\n|{'---|' * (4 + len(COLUMNS))}")
    print("\n".join(rows))
    print(f"\n| scenario | class | {' | '.join(JOB_FEATURES)} |\n|{'---|' * (2 + len(JOB_FEATURES))}")
    print("\n".join(ranges))
    if probe_rows:
        print("\nDecisions with a spot and an on-demand node feasible: share sent to spot / deferred, per job edit:")
        print(f"\n| scenario | agent | class | decisions | {' | '.join(PROBES)} |\n|{'---|' * (4 + len(PROBES))}")
        print("\n".join(probe_rows))


if __name__ == "__main__":
    main()
