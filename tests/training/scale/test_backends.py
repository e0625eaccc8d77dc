"""Execution backends: serial, processes and Ray give the same evaluation and reproduction; failures are retried.

The Ray tests start a real local Ray (``ray.init``), once for the module; the cluster of
several processes is in ``test_ray_cluster.py``. The agents that fail on purpose
(:mod:`tests.failing_agents`) are registered in worker processes only, never in this one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import scenarios
import tests.failing_agents as failing
from agents import make_agent
from agents.oracle.milp.limits import SolveLimits
from tests.hang_guard import HANG_GUARD_S
from tests.helpers import agent_params
from tests.paths import ROOT
from training.evaluation.evaluator import EPISODE_ENV, PLACEMENT_ENV, EpisodeUnit, EvalEnv, evaluate, play_unit
from training.evaluation.results import Evaluation, without_timing
from training.evaluation.rollout import play_episode
from training.execution.backend import Backend, SerialBackend, UnitFailure, UnitsFailedError
from training.execution.registry import make_backend
from training.reproduction import t1_1_cost
from training.reproduction.play import play_agents, play_seeds

FOUR_AGENTS = ["first-fit", "cheapest", "aco", "random"]
PROCESSES = pytest.param("processes", marks=pytest.mark.subprocess)
RAY = pytest.param("ray", marks=pytest.mark.ray)
BACKENDS = ["serial", PROCESSES, RAY]
PARALLEL = [PROCESSES, RAY]


@pytest.fixture(scope="module")
def attempts_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``$ACO_ENV_TEST_ATTEMPTS`` for the failing agents, set before any worker process starts (they inherit it)."""
    folder = tmp_path_factory.mktemp("attempts")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(failing.ATTEMPTS_ENV, str(folder))
        yield folder


@pytest.fixture(autouse=True)
def _no_attempts_yet(attempts_dir: Path) -> None:
    """Every test counts its own attempts."""
    for path in attempts_dir.iterdir():
        path.unlink()


@pytest.fixture(scope="module")
def pool(attempts_dir: Path) -> Iterator[Backend]:
    """A started pool for the module (its workers start after ``attempts_dir``'s variable is set)."""
    del attempts_dir
    with make_backend("processes") as backend:
        yield backend


@pytest.fixture(scope="module")
def local_ray(attempts_dir: Path) -> Iterator[Backend]:
    """A local Ray for the module, started by the backend (``ray.init``) and shut down after."""
    del attempts_dir
    pytest.importorskip("ray", reason="the ray extra is not installed")
    with make_backend("ray") as backend:
        yield backend


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Backend:
    """The started backend named by the test's ``name`` parameter."""
    name = request.node.callspec.params["name"]
    if name == "serial":
        return SerialBackend()
    return request.getfixturevalue({"processes": "pool", "ray": "local_ray"}[name])  # type: ignore[no-any-return]


def _evaluation(backend: Backend, agents: list[str], episodes: int = 3, **options: object) -> Evaluation:
    return evaluate("fleet5-synthetic", agents, episodes, seed=0, progress=False, backend=backend, **options)


@pytest.mark.parametrize("name", PARALLEL)
def test_backends__processes_and_ray_give_the_results_of_serial(name: str, backend: Backend) -> None:
    """4 agents x 3 seeds: the results.json equals serial's except timings, in agent order, then seed order."""
    serial = _evaluation(SerialBackend(), FOUR_AGENTS).to_json()
    parallel = _evaluation(backend, FOUR_AGENTS).to_json()
    assert list(parallel["agents"]) == FOUR_AGENTS
    for agent in parallel["agents"].values():
        assert [row["seed"] for row in agent["per_episode"]] == [0, 1, 2]
        assert agent["per_episode"][0]["decision_latency_ms_p50"] > 0.0  # timings are there, just not compared
    assert without_timing(parallel) == without_timing(serial)


