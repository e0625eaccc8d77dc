"""The permutation-equivariant policy: renaming nodes permutes its scores, and its weights run on any fleet size."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from aco_env import ClusterSchedulingEnv
from aco_env.observation import NODE_FEATURES
from aco_env.vector_env import BatchedClusterEnv
from agents.sb3_agent import ModelFileError, load_sb3_agent
from agents.set_policy import JOB_NODE_FEATURES, SetPolicy, job_node_features
from digital_twin import JobSpec, NodeSpec
from tests.train_helpers import TINY
from training.evaluation.rollout import play_episode
from training.learning.config import TrainConfig
from training.learning.train import train


def _model(env: gym.Env, seed: int = 0) -> MaskablePPO:
    return MaskablePPO(SetPolicy, env, n_steps=64, batch_size=32, seed=seed, device="cpu")


def _permuted(obs: dict[str, np.ndarray], order: np.ndarray) -> dict[str, np.ndarray]:
    """The same decision with the nodes listed in ``order`` (defer stays last)."""
    out = dict(obs)
    out["nodes"], out["history"] = obs["nodes"][order], obs["history"][order]
    out["action_mask"] = np.concatenate([obs["action_mask"][:-1][order], obs["action_mask"][-1:]])
    return out


def test_set_policy__permuting_the_nodes_permutes_the_logits_and_keeps_defer_and_value() -> None:
    """Node i's logit moves with node i; the defer logit and the value do not change (random weights, 10 states)."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    model = _model(env)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=3)
    for _ in range(10):
        order = rng.permutation(env.n_nodes)
        tensors = [model.policy.obs_to_tensor(o)[0] for o in (obs, _permuted(obs, order))]
        with torch.no_grad():
            logits = [model.policy.mlp_extractor.forward_actor(t)[0] for t in tensors]
            values = [model.policy.predict_values(t)[0] for t in tensors]
        torch.testing.assert_close(logits[1][:-1], logits[0][:-1][order], rtol=0, atol=1e-5)
        torch.testing.assert_close(logits[1][-1], logits[0][-1], rtol=0, atol=1e-5)
        torch.testing.assert_close(values[1], values[0], rtol=0, atol=1e-5)
        valid = np.flatnonzero(obs["action_mask"])
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(valid)))
        if terminated or truncated:
            obs, _ = env.reset(seed=4)


def test_set_policy__a_padded_fleet_scores_as_its_own() -> None:
    """A 3-node env padded to 5 in a batch: its nodes' logits, defer logit and value are its own observation's."""
    venv = BatchedClusterEnv(["toy3", "fleet5-synthetic"], 2)
    env = ClusterSchedulingEnv("fleet5-synthetic")
    model = MaskablePPO(SetPolicy, env, seed=0, device="cpu", policy_kwargs={"job_node_features": True})
    heads = model.policy.mlp_extractor
    obs, _ = venv.reset(seed=5)
    rng = np.random.default_rng(5)
    for _ in range(10):
        batch = {key: torch.as_tensor(value) for key, value in obs.items()}
        own = {key: torch.as_tensor(value)[None] for key, value in venv.env_observation(0, obs).items()}
        with torch.no_grad():
            (padded_logits, padded_latent), (own_logits, own_latent) = heads(batch), heads(own)
        torch.testing.assert_close(padded_logits[0, :3], own_logits[0, :3], rtol=0, atol=1e-5)
        torch.testing.assert_close(padded_logits[0, -1], own_logits[0, -1], rtol=0, atol=1e-5)
        torch.testing.assert_close(padded_latent[0], own_latent[0], rtol=0, atol=1e-5)
        obs, *_ = venv.step(np.array([int(rng.choice(np.flatnonzero(mask))) for mask in obs["action_mask"]]))


def test_set_policy__has_no_parameter_that_depends_on_the_fleet_size() -> None:
    """The same parameter shapes for 5 and 20 nodes: the state dict of one loads into the other."""
    small = _model(ClusterSchedulingEnv("fleet5-synthetic"))
    large = _model(ClusterSchedulingEnv("fleet20-synthetic"), seed=1)
    large.policy.load_state_dict(small.policy.state_dict())
    for name, tensor in large.policy.state_dict().items():
        torch.testing.assert_close(tensor, small.policy.state_dict()[name])


@pytest.mark.training
def test_set_policy__weights_trained_on_5_nodes_play_a_20_node_fleet(tmp_path: Path) -> None:
    """A saved set-policy model evaluated on another fleet size: valid actions only, the episode completes."""
    run_dir = train(TrainConfig(logdir=tmp_path, **TINY))
    env = ClusterSchedulingEnv("fleet20-synthetic", invalid_action="raise")
    agent = load_sb3_agent(f"maskable-ppo:{run_dir / 'model.zip'}", env)
    assert agent.model.observation_space == env.observation_space
    for deterministic in (True, False):
        result = play_episode(env, agent, seed=0, deterministic=deterministic)
        assert result.metrics["invalid_actions"] == 0
        assert result.metrics["decisions"] > 0


@pytest.mark.training
def test_mlp_policy__on_another_fleet_size_is_a_clear_error(tmp_path: Path) -> None:
    """A flat policy cannot run on another fleet: the error names both observation shapes and --policy set."""
    run_dir = train(TrainConfig(logdir=tmp_path, policy="mlp", **TINY))
    env = ClusterSchedulingEnv("fleet20-synthetic")
    f = len(NODE_FEATURES)
    with pytest.raises(ModelFileError, match=rf"nodes \(5, {f}\).*nodes \(20, {f}\).*--policy set"):
        load_sb3_agent(f"maskable-ppo:{run_dir / 'model.zip'}", env)


