"""An RLlib checkpoint as an agent, so the project's evaluator plays it like any other.

:func:`load_module` reads the trained :class:`~training.scale.rllib.module.MaskedActorCritic` out of an
RLlib checkpoint directory (no Ray runtime is started: only the module's own files are read).
:class:`RLlibAgent` implements the :class:`agents.Agent` protocol with it: the deterministic action of
the masked logits (:func:`agents.place_or_defer.place_or_defer`), or a sample from them seeded by
``reset(seed)``. :func:`evaluate_checkpoint`
plays it beside registered baselines on the same seeds with :func:`training.evaluation.evaluator.evaluate`.

Ray stays out of the library packages (``agents`` knows only registered names and ``sb3:``), so
the agent is registered under a name in this process only, and evaluated here one episode after
another (a process pool's workers would not know the name).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from agents import AgentSpecError, agent_names, register_agent
from agents.base import AgentState
from agents.place_or_defer import place_or_defer

if TYPE_CHECKING:
    from digital_twin.scenario import Scenario
    from training.evaluation.results import Evaluation
    from training.scale.rllib.module import MaskedActorCritic

AGENT_NAME = "rllib-ppo"
"""The name an RLlib policy is evaluated under (the leaderboard's row, results.json's key)."""
_registered_here: set[str] = set()  # agent names evaluate_checkpoint registered (it may replace only those)


def module_path(checkpoint: Path) -> Path:
    """Where an algorithm checkpoint keeps its (single) RLModule: ``learner_group/learner/rl_module/default_policy``."""
    from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_LEARNER_GROUP, COMPONENT_RL_MODULE, DEFAULT_MODULE_ID

    return Path(checkpoint) / COMPONENT_LEARNER_GROUP / COMPONENT_LEARNER / COMPONENT_RL_MODULE / DEFAULT_MODULE_ID


def load_module(checkpoint: Path) -> MaskedActorCritic:
    """The trained module of an RLlib checkpoint directory (``RUN/checkpoint``), in eval mode.

    Raises:
        FileNotFoundError: ``checkpoint`` holds no RLModule.
        TypeError: Its module is not a :class:`~training.scale.rllib.module.MaskedActorCritic`.
    """
    from ray.rllib.core.rl_module.rl_module import RLModule

    from training.scale.rllib.module import MaskedActorCritic

    path = module_path(checkpoint)
    if not path.is_dir():
        raise FileNotFoundError(f"{checkpoint}: not an RLlib checkpoint with a module (no {path})")
    module = RLModule.from_checkpoint(str(path))
    if not isinstance(module, MaskedActorCritic):
        raise TypeError(f"{checkpoint}: its module is a {type(module).__name__}, not a MaskedActorCritic")
    module.eval()
    return module


class RLlibAgent:
    """A trained :class:`~training.scale.rllib.module.MaskedActorCritic` behind the :class:`agents.Agent` protocol.

    Args:
        module: The trained module.
        env: The env the agent acts in (unused: the observation carries the mask).
        name: The agent's name.
    """

    def __init__(self, module: MaskedActorCritic, env: gym.Env[Any, Any] | None = None, name: str = AGENT_NAME) -> None:
        del env
        self.module = module
        self.name = name
        self._rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        """New episode: sampled actions are drawn from a generator seeded with ``seed``."""
        self._rng = np.random.default_rng(seed)

    def predict(
        self,
        observation: dict[str, np.ndarray],
        state: AgentState = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, AgentState]:
        """The masked logits' softmax: :func:`agents.place_or_defer.place_or_defer` of it, or a sample."""
        del state, episode_start
        import torch

        with torch.no_grad():
            batch = {key: torch.as_tensor(np.asarray(value))[None] for key, value in observation.items()}
            logits = self.module.masked_logits(batch)[0].double().numpy()
        probabilities = np.exp(logits - logits.max())
        if deterministic:
            return np.asarray(place_or_defer(probabilities), dtype=np.int64), None
        action = self._rng.choice(len(logits), p=probabilities / probabilities.sum())
        return np.asarray(int(action), dtype=np.int64), None


def evaluate_checkpoint(
    checkpoint: Path,
    scenario: str | Scenario,
    baselines: Sequence[str],
    episodes: int,
    seed: int,
    name: str = AGENT_NAME,
    deterministic: bool = True,
    progress: bool = True,
) -> Evaluation:
    """The checkpoint's policy and ``baselines`` on seeds ``seed, seed + 1, ...`` (one process, in turn).

    The policy is registered as agent ``name`` in this process (replacing an earlier RLlib
    policy of that name; a built-in agent's name is refused).

    Raises:
        agents.AgentSpecError: ``name`` is a built-in agent, or ``baselines`` name an unknown one.
    """
    from training.evaluation.evaluator import evaluate
    from training.execution.backend import SerialBackend

    if name in agent_names() and name not in _registered_here:
        raise AgentSpecError(f"{name!r} is a registered agent; evaluate the RLlib policy under another name")
    module = load_module(checkpoint)
    register_agent(name, lambda env: RLlibAgent(module, env, name), overwrite=True)
    _registered_here.add(name)
    return evaluate(
        scenario,
        [name, *baselines],
        episodes,
        seed,
        progress=progress,
        deterministic=deterministic,
        backend=SerialBackend(),
    )


__all__ = ["AGENT_NAME", "RLlibAgent", "evaluate_checkpoint", "load_module", "module_path"]