@pytest.mark.parametrize("name", PARALLEL)
@pytest.mark.parametrize(("env", "agents"), [(EPISODE_ENV, ["oracle", "aco"]), (PLACEMENT_ENV, ["cheapest", "aco"])])
def test_backends__the_oracle_and_the_placement_env_give_the_results_of_serial(
    name: str, env: EvalEnv, agents: list[str], backend: Backend
) -> None:
    """toy3 with the oracle (bounds, plans, gaps) and the placement env (optimality, regret): equal to serial."""
    serial, parallel = (
        evaluate("toy3", agents, 2, seed=4, progress=False, env=env, backend=chosen).to_json()
        for chosen in (SerialBackend(), backend)
    )
    assert without_timing(parallel) == without_timing(serial)
    expected = "optimality_gap" if env is EPISODE_ENV else "regret_usd"
    assert expected in parallel["agents"]["aco"]["mean"]


@pytest.mark.parametrize("name", PARALLEL)
def test_backends__planted_scores_are_those_of_serial(name: str, backend: Backend) -> None:
    """planted5 (optimum, gap, per-step agreement computed in each unit): equal to serial."""
    serial, parallel = (
        evaluate("planted5", ["planted", "cheapest"], 2, seed=1, progress=False, backend=chosen).to_json()
        for chosen in (SerialBackend(), backend)
    )
    assert without_timing(parallel) == without_timing(serial)
    assert "planted_agreement" in parallel["agents"]["cheapest"]["mean"]


@pytest.mark.parametrize("agent", agent_params())
def test_play_unit__a_new_agent_per_episode_plays_what_one_agent_over_every_seed_played(agent: str) -> None:
    """Per-unit evaluation changes no number: no agent carries anything from one episode into the next.

    The reference is the evaluator before backends: one env and one agent playing the seeds in
    turn (here in the order 2, 0, 1, so an episode follows others).
    """
    scenario = scenarios.load({"oracle": "toy3", "planted": "planted5"}.get(agent, "fleet5-synthetic"))
    env = EPISODE_ENV.make(scenario, agent)
    one_agent = make_agent(agent, env)
    in_turn = {seed: play_episode(env, one_agent, seed).metrics for seed in (2, 0, 1)}
    for seed in (0, 1, 2):
        unit = play_unit(EpisodeUnit(scenario, EPISODE_ENV, agent, seed))
        assert unit.episode is not None and dict(unit.episode.metrics) == in_turn[seed], seed


@dataclass(frozen=True)
class FlakyUnit:
    """A unit of :func:`fail_then_return`: it fails its first ``failures`` attempts (counted in ``folder``)."""

    index: int
    folder: str
    failures: int = 0

    def __str__(self) -> str:
        return f"unit {self.index}"


def fail_then_return(unit: FlakyUnit) -> int:
    """Raise on the unit's first ``failures`` attempts (in any process), then return its index."""
    earlier = len(list(Path(unit.folder).glob(f"{unit.index}.*")))
    (Path(unit.folder) / f"{unit.index}.{earlier}.{os.getpid()}.{time.monotonic_ns()}").touch()
    if earlier < unit.failures:
        raise RuntimeError(f"unit {unit.index} fails (attempt {earlier + 1})")
    return unit.index


@pytest.mark.parametrize("name", BACKENDS)
def test_backend__a_unit_that_fails_twice_is_retried_and_the_batch_completes(
    name: str, backend: Backend, tmp_path: Path
) -> None:
    """Unit 1 raises on its first two attempts: it runs three times, and every result comes back, in order."""
    units = [FlakyUnit(index, str(tmp_path), failures=2 if index == 1 else 0) for index in range(4)]
    assert backend.map(fail_then_return, units) == [0, 1, 2, 3]
    assert len(list(tmp_path.glob("1.*"))) == 3 and len(list(tmp_path.glob("2.*"))) == 1