class _OlderNodeColumns(gym.ObservationWrapper):
    """The env with its last three node columns dropped: an observation version with fewer node features."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        nodes = env.observation_space["nodes"]
        spaces = dict(env.observation_space.spaces)
        spaces["nodes"] = gym.spaces.Box(nodes.low[:, :-3], nodes.high[:, :-3], dtype=np.float32)
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, observation: dict) -> dict:
        return {**observation, "nodes": observation["nodes"][:, :-3]}


@pytest.mark.training
def test_set_policy__of_another_observation_version_is_a_clear_error(tmp_path: Path) -> None:
    """A model whose node features are not the env's (another observation version) is refused, naming both counts."""
    run_dir = train(TrainConfig(logdir=tmp_path, **TINY))
    env = _OlderNodeColumns(ClusterSchedulingEnv("fleet20-synthetic"))
    f = len(NODE_FEATURES)
    message = rf"trained on observations with {f} node.*have {f - 3} node.*Version History"
    with pytest.raises(ModelFileError, match=message):
        load_sb3_agent(f"maskable-ppo:{run_dir / 'model.zip'}", env)


def test_set_policy__is_the_default_for_maskable_ppo_and_refused_for_unmasked_algorithms() -> None:
    assert TrainConfig().policy_kind == "set"
    assert TrainConfig(algo="ppo").policy_kind == "mlp"
    with pytest.raises(ValueError, match="policy set needs a MaskablePPO algorithm"):
        TrainConfig(algo="dqn", policy="set")


MIXED_GPU_FLEET = """\
schema_version: 1
name: mixed-gpus
description: Nodes of 0, 1, 2 and 8 GPUs whose price per GPU and per core differ from their price per node.
seed: 0
horizon_s: 7200
fleet:
  nodes:
    - {node_id: c, arch: x86_64, instance: on-demand, cpu_cores: 32, mem_gb: 128, price_per_hour_usd: 0.48}
    - {node_id: g1, arch: gpu-node, instance: on-demand, cpu_cores: 8, mem_gb: 64, price_per_hour_usd: 0.6,
       gpu_count: 1, gpu_model: P100, gpu_vram_gb: 16}
    - {node_id: g2, arch: gpu-node, instance: on-demand, cpu_cores: 64, mem_gb: 256, price_per_hour_usd: 1.5,
       gpu_count: 2, gpu_model: T4, gpu_vram_gb: 16}
    - {node_id: g8, arch: gpu-node, instance: on-demand, cpu_cores: 96, mem_gb: 512, price_per_hour_usd: 3.6,
       gpu_count: 8, gpu_model: G2, gpu_vram_gb: 16}
telemetry: {reader: constant, cpu_pct: 0, mem_pct: 0, tick_s: 600}
workload:
  source: jobs
  jobs:
    - {job_id: a, arrival_s: 0, duration_s: 600, workload: batch, cpu_cores: 4, mem_gb: 8, gpu_count: 1}
    - {job_id: b, arrival_s: 0, duration_s: 600, workload: batch, cpu_cores: 4, mem_gb: 8}
    - {job_id: c, arrival_s: 60, duration_s: 600, workload: batch, cpu_cores: 2, mem_gb: 8, gpu_count: 2}
    - {job_id: d, arrival_s: 60, duration_s: 600, workload: batch, cpu_cores: 30, mem_gb: 8}
"""


def _charged_share(job: JobSpec, node: NodeSpec) -> float:
    """The share of ``node``'s price the twin charges ``job`` (inf: a GPU job on a node without GPUs)."""
    if job.gpu_count:
        return job.gpu_count / node.gpu_count if node.gpu_count else np.inf
    return job.cpu_cores / node.cpu_cores


def test_job_node_features__the_cost_is_the_share_the_twin_charges(tmp_path: Path) -> None:
    """cost_rate = price x (GPU share of a GPU job, cpu share otherwise) / the dearest price; 0 excess on the cheapest.

    Recomputed from the cluster view's specs at every decision of an episode on nodes of 1, 2 and 8
    GPUs, where the cheapest node, the cheapest GPU and the cheapest core are three different nodes.
    """
    path = tmp_path / "mixed-gpus.yaml"
    path.write_text(MIXED_GPU_FLEET)
    env = ClusterSchedulingEnv(str(path))
    obs, _ = env.reset(seed=0)
    fleet = env.cluster_view().fleet
    price = np.array([n.price_per_hour_usd for n in fleet])
    gpu_jobs = 0
    while env.cluster_view().job is not None:
        job = env.cluster_view().job
        valid = obs["action_mask"][:-1].astype(bool)
        expected = price * np.array([_charged_share(job, node) for node in fleet]) / price.max()
        tensors = {key: torch.as_tensor(value)[None] for key, value in obs.items()}
        features = job_node_features(tensors["nodes"], tensors["job"], tensors["action_mask"][:, :-1])[0].numpy()
        columns = dict(zip(JOB_NODE_FEATURES, features.T, strict=True))
        np.testing.assert_allclose(columns["cost_rate"][valid], expected[valid], rtol=1e-6)
        np.testing.assert_allclose(
            columns["cost_vs_cheapest"][valid], expected[valid] / expected[valid].min() - 1, rtol=1e-5, atol=1e-6
        )
        gpu_jobs += job.gpu_count > 0
        obs, *_ = env.step(int(np.flatnonzero(valid)[np.argmin(expected[valid])]))
    assert gpu_jobs == 2
