"""Saved Stable-Baselines3 models as agents (``sb3:PATH`` or ``sb3:ALGO:PATH``).

Learned agents act through the action mask at evaluation: invalid actions are masked out of the
action probabilities (MaskablePPO, PPO, A2C) or the Q-values (DQN). A policy's deterministic action
is :func:`agents.place_or_defer.place_or_defer` of its probabilities, DQN's the argmax. (During
training the unmasked algorithms learn from the env's invalid-action penalty instead.) Torch is
imported here, never by ``import agents``.

A model that plays under ``new-fit`` never defers a job that already fits on every node it could
ever run on (:func:`without_stranding_deferral`): the rule asks a deferred job again only once it
fits on a node it did not fit on when deferred, so such a deferral would leave the job unasked
until its TTL or the horizon. Policies pick that action where training rarely punished it (a
job on an idle fleet, a workflow task whose descendants then wait too); on validation seeds
removing it cut `hpc-swf`'s objective by 38 % and `gpu32-alibaba2023-windowed`'s by 30 %
(docs/learning.md).
"""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from aco_env.padding import own_action, padded_mask, padded_observation
from agents.algorithms import ALGORITHMS, Algorithm, algorithm_names
from agents.base import AgentSpecError, AgentState
from agents.place_or_defer import place_or_defer
from digital_twin import DEFERRALS, NEW_FIT, NEXT_EVENT

_ALGO_TOKEN = re.compile(r"[a-z0-9][a-z0-9-]*")


class ModelFileError(ValueError):
    """A saved model that cannot be used: missing, not a zip, truncated, or without its config."""


@dataclass(frozen=True)
class SB3Spec:
    """A parsed ``sb3:`` agent spec.

    Attributes:
        algo: Key of :data:`agents.algorithms.ALGORITHMS`.
        path: The model's ``.zip`` file.
        deferral: The deferral rule it was trained under (:mod:`digital_twin.sim.deferral`), which
            it plays under too: ``config.json``'s ``deferral`` beside the model; ``next-event``
            without one (models made before training chose the rule).
    """

    algo: str
    path: Path
    deferral: str = NEXT_EVENT


def parse_sb3_spec(spec: str) -> SB3Spec:
    """Parse and check the part after ``sb3:``: ``PATH`` or ``ALGO:PATH``, without loading the model.

    With ``PATH`` alone the algorithm is read from the ``config.json`` that ``aco-env train``
    writes beside ``model.zip``.

    Raises:
        AgentSpecError: An unknown algorithm, or no ``config.json`` to say which (a usage error).
        ModelFileError: The file is missing or not a complete model zip, or its config.json is garbled.
    """
    head, sep, rest = spec.partition(":")
    if sep and _ALGO_TOKEN.fullmatch(head) and not Path(spec).exists():
        if head not in ALGORITHMS:
            raise AgentSpecError(f"sb3:{spec}: unknown algorithm {head!r}; known: {algorithm_names()}")
        algo, path = head, Path(rest)
    else:
        algo, path = "", Path(spec)
    check_model_file(path)
    if not algo:
        algo = _algo_from_config(spec, path)
    return SB3Spec(algo, path, _deferral_from_config(path))


def check_model_file(path: Path) -> None:
    """Check that ``path`` is a complete SB3 model zip (every member's CRC is read).

    Raises:
        ModelFileError: Missing, a folder, not a zip, truncated or corrupt, or not an SB3 model.
    """
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"{path}: no such model file")
    if not path.is_file():
        raise ModelFileError(f"{path}: not a file; give the model's .zip (e.g. RUN_DIR/model.zip)")
    try:
        with zipfile.ZipFile(path) as archive:
            broken = archive.testzip()
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ModelFileError(f"{path}: not a readable model zip, truncated or corrupt ({exc})") from None
    if broken is not None:
        raise ModelFileError(f"{path}: corrupt model zip (member {broken!r} fails its CRC check)")
    if "data" not in names:
        raise ModelFileError(f"{path}: a zip, but not a Stable-Baselines3 model (no 'data' member)")


