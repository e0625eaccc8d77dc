"""Where a saved model plays: under the deferral rule it was trained with, with torch on one thread in any process."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aco_env import ClusterSchedulingEnv
from agents import agent_deferral
from agents.sb3_agent import ModelFileError
from digital_twin import NEW_FIT, NEXT_EVENT
from training.execution.process_backend import ProcessBackend
from training.learning.config import TrainConfig


def _saved_model(folder: Path, config: dict[str, object] | None) -> Path:
    """An untrained set-policy MaskablePPO saved as ``folder/model.zip``, ``config`` as its config.json (None: none)."""
    MaskablePPO = pytest.importorskip("sb3_contrib", reason="SB3 comes with the train extra").MaskablePPO  # noqa: N806

    from agents.set_policy import SetPolicy

    folder.mkdir(parents=True, exist_ok=True)
    MaskablePPO(SetPolicy, ClusterSchedulingEnv("toy3"), n_steps=8, batch_size=8, device="cpu").save(
        folder / "model.zip"
    )
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    return folder / "model.zip"


def test_sb3_deferral__the_rule_of_its_training_config(tmp_path: Path) -> None:
    """A model plays under its config's deferral; without the key, or without a config, under next-event."""
    trained = _saved_model(tmp_path / "new", json.loads(TrainConfig(deferral=NEW_FIT).to_json()))
    older = _saved_model(tmp_path / "old", {"algo": "maskable-ppo"})
    bare = _saved_model(tmp_path / "bare", None)
    assert agent_deferral(f"sb3:{trained}") == NEW_FIT
    assert agent_deferral(f"sb3:{older}") == NEXT_EVENT
    assert agent_deferral(f"sb3:maskable-ppo:{bare}") == NEXT_EVENT


def test_sb3_deferral__an_unknown_rule_is_refused_naming_the_config(tmp_path: Path) -> None:
    """A config.json whose deferral is not a rule is refused with the file and the rules."""
    model = _saved_model(tmp_path / "run", {"algo": "maskable-ppo", "deferral": "whenever"})
    with pytest.raises(ModelFileError, match=r"config\.json: deferral 'whenever' is not one of next-event, new-fit"):
        agent_deferral(f"sb3:{model}")


def _threads_after_loading(model: str) -> int:
    """In this process: load ``model`` as an agent and report torch's intra-op thread count."""
    import torch

    from agents import make_agent

    make_agent(f"sb3:maskable-ppo:{model}", ClusterSchedulingEnv("toy3"))
    return int(torch.get_num_threads())


@pytest.mark.subprocess
def test_sb3_agent__one_torch_thread_in_a_worker_process(tmp_path: Path) -> None:
    """A spawned evaluation worker that loads a model runs torch on one thread (not one per core)."""
    model = _saved_model(tmp_path / "run", None)
    with ProcessBackend(workers=1) as backend:
        assert backend.map(_threads_after_loading, [str(model)]) == [1]


def _defer_logit_offset(agent: Any, offset: float) -> None:
    """Set the defer score's last bias (0 as built) to ``offset``: the real model, deferring that much more."""
    import torch

    with torch.no_grad():
        agent.model.policy.mlp_extractor.defer_score[-1].bias.fill_(offset)


def test_sb3_new_fit__never_defers_a_job_that_fits_every_node_it_could_run_on(tmp_path: Path) -> None:
    """Under new-fit such a deferral is never asked again: the agent is not offered it; other deferrals stay."""
    from aco_env import EnvConfig
    from agents import make_agent

    model = _saved_model(tmp_path / "run", json.loads(TrainConfig(deferral=NEW_FIT).to_json()))
    env = ClusterSchedulingEnv("fleet5-synthetic", config=EnvConfig(deferral=NEW_FIT))
    agent = make_agent(f"sb3:{model}", env)
    _defer_logit_offset(agent, 30.0)  # defers whenever it may
    observation, _ = env.reset(seed=5000)
    stranding: list[bool] = []
    deferred: list[bool] = []
    while True:
        mask = observation["action_mask"]
        stranding.append(bool(mask[:-1].any() and mask[:-1][env.current_candidates()].all()))
        action, _ = agent.predict(observation)
        deferred.append(int(action) == env.n_nodes)
        if mask[-1]:  # deferral offered: the agent takes it unless it would strand the job
            assert deferred[-1] == (not stranding[-1])
        observation, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    assert any(stranding) and any(deferred)


@pytest.mark.parametrize("offset, defers", [(math.log(5.0), False), (math.log(100.0), True)])
def test_sb3_deterministic__defers_only_when_more_likely_than_placing_anywhere(
    tmp_path: Path, offset: float, defers: bool
) -> None:
    """Near-equal node logits and defer at 5 x one node's weight: with k valid nodes deferral has 5 / (5 + k)
    of the mass, more than any node alone, so the flat argmax defers; the agent places on the most likely
    node whenever the k nodes together outweigh deferral (k > 5). At 100 x it defers while k < 100."""
    import torch

    from agents import make_agent

    model = _saved_model(tmp_path / "run", None)
    env = ClusterSchedulingEnv("fleet20-synthetic")
    agent = make_agent(f"sb3:maskable-ppo:{model}", env)
    _defer_logit_offset(agent, offset)
    observation, _ = env.reset(seed=5000)
    placed = 0
    for _ in range(10):
        mask = observation["action_mask"].astype(bool)
        assert mask[:-1].any()
        with torch.no_grad():
            distribution = agent.model.policy.get_distribution(agent.model.policy.obs_to_tensor(observation)[0], mask)
        probabilities = distribution.distribution.probs[0].numpy()
        assert probabilities[:-1].max() < probabilities[-1]  # the flat argmax: defer
        action = int(agent.predict(observation)[0])
        if probabilities[-1] > probabilities[:-1][mask[:-1]].sum():
            assert action == env.n_nodes
        else:
            assert action == int(np.argmax(np.where(mask[:-1], probabilities[:-1], -1.0)))
            placed += 1
        observation, _, terminated, truncated, _ = env.step(action)
        assert not (terminated or truncated)
    assert (placed == 0) == defers
