"""What a newcomer meets first: the CLI's help, its answers to a misspelt name, key or option, its outputs.

Each test runs ``aco-env`` in this process (:func:`training.cli.main.main`) or the function behind
the answer, on the smallest bundled scenario (``toy3``), so the whole file takes seconds.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import yaml

import scenarios
from aco_env import ClusterSchedulingEnv
from agents import AgentSpecError, check_agent_name, make_agent
from digital_twin.errors import closest, did_you_mean
from digital_twin.objective import USD_KEYS
from digital_twin.scenario import ScenarioError, load_scenario
from digital_twin.scenario.sources import describe_sources
from digital_twin.scenario.workload_section import BUILT_IN_SOURCES
from training import checks
from training.cli.main import COMMANDS, help_line, main
from training.errors import UsageError, message_line
from training.progress import LOGGED_PARTS, Progress

TOY3 = scenarios.path_of("toy3")


@pytest.mark.smoke
def test_help_lines__are_each_command_modules_own(capsys: pytest.CaptureFixture[str]) -> None:
    """`aco-env --help` lists every command with the HELP its module defines, read without importing it."""
    for name in COMMANDS:
        module = importlib.import_module(f"training.cli.commands.{name.replace('-', '_')}")
        assert help_line(name) == module.HELP
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert all(name in shown for name in COMMANDS)


def test_unknown_command__exit_2_with_the_closest_name(capsys: pytest.CaptureFixture[str]) -> None:
    """A misspelt command is answered in one line naming the closest command and listing all."""
    assert main(["evalute", "--agents", "first-fit"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown command 'evalute'; did you mean evaluate?" in err[0]
    assert all(name in err[0] for name in COMMANDS)


def test_unknown_scenario__suggests_the_closest_names_first() -> None:
    """`--scenario fleet5-synthetc`: the closest bundled names come before the whole catalogue."""
    with pytest.raises(UsageError) as caught:
        checks.scenario("fleet5-synthetc")
    message = str(caught.value)
    assert message.index("did you mean 'fleet5-synthetic'") < message.index("bundled: ")
    assert all(name in message for name in scenarios.names())


def test_message_line__a_long_message_ends_at_a_whole_word() -> None:
    """A message over the limit is cut after its last whole word, never inside a scenario's name."""
    text = "bundled: " + ", ".join(scenarios.names() * 40)
    line = message_line(text, limit=300)
    assert len(line) <= 300 and line.endswith(" ...")
    kept = line.removesuffix(" ...").removesuffix(",").removeprefix("bundled: ").split(", ")
    assert all(name in scenarios.names() for name in kept)


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("first-fitt", "unknown agent 'first-fitt' (did you mean 'first-fit'"),
        ("lookahed", "unknown agent 'lookahed' (did you mean 'lookahead'"),
    ],
)
def test_unknown_agent__suggests_the_closest_name(spec: str, shown: str) -> None:
    """An unknown agent name is answered with the closest registered names, then all of them."""
    with pytest.raises(AgentSpecError, match="registered: ") as caught:
        check_agent_name(spec)
    assert shown in str(caught.value)


def test_agent_option__a_misspelt_option_lists_the_valid_ones() -> None:
    """`lookahead[candidats=3]`: the closest option and every option the agent takes, not a raw TypeError."""
    env = ClusterSchedulingEnv(scenarios.load("toy3"))
    with pytest.raises(AgentSpecError) as caught:
        make_agent("lookahead[candidats=3]", env)
    message = str(caught.value)
    assert "no such option 'candidats' (did you mean 'candidates'?)" in message
    assert "its options: candidates, rollout_window_s, samples" in message
    assert "__init__" not in message
    with pytest.raises(AgentSpecError, match="no such option 'x'; its options: none"):
        make_agent("first-fit[x=1]", env)


def _toy3_with(tmp_path: Path, edit: str) -> str:
    """The error of toy3's file with ``edit`` applied (``old=>new`` replaced in its text)."""
    old, new = edit.split("=>")
    text = TOY3.read_text()
    assert old in text
    path = tmp_path / "edited.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    return str(caught.value)


@pytest.mark.parametrize(
    ("edit", "shown", "known"),
    [
        ("\nweights:=>\nweigths:", "unknown key(s) ['weigths'] (did you mean 'weights'?)", "'weights'"),
        ("  recovery_s:=>  recovery:", "spot: unknown key(s) ['recovery'] (did you mean 'recovery_s'?)",
         "'recovery_s'"),
    ],
)
def test_scenario_key__a_misspelt_key_is_named_beside_the_one_meant(
    tmp_path: Path, edit: str, shown: str, known: str
) -> None:
    """A key read only when present (``weights``, ``spot.recovery_s``) is in the known list its misspelling gets."""
    message = _toy3_with(tmp_path, edit)
    assert shown in message
    assert known in message.partition("known here: ")[2]


