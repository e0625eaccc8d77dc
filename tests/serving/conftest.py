"""Fixtures of the serving tests: a placement service on loopback, recorded episodes, a small trained model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S

pytest.importorskip("fastapi", reason="the serving tests need the serve extra: pip install 'aco-env[serve]'")
httpx = pytest.importorskip("httpx", reason="the serving tests need httpx (the test extra)")

import scenarios  # noqa: E402
from aco_env import ClusterSchedulingEnv  # noqa: E402
from aco_env.recording import RecordEpisode, load_recording  # noqa: E402
from agents import agent_deferral, make_agent  # noqa: E402
from serving.live import LiveCluster  # noqa: E402
from serving.server import ServerThread  # noqa: E402
from serving.service import PlacementService  # noqa: E402
from training.evaluation.rollout import play_episode  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_MODEL = ROOT / "models" / "make-run" / "model.zip"
"""The model ``make run`` trains, when the repository ships one (used instead of training a small one)."""


def record_episode(scenario: str, agent: str, seed: int, folder: Path) -> dict:
    """Play ``agent`` on ``scenario`` with ``seed`` in the env, recorded (aco_env.recording); the recording."""
    path = folder / f"{scenario}-{agent.replace(':', '_').replace('/', '_')}-{seed}.json"
    env = RecordEpisode(ClusterSchedulingEnv(scenario, deferral=agent_deferral(agent)), path, agent=agent)
    play_episode(env, make_agent(agent, env), seed)
    return load_recording(path)


class Served:
    """A placement service on loopback and an HTTP client for it."""

    def __init__(self, service: PlacementService, url: str, token: str | None) -> None:
        self.service = service
        self.url = url
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=url, headers=headers, timeout=HANG_GUARD_S)


@pytest.fixture
def serve() -> Iterator:
    """``serve(scenario, agent, token=None)``: start a service on 127.0.0.1 (stopped at the test's end)."""
    started: list[tuple[ServerThread, Served]] = []

    def start(scenario: str, agent: str, token: str | None = None, **options: object) -> Served:
        service = PlacementService(LiveCluster(scenarios.load(scenario), agent), **options)  # type: ignore[arg-type]
        thread = ServerThread(service, token).__enter__()
        served = Served(service, thread.url, token)
        started.append((thread, served))
        return served

    yield start
    for thread, served in started:
        served.client.close()
        thread.__exit__(None, None, None)


@pytest.fixture(scope="session")
def sb3_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An ``sb3:`` spec of a MaskablePPO model of the default scenario: the shipped one, else one trained here.

    Trained by ``aco-env train --algo dagger`` (DAgger of first-fit into the default policy, two
    iterations of two episodes: seconds), so that it places jobs rather than deferring them all.
    """
    if SHIPPED_MODEL.exists():
        return f"sb3:{SHIPPED_MODEL}"  # its config.json beside it names the algorithm
    import torch

    from training.cli.main import main

    torch.set_num_threads(1)
    logdir = tmp_path_factory.mktemp("model")
    code = main(["train", "--algo", "dagger", "--dagger-expert", "first-fit", "--dagger-iterations", "2",
                 "--dagger-episodes", "2", "--seed", "0", "--logdir", str(logdir), "--curve-every", "-1",
                 "--checkpoint-every", "-1", "--eval-episodes", "0"])  # fmt: skip
    assert code == 0
    (model,) = logdir.glob("*/model.zip")
    return f"sb3:{model}"