def _algo_from_config(spec: str, path: Path) -> str:
    config = path.parent / "config.json"
    if not config.is_file():
        raise AgentSpecError(
            f"sb3:{spec}: no config.json beside the model to say its algorithm; "
            f"write sb3:ALGO:PATH with ALGO one of {algorithm_names()}"
        )
    try:
        algo = json.loads(config.read_text(encoding="utf-8"))["algo"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ModelFileError(f"{config}: cannot read the algorithm from it ({type(exc).__name__}: {exc})") from None
    if algo not in ALGORITHMS:
        raise ModelFileError(f"{config}: algo {algo!r} is not one of {algorithm_names()}")
    return str(algo)


def _deferral_from_config(path: Path) -> str:
    """The ``deferral`` of the ``config.json`` beside ``path``; ``next-event`` without that file or key.

    Raises:
        ModelFileError: The config is garbled or names an unknown rule.
    """
    config = path.parent / "config.json"
    if not config.is_file():
        return NEXT_EVENT
    try:
        document = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{config}: not readable as JSON ({type(exc).__name__}: {exc})") from None
    deferral = document.get("deferral", NEXT_EVENT) if isinstance(document, dict) else NEXT_EVENT
    if deferral not in DEFERRALS:
        raise ModelFileError(f"{config}: deferral {deferral!r} is not one of {', '.join(DEFERRALS)}")
    return str(deferral)


def load_sb3_agent(spec: str, env: gym.Env, name: str | None = None) -> SB3Agent:
    """``spec`` is ``PATH`` (the algo is read from ``config.json`` beside it) or ``ALGO:PATH``.

    Loading a model unpickles parts of its zip: only load files you trust.

    A model with the permutation-equivariant policy (:mod:`agents.set_policy`) runs on a fleet
    of any size: when ``env``'s spaces differ from the saved ones (another fleet size or queue
    window) its weights are loaded into a policy built for ``env``'s spaces.

    Raises:
        ModelFileError: A flat (``mlp``) model on an env whose observation space is not the one it
            was trained on; any model whose per-node, per-job or clock features are not the env's
            (made with another observation version: the env's docstring, "Version History").
    """
    parsed = parse_sb3_spec(spec)
    _one_torch_thread()
    algorithm = ALGORITHMS[parsed.algo]
    cls = algorithm.load_class()
    model = cls.load(str(parsed.path), device="cpu")
    if model.observation_space != env.observation_space or model.action_space != env.action_space:
        trained, here = _feature_widths(model.observation_space), _feature_widths(env.observation_space)
        if trained != here:
            raise ModelFileError(
                f"{parsed.path}: trained on observations with {_widths(trained)}, but this env's have "
                f"{_widths(here)}: the model was made with another observation version of the env "
                "(see its docstring's Version History); train it again"
            )
        if not getattr(model.policy, "any_fleet_size", False):
            raise ModelFileError(
                f"{parsed.path}: trained on observations {_shapes(model.observation_space)}, but this scenario's are "
                f"{_shapes(env.observation_space)}; a flat (mlp) policy runs only on the fleet it was trained on "
                "(train with --policy set for one that runs on any fleet size)"
            )
        spaces = {"observation_space": env.observation_space, "action_space": env.action_space}
        model = cls.load(str(parsed.path), device="cpu", custom_objects=spaces)
    return SB3Agent(model, algorithm, env, name or f"sb3:{parsed.path}", parsed.deferral)


def _one_torch_thread() -> None:
    """Run torch on one thread in this process, as training does.

    A learned agent decides one observation at a time with a network of a few thousand weights:
    spreading that over cores costs more in synchronisation than it saves, and in an evaluation's
    worker processes (one per core) torch's default of one thread per core made every decision
    about 150 x slower than in one process. Interop threads can be set only before torch's first
    parallel work, so only the intra-op count is set here.
    """
    import torch

    torch.set_num_threads(1)


_PER_ROW_KEYS = ("nodes", "job", "clock")
"""Observation keys whose last dimension is a feature count (fixed by the env's version, not its fleet)."""


def _feature_widths(space: gym.Space[Any]) -> dict[str, int]:
    """The feature count of each of :data:`_PER_ROW_KEYS` in a Dict space (empty for another space)."""
    if not isinstance(space, gym.spaces.Dict):
        return {}
    shapes = {key: space[key].shape for key in _PER_ROW_KEYS if key in space.spaces}
    return {key: int(shape[-1]) for key, shape in shapes.items() if shape}


def _widths(widths: dict[str, int]) -> str:
    """``18 node, 13 job and 4 clock features``."""
    names = {"nodes": "node", "job": "job", "clock": "clock"}
    parts = [f"{count} {names[key]}" for key, count in widths.items()]
    return (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)) + " features"


def _shapes(space: gym.Space[Any]) -> str:
    """``nodes (5, 18), history (5, 6), ...`` for a Dict space; ``repr`` otherwise."""
    if isinstance(space, gym.spaces.Dict):
        return ", ".join(f"{key} {tuple(box.shape or ())}" for key, box in space.spaces.items())
    return repr(space)


