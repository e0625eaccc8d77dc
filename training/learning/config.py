"""``TrainConfig``: the single source of the training options (the CLI is generated from it).

Each field has a type, a default and a docstring under it (CleanRL's ``Args`` style);
simple-parsing (:func:`add_config_arguments`) turns them into ``--kebab-case`` options with that
docstring as help. Fields the command line treats specially (counts with a minimum,
comma-separated lists, ``--hp KEY=VALUE``) say so with the helpers of
:mod:`training.learning.config_options`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import simple_parsing

from aco_env.types import REWARD_SHAPINGS, UNSHAPED
from agents.algorithms import ALGORITHMS, algorithm_names, algorithms_help
from digital_twin import DEFERRALS, NEW_FIT, NEXT_EVENT
from training.learning.config_options import comma_separated, counted, key_values, minimum_of, optional_path

RESUME_OPTIONS = (
    "timesteps",
    "n_envs",
    "vec_env",
    "checkpoint_every",
    "resume",
    "eval_episodes",
    "eval_agents",
    "curve_every",
    "curve_episodes",
    "curve_baselines",
    "progress_bar",
    "device",
)
"""The fields a resumed run may take from its new command line; the others come from the run's config.json."""
DAGGER_DEFAULT_ITERATIONS = 6
"""DAgger iterations of the dagger algorithm when --dagger-iterations is 0."""
VEC_ENVS = ("batched", "subprocess")
"""The choices of ``--vec-env``."""
POLICIES = ("auto", "set", "mlp")
"""The choices of ``--policy``."""
CONFIG_DEST = "config"
"""Where :func:`add_config_arguments` puts the parsed :class:`TrainConfig` in the namespace."""


