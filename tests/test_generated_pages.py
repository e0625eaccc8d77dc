"""The generated pages: rebuilt by one command from files kept in the repository, hand-written text untouched.

``make bench`` renders docs/benchmarks.json into docs/benchmarks.md's generated blocks and ``make
results`` renders docs/results/*/ into docs/results.md's; each table's header names its command,
commit and date. The committed pages must be exactly what their command writes today.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.paths import ROOT
from training.benchmarks.report import render_blocks
from training.cli.main import main
from training.evaluation.results_page import results_blocks, write_results_page
from training.outputs import GENERATED_END, replace_generated

DOCS = ROOT / "docs"
HEADER = re.compile(r"^Command: `aco-env [^`]+` \(commit ([0-9a-f]{7,10}|not recorded), \d{4}-\d{2}-\d{2}[;)]", re.M)


def _outside_blocks(text: str) -> str:
    """The page's hand-written text: everything outside its generated blocks."""
    return re.sub(r"<!-- generated: .*?<!-- end of generated: [\w.-]+ -->\n", "", text, flags=re.S)


def test_benchmarks_page__is_what_make_bench_writes_from_the_committed_json() -> None:
    """docs/benchmarks.md's blocks are docs/benchmarks.json rendered now; each names command, commit and date."""
    page = (DOCS / "benchmarks.md").read_text()
    blocks = render_blocks(json.loads((DOCS / "benchmarks.json").read_text()))
    assert replace_generated(page, blocks, "make bench") == page
    assert all(HEADER.search(body) for body in blocks.values())


def test_benchmarks_page__every_section_measured_has_a_block_headed_by_the_measuring_command() -> None:
    """Each section of the JSON (the placement service's too) renders a block; output options are left out."""
    results = json.loads((DOCS / "benchmarks.json").read_text())
    from training.cli.commands.bench import SECTIONS

    measured = {name for name in SECTIONS if results.get(name) is not None}
    blocks = render_blocks(results)
    assert "serve" in measured and set(blocks) == {f"bench-{name}" for name in measured}
    results["provenance"]["serve"]["command"] = "aco-env bench --only serve --out=x.json --markdown 'a b.md'"
    assert "Command: `aco-env bench --only serve` (commit" in render_blocks(results)["bench-serve"]


def test_results_page__is_what_make_results_writes_from_the_committed_results(tmp_path: Path) -> None:
    """docs/results.md's blocks are docs/results/*/ rendered now; each table names command, commit and date."""
    page = tmp_path / "results.md"
    shutil.copy(DOCS / "results.md", page)
    names = write_results_page(DOCS / "results", page)
    assert names and page.read_text() == (DOCS / "results.md").read_text()
    assert all(HEADER.search(body) for body in results_blocks(DOCS / "results").values())


