"""``aco-env suite`` end to end on the two-task suite: files written, agents added, mistakes refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.training.cli.test_cli_errors import assert_one_line_error, cli
from training.suite.results_file import without_seconds

pytestmark = pytest.mark.subprocess  # each command runs in a forked child
TINY = str(Path(__file__).parent / "tiny_suite.yaml")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("references")


def _suite(cache: Path, out: Path, *args: str):  # type: ignore[no-untyped-def]
    return cli("suite", "--suite", TINY, "--cache", str(cache), "--out", str(out), "--backend", "serial",
               "--no-progress", *args)  # fmt: skip


def test_suite_cli__writes_results_leaderboard_and_plots_and_adds_agents_to_a_run(tmp_path: Path, cache: Path) -> None:
    both = _suite(cache, tmp_path / "both", "--agents", "first-fit,aco", "--leaderboard", str(tmp_path / "docs/lb.md"))
    assert both.returncode == 0, both.stderr
    assert "tiny-suite v3: All tasks, 2 tasks" in both.stdout
    for path in ("both/suite.json", "both/leaderboard.md", "both/leaderboard/aggregates.png",
                 "both/leaderboard/profiles.png", "docs/lb.md", "docs/leaderboard/profiles.png"):  # fmt: skip
        assert (tmp_path / path).stat().st_size > 0, path
    markdown = (tmp_path / "docs/lb.md").read_text()
    assert markdown.startswith("# Leaderboard: tiny-suite v3")
    assert "aco-env suite --suite" in markdown and "| planted5 | train | planted optimum |" in markdown

    first = _suite(cache, tmp_path / "grown", "--agents", "first-fit")
    added = _suite(cache, tmp_path / "grown", "--agents", "aco", "--add-to", str(tmp_path / "grown"))
    assert first.returncode == 0 and added.returncode == 0, added.stderr
    grown = json.loads((tmp_path / "grown/suite.json").read_text())
    together = json.loads((tmp_path / "both/suite.json").read_text())
    assert len(grown.pop("commands")) == 2 and len(together.pop("commands")) == 1
    assert without_seconds(grown) == without_seconds(together)

    solo = _suite(cache, tmp_path / "solo", "--agents", "cheapest", "--tasks", "default")  # one task only
    merged = _suite(cache, tmp_path / "merged", "--agents", "none", "--add-to", str(tmp_path / "both"),
                    str(tmp_path / "solo"))  # fmt: skip
    assert solo.returncode == 0 and merged.returncode == 0, merged.stderr
    document = json.loads((tmp_path / "merged/suite.json").read_text())
    assert document["agents"] == ["first-fit", "aco", "cheapest"] and len(document["commands"]) == 2
    assert list(document["tasks"]["planted5"]["agents"]) == ["first-fit", "aco"]
    assert "cheapest" not in document["aggregates"]["all"] and "cheapest" in document["aggregates"]["held-out"]
    twice = _suite(cache, tmp_path / "twice", "--agents", "none", "--add-to", str(tmp_path / "both"),
                   str(tmp_path / "both"))  # fmt: skip
    assert_one_line_error(twice, 1, "--add-to", "played in both runs:", "first-fit on planted5")


def test_suite_cli__lists_the_tasks_without_playing(tmp_path: Path) -> None:
    result = cli("suite", "--suite", TINY, "--list")
    assert result.returncode == 0, result.stderr
    assert "planted5" in result.stdout and "100000..100001" in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "fragments"),
    [
        (("--tasks", "nope"), 1, ("tiny-suite v3 has no task 'nope'",)),
        (("--agents", "first-fit,no-such-agent"), 2, ("--agents", "no-such-agent")),
        (("--agents", "aco", "--add-to", "/nonexistent"), 1, ("--add-to", "suite.json")),
    ],
)
def test_suite_cli__refuses_mistakes_in_one_line(tmp_path: Path, args: tuple[str, ...], code: int, fragments) -> None:  # type: ignore[no-untyped-def]
    result = _suite(tmp_path, tmp_path / "out", *args)
    assert_one_line_error(result, code, *fragments)
    assert not (tmp_path / "out" / "suite.json").exists()
