"""Replay a recorded episode bit for bit, or play a scenario with an agent.

``aco-env replay FILE.json [--agent NAME]`` re-runs a recording from any folder and reports
whether every step matched: exit 0 for a full match; exit 1 and the first differing step for a
mismatch, or when the recording stops before its episode ends (cut short by a crash or an
edit). An unreadable or damaged file, or a scenario that cannot be found, is one line on
stderr (exit 1). ``aco-env replay SCENARIO --agent NAME --seed S [--record OUT.json]`` plays a
scenario (bundled name or YAML path) with an agent and prints the episode metrics.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym

from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import scenario_of
from aco_env.recording import RecordEpisode, load_recording, replay_recording
from agents import Agent, agent_names, listed_agent_names, make_agent
from digital_twin.errors import did_you_mean
from training import checks
from training.errors import EXIT_DATA, EXIT_OK, DataError, UsageError
from training.evaluation.rollout import play_episode

HELP = "replay a recorded episode, or play a scenario with an agent"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """TARGET, --agent, --seed, --record."""
    parser.add_argument("target", metavar="FILE_OR_SCENARIO", help="a recording (.json) or a scenario")
    parser.add_argument("--agent", help="agent name (registry name or sb3:PATH)")
    parser.add_argument("--seed", type=int, help="episode seed (scenario mode; default: the scenario's seed)")
    parser.add_argument("--record", type=Path, help="write the played episode to this recording file")


def run(args: argparse.Namespace) -> int:
    """Dispatch on the target's kind."""
    if args.agent and not args.agent.startswith("sb3:") and args.agent not in agent_names():
        close = did_you_mean(args.agent, agent_names())
        raise UsageError(f"--agent {args.agent}: unknown agent{close}; registered: {listed_agent_names()}, or sb3:PATH")
    if args.target.endswith(".json"):
        return _replay_file(args)
    if not args.agent:
        raise UsageError(f"playing the scenario {args.target} needs --agent NAME (e.g. --agent cheapest)")
    return _play_scenario(args)


def _replay_file(args: argparse.Namespace) -> int:
    try:
        record = load_recording(args.target)
    except ValueError as exc:  # RecordingError: the message names the file and the key
        raise DataError(str(exc)) from None
    choose = None
    if args.agent:
        agents: dict[str, Agent] = {}

        def choose(env: ClusterSchedulingEnv, observation: dict) -> int:
            if "agent" not in agents:
                agents["agent"] = make_agent(args.agent, env)
                agents["agent"].reset(record["seed"])
            action, _ = agents["agent"].predict(observation)
            return int(action)

    try:
        report = replay_recording(record, choose)
    except ValueError as exc:  # the scenario cannot be found or loaded, or a recorded action is invalid
        raise DataError(f"{args.target}: {exc}") from None
    if report.scenario_changed:
        print("note: the scenario file changed since the recording (content hash differs)")
    if not report.matched:
        step, what = report.first_mismatch  # type: ignore[misc]  # set when not matched
        print(f"MISMATCH at step {step}: {what}")
        return EXIT_DATA
    if not report.complete:
        why = (
            "the episode goes on after its last step"
            if report.episode_metrics is None
            else "the file does not mark the episode complete"
        )
        print(
            f"INCOMPLETE: the {report.steps} recorded steps match, but the recording stops early ({why}); "
            "it was cut short (a crash or an edit): record the episode again"
        )
        return EXIT_DATA
    print(f"MATCH: all {report.steps} steps identical (seed {record['seed']}, {record['scenario']['name']})")
    return EXIT_OK


def _play_scenario(args: argparse.Namespace) -> int:
    if args.record:
        checks.writable_file(args.record, "--record")
    env: gym.Env = ClusterSchedulingEnv(checks.scenario(args.target, "scenario"))
    seed = args.seed if args.seed is not None else scenario_of(env).seed
    if args.record:
        env = RecordEpisode(env, args.record, agent=args.agent)
    agent = make_agent(args.agent, env)
    result = play_episode(env, agent, seed)
    print(f"{args.agent} on {scenario_of(env).name}, seed {seed}:")
    for key, value in result.metrics.items():
        print(f"  {key:<22} {value:,.4f}")
    if args.record:
        print(f"recorded to {args.record}")
    return EXIT_OK