def test_scenario_key__a_missing_required_key_names_the_misspelt_one(tmp_path: Path) -> None:
    """`horizon:` for `horizon_s:` is reported as the missing key and the key written instead."""
    message = _toy3_with(tmp_path, "\nhorizon_s:=>\nhorizon:")
    assert message.endswith("horizon_s: is required (found 'horizon': misspelt?)")


def test_scenario_key__the_known_list_holds_every_top_level_key_of_the_catalogue(tmp_path: Path) -> None:
    """Whatever a bundled scenario writes at its top level is listed as known beside an unknown key."""
    used = set()
    for name in scenarios.names():
        used |= set(yaml.safe_load(scenarios.path_of(name).read_text()))
    for name in ("toy3", "fleet5-synthetic"):
        path = tmp_path / f"{name}.yaml"
        path.write_text(scenarios.path_of(name).read_text() + "\nzzz_unknown: 1\n")
        with pytest.raises(ScenarioError) as caught:
            load_scenario(path)
        known = str(caught.value).partition("known here: ")[2]
        assert not [key for key in used if f"'{key}'" not in known], str(caught.value)


def test_closest__bounded_for_a_huge_word() -> None:
    """A value of a megabyte is no misspelling: no suggestion, and no quadratic comparison."""
    assert closest("x" * 1_000_000, ["x"]) == [] and did_you_mean("x" * 1_000_000, ["x"]) == ""


def test_scenarios_listing__names_every_workload_source() -> None:
    """`aco-env scenarios` lists every `workload.source` a file may name, the built-in ones included."""
    from digital_twin.scenario.sources import JOB_FILE_SOURCES

    listed = {name for name, _ in describe_sources()["workload.source"]}
    assert listed == set(JOB_FILE_SOURCES) | set(BUILT_IN_SOURCES)
    assert all(line for _, line in describe_sources()["workload.source"])


def test_evaluate__without_out_writes_a_new_folder_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two evaluations without --out write two folders under results/evaluate/: neither overwrites the other."""
    monkeypatch.chdir(tmp_path)
    argv = ["evaluate", "--scenario", "toy3", "--agents", "first-fit", "--episodes", "1", "--backend", "serial",
            "--no-progress"]
    assert main(argv) == 0
    assert main(argv) == 0
    capsys.readouterr()
    folders = sorted((tmp_path / "results" / "evaluate").iterdir())
    assert len(folders) == 2 and all(f.name.startswith("toy3__") for f in folders)
    assert all((folder / "results.json").is_file() for folder in folders)


def test_progress__logs_a_line_per_tenth_of_a_long_stage(caplog: pytest.LogCaptureFixture) -> None:
    """Off a terminal, a stage of 1,000 units logs 9 progress lines and its summary, counted in work."""
    caplog.set_level(logging.INFO, logger="training")
    with Progress(1000, "training", "step") as bar:
        for _ in range(250):
            bar.update(4)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == LOGGED_PARTS
    assert lines[0].startswith("training: 100 of 1,000 steps (10 %) in ")
    assert lines[-2].startswith("training: 900 of 1,000 steps (90 %) in ")
    assert lines[-1].startswith("training: 1,000 steps in ")


def test_terms_plot__one_colour_per_paid_term_and_the_legend_off_the_bars(tmp_path: Path) -> None:
    """objective_terms.png: only terms some agent pays, each its own colour, the legend outside the axes."""
    matplotlib.use("Agg")
    from training.evaluation.evaluator import evaluate
    from training.evaluation.plots import terms_figure

    evaluation = evaluate(scenarios.load("toy3"), ["first-fit", "cheapest"], 1, seed=0, progress=False)
    figure = terms_figure(evaluation)
    axes = figure.axes[0]
    handles, _ = axes.get_legend_handles_labels()
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    paid = [key.removesuffix("_usd") for key in USD_KEYS if any(evaluation.summary(n).mean.get(key) for n in
                                                                 evaluation.agents)]
    assert labels == paid[::-1] and 0 < len(labels) < len(USD_KEYS)  # the legend lists the stack top down
    colours = [tuple(np.round(h.patches[0].get_facecolor(), 4)) for h in handles]
    assert len(set(colours)) == len(colours)
    figure.canvas.draw()
    legend = axes.get_legend().get_window_extent()
    assert legend.x0 >= axes.get_window_extent().x1  # right of the axes: it covers no bar