class SB3Agent:
    """A trained SB3 model behind the Agent protocol (deterministic, masked at inference).

    Args:
        model: The loaded SB3 model.
        algorithm: Its row of :data:`agents.algorithms.ALGORITHMS` (how it scores actions).
        env: The env it acts in.
        name: The agent's name in results.
        deferral: The rule it plays under; under ``new-fit`` it never defers a job that fits on
            every node it could ever run on (:func:`without_stranding_deferral`).
    """

    def __init__(self, model: Any, algorithm: Algorithm, env: gym.Env, name: str, deferral: str = NEXT_EVENT) -> None:
        self.model = model
        self.algorithm = algorithm
        self.env = env
        self.name = name
        self.deferral = deferral

    def reset(self, seed: int | None = None) -> None:
        """Seed the action sampling of ``predict(..., deterministic=False)``.

        SB3 samples from torch's global generator, so that is what is seeded.
        """
        if seed is not None:
            import torch

            torch.manual_seed(seed)

    def predict(
        self,
        observation: dict[str, np.ndarray],
        state: AgentState = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, AgentState]:
        """The model's action among the valid ones.

        With ``deterministic``, a policy's action probabilities (masked) give
        :func:`agents.place_or_defer.place_or_defer`: defer only when that is more likely than
        placing anywhere, else the most likely node; DQN takes the argmax of its masked Q-values.
        Without it, a policy samples among the valid actions (DQN still takes its argmax: it has no
        action distribution).
        """
        del state, episode_start
        mask = np.asarray(observation["action_mask"], dtype=bool)
        if self.deferral == NEW_FIT:
            mask = without_stranding_deferral(mask, self.env.unwrapped.current_candidates())  # type: ignore[attr-defined]
        n = len(mask) - 1
        model_nodes = self._model_nodes()
        if n < model_nodes:  # a model trained on padded fleets, still in training (a loaded one is rebuilt for n)
            observation, mask = padded_observation(observation, model_nodes), padded_mask(mask, model_nodes)
        action = self._model_action(observation, mask, deterministic)
        return np.asarray(own_action(action, n, max(n, model_nodes)), dtype=np.int64).reshape(()), None

    def _model_nodes(self) -> int:
        """The fleet size of the model's observation space (0 for a space without node rows)."""
        space = self.model.observation_space
        shape = space["nodes"].shape if isinstance(space, gym.spaces.Dict) and "nodes" in space.spaces else None
        return int(shape[0]) if shape else 0

    def _model_action(self, observation: dict[str, np.ndarray], mask: np.ndarray, deterministic: bool) -> int:
        """:meth:`predict`'s action on an observation of the model's own space, ``mask`` its valid actions."""
        if self.algorithm.masked and not deterministic:
            action, _ = self.model.predict(observation, action_masks=mask, deterministic=False)
            return int(action)
        import torch

        obs_tensor, _ = self.model.policy.obs_to_tensor(observation)
        with torch.no_grad():
            if self.algorithm.value_based:
                q_values = self.model.q_net(obs_tensor)[0].cpu().numpy()
                return int(np.argmax(np.where(mask, q_values, -np.inf)))
            masks = {"action_masks": mask} if self.algorithm.masked else {}
            probabilities = self.model.policy.get_distribution(obs_tensor, **masks).distribution.probs[0].cpu().numpy()
        probabilities = np.where(mask, probabilities, 0.0)
        if deterministic:
            return place_or_defer(probabilities)
        return int(torch.multinomial(torch.as_tensor(probabilities), 1))


def without_stranding_deferral(mask: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """``mask`` with deferral off when the job fits now on every node it could ever run on.

    Under ``new-fit`` such a deferral is never asked again (no node can come to fit that does
    not fit already); the job would wait, unasked, until its TTL or the horizon.

    Args:
        mask: ``(N + 1,)`` bool, the env's action mask (the last entry: defer).
        candidates: ``(N,)`` bool, the nodes the job could ever run on
            (:meth:`aco_env.twin_env.TwinEnv.current_candidates`).

    Returns:
        ``mask`` itself when deferral stays, else a copy with its last entry False.

    >>> without_stranding_deferral(np.array([True, False, True]), np.array([True, False])).tolist()
    [True, False, False]
    >>> without_stranding_deferral(np.array([True, False, True]), np.array([True, True])).tolist()
    [True, False, True]
    """
    if not mask[-1] or not mask[:-1].any() or not mask[:-1][candidates].all():
        return mask
    guarded = mask.copy()
    guarded[-1] = False
    return guarded
