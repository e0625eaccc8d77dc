"""Distributed training on RLlib: a short PPO run on a local Ray with two env runner processes.

One run (2 env runners x 2 sub-envs, 2 iterations of ~250 env steps, a 16-unit network) is shared
by the tests that need it; the masking tests build the module directly on the env's spaces (no Ray).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
pytestmark = [
    pytest.mark.xdist_group("rllib"),  # one worker starts the shared training run (make test: --dist loadgroup)
    pytest.mark.ray,
    pytest.mark.training,
]
torch = pytest.importorskip("torch")

import ray  # noqa: E402  (after the skips)

import scenarios  # noqa: E402
from aco_env import ClusterSchedulingEnv  # noqa: E402
from training.cli.main import main  # noqa: E402
from training.evaluation.rollout import play_episode  # noqa: E402
from training.scale.rllib.agent import AGENT_NAME, RLlibAgent, load_module  # noqa: E402
from training.scale.rllib.config import RLlibConfig  # noqa: E402
from training.scale.rllib.env import make_env, sub_env_seed  # noqa: E402
from training.scale.rllib.module import MASK_KEY, MaskedActorCritic, greedy_actions  # noqa: E402
from training.scale.rllib.ppo import METRICS_JSONL, SUMMARY_JSON, ppo_config, train_rllib  # noqa: E402

SEED = 7
RUN = RLlibConfig(
    iterations=2,
    env_runners=2,
    envs_per_env_runner=2,
    seed=SEED,
    train_batch_size=200,
    minibatch_size=64,
    num_epochs=1,
    hidden=(16,),
    eval_episodes=1,
    eval_agents=("first-fit",),
)


@pytest.fixture(scope="module")
def local_ray() -> Any:
    """A new local Ray for this module (never a cluster another test started), shut down at the end."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def run(local_ray: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The shared two-iteration run (train_rllib uses the Ray this module connected to)."""
    del local_ray
    out = tmp_path_factory.mktemp("rllib") / "run"
    return train_rllib(dataclasses.replace(RUN, out=out))


def observations(episodes: int = 2) -> list[dict[str, np.ndarray]]:
    """Real observations of the default scenario (random valid actions), the final one of each episode too."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    rng = np.random.default_rng(0)
    seen = []
    for seed in range(episodes):
        observation, _ = env.reset(seed=seed)
        while True:
            seen.append(observation)
            action = rng.choice(np.flatnonzero(observation[MASK_KEY]))
            observation, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                seen.append(observation)  # the episode is over: only defer is valid
                break
    return seen


def only_defer(observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The same state as if the job fitted on no node: every node masked, defer valid."""
    mask = np.zeros_like(observation[MASK_KEY])
    mask[-1] = 1.0
    return {**observation, MASK_KEY: mask}