def test_make_results__keeps_hand_written_text_and_adds_a_block_for_a_new_folder(tmp_path: Path) -> None:
    """Edited prose survives a rebuild; a results folder without a block gets one at the end of the page."""
    source = tmp_path / "results"
    first = next(p.parent for p in sorted((DOCS / "results").glob("*/results.json")))
    shutil.copytree(first, source / first.name)
    page = tmp_path / "page.md"
    page.write_text("# Results\n\nHand-written before.\n")
    assert main(["results", "--from", str(source), "--page", str(page)]) == 0
    edited = page.read_text().replace("Hand-written before.", "Edited by hand.") + "\nA closing note.\n"
    page.write_text(edited)
    shutil.copytree(first, source / "second")
    assert main(["results", "--from", str(source), "--page", str(page)]) == 0
    text = page.read_text()
    assert _outside_blocks(text).startswith("# Results\n\nEdited by hand.\n")
    assert "A closing note." in text
    assert text.index(GENERATED_END.format(name=first.name)) < text.index(GENERATED_END.format(name="second"))


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def test_make_results__a_folder_of_several_evaluations_is_one_summary_table(tmp_path: Path) -> None:
    """evaluate --scenario A --scenario B --out F: one table of means and paired differences, recomputed here."""
    first = next(p.parent for p in sorted((DOCS / "results").glob("*/results.json")))
    record = json.loads((first / "results.json").read_text())
    agents = list(record["agents"])
    objective = {name: [e["objective_usd"] for e in record["agents"][name]["per_episode"]] for name in agents}
    reference, other = agents[0], agents[1]
    pairs = list(zip(objective[reference], objective[other], strict=True))
    ref_mean = f"{sum(objective[reference]) / len(pairs):.3f}"
    ref_minus_other = f"{sum(r - o for r, o in pairs) / len(pairs):+.3f}"
    other_minus_ref = f"{sum(o - r for r, o in pairs) / len(pairs):+.3f}"
    ref_wins, other_wins = sum(r < o - 1e-9 for r, o in pairs), sum(o < r - 1e-9 for r, o in pairs)
    for parts in (2, len(agents)):  # fewer parts than agents: a row per agent; else a row per part
        folder = tmp_path / str(parts)
        for k in range(parts):
            shutil.copytree(first, folder / "several" / f"scenario{k}")
        block = results_blocks(folder)["several"]
        assert HEADER.search(block) and block.count("Command:") == 1
        rows = [_cells(line) for line in block.splitlines() if line.startswith("| ")]
        if parts < len(agents):
            by_agent = {row[0]: row[1:] for row in rows[1:]}
            assert len(by_agent) == len(agents) and by_agent[reference][1] == "reference"
            assert by_agent[reference][0].startswith(ref_mean)
            assert by_agent[other][1] == by_agent[other][3]
            assert by_agent[other][1].startswith(other_minus_ref)
            assert by_agent[other][1].endswith(f", {other_wins}/{len(pairs)}")
        else:
            assert len(rows) == parts + 1 and all(row[1].startswith(ref_mean) for row in rows[1:])
            assert rows[1][1 + len(agents)].startswith(ref_minus_other)
            assert rows[1][1 + len(agents)].endswith(f", {ref_wins}/{len(pairs)}")


def test_make_results__a_table_without_its_results_folder_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A page's table whose folder is gone cannot be rebuilt: exit 1, one line naming the table and folder."""
    page = tmp_path / "page.md"
    block = "<!-- generated: gone (rebuilt by make results; edit) -->\n| a |\n<!-- end of generated: gone -->\n"
    page.write_text(f"# R\n\n{block}")
    (tmp_path / "results").mkdir()
    assert main(["results", "--from", str(tmp_path / "results"), "--page", str(page)]) == 1
    assert f"the table 'gone' has no results folder {tmp_path / 'results' / 'gone'}" in capsys.readouterr().err


