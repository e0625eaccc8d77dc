"""A permutation-equivariant actor-critic for MaskablePPO: one shared network scores every node.

The fleet is a set: renaming the nodes should permute the action probabilities and change
nothing else, and a policy trained on 5 nodes should run on 32 or 500. SB3's default
``MultiInputPolicy`` flattens the observation into one vector, so its weights fix N and tie
each node's meaning to its position. :class:`SetPolicy` instead:

* embeds each node from its own row: ``obs["nodes"][i]`` (``len(NODE_FEATURES)`` columns), ``obs["history"][i]`` (W),
  whether the current job fits there (``obs["action_mask"][i]``) and, with
  ``job_node_features``, what placing the current job there would do to it
  (:func:`job_node_features`: its share of the node's cores and GPUs, the node's utilisation and
  free cores after it, what the charged share costs, absolutely and against the cheapest valid
  node), by one shared MLP -> ``h_i``;
* embeds the decision's context: the job and the clock, and the queue behind it as the masked
  mean of a shared MLP over its rows -> ``c``;
* pools the fleet: the mean and the max of ``h_i`` over the nodes -> ``g`` (over the real nodes of a
  padded observation: a batch of fleets of several sizes, :class:`aco_env.vector_env.BatchedClusterEnv`,
  pads the smaller with rows of zeros, and a real node's ``cpu_rel`` is > 0);
* scores node ``i`` by a shared MLP of ``[h_i, c, g]`` and the defer action by an MLP of
  ``[c, g]``; the value by an MLP of ``[c, g]``.

No parameter depends on N (nor on the queue window K; only on the per-row feature counts
and the history length W), so the saved weights load into an env of another fleet size:
``MaskablePPO.load(path, custom_objects={"observation_space": ..., "action_space": ...})``
(:func:`agents.sb3_agent.load_sb3_agent` does this when the spaces differ). Permuting the
nodes of an observation permutes the node logits the same way (a test checks it).

Inputs are passed through ``symlog(x) = sign(x) log(1 + |x|)``: the counts and the job's
duration in hours reach 1000 while the other features lie in [0, 1] or [-24, 24].

Torch and sb3-contrib are imported here; ``import agents`` does not import this module.
"""

from __future__ import annotations

from functools import partial
from itertools import pairwise
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import Schedule
from torch import nn
from torch.nn import functional as F  # noqa: N812  (torch's own alias)

from aco_env.observation import JOB_FEATURES, NODE_FEATURES

__all__ = ["ObservationPassThrough", "SetHeads", "SetPolicy"]

DEFAULT_WIDTH = 64
"""Width of every embedding and hidden layer unless ``net_arch`` says otherwise."""
JOB_NODE_FEATURES = ("cpu_share", "utilization_after", "free_cpu_after", "gpu_share", "cost_rate", "cost_vs_cheapest")
"""What placing the current job on a node would do there (:func:`job_node_features`), in this order."""
_NODE = {name: index for index, name in enumerate(NODE_FEATURES)}
_JOB = {name: index for index, name in enumerate(JOB_FEATURES)}
_NO_SHARE = 1e-3
"""The smallest node size (``cpu_rel``, ``gpu_rel``) a share divides by: on a node without GPUs a
GPU job's ``gpu_share`` is 1,000 x its ``gpu_rel``, above the 1 that no node it fits on exceeds."""


