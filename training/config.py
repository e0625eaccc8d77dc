"""``TrainConfig``: the single source of the training options (the CLI is generated from it).

Each field has a type, a default and a docstring under it (CleanRL's ``Args`` style);
:func:`add_config_arguments` turns them into ``--kebab-case`` options with that help text.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.checks import count

ALGOS = ("maskable-ppo", "ppo", "dqn", "a2c", "bc")
MINIMUMS = {
    "timesteps": 0, "n_envs": 1, "n_steps": 1, "batch_size": 1, "n_epochs": 1, "bc_samples": 0, "bc_epochs": 1,
    "checkpoint_every": -1, "eval_episodes": 0,
}
"""The smallest value of each integer field (``--option`` rejects smaller ones as usage errors)."""
RESUME_OPTIONS = (
    "timesteps", "n_envs", "checkpoint_every", "resume", "eval_episodes", "eval_agents", "progress_bar", "device",
)
"""The fields a resumed run may take from its new command line; the others come from the run's config.json."""


@dataclass(frozen=True)
class TrainConfig:
    """How to train one agent; serialised as ``config.json`` in the run directory."""

    algo: str = "maskable-ppo"
    """Algorithm: maskable-ppo (sb3-contrib, uses the action mask), ppo, dqn, a2c (SB3; invalid
    actions are penalised), or bc (behaviour cloning on the one-step env's known-optimal labels, no RL)."""
    scenario: str = "fleet5-synthetic"
    """Bundled scenario name or path to a scenario YAML file."""
    timesteps: int = 100_000
    """Environment steps of RL training (ignored by bc); with --resume, the run's total (only the steps
    not yet done are trained)."""
    n_envs: int = 1
    """Parallel environments; SubprocVecEnv when > 1."""
    seed: int = 0
    """Seed of everything: the envs (seed + rank), the networks, the BC label sampling."""
    logdir: Path = Path("runs")
    """Runs go to LOGDIR/<scenario>__<algo>__<seed>__<time>/."""
    reward_scale: float = 10.0
    """Rewards are -objective (USD) x reward_scale during training (evaluation reports USD)."""
    learning_rate: float = 3e-4
    """Optimizer learning rate."""
    n_steps: int = 2048
    """Rollout length per env (PPO, MaskablePPO, A2C)."""
    batch_size: int = 256
    """Minibatch size (PPO, MaskablePPO, DQN, BC)."""
    n_epochs: int = 4
    """Optimisation epochs per rollout (PPO, MaskablePPO)."""
    gamma: float = 1.0
    """Discount factor: 1 because the objective is an undiscounted episode sum (episodes are finite)."""
    gae_lambda: float = 1.0
    """GAE lambda (PPO, MaskablePPO, A2C). 1 = Monte-Carlo returns: penalties (a rejection after the
    queue TTL, an SLA violation at the next tick) arrive many decisions after the action that caused
    them, and with 0.95 MaskablePPO learned to defer every job (see docs/results.md)."""
    ent_coef: float = 0.01
    """Entropy bonus (PPO, MaskablePPO, A2C)."""
    net_arch: tuple[int, ...] = (128, 128)
    """Hidden layer sizes of the policy and value networks."""
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    """Extra keyword arguments for the SB3 algorithm's constructor, e.g. --hp clip_range=0.1."""
    bc_samples: int = 0
    """Known-optimal labels from aco_env/Placement-v0 to pretrain the policy with before RL (0 = off);
    the bc algorithm uses 4000 when this is 0."""
    bc_epochs: int = 20
    """Passes over the BC labels."""
    checkpoint_every: int = 0
    """Save RUN/checkpoints/model_<steps>_steps.zip each time the step count passes a multiple of this;
    0 = auto, about every 10 % of the run (ceil(timesteps / 10) steps); -1 = never (Ctrl-C still saves)."""
    resume: Path | None = None
    """Continue a run: its directory (or a .zip in it). It trains on from its most trained save (model.zip or a
    checkpoint) in the same directory, TensorBoard steps continuing, up to --timesteps in all (by default the
    run's own). Only timesteps, n_envs, checkpoint_every, eval_*, progress_bar and device may differ from the
    run's config.json; the other options come from it."""
    eval_episodes: int = 5
    """Episodes of the final evaluation (paired seeds 10_000 + seed ...)."""
    eval_agents: tuple[str, ...] = ("first-fit", "cheapest", "aco", "oracle")
    """Baselines evaluated beside the trained model."""
    progress_bar: bool = True
    """Show progress: a bar on a terminal, otherwise one summary line per stage (BC labels, training, evaluation)."""
    device: str = "cpu"
    """Torch device."""

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise ValueError(f"algo must be one of {ALGOS}, got {self.algo!r}")
        for name, minimum in MINIMUMS.items():
            if getattr(self, name) < minimum:
                raise ValueError(f"{name} must be >= {minimum}, got {getattr(self, name)}")

    @property
    def checkpoint_interval(self) -> int:
        """Steps between checkpoints: ``checkpoint_every``, ceil(timesteps / 10) for 0 (auto), 0 for -1 (never).

        >>> TrainConfig(timesteps=20_000).checkpoint_interval, TrainConfig(timesteps=5).checkpoint_interval
        (2000, 1)
        """
        if self.checkpoint_every == 0:
            return max(-(-self.timesteps // 10), 1)
        return max(self.checkpoint_every, 0)

    @classmethod
    def from_json(cls, text: str) -> TrainConfig:
        """The config that :meth:`to_json` wrote; keys that are not fields (any more) are ignored.

        Raises:
            ValueError: Not JSON, not an object, or a value TrainConfig rejects.
        """
        document = json.loads(text)
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        known = {f.name for f in dataclasses.fields(cls)}
        values = {key: value for key, value in document.items() if key in known}
        for name in ("logdir", "resume"):
            if values.get(name) is not None:
                values[name] = Path(values[name])
        for name in ("net_arch", "eval_agents"):
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values)

    def continued(self, session: TrainConfig) -> TrainConfig:
        """This (a run's stored config) with the :data:`RESUME_OPTIONS` of ``session``, a new command line."""
        return dataclasses.replace(self, **{name: getattr(session, name) for name in RESUME_OPTIONS})

    def to_json(self) -> str:
        """The config as JSON (paths as strings)."""
        return json.dumps(dataclasses.asdict(self), indent=1, default=str)

    def as_markdown_table(self) -> str:
        """The config as a Markdown table (TensorBoard's text plugin renders it)."""
        rows = ["| option | value |", "|---|---|"]
        rows += [f"| {k} | {v} |" for k, v in dataclasses.asdict(self).items()]
        return "\n".join(rows)


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass, read from its source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]  # a ClassDef
    docs = {}
    for node, following in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(following, ast.Expr):
            value = following.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docs[node.target.id] = " ".join(value.value.split())
    return docs


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One ``--option`` per TrainConfig field, with the field's docstring as help."""
    docs = field_docs(TrainConfig)
    defaults = TrainConfig()
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        default = getattr(defaults, f.name)
        help_text = f"{docs.get(f.name, '')} (default: {default})".replace("%", "%%")
        if f.name == "hyperparameters":
            parser.add_argument("--hp", dest=f.name, action="append", default=[], metavar="KEY=VALUE", help=help_text,
                                type=parse_hp)
        elif isinstance(default, bool):
            parser.add_argument(
                flag, dest=f.name, action=argparse.BooleanOptionalAction, default=default, help=help_text
            )
        elif isinstance(default, tuple):
            parser.add_argument(
                flag,
                dest=f.name,
                default=default,
                help=help_text + " (comma-separated)",
                type=_comma_separated(type(default[0]) if default else str),
            )
        elif f.name == "algo":
            parser.add_argument(flag, dest=f.name, default=default, choices=ALGOS, help=help_text)
        elif f.name == "resume":
            parser.add_argument(flag, dest=f.name, type=Path, default=None, help=help_text)
        elif f.name in MINIMUMS:
            parser.add_argument(flag, dest=f.name, type=count(MINIMUMS[f.name]), default=default, help=help_text)
        else:
            parser.add_argument(flag, dest=f.name, type=type(default), default=default, help=help_text)


def _comma_separated(kind: type) -> Callable[[str], tuple]:
    """An argparse ``type`` turning ``"a,b"`` into ``(kind("a"), kind("b"))``."""
    return lambda text: tuple(kind(item) for item in text.split(",") if item)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """A TrainConfig from parsed arguments (``--hp`` items are ``(key, value)`` pairs, see :func:`parse_hp`).

    Raises:
        ValueError: A value TrainConfig rejects (the options' types already rule out most).
    """
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)}
    values["hyperparameters"] = dict(values["hyperparameters"])
    return TrainConfig(**values)


def parse_hp(item: str) -> tuple[str, Any]:
    """An argparse ``type``: ``KEY=VALUE`` -> ``(KEY, VALUE)``, the value parsed as JSON when it is JSON.

    >>> parse_hp("clip_range=0.1"), parse_hp("policy=Mlp")
    (('clip_range', 0.1), ('policy', 'Mlp'))
    """
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. clip_range=0.1), got {item!r}")
    try:
        return key.strip(), json.loads(text)
    except json.JSONDecodeError:
        return key.strip(), text
