"""The Slurm bridge against a real Slurm on loopback (Debian's slurmctld, slurmd, munge; ``.ci/run`` installs them)."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from gymnasium.utils import seeding

import scenarios
from aco_env import ClusterSchedulingEnv
from agents import agent_deferral, make_agent
from serving.live import LiveCluster
from serving.service import PlacementService
from serving.slurm import SlurmBridge, SlurmClient
from tests.serving.slurm_loopback import LoopbackSlurm, missing_programs

_MISSING = missing_programs()
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.xdist_group("slurm"),
    pytest.mark.skipif(
        bool(_MISSING),
        reason=f"no Slurm here: {', '.join(_MISSING)} not installed (.ci/run installs "
        "slurmctld, slurmd, slurm-client and munge)",
    ),
    pytest.mark.skipif(os.geteuid() != 0, reason="the loopback Slurm runs its daemons as root (as CI does)"),
]
N_JOBS = 8


def short_episode(folder: Path) -> tuple[Path, list[dict]]:
    """The first jobs of a default-scenario episode (seed 0), all submitted at time 0, as Slurm can state them.

    Whole cores, whole GB, whole minutes (declared = true run time), priority 50, no deadline: what
    ``sbatch`` says of a job. Returns a scenario file (the default one's fleet and settings, no background
    load, no random spot outages) holding them, and the jobs.
    """
    spec = scenarios.load("fleet5-synthetic").make_spec(seeding.np_random(0)[0])
    jobs = [
        {"job_id": job.job_id, "arrival_s": 0, "duration_s": 60.0 * math.ceil((job.declared_duration_s or 60) / 60),
         "workload": job.workload, "cpu_cores": math.ceil(job.cpu_cores), "mem_gb": math.ceil(job.mem_gb),
         "gpu_count": job.gpu_count}
        for job in list(spec.jobs)[:N_JOBS]
    ]  # fmt: skip
    document = yaml.safe_load(scenarios.path_of("fleet5-synthetic").read_text())
    document.update(
        name="fleet5-slurm-short", spot={"recovery_s": 600, "interruptions": False},
        telemetry={"reader": "constant", "cpu_pct": 0, "mem_pct": 0, "tick_s": 300},
        workload={"source": "jobs", "declared_durations": {"model": "exact"}, "jobs": jobs},
    )  # fmt: skip
    document.pop("job_budget", None)
    path = folder / "fleet5-slurm-short.yaml"
    path.write_text(yaml.safe_dump(document))
    return path, jobs


def env_decisions_at_time_0(scenario: Path, agent: str) -> list[tuple[str, str | None]]:
    """The agent's decisions at time 0 of the scenario's episode in the env (before any job ends)."""
    env = ClusterSchedulingEnv(scenario, deferral=agent_deferral(agent))
    policy = make_agent(agent, env)
    observation, _ = env.reset(seed=0)
    policy.reset(0)
    while env.unwrapped.cluster_view().time_s == 0.0 and env.unwrapped.cluster_view().job is not None:
        action, _ = policy.predict(observation, deterministic=True)
        observation, *_ = env.step(action)
    return [(job, None if node is None else env.fleet[node].node_id) for job, node in env.decisions()]


@pytest.fixture
def slurm():
    """A five-node Slurm on loopback shaped like the default fleet; its daemons are stopped by pid at the end."""
    cluster = LoopbackSlurm(scenarios.load("fleet5-synthetic").fleet)
    try:
        cluster.start()
        yield cluster
    finally:
        pids = dict(cluster.pids)
        cluster.stop()
        assert not any(Path(f"/proc/{pid}").exists() and "Z" not in _state(pid) for pid in pids.values())


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def bridge_for(scenario: Path | str, agent: str, slurm: LoopbackSlurm) -> SlurmBridge:
    return SlurmBridge(PlacementService(LiveCluster(scenarios.load(scenario), agent)), SlurmClient(slurm.env))


def poll_until(bridge: SlurmBridge, done, polls: int = 120, interval_s: float = 0.5) -> None:
    for _ in range(polls):
        bridge.poll()
        if done():
            return
        time.sleep(interval_s)


@pytest.mark.parametrize("agent", ["first-fit", pytest.param("sb3", marks=pytest.mark.training)])
def test_slurm__bridge_places_held_jobs_where_the_agent_says(slurm: LoopbackSlurm, tmp_path: Path, agent: str,
                                                              request: pytest.FixtureRequest) -> None:  # fmt: skip
    """Every job ran (Slurm's own record) on the node the agent chose; the time-0 decisions are the env's."""
    if agent == "sb3":
        agent = request.getfixturevalue("sb3_model")
    scenario, jobs = short_episode(tmp_path)
    slurm_ids = {slurm.submit_held(job["job_id"], job["cpu_cores"], job["mem_gb"] * 1024, job["gpu_count"],
                                   int(job["duration_s"] // 60), 2, job["workload"]): job["job_id"]
                 for job in jobs}  # fmt: skip
    bridge = bridge_for(scenario, agent, slurm)
    poll_until(bridge, lambda: set(bridge.placed) <= set(slurm.completed_nodes()) and len(bridge.placed) == len(jobs),
               polls=80)  # fmt: skip
    ran = slurm.completed_nodes()
    assert bridge.placed, "the agent placed no job"
    assert {job: ran.get(job) for job in bridge.placed} == bridge.placed  # where Slurm says each ran
    held = {item["job_id"] for item in slurm.squeue() if item["job_state"] == "PENDING"}
    assert set(slurm_ids) == set(bridge.placed) | held  # a job the agent did not place is still held
    first_poll = [(d.job_id, d.node_id) for d in bridge.service.cluster.decisions if d.time_s == 0.0]
    expected = env_decisions_at_time_0(scenario, agent)
    by_slurm = {f"slurm-{k}": v for k, v in slurm_ids.items()}
    assert [(by_slurm[job], node) for job, node in first_poll] == expected[: len(first_poll)]
    assert len(first_poll) == len(expected)


def test_slurm__a_failed_pin_never_releases_the_job(tmp_path: Path) -> None:
    """A node Slurm does not know: the pin fails, the job stays held (never released), the bridge goes on."""
    fleet = scenarios.load("fleet5-synthetic").fleet
    slurm = LoopbackSlurm(fleet[1:])  # node-cpu-01, first-fit's first choice, is missing
    try:
        slurm.start()
        job = slurm.submit_held("lost", 2, 2048, 0, 5, 1)
        bridge = bridge_for("fleet5-synthetic", "first-fit", slurm)
        for _ in range(3):
            assert bridge.poll()
        assert bridge.failed_pins == [job, job, job] and bridge.placed == {}
        (item,) = slurm.squeue()
        assert (item["job_state"], item["state_reason"], item["priority"]) == ("PENDING", "JobHeldUser", 0)
        assert item["required_nodes"] == ""
    finally:
        slurm.stop()


def test_slurm__bridge_survives_a_slurmctld_restart(slurm: LoopbackSlurm) -> None:
    """slurmctld stopped mid-run: polls fail and change nothing; restarted, the bridge places the jobs held since."""
    bridge = bridge_for("fleet5-synthetic", "first-fit", slurm)
    first = slurm.submit_held("before", 2, 2048, 0, 5, 1)
    poll_until(bridge, lambda: first in bridge.placed)
    slurm.stop_controller()
    assert not bridge.poll() and not bridge.poll()  # no answer: nothing applied, no crash
    slurm.start_controller()
    slurm.wait_idle()
    second = slurm.submit_held("after", 2, 2048, 0, 5, 1)
    poll_until(bridge, lambda: {first, second} <= set(slurm.completed_nodes()))
    assert slurm.completed_nodes() == {first: bridge.placed[first], second: bridge.placed[second]}
    assert len(np.unique([d.job_id for d in bridge.service.cluster.decisions])) == 2
