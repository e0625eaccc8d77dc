"""Replay a recorded episode bit for bit, or play a scenario with an agent.

``aco-env replay FILE.json [--agent NAME]`` re-runs a recording and reports whether every step
matched (exit 1 and the first differing step when not). ``aco-env replay SCENARIO --agent NAME
--seed S [--record OUT.json]`` plays a scenario (bundled name or YAML path) with an agent and
prints the episode metrics.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym

from aco_env import ClusterSchedulingEnv
from aco_env.recording import RecordEpisode, load_recording, replay_recording
from agents import make_agent
from training.rollout import play_episode

HELP = "replay a recorded episode, or play a scenario with an agent"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """TARGET, --agent, --seed, --record."""
    parser.add_argument("target", metavar="FILE_OR_SCENARIO", help="a recording (.json) or a scenario")
    parser.add_argument("--agent", help="agent name (registry name or sb3:PATH)")
    parser.add_argument("--seed", type=int, help="episode seed (scenario mode; default: the scenario's seed)")
    parser.add_argument("--record", type=Path, help="write the played episode to this recording file")


def run(args: argparse.Namespace) -> int:
    """Dispatch on the target's kind."""
    if args.target.endswith(".json"):
        return _replay_file(args)
    if not args.agent:
        print("playing a scenario needs --agent NAME")
        return 2
    return _play_scenario(args)


def _replay_file(args: argparse.Namespace) -> int:
    record = load_recording(args.target)
    choose = None
    if args.agent:
        agent_env: dict[str, object] = {}

        def choose(env: ClusterSchedulingEnv, observation: dict) -> int:
            if "agent" not in agent_env:
                agent_env["agent"] = make_agent(args.agent, env)
                agent_env["agent"].reset(record["seed"])  # type: ignore[attr-defined]  # an Agent
            action, _ = agent_env["agent"].predict(observation)  # type: ignore[attr-defined]
            return int(action)

    report = replay_recording(record, choose)
    if report.scenario_changed:
        print("note: the scenario file changed since the recording (content hash differs)")
    if report.matched:
        print(f"MATCH: all {report.steps} steps identical (seed {record['seed']}, {record['scenario']['name']})")
        return 0
    step, what = report.first_mismatch  # type: ignore[misc]  # set when not matched
    print(f"MISMATCH at step {step}: {what}")
    return 1


def _play_scenario(args: argparse.Namespace) -> int:
    env: gym.Env = ClusterSchedulingEnv(args.target)
    seed = args.seed if args.seed is not None else env.unwrapped.scenario.seed
    if args.record:
        env = RecordEpisode(env, args.record, agent=args.agent)
    agent = make_agent(args.agent, env)
    result = play_episode(env, agent, seed)
    print(f"{args.agent} on {env.unwrapped.scenario.name}, seed {seed}:")
    for key, value in result.metrics.items():
        print(f"  {key:<22} {value:,.4f}")
    if args.record:
        print(f"recorded to {args.record}")
    return 0
