"""The training algorithms, in one table: each one's SB3 class, how it acts, and its default options.

Everything that needs an algorithm name derives from :data:`ALGORITHMS`: the choices of
``aco-env train --algo``, the ``sb3:ALGO:PATH`` agent specs, loading a saved model, building a
new one, and which ``--hp`` keys are valid. Adding an algorithm is one :class:`Algorithm` row.

The table stores import paths, not classes: ``import agents.algorithms`` imports neither torch
nor Stable-Baselines3 (:meth:`Algorithm.load_class` does, on first use).

>>> list(ALGORITHMS)
['maskable-ppo', 'ppo', 'dqn', 'a2c', 'bc', 'dagger']
>>> ALGORITHMS["bc"].class_name, ALGORITHMS["bc"].masked, ALGORITHMS["bc"].reinforcement_learning
('MaskablePPO', True, False)
>>> ALGORITHMS["a2c"].constructor_options({"n_steps": 2048, "ent_coef": 0.01, "gae_lambda": 1.0})
{'n_steps': 32, 'ent_coef': 0.01, 'gae_lambda': 1.0}
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

TrainingOptions = Mapping[str, Any]
"""The run's options by name (the fields of ``training.learning.config.TrainConfig``, e.g. ``n_steps``)."""

POLICY = "MultiInputPolicy"
"""SB3's flat policy for the env's dict observation (``--policy mlp``; every algorithm takes it)."""
SET_POLICY = "agents.set_policy:SetPolicy"
"""The permutation-equivariant policy (``--policy set``; the MaskablePPO algorithms), as ``module:class``."""
MLP_NET_ARCH = (128, 128)
"""The flat policy's hidden layers when the run gives none."""


def policy_class(kind: str) -> Any:
    """The ``policy`` argument of an SB3 constructor for ``kind`` (``set`` imports torch; ``mlp`` is a name)."""
    if kind == "mlp":
        return POLICY
    module, _, name = SET_POLICY.partition(":")
    return getattr(importlib.import_module(module), name)


def _on_policy_options(options: TrainingOptions) -> dict[str, Any]:
    """PPO and MaskablePPO: rollout length, minibatches, epochs, entropy bonus and GAE lambda."""
    return {name: options[name] for name in ("n_steps", "batch_size", "n_epochs", "ent_coef", "gae_lambda")}


def _a2c_options(options: TrainingOptions) -> dict[str, Any]:
    """A2C updates after every rollout of at most 32 steps per env (its usual short rollouts)."""
    return {
        "n_steps": min(options["n_steps"], 32),
        "ent_coef": options["ent_coef"],
        "gae_lambda": options["gae_lambda"],
    }


def _dqn_options(options: TrainingOptions) -> dict[str, Any]:
    """DQN: minibatch size, and learning starts after a tenth of the run (at most 1000 steps)."""
    return {"batch_size": options["batch_size"], "learning_starts": min(1000, max(options["timesteps"] // 10, 1))}


@dataclass(frozen=True)
class Algorithm:
    """One training algorithm.

    Attributes:
        name: The name on the command line and in ``sb3:ALGO:PATH`` (lower case, dashes).
        module: The module holding the SB3 class (``stable_baselines3`` or ``sb3_contrib``).
        class_name: The SB3 class in ``module`` (its ``load`` reads the saved models).
        summary: One phrase for ``--help``.
        masked: It takes the action mask (MaskablePPO: ``predict(..., action_masks=...)``) and
            never picks an invalid action; the unmasked ones learn from the env's invalid-action
            penalty and are masked only at evaluation (see :mod:`agents.sb3_agent`).
        value_based: It scores actions by Q-values (DQN): no action distribution, so neither
            sampled actions nor behaviour cloning.
        reinforcement_learning: False for behaviour cloning alone (no RL steps are trained).
        constructor_options: The algorithm's own keyword arguments for the run's options
            (:data:`TrainingOptions`); the trainer adds the shared ones (learning rate, gamma,
            seed, network) and the user's ``--hp`` on top.
    """

    name: str
    module: str
    class_name: str
    summary: str
    masked: bool
    value_based: bool
    reinforcement_learning: bool
    constructor_options: Callable[[TrainingOptions], dict[str, Any]]

    def load_class(self) -> type[Any]:
        """The SB3 / sb3-contrib class (imports it, and with it torch)."""
        cls: type[Any] = getattr(importlib.import_module(self.module), self.class_name)
        return cls

    def parameters(self) -> list[str]:
        """The keyword arguments its constructor takes (what ``--hp`` may set), minus policy and env."""
        signature = inspect.signature(self.load_class()).parameters
        return [
            name
            for name, parameter in signature.items()
            if name not in ("policy", "env")
            and not name.startswith("_")
            and parameter.kind is not inspect.Parameter.VAR_KEYWORD
        ]


ALGORITHMS: dict[str, Algorithm] = {
    algorithm.name: algorithm
    for algorithm in (
        Algorithm(
            "maskable-ppo",
            "sb3_contrib",
            "MaskablePPO",
            "sb3-contrib, uses the action mask",
            masked=True,
            value_based=False,
            reinforcement_learning=True,
            constructor_options=_on_policy_options,
        ),
        Algorithm(
            "ppo",
            "stable_baselines3",
            "PPO",
            "SB3; invalid actions are penalised",
            masked=False,
            value_based=False,
            reinforcement_learning=True,
            constructor_options=_on_policy_options,
        ),
        Algorithm(
            "dqn",
            "stable_baselines3",
            "DQN",
            "SB3; invalid actions are penalised",
            masked=False,
            value_based=True,
            reinforcement_learning=True,
            constructor_options=_dqn_options,
        ),
        Algorithm(
            "a2c",
            "stable_baselines3",
            "A2C",
            "SB3; invalid actions are penalised",
            masked=False,
            value_based=False,
            reinforcement_learning=True,
            constructor_options=_a2c_options,
        ),
        Algorithm(
            "bc",
            "sb3_contrib",
            "MaskablePPO",
            "behaviour cloning into a MaskablePPO policy of aco_env/Placement-v6's labels: the actions optimal "
            "given a cheapest-fit continuation with the true future; no RL",
            masked=True,
            value_based=False,
            reinforcement_learning=False,
            constructor_options=_on_policy_options,
        ),
        Algorithm(
            "dagger",
            "sb3_contrib",
            "MaskablePPO",
            "DAgger imitation of an online expert (lookahead by default) into a MaskablePPO policy; no RL",
            masked=True,
            value_based=False,
            reinforcement_learning=False,
            constructor_options=_on_policy_options,
        ),
    )
}
"""Algorithm name -> :class:`Algorithm`, in the order ``--help`` lists them (the default first)."""


def algorithm_names() -> str:
    """The names, comma-separated (for messages that list the choices)."""
    return ", ".join(ALGORITHMS)


def algorithms_help() -> str:
    """One line per algorithm for ``--help``: ``name (summary)``, joined by ``; ``."""
    return "; ".join(f"{algorithm.name} ({algorithm.summary})" for algorithm in ALGORITHMS.values())
