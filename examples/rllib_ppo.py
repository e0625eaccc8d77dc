"""Train the default scenario with RLlib's PPO, the RLlib way, then compare it with ACO and first-fit.

    python examples/rllib_ppo.py                          # a new local Ray, 2 env runner processes
    python examples/rllib_ppo.py --address HOST:PORT      # a cluster started with `ray start --head`

Needs ``pip install 'aco-env[train,ray]'``. ``aco-env rllib`` does the same and more (TensorBoard,
metrics.jsonl, Ctrl-C saves, results.json); this script shows the pieces, for use in your own
RLlib code: the registered env, the masking RLModule, an ordinary ``PPOConfig`` to change as
you like, RLlib's own training loop and checkpoint, and the project's evaluation of that
checkpoint. docs/scale.md says when to use it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import ray
import torch

import scenarios
from training.evaluation.leaderboard import print_leaderboard
from training.evaluation.protocol import VALIDATION, first_seed
from training.scale.rllib.agent import evaluate_checkpoint
from training.scale.rllib.config import RLlibConfig
from training.scale.rllib.env import register
from training.scale.rllib.ppo import ppo_config

EVAL_EPISODES = 5
EVAL_SEED = first_seed(VALIDATION, EVAL_EPISODES)
"""A look at the policy, not a published table: validation seeds (:mod:`training.evaluation.protocol`)."""


def main() -> None:
    """Train ``--iterations`` PPO iterations, save a checkpoint, evaluate it beside ACO and first-fit."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", help="a Ray cluster's head, HOST:PORT (default: a new local Ray)")
    parser.add_argument("--iterations", type=int, default=10, help="PPO iterations of ~2,048 env steps")
    parser.add_argument("--env-runners", type=int, default=2, help="env runner processes")
    parser.add_argument("--out", type=Path, default=Path("runs/rllib-example"), help="where the checkpoint goes")
    args = parser.parse_args()

    scenario = scenarios.load("fleet5-synthetic")
    # An ordinary PPOConfig: the env registered as training.scale.rllib.env.ENV_NAME (each sub-env seeded
    # from the run's seed, its env runner and its index), the masking module MaskedActorCritic,
    # gamma = lambda = 1 on whole episodes. Change anything RLlib offers, e.g. .training(lr=1e-4).
    config = ppo_config(RLlibConfig(env_runners=args.env_runners, seed=0), scenario)

    torch.set_num_threads(1)  # the learner runs in this process: one thread is plenty for this small network
    ray.init(address=args.address or "local")  # "local": always a new Ray, never one already running
    try:
        register()  # the env creator, shipped by Ray to every env runner
        algo = config.build_algo()
        for iteration in range(1, args.iterations + 1):
            result = algo.train()
            runners = result["env_runners"]
            print(
                f"iteration {iteration}: {result['num_env_steps_sampled_lifetime']:.0f} env steps, "
                f"objective {runners['scheduling/objective_usd']:.3f} USD (mean of the iteration's episodes)"
            )
        checkpoint = Path(algo.save_to_path(str(args.out.resolve() / "checkpoint")))
        algo.stop()
    finally:
        ray.shutdown()
    print(f"checkpoint: {checkpoint}")

    # The trained policy's argmax over the masked logits, beside the baselines on the same seeds.
    evaluation = evaluate_checkpoint(checkpoint, scenario, ["aco", "first-fit"], episodes=EVAL_EPISODES, seed=EVAL_SEED)
    print_leaderboard(evaluation)


if __name__ == "__main__":
    main()