def job_node_features(nodes: torch.Tensor, job: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """What placing the job on each node would do there: ``(B, N, len(JOB_NODE_FEATURES))``, in its order.

    * ``cpu_share``: the job's cores over the node's (its ``cpu_rel`` over the node's ``cpu_rel``; > 1
      where it cannot fit);
    * ``utilization_after``: the node's ``utilization`` plus that share (above the SLA threshold, its
      latency-critical jobs pay at the next tick);
    * ``free_cpu_after``: the node's free cpu share less that share (0: a tight fit; < 0: no fit);
    * ``gpu_share``: the job's GPUs over the node's (0 for a job without GPUs);
    * ``cost_rate``: the node's relative price times the share the twin charges (``gpu_share`` for a
      GPU job, ``cpu_share`` otherwise: :func:`digital_twin.sim.event_handlers.job_rate_usd_per_s`),
      so what the job's hour there costs, relative to the fleet's dearest node-hour;
    * ``cost_vs_cheapest``: that rate over the lowest rate among the valid nodes, less 1 (0 on the
      cheapest valid node; a relative excess that does not depend on the fleet's price range: on
      a fleet whose dearest node costs 50 x the cheapest, ``cost_rate`` lies near 0 for most nodes).

    Each is an exact function of the observation: products and ratios of a job column and a node
    column, which the node embedding (one node's row) and the score (sums of embeddings) can
    otherwise only approximate, and a minimum over the fleet, which they cannot compute.

    Args:
        nodes: ``(B, N, len(NODE_FEATURES))``.
        job: ``(B, len(JOB_FEATURES))``.
        valid: ``(B, N)``, nonzero where the job fits (the action mask without its defer entry); with
            no valid node ``cost_vs_cheapest`` is ``cost_rate / 1e-6 - 1`` (finite; no node is chosen).
    """
    job_cores = job[:, None, _JOB["cpu_rel"]]  # (B, 1)
    cpu_share = job_cores / nodes[..., _NODE["cpu_rel"]].clamp(min=_NO_SHARE)  # (B, N)
    utilization_after = nodes[..., _NODE["utilization"]] + cpu_share
    free_after = nodes[..., _NODE["free_cpu_frac"]] - cpu_share
    job_gpus = job[:, None, _JOB["gpu_rel"]]  # (B, 1)
    gpu_share = job_gpus / nodes[..., _NODE["gpu_rel"]].clamp(min=_NO_SHARE)
    cost_rate = nodes[..., _NODE["price_rel"]] * torch.where(job_gpus > 0, gpu_share, cpu_share)
    cheapest = torch.where(valid > 0, cost_rate, torch.inf).amin(1, keepdim=True)  # (B, 1)
    cheapest = torch.where(torch.isfinite(cheapest), cheapest, 0.0).clamp(min=1e-6)
    cost_vs_cheapest = cost_rate / cheapest - 1.0
    return torch.stack([cpu_share, utilization_after, free_after, gpu_share, cost_rate, cost_vs_cheapest], dim=-1)


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * log(1 + |x|)``: the identity near 0, logarithmic for large counts."""
    return torch.sign(x) * torch.log1p(torch.abs(x))


def _fleet_pools(h: torch.Tensor, present: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean and the max of ``h`` ``(B, N, width)`` over the nodes ``present`` ``(B, N)`` marks, each ``(B, width)``.

    Without padding (every node present) these are ``h.mean(1)`` and ``h.max(1)`` themselves, so
    that a model plays exactly as it did before padded batches existed; each observation has at
    least one node.
    """
    if bool(present.all()):
        return h.mean(1), h.max(1).values
    weight = present.to(h.dtype)[..., None]  # (B, N, 1)
    mean = (h * weight).sum(1) / weight.sum(1)
    return mean, h.masked_fill(~present[..., None], -torch.inf).max(1).values


def mlp(sizes: list[int], activation: type[nn.Module]) -> nn.Sequential:
    """Linear layers of ``sizes`` with ``activation`` between them (none after the last)."""
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(pairwise(sizes)):
        layers.append(nn.Linear(n_in, n_out))
        if i < len(sizes) - 2:
            layers.append(activation())
    return nn.Sequential(*layers)


class ObservationPassThrough(BaseFeaturesExtractor):
    """Hands the (preprocessed) observation dict to :class:`SetHeads` unchanged.

    ``features_dim`` is a formality of SB3's base class: the heads read the dict's keys.
    """

    def __init__(self, observation_space: spaces.Dict) -> None:
        super().__init__(observation_space, features_dim=1)

    def forward(self, observations: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The observation dict itself."""
        return observations


class SetHeads(nn.Module):
    """The shared networks: node logits ``(B, N + 1)`` (defer last) and a value latent ``(B, width)``.

    Args:
        node_features: Columns of ``obs["nodes"]`` (``len(NODE_FEATURES)``).
        history_ticks: W, columns of ``obs["history"]``.
        job_features: Columns of ``obs["job"]`` and of each ``obs["queue"]`` row (``len(JOB_FEATURES)``).
        clock_features: Entries of ``obs["clock"]`` (4).
        width: Embedding and hidden width.
        activation: Activation class between layers.
        with_job_node_features: Each node's row also gets :func:`job_node_features` (the
            observation's columns must then be :data:`aco_env.observation.NODE_FEATURES` and
            :data:`~aco_env.observation.JOB_FEATURES`).
    """

    def __init__(
        self,
        node_features: int,
        history_ticks: int,
        job_features: int,
        clock_features: int,
        width: int,
        activation: type[nn.Module],
        with_job_node_features: bool = False,
    ) -> None:
        super().__init__()
        self.with_job_node_features = with_job_node_features
        pair = len(JOB_NODE_FEATURES) if with_job_node_features else 0
        self.node_embed = mlp([node_features + history_ticks + 1 + pair, width, width], activation)
        self.queue_embed = mlp([job_features, width, width], activation)
        self.context_embed = mlp([job_features + clock_features + width + 1, width, width], activation)
        self.node_score = mlp([4 * width, width, 1], activation)
        self.defer_score = mlp([3 * width, width, 1], activation)
        self.value_trunk = mlp([3 * width, width, width], activation)
        self.activation = activation()
        self.latent_dim_pi = -1  # N + 1: set per observation; SB3 reads it only in _build, which SetPolicy replaces
        self.latent_dim_vf = width

    def embed(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-node embeddings ``(B, N, width)`` and the pooled context ``(B, 3 * width)`` = [c, mean h, max h]."""
        nodes, mask = obs["nodes"], obs["action_mask"]
        n = nodes.shape[1]
        columns = [symlog(nodes), obs["history"], mask[:, :n, None]]
        if self.with_job_node_features:
            columns.append(symlog(job_node_features(nodes, obs["job"], mask[:, :n])))
        node_in = torch.cat(columns, dim=-1)
        h = self.activation(self.node_embed(node_in))  # (B, N, width)
        queue_mask = obs["queue_mask"]  # (B, K)
        queue_rows = queue_mask.shape[1]
        if queue_rows:
            rows = self.activation(self.queue_embed(symlog(obs["queue"])))  # (B, K, width)
            queued = (rows * queue_mask[..., None]).sum(1) / queue_mask.sum(1, keepdim=True).clamp(min=1.0)
            fill = queue_mask.mean(1, keepdim=True)
        else:  # queue_window = 0
            queued = h.new_zeros(h.shape[0], h.shape[2])
            fill = h.new_zeros(h.shape[0], 1)
        context_in = torch.cat([symlog(obs["job"]), obs["clock"], queued, fill], dim=-1)
        context = self.activation(self.context_embed(context_in))  # (B, width)
        pooled = torch.cat([context, *_fleet_pools(h, nodes[..., _NODE["cpu_rel"]] > 0)], dim=-1)  # (B, 3 width)
        return h, pooled

    def forward(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """The action logits ``(B, N + 1)`` and the value latent ``(B, width)``."""
        h, pooled = self.embed(obs)
        return self._logits(h, pooled), self.activation(self.value_trunk(pooled))

    def forward_actor(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The action logits ``(B, N + 1)``, defer last."""
        h, pooled = self.embed(obs)
        return self._logits(h, pooled)

    def forward_critic(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The value latent ``(B, width)``."""
        _, pooled = self.embed(obs)
        return self.activation(self.value_trunk(pooled))

    def _logits(self, h: torch.Tensor, pooled: torch.Tensor) -> torch.Tensor:
        """Node ``i`` scored from ``[h_i, c, mean h, max h]``, defer from ``[c, mean h, max h]``.

        The score's first layer is linear in its concatenated input, so it is applied as
        ``W_h h_i + (W_p pooled + b)``: the pooled part once per observation, not once per node
        (the same weights and the same function as on the concatenation, about a third of the work).
        """
        first: nn.Linear = self.node_score[0]  # type: ignore[assignment]  # mlp() starts with a Linear
        width = h.shape[-1]
        per_node = F.linear(h, first.weight[:, :width])  # (B, N, width)
        shared = F.linear(pooled, first.weight[:, width:], first.bias)  # (B, width)
        hidden = per_node + shared[:, None, :]
        node_logits = self.node_score[1:](hidden).squeeze(-1)  # (B, N)
        defer_logit = self.defer_score(pooled)  # (B, 1)
        return torch.cat([node_logits, defer_logit], dim=-1)


class SetPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic with :class:`SetHeads` in place of the flat MLP.

    Use it as ``MaskablePPO(SetPolicy, env)`` (``aco-env train --policy set``). ``net_arch``,
    when given as ``[width, ...]``, sets the width from its first entry (default
    :data:`DEFAULT_WIDTH`); ``activation_fn`` is SB3's (Tanh by default). The observation
    must be the env's dict (``nodes``, ``history``, ``job``, ``queue``, ``queue_mask``,
    ``clock``, ``action_mask``). ``job_node_features=True`` (``policy_kwargs``; what
    ``aco-env train`` builds) gives each node's embedding :func:`job_node_features`; models saved
    without it load and play as they were trained.
    """

    any_fleet_size = True
    """No parameter depends on N: :func:`agents.sb3_agent.load_sb3_agent` may load it for another fleet."""

    def __init__(
        self,
        observation_space: spaces.Dict,
        action_space: spaces.Discrete,
        lr_schedule: Schedule,
        job_node_features: bool = False,
        **kwargs: Any,
    ) -> None:
        self.job_node_features = job_node_features  # read by _build_mlp_extractor, which the base class calls
        kwargs.setdefault("features_extractor_class", ObservationPassThrough)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "job_node_features": self.job_node_features}

    def _build_mlp_extractor(self) -> None:
        space = self.observation_space
        assert isinstance(space, spaces.Dict), "SetPolicy needs the env's dict observation"
        arch = self.net_arch
        width = arch[0] if isinstance(arch, list) and arch else DEFAULT_WIDTH
        # SB3 types mlp_extractor as MlpExtractor; any module with its interface works.
        self.mlp_extractor = SetHeads(  # type: ignore[assignment]
            node_features=_columns(space, "nodes"),
            history_ticks=_columns(space, "history"),
            job_features=_columns(space, "job"),
            clock_features=_columns(space, "clock"),
            width=int(width),
            activation=self.activation_fn,
            with_job_node_features=self.job_node_features,
        ).to(self.device)

    def _build(self, lr_schedule: Schedule) -> None:
        """The heads, an identity action net (the heads give logits) and the value layer, then Adam."""
        self._build_mlp_extractor()
        heads: Any = self.mlp_extractor
        self.action_net = nn.Identity()
        self.value_net = nn.Linear(heads.latent_dim_vf, 1)
        if self.ortho_init:
            heads.apply(partial(self.init_weights, gain=np.sqrt(2)))
            for score in (heads.node_score, heads.defer_score):
                score[-1].apply(partial(self.init_weights, gain=0.01))  # near-uniform first policy
            self.value_net.apply(partial(self.init_weights, gain=1.0))
        self.optimizer = self.optimizer_class(
            self.parameters(),
            lr=lr_schedule(1),
            **self.optimizer_kwargs,  # type: ignore[call-arg]
        )


def _columns(space: spaces.Dict, key: str) -> int:
    """The last dimension of ``space[key]`` (the per-row feature count)."""
    box = space[key]
    assert box.shape is not None
    return int(box.shape[-1])
