"""``RLlibConfig``: the options of ``aco-env rllib`` (the command line is generated from it).

Each field's docstring is its ``--help``; ``config.json`` in the run directory holds the options
a run was started with (:meth:`RLlibConfig.to_json`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import simple_parsing

from training.learning.config_options import comma_separated, counted, minimum_of, optional_path


@dataclass(frozen=True)
class RLlibConfig:
    """How to train with RLlib's PPO; serialised as ``config.json`` in the run directory."""

    scenario: str = "fleet5-synthetic"
    """Bundled scenario name or path to a scenario YAML file (loaded here, shipped to the env runners)."""
    iterations: int = counted(20, minimum=1)
    """PPO iterations: each samples --train-batch-size env steps (whole episodes), then updates the policy."""
    env_runners: int = counted(2, minimum=1)
    """Env runner processes (Ray actors of one CPU each) sampling episodes side by side."""
    envs_per_env_runner: int = counted(8, minimum=1)
    """Sub-envs each env runner steps side by side, its policy acting on all of them in one batch (8 runs about
    3.5 x as many steps per second as 1 on the default scenario: RLlib's cost per step is the forward pass and its
    connectors, not the env)."""
    seed: int = 0
    """Seed of everything: each sub-env's first episode (from seed, env runner and sub-env index), the networks."""
    out: Path | None = optional_path("RUN_DIR")  # noqa: RUF009  (returns a dataclasses.field)
    """The run directory (created; must not hold a run yet); default LOGDIR/<scenario>__rllib-ppo__<seed>__<time>/."""
    logdir: Path = Path("runs")
    """Where runs go when --out is not given."""
    address: str | None = simple_parsing.field(default=None, type=str, nargs=None, metavar="HOST:PORT")
    """A running Ray cluster's head (`ray start --head`), ray://HOST:PORT or auto; default: a new local Ray."""
    train_batch_size: int = counted(2048, minimum=1)
    """Env steps sampled per iteration (rounded up to whole episodes)."""
    minibatch_size: int = counted(256, minimum=1)
    """Minibatch size of the PPO updates."""
    num_epochs: int = counted(4, minimum=1)
    """Passes over each iteration's batch."""
    learning_rate: float = 3e-4
    """Adam's learning rate."""
    gamma: float = 1.0
    """Discount factor: 1, the objective is an undiscounted episode sum (as aco-env train)."""
    gae_lambda: float = 1.0
    """GAE lambda: 1 = Monte-Carlo returns, penalties arrive long after their cause (as aco-env train)."""
    ent_coef: float = 0.01
    """Entropy bonus."""
    hidden: tuple[int, ...] = comma_separated((64, 64), int, metavar="N,N,...")
    """Hidden layer sizes of the policy and the value MLPs."""
    reward_scale: float = 10.0
    """Rewards are -objective (USD) x reward_scale during training (evaluation reports USD)."""
    checkpoint_every: int = counted(0, minimum=0)
    """Save RUN/checkpoint every this many iterations (0 = only at the end; Ctrl-C saves too)."""
    eval_episodes: int = counted(5, minimum=0)
    """Episodes of the final evaluation (the protocol's test seeds 100000 + seed ..., as aco-env train); 0 = none."""
    eval_agents: tuple[str, ...] = comma_separated(("aco", "first-fit"), str, metavar="NAME,...")
    """Baselines evaluated beside the trained policy, comma-separated."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            minimum = minimum_of(f)
            if minimum is not None and getattr(self, f.name) < minimum:
                raise ValueError(f"{f.name} must be >= {minimum}, got {getattr(self, f.name)}")
        if not self.hidden or min(self.hidden) < 1:
            raise ValueError(f"hidden must be one or more positive sizes, got {self.hidden}")
        if not (math.isfinite(self.reward_scale) and self.reward_scale > 0):
            raise ValueError(f"reward_scale must be a positive finite number, got {self.reward_scale}")

    def to_json(self) -> str:
        """The config as JSON (paths as strings)."""
        return json.dumps(dataclasses.asdict(self), indent=1, default=str)


__all__ = ["RLlibConfig"]