@dataclass(frozen=True)
class TrainConfig:
    """How to train one agent; serialised as ``config.json`` in the run directory."""

    algo: str = simple_parsing.field(
        default="maskable-ppo", choices=list(ALGORITHMS), help=f"Algorithm: {algorithms_help()}."
    )
    """The training algorithm (:data:`agents.algorithms.ALGORITHMS`; its --help line lists them)."""
    scenario: str = "fleet5-synthetic"
    """Bundled scenario name or path to a scenario YAML file: trained on, curves and the final evaluation."""
    train_scenarios: tuple[str, ...] = comma_separated((), str, metavar="NAME,...")
    """More scenarios to train on beside --scenario (a task distribution): training env r plays the r-th
    of (scenario, *train_scenarios), cycling, and DAgger's episodes cycle through them the same way. Fleets of
    several sizes need the set policy and the batched envs, which pad the smaller fleets to the largest
    (aco_env.vector_env)."""
    suite_group: str = simple_parsing.field(default="", choices=["", "train"])
    """Train on a group of the default benchmark suite's tasks (training/suite/suite-v2.yaml): train = its
    training group, the first task's scenario as --scenario and the others' as --train-scenarios (the held-out
    group is never trained on). Replaces --scenario and --train-scenarios, which are then not given."""
    random_start_hour: bool = simple_parsing.helpers.flag(default=False, negative_prefix="--no-")
    """Start every training and DAgger episode at a random hour of day (the clock features only; the twin never
    reads the hour), so that the policy does not learn its training scenarios' hours
    (:mod:`training.learning.random_start_hour`). aco-env run sets it."""
    timesteps: int = counted(100_000, minimum=0)
    """Environment steps of RL training (ignored by bc); with --resume, the run's total (only the steps
    not yet done are trained)."""
    n_envs: int = counted(1, minimum=1)
    """Environments collecting rollouts side by side (the policy acts on all of them in one batch)."""
    vec_env: str = simple_parsing.field(default="batched", choices=list(VEC_ENVS))
    """How the --n-envs environments run: batched (in this process, one after the other: the env's steps
    are cheaper than a process hop, and the policy's forward pass is batched across them), subprocess (a
    worker process each, for envs whose steps are slow)."""
    deferral: str = simple_parsing.field(default=NEW_FIT, choices=list(DEFERRALS))
    """When a job the policy defers is asked again (digital_twin/sim/deferral.py), in training and wherever the saved
    model plays (its config.json says so): new-fit = only once it fits on a node it did not fit on when deferred
    (a deferral means "wait for room elsewhere"; an episode has at most a few decisions per job), next-event =
    after every event (a policy that defers is asked again and again: on large fleets and long queues the
    decisions, and the time, grow without bound)."""
    seed: int = 0
    """Seed of everything: the envs (seed + rank), the networks, the BC label sampling."""
    logdir: Path = Path("runs")
    """Runs go to LOGDIR/<scenario>__<algo>__<seed>__<time>/."""
    reward_scale: float = 1.0
    """Rewards are -objective (USD) x reward_scale / the task's reference objective during training (evaluation
    reports USD)."""
    reward_reference: str = "first-fit"
    """Each task's rewards are divided by this registered agent's mean episode objective on 8 of the task's training
    seeds, so that every task's returns lie near -1 whatever its cost level (training/learning/reward_scales.py);
    empty = no division (rewards in USD x reward_scale)."""
    reward_shaping: str = simple_parsing.field(default=UNSHAPED, choices=list(REWARD_SHAPINGS))
    """none = each reward is the objective accrued since the last decision; committed-cost = a placement's
    reward also carries what its run is expected to cost (at full speed; evictions at the spot node's rate),
    given back as the job runs (potential-based: returns, and every policy's expected return, unchanged;
    aco_env.types.EnvConfig)."""
    learning_rate: float = 3e-4
    """Optimizer learning rate."""
    n_steps: int = counted(2048, minimum=1)
    """Rollout length per env (PPO, MaskablePPO, A2C)."""
    batch_size: int = counted(256, minimum=1)
    """Minibatch size (PPO, MaskablePPO, DQN, BC)."""
    n_epochs: int = counted(4, minimum=1)
    """Optimisation epochs per rollout (PPO, MaskablePPO)."""
    gamma: float = 1.0
    """Discount factor: 1 because the objective is an undiscounted episode sum (episodes are finite)."""
    gae_lambda: float = 0.95
    """GAE lambda (PPO, MaskablePPO, A2C): 0.95, SB3's default, chosen on validation seeds over 1 (Monte-Carlo
    returns), which it beat on the default scenario with a critic that fits (explained variance about 0.85
    against 0.5: docs/results.md). With rewards in raw USD the critic fitted nothing and 0.95 learned to defer
    every job; the per-task reward scale (--reward-reference) is what makes the bootstrapped targets usable."""
    ent_coef: float = 0.01
    """Entropy bonus (PPO, MaskablePPO, A2C)."""
    policy: str = simple_parsing.field(default="auto", choices=list(POLICIES))
    """The policy network: set (permutation-equivariant: one shared network scores each node, so the weights
    run on any fleet size; MaskablePPO algorithms only), mlp (SB3's MultiInputPolicy: the flat observation,
    one fleet size), auto = set for maskable-ppo, bc and dagger, mlp for the others."""
    net_arch: tuple[int, ...] = comma_separated((), int, metavar="N,N,...")
    """Hidden layer sizes, comma-separated; empty = the policy's default (mlp: 128,128 for the policy and the
    value networks; set: width 64, only the first size is used)."""
    hyperparameters: dict[str, Any] = key_values("--hp")  # noqa: RUF009  (returns a dataclasses.field)
    """Extra keyword arguments for the SB3 algorithm's constructor, e.g. --hp clip_range=0.1 (repeatable)."""
    init_from: Path | None = optional_path("MODEL.zip")  # noqa: RUF009  (returns a dataclasses.field)
    """Start from this saved model's network weights instead of random ones (fine-tuning: the same algorithm and
    policy; a set policy's weights fit any fleet size, so a model trained on 5 nodes starts a run on 50); imitation
    and RL then continue from them. Load only models you trust (a model zip is partly a pickle)."""
    bc_samples: int = counted(0, minimum=0)
    """Labelled states of aco_env/Placement-v6 to pretrain the policy with before RL (0 = off); a label is
    the action that is optimal given a cheapest-fit continuation with the true future. The bc algorithm
    uses 4000 when this is 0."""
    bc_dataset: Path | None = optional_path("FILE.npz")  # noqa: RUF009  (returns a dataclasses.field)
    """Pretrain the policy before RL by behaviour cloning on a planted dataset (aco-env export-planted: states
    of the run's scenario labelled by the planted expert) instead of --bc-samples placement labels; with the bc
    algorithm, the whole training."""
    bc_epochs: int = counted(20, minimum=1)
    """Passes over the BC labels."""
    dagger_iterations: int = counted(0, minimum=0)
    """Imitation of --dagger-expert before RL (0 = off): DAgger iterations, the first on the expert's own
    episodes, the next ones on the student's, every state labelled by the expert (maskable-ppo and
    dagger only). The dagger algorithm imitates only, 6 iterations when this is 0; aco-env run uses 6."""
    dagger_episodes: int = counted(16, minimum=1)
    """Episodes per DAgger iteration (about 57 decisions each on the default scenario)."""
    dagger_expert: str = "auto"
    """The agent DAgger imitates: a registered agent that can label any state the student visits, online
    (lookahead, aco, ...) or, on planted scenarios, planted (the planted schedule's action, else the cheapest
    valid node: a hindsight expert, fine for labelling training states, never for the evaluated policy);
    auto = planted on planted scenarios and lookahead elsewhere, per task."""
    curve_every: int = counted(0, minimum=-1)
    """Steps between learning-curve points (the policy on --curve-episodes validation seeds, beside the
    --curve-baselines, as eval/<agent>/objective_usd in TensorBoard); 0 = auto, a tenth of the run (11
    points with the starting one); -1 = no curve."""
    curve_episodes: int = counted(5, minimum=1)
    """Validation episodes per learning-curve point (the protocol's validation seeds 5000 + seed ...)."""
    curve_baselines: tuple[str, ...] = comma_separated(("aco", "first-fit"), str, metavar="NAME,...")
    """Agents drawn as reference lines on the learning curve (played once on the validation seeds)."""
    checkpoint_every: int = counted(0, minimum=-1)
    """Save RUN/checkpoints/model_<steps>_steps.zip each time the step count passes a multiple of this;
    0 = auto, about every tenth of the run (ceil(timesteps / 10) steps); -1 = never (Ctrl-C still saves)."""
    resume: Path | None = optional_path("RUN_DIR")  # noqa: RUF009  (returns a dataclasses.field)
    """Continue a run: its directory (or a .zip in it). It trains on from its most trained save (model.zip or a
    checkpoint) in the same directory, TensorBoard steps continuing, up to --timesteps in all (by default the
    run's own). Only timesteps, n_envs, checkpoint_every, eval_*, progress_bar and device may differ from the
    run's config.json; the other options come from it."""
    eval_episodes: int = counted(5, minimum=0)
    """Episodes of the final evaluation (the protocol's test seeds 100000 + seed ..., paired)."""
    eval_agents: tuple[str, ...] = comma_separated(("first-fit", "cheapest", "aco", "oracle"), str, metavar="NAME,...")
    """Baselines evaluated beside the trained model, comma-separated."""
    progress_bar: bool = simple_parsing.helpers.flag(default=True, negative_prefix="--no-")
    """Show progress: a bar on a terminal, otherwise one summary line per stage (BC labels, training, evaluation)."""
    device: str = "cpu"
    """Torch device."""

    def __post_init__(self) -> None:
        if self.algo not in ALGORITHMS:
            raise ValueError(f"algo must be one of {algorithm_names()}, got {self.algo!r}")
        if self.vec_env not in VEC_ENVS:
            raise ValueError(f"vec_env must be one of {', '.join(VEC_ENVS)}, got {self.vec_env!r}")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        if self.policy == "set" and not ALGORITHMS[self.algo].masked:
            raise ValueError(f"policy set needs a MaskablePPO algorithm (maskable-ppo, bc, dagger), not {self.algo}")
        for f in dataclasses.fields(self):
            minimum = minimum_of(f)
            if minimum is not None and getattr(self, f.name) < minimum:
                raise ValueError(f"{f.name} must be >= {minimum}, got {getattr(self, f.name)}")

    @property
    def checkpoint_interval(self) -> int:
        """Steps between checkpoints: ``checkpoint_every``, ceil(timesteps / 10) for 0 (auto), 0 for -1 (never).

        >>> TrainConfig(timesteps=20_000).checkpoint_interval, TrainConfig(timesteps=5).checkpoint_interval
        (2000, 1)
        """
        if self.checkpoint_every == 0:
            return max(-(-self.timesteps // 10), 1)
        return max(self.checkpoint_every, 0)

    @property
    def curve_interval(self) -> int:
        """Steps between learning-curve points: ``curve_every``, ceil(timesteps / 10) for 0, 0 (none) for -1."""
        if self.curve_every == 0:
            return max(-(-self.timesteps // 10), 1)
        return max(self.curve_every, 0)

    @property
    def dagger_rounds(self) -> int:
        """DAgger iterations a new run starts with: ``dagger_iterations`` for maskable-ppo, 6 for dagger when 0.

        >>> TrainConfig().dagger_rounds, TrainConfig(algo="dagger").dagger_rounds, TrainConfig(algo="bc").dagger_rounds
        (0, 6, 0)
        """
        if not ALGORITHMS[self.algo].masked or self.algo == "bc":
            return 0
        return self.dagger_iterations or (DAGGER_DEFAULT_ITERATIONS if self.algo == "dagger" else 0)

    @property
    def policy_kind(self) -> str:
        """``set`` or ``mlp``: :attr:`policy` with ``auto`` resolved by the algorithm.

        >>> TrainConfig().policy_kind, TrainConfig(algo="ppo").policy_kind
        ('set', 'mlp')
        """
        if self.policy != "auto":
            return self.policy
        return "set" if ALGORITHMS[self.algo].masked else "mlp"

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
        # runs made before these options: deferred under next-event, rewards in USD x reward_scale
        values.setdefault("deferral", NEXT_EVENT)
        values.setdefault("reward_reference", "")
        for name in ("logdir", "resume", "bc_dataset", "init_from"):
            if values.get(name) is not None:
                values[name] = Path(values[name])
        for name in ("net_arch", "eval_agents", "curve_baselines", "train_scenarios"):
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


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One ``--option`` per TrainConfig field, with the field's docstring as help (``--hp`` for hyperparameters).

    Raises:
        TypeError: ``parser`` is not simple-parsing's (build it with :func:`config_parser`).
    """
    if not isinstance(parser, simple_parsing.ArgumentParser):
        raise TypeError(f"the TrainConfig options need a parser made by config_parser, not {type(parser).__name__}")
    parser.add_arguments(TrainConfig, dest=CONFIG_DEST, default=TrainConfig())


def config_parser(**kwargs: Any) -> simple_parsing.ArgumentParser:
    """The parser class of ``aco-env train``: simple-parsing's, with ``--kebab-case`` options only.

    ``kwargs`` are :class:`argparse.ArgumentParser`'s (the CLI passes its prog, help and parents).
    """
    kwargs["formatter_class"] = simple_parsing.SimpleHelpFormatter  # adds each option's default
    return simple_parsing.ArgumentParser(add_option_string_dash_variants=simple_parsing.DashVariant.DASH, **kwargs)