@pytest.mark.parametrize("name", BACKENDS)
def test_backend__a_unit_that_fails_every_attempt_ends_the_batch_and_is_named(
    name: str, backend: Backend, tmp_path: Path
) -> None:
    """Unit 1 always raises: 1 + 2 retries, then UnitsFailedError names it, its attempts and its last error."""
    units = [FlakyUnit(index, str(tmp_path), failures=99 if index == 1 else 0) for index in range(4)]
    with pytest.raises(UnitsFailedError) as raised:
        backend.map(fail_then_return, units)
    assert raised.value.failures == (UnitFailure("unit 1", 3, "RuntimeError: unit 1 fails (attempt 3)"),)
    assert "fail_then_return" in raised.value.failures[0].traceback  # the worker's traceback, for --debug
    assert str(raised.value).startswith("1 unit(s) failed 3 attempt(s) each: unit 1 (RuntimeError: unit 1 fails")
    assert len(list(tmp_path.glob("1.*"))) == 3
    assert 0 <= raised.value.cancelled <= 2  # units 2 and 3, unless they finished first


def test_backend__with_no_retries_the_first_failure_ends_the_batch(tmp_path: Path) -> None:
    """retries=0: a unit failing once is reported after its one attempt; the units after it are cancelled."""
    units = [FlakyUnit(index, str(tmp_path), failures=1 if index == 1 else 0) for index in range(3)]
    with pytest.raises(UnitsFailedError) as raised:
        SerialBackend(retries=0).map(fail_then_return, units)
    assert [failure.attempts for failure in raised.value.failures] == [1]
    assert raised.value.cancelled == 1 and not list(tmp_path.glob("2.*"))  # unit 2 never started


@pytest.mark.parametrize("name", PARALLEL)
def test_evaluate__an_agent_failing_once_in_a_worker_is_retried_and_changes_nothing(
    name: str, backend: Backend
) -> None:
    """flaky-first-fit raises on its first attempt at seed 1 (in a worker): tried twice, its numbers are first-fit's."""
    evaluation = _evaluation(backend, [failing.FLAKY, "first-fit"], agent_modules=(failing.REGISTER_MODULE,))
    assert failing.attempts(failing.FLAKY) == 2
    document = without_timing(evaluation.to_json())
    assert document["agents"][failing.FLAKY] == document["agents"]["first-fit"]


@pytest.mark.parametrize("name", PARALLEL)
def test_evaluate__an_agent_failing_every_attempt_in_a_worker_is_named_with_its_seed(
    name: str, backend: Backend
) -> None:
    """broken-first-fit raises at seed 1 on every attempt: UnitsFailedError names "broken-first-fit seed 1" and why."""
    with pytest.raises(UnitsFailedError) as raised:
        _evaluation(backend, ["first-fit", failing.BROKEN], agent_modules=(failing.REGISTER_MODULE,))
    error = "RuntimeError: broken-first-fit fails on seed 1 (attempt 3)"
    assert raised.value.failures == (UnitFailure("broken-first-fit seed 1", 3, error),)
    assert failing.attempts(failing.BROKEN) == 3


@pytest.mark.parametrize("name", PARALLEL)
def test_backend__a_worker_that_dies_is_replaced_and_its_unit_retried(name: str, backend: Backend) -> None:
    """crashing-first-fit kills its worker process at seed 1 once: the unit runs again elsewhere, same numbers."""
    evaluation = _evaluation(backend, [failing.CRASHING, "first-fit"], agent_modules=(failing.REGISTER_MODULE,))
    assert failing.attempts(failing.CRASHING) == 2
    document = without_timing(evaluation.to_json())
    assert document["agents"][failing.CRASHING] == document["agents"]["first-fit"]


@dataclass(frozen=True)
class OrderedUnit:
    """A unit of :func:`finish_last_if_first`: its index, and the folder where the caller marks results it received."""

    index: int
    folder: str
    others: int


def finish_last_if_first(unit: OrderedUnit) -> int:
    """Unit 0 returns (after at most a minute) once the caller has received every other unit's result.

    The caller marks each result it receives with a file (its ``on_done``), so unit 0's result is
    sent only after the others' have arrived; the others return at once. Module-level, so workers
    import it by name.
    """
    if unit.index == 0:
        deadline = time.monotonic() + HANG_GUARD_S
        while len(list(Path(unit.folder).iterdir())) < unit.others and time.monotonic() < deadline:
            time.sleep(0.01)
    return unit.index


