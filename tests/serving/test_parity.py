"""Parity: a service fed a recorded episode's events over HTTP takes the env's decisions, one for one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import scenarios
from aco_env.recording import observation_digest
from serving.events import EventBatch
from serving.live import LiveCluster
from serving.parity import episode_events
from tests.serving.conftest import record_episode

SCENARIOS = ("fleet5-synthetic", "fleet5-synthetic-varied")
SEEDS = (0, 1, 2, 3, 4)


def batch_json(batch: EventBatch) -> dict:
    """``POST /events``'s body for ``batch``."""
    body = batch.as_dict()
    for job in body["submit"]:
        job["allowed_gpu_models"] = list(job["allowed_gpu_models"]) if job["allowed_gpu_models"] else None
    return body


def decisions_over_http(served, record: dict) -> tuple[list, list]:
    """Feed the recording's events to ``served`` batch by batch: (decisions taken, decisions recorded)."""
    events = episode_events(record)
    assert served.client.post("/episode", json={"seed": record["seed"]}).status_code == 200
    taken = []
    for batch in events.batches:
        response = served.client.post("/events", json=batch_json(batch))
        assert response.status_code == 200, response.text
        taken += [(d["job_id"], d["node_id"]) for d in response.json()["decisions"]]
    return taken, list(events.decisions)


@pytest.mark.heavy
@pytest.mark.parametrize("agent", ["first-fit", "aco"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_parity__http_service_takes_the_recorded_decisions(serve, tmp_path: Path, scenario: str, agent: str) -> None:
    """On 5 recorded episodes of the scenario, the service over HTTP places every job where the env's agent did."""
    served = serve(scenario, agent)
    for seed in SEEDS:
        taken, recorded = decisions_over_http(served, record_episode(scenario, agent, seed, tmp_path))
        assert len(recorded) > 20
        assert taken == recorded, f"seed {seed}: first difference at decision " + str(
            next(k for k, (a, b) in enumerate(zip(taken, recorded, strict=False)) if a != b)
        )


@pytest.mark.training
@pytest.mark.heavy
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_parity__http_service_serves_an_sb3_model_like_the_env(
    serve, sb3_model: str, tmp_path: Path, scenario: str
) -> None:
    """A MaskablePPO model served over HTTP takes the decisions it took in the env on 5 recorded episodes."""
    served = serve(scenario, sb3_model)
    for seed in SEEDS:
        taken, recorded = decisions_over_http(served, record_episode(scenario, sb3_model, seed, tmp_path))
        assert taken == recorded, f"seed {seed}"


def test_parity__agent_sees_the_env_observation_bit_for_bit(tmp_path: Path) -> None:
    """At every decision the live env's observation has the digest the recording has for the env's."""
    record = record_episode("fleet5-synthetic", "first-fit", 0, tmp_path)
    expected = [record["reset_observation"]] + [step["observation"] for step in record["steps"][:-1]]
    live = LiveCluster(scenarios.load("fleet5-synthetic"), "first-fit", seed=0)
    seen: list[str] = []

    def decide(job_id: str) -> int:
        seen.append(observation_digest(live.env.observation()))
        return int(np.flatnonzero(live.env.action_masks())[0])

    for batch in episode_events(record).batches:
        live.apply(batch, decide)
    assert seen == expected


def test_parity__deferrals_are_asked_again_after_the_next_event(tmp_path: Path) -> None:
    """An agent that defers every job once is asked again at the same later decisions as in the env."""
    from agents import register_agent
    from agents.base import registered_agent
    from agents.view_agent import ViewAgent

    class DeferOnce(ViewAgent):
        name = "test-defer-once"

        def _reset(self, seed: int | None) -> None:
            self.seen: set[str] = set()

        def _choose(self, view, valid):
            if view.job.job_id in self.seen:
                return int(valid[0])
            self.seen.add(view.job.job_id)
            return None

    if registered_agent("test-defer-once") is None:
        register_agent("test-defer-once", DeferOnce)
    for seed in (0, 1):
        record = record_episode("fleet5-synthetic", "test-defer-once", seed, tmp_path)
        events = episode_events(record)
        live = LiveCluster(scenarios.load("fleet5-synthetic"), "test-defer-once", seed=seed)
        taken = [(d.job_id, d.node_id) for batch in events.batches for d in live.apply(batch).decisions]
        assert sum(node is None for _, node in taken) > 20
        assert taken == list(events.decisions)
