"""The shape of the code base: no import circle, small modules and functions, nothing cited from outside.

These rules keep the house one a newcomer can read (docs/architecture.md, "Layout"): every module of
the library packages is checked, so a new one is covered without editing this file. Everything
committed that a person reads (the code, the docs, CHANGELOG.md, the scenarios, the recordings and
other files under tests/data) holds no machine path, no commit hash (but in a generated table's
header) and no issue number. The packages are read from pyproject.toml, the files from the tree:
nothing here is counted by hand.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY_PACKAGES = tuple(
    tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["root_packages"]
)
"""Every top-level package of the library (the import contracts' root packages)."""
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 100


def _library_files(package: str) -> list[Path]:
    """The package's Python sources (not the compiled build's generated files)."""
    return sorted(p for p in (ROOT / package).rglob("*.py") if "_compiled" not in p.parts)


def _cited_files() -> list[Path]:
    """Everything whose text a user reads as the project's: the library, the examples, the Makefile."""
    files = [p for package in LIBRARY_PACKAGES for p in _library_files(package)]
    files += sorted((ROOT / "examples").glob("*.py"))
    files += [ROOT / "Makefile", ROOT / "pyproject.toml", ROOT / "README.md"]
    return files


def _generated_reports() -> list[Path]:
    """The reports the code writes into docs/ (benchmarks, reproduction) and the hand-kept results."""
    return sorted((ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("package", LIBRARY_PACKAGES)
def test_no_import_circle(package: str) -> None:
    """No module of the library imports itself back through others (imports inside functions count)."""
    grimp = pytest.importorskip("grimp")
    nx = pytest.importorskip("networkx")
    graph = grimp.build_graph(*LIBRARY_PACKAGES)
    edges = nx.DiGraph()
    for module in graph.modules:
        edges.add_edges_from((module, imported) for imported in graph.find_modules_directly_imported_by(module))
    circles = [
        sorted(component)
        for component in nx.strongly_connected_components(edges)
        if len(component) > 1 and any(m.split(".")[0] == package for m in component)
    ]
    assert not circles, f"import circles: {circles}"


@pytest.mark.parametrize("package", LIBRARY_PACKAGES)
def test_no_module_over_400_lines(package: str) -> None:
    """Every library module has at most 400 lines (split a module that grows past it)."""
    long = {
        str(p.relative_to(ROOT)): n
        for p in _library_files(package)
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


@pytest.mark.parametrize("package", LIBRARY_PACKAGES)
def test_no_function_over_100_lines(package: str) -> None:
    """Every function and method, decorators and docstring included, has at most 100 lines."""
    long = {}
    for path in _library_files(package):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = (node.end_lineno or node.lineno) - first + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


ISSUE_NUMBER = re.compile(r"\b[Ii]ssues?\s*#?\d+|\(#\d+\)|\bPR\s*#?\d+")
OUTSIDE = re.compile(r"\.\./shared(?!/traces)|\bshared/(?!traces)|our decision \d")
"""The developers' shared folder (its traces are data the tests read, never cited) and its numbering."""
CITED_DOCUMENT = re.compile(r"(?:[\w.-]+/)+[\w-]+\.md\b|\b[A-Z][A-Z_]+\.md\b")
"""A markdown file named as a document: a path (``docs/design.md``) or an upper-case name (``README.md``).
Lower-case bare names (``summary.md``) are files the code writes or an upstream data set's own."""
PLACEHOLDER = re.compile(r"[A-Z_]+/")
"""A path under a folder the user names (``OUT/summary.md``): an output, not a citation."""


def test_no_issue_number_nor_change_history_in_library_code() -> None:
    """Code, docstrings and generated reports never name an issue: history belongs in CHANGELOG.md."""
    hits = [
        f"{path.relative_to(ROOT)}:{k}: {line.strip()}"
        for path in [*_cited_files(), *_generated_reports()]
        for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE_NUMBER.search(line)
    ]
    assert not hits, "issue numbers:\n" + "\n".join(hits)


def test_no_reference_to_a_file_outside_the_repository() -> None:
    """Every document the code cites lives in the repository (docs/design.md, docs/reference.md, ...)."""
    present = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    hits = []
    for path in _cited_files():
        for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            cited = [name for name in CITED_DOCUMENT.findall(line) if not PLACEHOLDER.match(name)]
            missing = [name for name in cited if not any(p.endswith(name) for p in present)]
            if OUTSIDE.search(line) or missing:
                hits.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()}")
    assert not hits, "references outside the repository:\n" + "\n".join(hits)


COMMITTED_TEXT = ("*.md", "*.py", "*.yaml", "*.yml", "*.json", "*.toml", "*.txt", "*.csv", "*.cfg", "Makefile")
"""The kinds of files scanned for machine paths, commit hashes and issue numbers."""
SKIPPED_DIRS = re.compile(
    r"^(\.venv.*|\.git|\.pytest_cache|\.hypothesis|\.ruff_cache|\.mypy_cache|__pycache__|_compiled|build|runs"
    r"|results|.*\.egg-info)$"
)
"""Not the project's text: virtual environments, caches, builds, local outputs (the top-level ``results/``)."""
MACHINE_PATH = re.compile(r"(?<![\w.~$}])/(?:work|tmp|home|root|Users)/")
"""An absolute path of some machine (a user's home, a scratch or temporary folder)."""
COMMIT_HASH = re.compile(r"(?<![\w/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")
"""A short or full commit hash: 7 to 40 hex digits, letters and digits both (SHA-256 digests are longer)."""
ALLOWED_HASH = re.compile(
    r'^Command: `[^`]+` \(commit [0-9a-f]{7,10}[,;]|upstream commit `[0-9a-f]{7,40}`|^\s*"commit": "[0-9a-f]{7,40}",?$'
    r"|^\* Commit [0-9a-f]{7,10}, started "
)
"""Where a hash belongs: a generated table's header, a provenance record (and a shipped model's README
line of it, :mod:`training.learning.ship_model`), a reference's upstream revision."""


def _committed_text() -> list[Path]:
    """The repository's text files a person reads (not virtual environments, caches, builds or local outputs)."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        here = Path(folder)
        subfolders[:] = [d for d in subfolders if not (SKIPPED_DIRS.match(d) and (d != "results" or here == ROOT))]
        found += [here / f for f in files if any(fnmatch.fnmatch(f, pattern) for pattern in COMMITTED_TEXT)]
    return sorted(found)


def test_committed_text__covers_the_docs_the_changelog_and_the_test_data() -> None:
    """The scan reaches every page under docs/, CHANGELOG.md and every file under tests/data."""
    scanned = set(_committed_text())
    assert (ROOT / "CHANGELOG.md") in scanned
    assert set((ROOT / "docs").glob("*.md")) <= scanned
    data = {p for p in (ROOT / "tests" / "data").rglob("*") if p.is_file()}
    assert data and data <= scanned


def test_no_machine_path_anywhere_committed() -> None:
    """No absolute path of a machine (a scratch, temporary or home folder) in anything committed."""
    hits = [
        f"{path.relative_to(ROOT)}:{k}: {line.strip()[:160]}"
        for path in _committed_text()
        for k, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if MACHINE_PATH.search(line)
    ]
    assert not hits, "machine paths:\n" + "\n".join(hits)


def test_no_commit_hash_nor_issue_number_anywhere_committed() -> None:
    """History is CHANGELOG.md's, in words: no commit hash (but generated headers) and no issue number anywhere."""
    hits = []
    for path in _committed_text():
        if path.name == "test_house_rules.py":
            continue
        for k, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            hashes = [] if ALLOWED_HASH.search(line) else COMMIT_HASH.findall(line)
            if hashes or ISSUE_NUMBER.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()[:160]}")
    assert not hits, "commit hashes or issue numbers:\n" + "\n".join(hits)