@pytest.mark.parametrize("name", PARALLEL)
def test_backend__results_come_in_unit_order_whatever_order_units_finish_in(
    name: str, backend: Backend, tmp_path: Path
) -> None:
    """Unit 0 finishes only after units 1-3: the backend reports it done last, and still returns it first."""
    if backend.workers < 2:
        pytest.skip("needs two workers: unit 0 waits for the others")
    units = [OrderedUnit(index, str(tmp_path), others=3) for index in range(4)]
    finished: list[OrderedUnit] = []

    def received(unit: OrderedUnit) -> None:
        finished.append(unit)
        (tmp_path / str(unit.index)).touch()

    assert backend.map(finish_last_if_first, units, on_done=received) == [0, 1, 2, 3]
    assert finished[-1].index == 0 and sorted(unit.index for unit in finished) == [0, 1, 2, 3]


def test_make_backend__refuses_unknown_names_and_an_address_without_ray() -> None:
    """Unknown names and an address for a local backend are errors that say what is accepted."""
    with pytest.raises(ValueError, match="known: serial, processes, ray"):
        make_backend("threads")
    with pytest.raises(ValueError, match="takes no address"):
        make_backend("processes", address="127.0.0.1:6379")


@pytest.mark.subprocess
def test_evaluate_cli__an_episode_failing_every_attempt_writes_nothing_and_is_named_in_one_line(
    attempts_dir: Path, tmp_path: Path
) -> None:
    """`aco-env evaluate` with broken-first-fit: exit 1, one error line naming the episode and why, no results.json.

    The CLI runs in its own process, which registers the failing agents before ``main``.
    """
    import subprocess
    import sys

    out = tmp_path / "out"
    script = f"import sys, {failing.REGISTER_MODULE}; from training.cli.main import main; sys.exit(main(sys.argv[1:]))"
    args = ["evaluate", "--agents", f"first-fit,{failing.BROKEN}", "--episodes", "2", "--backend", "serial"]
    result = subprocess.run([sys.executable, "-c", script, *args, "--out", str(out), "--no-progress"],
                            capture_output=True, text=True, cwd=ROOT, timeout=HANG_GUARD_S)
    assert result.returncode == 1, result.stderr
    assert [line for line in result.stderr.splitlines() if ": error: " in line] == [
        "aco-env evaluate: error: fleet5-synthetic: broken-first-fit seed 1 failed 3 times (RuntimeError: "
        "broken-first-fit fails on seed 1 (attempt 3)); nothing was written (--debug shows the tracebacks)"
    ]
    assert result.stderr.count("; retrying") == 2 and "Traceback" not in result.stderr
    assert not (out / "results.json").exists() and not list(out.glob("*.png"))
    assert failing.attempts(failing.BROKEN) == 3


@pytest.mark.ray
@pytest.mark.subprocess
def test_evaluate_cli__ray_and_serial_write_equal_results_json(tmp_path: Path) -> None:
    """Acceptance: `aco-env evaluate --backend ray` (a local Ray the command starts and stops) and `--backend
    serial`, 4 agents x 10 seeds of the default scenario: results.json equal except timing fields."""
    import json
    import subprocess
    import sys

    pytest.importorskip("ray", reason="the ray extra is not installed")
    root = ROOT
    documents, logs = [], []
    for kind in ("ray", "serial"):
        args = ["evaluate", "--agents", ",".join(FOUR_AGENTS), "--episodes", "10", "--backend", kind]
        result = subprocess.run([sys.executable, "-m", "training.cli.main", *args, "--out", str(tmp_path / kind)],
                                capture_output=True, text=True, cwd=root, timeout=HANG_GUARD_S)
        assert result.returncode == 0, result.stderr
        documents.append(json.loads((tmp_path / kind / "results.json").read_text()))
        logs.append(result.stderr)
    assert "backend: ray, a local Ray, 1 node(s)" in logs[0] and "backend: serial" in logs[1]
    assert documents[0]["seeds"] == list(range(10)) and list(documents[0]["agents"]) == FOUR_AGENTS
    assert without_timing(documents[0]) == without_timing(documents[1])