def test_make_results__a_results_file_without_provenance_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A results.json without its provenance.json: exit 1, one line naming the folder."""
    folder = tmp_path / "results" / "run"
    folder.mkdir(parents=True)
    shutil.copy(next((DOCS / "results").glob("*/results.json")), folder / "results.json")
    assert main(["results", "--from", str(tmp_path / "results"), "--page", str(tmp_path / "p.md")]) == 1
    assert f"{folder}: no provenance.json beside results.json" in capsys.readouterr().err


def test_bench_from__rebuilds_the_page_from_the_kept_json_and_measures_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bench --from docs/benchmarks.json --markdown PAGE` writes every block of the JSON; the prose stays."""
    page = tmp_path / "bench.md"
    page.write_text("# Benchmarks\n\nProse a person wrote.\n")
    assert main(["bench", "--from", str(DOCS / "benchmarks.json"), "--markdown", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# Benchmarks\n\nProse a person wrote.\n")
    for name, block in render_blocks(json.loads((DOCS / "benchmarks.json").read_text())).items():
        assert f"<!-- generated: {name}" in text and block in text
    assert main(["bench", "--from", str(DOCS / "benchmarks.json"), "--only", "twin", "--markdown", str(page)]) == 2
    assert "--from renders a results file kept before" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert main(["bench", "--from", str(tmp_path / "bad.json"), "--markdown", str(page)]) == 1
    assert f"--from {tmp_path / 'bad.json'}: not an aco-env bench results file" in capsys.readouterr().err


def test_bench__only_keeps_the_other_sections_and_the_page_s_prose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bench --only twin` into an existing JSON keeps its other sections; the page's prose stays as written."""
    out, page = tmp_path / "bench.json", tmp_path / "bench.md"
    shutil.copy(DOCS / "benchmarks.json", out)
    page.write_text("# Benchmarks\n\nProse a person wrote.\n")
    before = json.loads(out.read_text())
    assert main(["bench", "--quick", "--only", "twin", "--out", str(out), "--markdown", str(page)]) == 0
    capsys.readouterr()
    after = json.loads(out.read_text())
    assert {key for key in before if key in ("env", "aco", "oracle")} <= set(after)
    assert after["env"] == before["env"] and after["twin"] != before["twin"]
    assert after["provenance"]["twin"]["command"].startswith("aco-env bench --quick --only twin")
    text = page.read_text()
    assert text.startswith("# Benchmarks\n\nProse a person wrote.\n")
    twin_block = text[text.index("<!-- generated: bench-twin"):]
    assert "Command: `aco-env bench --quick --only twin" in twin_block.splitlines()[3]


MAX_README_BYTES = 12 * 1024
MAX_MARKDOWN_BYTES = 120 * 1024
"""The front door's budget: the README at most 12 KB, all the Markdown of the repository at most 120 KB."""
SKIPPED = {".venv", ".git", ".pytest_cache", "results", "runs", "build"}


def _markdown() -> list[Path]:
    """Every Markdown file of the repository (not a virtual environment's, nor local outputs')."""
    return [p for p in ROOT.rglob("*.md") if not any(part in SKIPPED or part.startswith(".venv")
                                                     for part in p.relative_to(ROOT).parts[:-1])]


def test_markdown__the_readme_and_all_pages_keep_to_their_size() -> None:
    """README.md <= 12 KB and all Markdown together <= 120 KB (a page that grows moves detail to a docstring)."""
    sizes = {str(p.relative_to(ROOT)): p.stat().st_size for p in _markdown()}
    assert sizes["README.md"] <= MAX_README_BYTES, sizes["README.md"]
    assert sum(sizes.values()) <= MAX_MARKDOWN_BYTES, sorted(sizes.items(), key=lambda item: -item[1])


def _rows(markdown: str) -> dict[str, list[str]]:
    """A Markdown text's table rows by their first cell (the cells stripped)."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in markdown.splitlines()
            if line.startswith("|") and not line.startswith("|---")]
    return {row[0]: row[1:] for row in rows}


def _readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    return text[text.index(f"## {title}"):].split("\n## ", 1)[0]


def _block(page: str, name: str) -> str:
    text = (DOCS / page).read_text()
    return text[text.index(f"<!-- generated: {name} "):text.index(f"<!-- end of generated: {name} -->")]


def test_readme_headline__every_number_is_the_generated_page_s() -> None:
    """Each row of the README's results table equals the same agent's row of docs/results.md, cell for cell."""
    readme = _rows(_readme_section("Results at a glance").split("Speed")[0])
    page = _rows(_block("results.md", "fleet5-synthetic"))
    readme.pop("agent")
    assert readme and page["agent"][:3] == ["objective $", "vs aco $", "wins"]
    for agent, cells in readme.items():
        assert page[agent][: len(cells)] == cells, agent


def test_readme_speed__the_numbers_are_the_benchmarks_page_s() -> None:
    """The README's speed numbers are docs/benchmarks.md's generated ones (the twin's decisions/s, the env's ratio)."""
    readme = list(_rows(_readme_section("Results at a glance").split("Speed")[1]).values())
    twin = _rows(_block("benchmarks.md", "bench-twin"))["decisions per wall second"][0]
    env = _rows(_block("benchmarks.md", "bench-env"))["ratio"][0]
    assert [cells[0] for cells in readme[1:]] == [twin, env]