def stacked(batch: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {key: np.stack([observation[key] for observation in batch]) for key in batch[0]}


@pytest.mark.subprocess
def test_train_rllib__returns_finite_metrics_and_writes_the_run_directory(run: Any) -> None:
    """Two iterations run; the metrics have the expected keys, all finite; the run directory is complete."""
    assert run.iterations == 2 and run.env_steps >= 2 * RUN.train_batch_size
    expected = {"rollout/ep_rew_mean", "rollout/ep_len_mean", "train/policy_loss", "train/value_loss",
                "train/entropy", "time/env_steps", "scheduling/objective_usd", "scheduling/invalid_action_rate"}
    assert expected <= set(run.metrics)
    assert all(math.isfinite(value) for value in run.metrics.values())
    assert run.metrics["scheduling/invalid_action_rate"] == 0.0  # masked: never an invalid action
    assert (run.checkpoint / "rllib_checkpoint.json").is_file()
    assert len((run.run_dir / METRICS_JSONL).read_text().splitlines()) == 2
    assert any((run.run_dir / "tb").glob("events.out.tfevents.*"))
    assert (run.run_dir / SUMMARY_JSON).is_file() and (run.run_dir / "eval" / "results.json").is_file()
    assert set(run.objectives()) == {AGENT_NAME, f"{AGENT_NAME}-sampled", "first-fit"}
    assert all(math.isfinite(value) for value in run.objectives().values())


@pytest.mark.subprocess
def test_env_runners__get_distinct_seeds_derived_from_the_config_seed(run: Any) -> None:
    """Sub-env i of env runner w was first reset with sub_env_seed(config seed, w, i): four distinct seeds."""
    assert run.env_seeds == {runner: [sub_env_seed(SEED, runner, i) for i in range(2)] for runner in (1, 2)}
    assert len({seed for seeds in run.env_seeds.values() for seed in seeds}) == 4


def test_sub_env_seed__same_inputs_same_seed_and_no_collisions() -> None:
    """Seeds are a pure function of (seed, runner, sub-env), distinct across runners, sub-envs and run seeds."""
    grid = [(seed, runner, vector) for seed in range(3) for runner in range(1, 9) for vector in range(4)]
    seeds = [sub_env_seed(*key) for key in grid]
    assert seeds == [sub_env_seed(*key) for key in grid]
    assert len(set(seeds)) == len(grid)  # unlike RLlib's seed + runner + sub-env, runner 1 env 1 != runner 2 env 0


def test_make_env__first_reset_uses_the_runner_seed_whatever_seed_is_given() -> None:
    """The wrapper replaces the first reset's seed by its runner seed; later resets continue its generator."""
    first = make_env({"scenario": "fleet5-synthetic"})
    first.runner_seed = 123  # what ClusterSchedulingCallbacks sets
    observation, _ = first.reset(seed=0)
    reference = ClusterSchedulingEnv("fleet5-synthetic")
    expected, _ = reference.reset(seed=123)
    assert first.seeded_with == 123
    np.testing.assert_array_equal(observation["job"], expected["job"])


@pytest.mark.parametrize("weights_seed", [0, 1, 2])
def test_masked_module__never_chooses_an_invalid_action(weights_seed: int) -> None:
    """Random weights, and weights that favour invalid actions: greedy and sampled actions are always valid."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    torch.manual_seed(weights_seed)
    module = MaskedActorCritic(observation_space=env.observation_space, action_space=env.action_space,
                               model_config={"hidden": [16]})
    seen = observations()
    batch = stacked(seen + [only_defer(observation) for observation in seen[::5]])
    masks = batch[MASK_KEY] > 0.5
    assert (masks[:, :-1].sum(axis=1) == 0).any()  # states where only defer is valid are in the batch
    last = module._pi[-1]
    with torch.no_grad():  # make every node far more attractive than defer, so only the mask keeps them out
        last.bias[:-1] += 1e6
    rows = np.arange(len(masks))
    assert masks[rows, greedy_actions(module, batch)].all()
    tensors = {key: torch.as_tensor(value) for key, value in batch.items()}
    logits = module.forward_exploration({"obs": tensors})["action_dist_inputs"]
    distribution = module.get_exploration_action_dist_cls().from_logits(logits)
    for _ in range(20):
        assert masks[rows, distribution.sample().numpy()].all()


def test_checkpoint__restores_the_same_greedy_actions(run: Any) -> None:
    """The algorithm restored from the checkpoint and the module read from it act alike, and replay the evaluation."""
    module = load_module(run.checkpoint)
    scenario = scenarios.load(RUN.scenario)
    algo = ppo_config(RUN, scenario).env_runners(num_env_runners=0).build_algo()  # no actors: the learner's state
    try:
        algo.restore_from_path(str(run.checkpoint))
        restored = algo.get_module()
    finally:
        algo.stop()
    batch = stacked(observations(episodes=1))
    np.testing.assert_array_equal(greedy_actions(module, batch), greedy_actions(restored, batch))
    tensors = {key: torch.as_tensor(value) for key, value in batch.items()}
    with torch.no_grad():  # the same weights, not only the same argmax
        torch.testing.assert_close(module.masked_logits(tensors), restored.masked_logits(tensors))
    env = ClusterSchedulingEnv("fleet5-synthetic")
    evaluated = run.evaluation.agents[AGENT_NAME].episodes[0]
    result = play_episode(env, RLlibAgent(module, env), seed=evaluated.seed)
    assert result.metrics["invalid_actions"] == 0
    assert result.metrics["objective_usd"] == pytest.approx(evaluated.metrics["objective_usd"])


def test_cli__refuses_a_run_directory_that_holds_a_run(run: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """`aco-env rllib --out` on an existing run is a usage error (exit 2) before Ray starts."""
    assert main(["rllib", "--out", str(run.run_dir), "--iterations", "1"]) == 2
    assert "already holds a run" in capsys.readouterr().err