# ------------------------------------------------------------------------------ aco-env reproduce
TINY_T11 = t1_1_cost.Config(reference_jobs=4, twin_jobs=6, horizon_s=3600.0)


@pytest.mark.parametrize("name", PARALLEL)
def test_reproduce_tier__processes_and_ray_give_the_records_of_serial(name: str, backend: Backend) -> None:
    """T1.1's full twin (every agent and the oracle, two seeds) is the same dict on every backend."""
    limits = SolveLimits(node_limit=10)
    serial = t1_1_cost.full_twin("balanced", [0, 1], TINY_T11, limits)
    assert serial["oracle"] is not None and serial["oracle"]["episodes"] == 2
    assert t1_1_cost.full_twin("balanced", [0, 1], TINY_T11, limits, backend) == serial


def test_play_agents__records_come_back_per_agent_in_seed_order() -> None:
    """One batch of agents x seeds is regrouped per agent, each agent's records in seed order."""
    scenario = scenarios.load("fleet5-synthetic")
    records = play_agents(lambda _seed: scenario, [("first-fit", {}), ("cheapest", {})], [3, 1, 2])
    assert list(records) == ["first-fit", "cheapest"]
    assert all([r.seed for r in recs] == [3, 1, 2] for recs in records.values())
    assert records["first-fit"][1].metrics == play_seeds(lambda _seed: scenario, "first-fit", [1])[0].metrics


@pytest.mark.subprocess
def test_reproduce_cli__bad_backend_options_exit_2_before_any_work(tmp_path: Path) -> None:
    """--address without --backend ray, or a malformed address, is a usage error; nothing is written."""
    import subprocess
    import sys

    root = ROOT
    for extra in (["--backend", "processes", "--address", "127.0.0.1:6379"], ["--backend", "ray", "--address", "head"]):
        result = subprocess.run([sys.executable, "-m", "training.cli.main", "reproduce", "--tier", "T1.1",
                                 "--no-oracle", "--out", str(tmp_path), *extra],
                                capture_output=True, text=True, cwd=root, timeout=HANG_GUARD_S)
        assert result.returncode == 2 and "--address" in result.stderr, result.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.ray
@pytest.mark.subprocess
@pytest.mark.slow  # ~40 s; test_reproduce_tier__processes_and_ray_give_the_records_of_serial covers it in-process
def test_reproduce_cli__ray_and_serial_write_the_same_tiers(tmp_path: Path) -> None:
    """`aco-env reproduce --tier T1.1 --seeds 2 --no-oracle` with --backend ray (a local Ray the command starts
    and stops) and --backend serial: reproduction.json equal but for the backend named in its settings."""
    import json
    import subprocess
    import sys

    pytest.importorskip("ray", reason="the ray extra is not installed")
    root = ROOT
    documents = []
    for kind in ("ray", "serial"):
        args = ["reproduce", "--tier", "T1.1", "--seeds", "2", "--no-oracle", "--backend", kind]
        result = subprocess.run([sys.executable, "-m", "training.cli.main", *args, "--out", str(tmp_path / kind)],
                                capture_output=True, text=True, cwd=root, timeout=HANG_GUARD_S)
        assert result.returncode == 0, result.stderr
        documents.append(json.loads((tmp_path / kind / "reproduction.json").read_text()))
    assert [d["settings"].pop("backend") for d in documents] == ["ray", "serial"]
    assert documents[0]["settings"] == documents[1]["settings"] and documents[0]["tiers"] == documents[1]["tiers"]


def test_play_agents__an_episode_failing_every_attempt_is_named_with_its_scenario_and_seed() -> None:
    """An agent the registry does not know fails each attempt; the error names the unit, nothing is returned."""
    scenario = scenarios.load("fleet5-synthetic")
    with pytest.raises(UnitsFailedError) as caught:
        play_agents(lambda _seed: scenario, [("first-fit", {}), ("no-such-agent", {})], [0])
    assert [f.unit for f in caught.value.failures] == ["fleet5-synthetic: no-such-agent seed 0"]
    assert "nothing was written" in caught.value.for_user()
