"""The test layers, and the guards that keep the markers true (a pytest plugin, loaded by the root conftest.py).

Markers (declared in pyproject.toml):

* ``slow``: long runs, deselected by default (``make test-slow``);
* ``ray``: starts or joins a Ray cluster (Ray, Tune, RLlib);
* ``subprocess``: starts a child process (``subprocess``, ``multiprocessing``, ``os.fork``);
* ``training``: trains a model (an optimiser step: SB3, behaviour cloning, DAgger, RLlib, the
  LSTM predictor's fits);
* ``heavy``: seconds of CPU in one test (an oracle solve of a whole default episode, a long
  property search);
* ``slurm``: starts a real Slurm on loopback (its daemons are child processes);
* ``smoke``: one quick test of each kind of thing (``make smoke``: seconds, for every save;
  only the modules that mark a test ``smoke`` are imported).

No test asserts a wall time (tests/hang_guard.py); hypothesis runs without deadlines (the root
conftest.py). In a base install without torch, SB3, FastAPI or Ray (``make test-base``), the
fast layer leaves out what needs them (tests/optional_extras.py).

Layers, chosen by the environment variable ``ACO_ENV_TEST_LAYER``:

* ``fast`` (``make test-fast``): the library's tests (every test outside ``tests/training/``,
  and the library's doctests) that carry none of the markers above: the twin's invariants, the
  env checkers, scenario and trace parsing, the agents and the oracle on small instances.
* ``rest``: every other test that is not slow: ``tests/training/`` and the marked tests.
* unset: the whole default suite (both layers) in one run, as ``make test`` runs it.

Guards, in every layer, so that a marker cannot be forgotten: a test marked neither
``subprocess`` nor ``ray`` that starts a process, and a test not marked ``training`` that takes
an optimiser step in the test process, fail with :class:`LayerError`, which names the marker.
The fast layer also refuses to import Ray at all (collection included); in a run of every layer
(``make test``) each fast-layer test does, unless a ``ray`` test of the same worker has already
loaded it. torch itself may load anywhere: SB3's env checker needs it, and a saved model may act
without training.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import multiprocessing.process
import os
import platform
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

LAYER_VARIABLE = "ACO_ENV_TEST_LAYER"
FAST, REST = "fast", "rest"
OUTSIDE_THE_FAST_LAYER = ("ray", "subprocess", "training", "heavy", "slurm")
"""Markers that put a test in the ``rest`` layer."""
MAY_START_PROCESSES = ("subprocess", "ray", "slurm")
NOT_IN_THE_FAST_LAYER = ("ray",)
"""Top-level modules the fast layer never imports."""
OPTIMIZER_MODULE = "torch.optim.optimizer"
"""Where torch's optimisers live: every step passes the guard's hook."""
ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "tests" / "training"
"""The tests of the training package (the CLI and experiments): all in the ``rest`` layer."""


class LayerError(RuntimeError):
    """A test did what its markers say it does not (started a process, trained, imported Ray).

    Not an ``ImportError``, so that ``pytest.importorskip`` cannot turn it into a skip.
    """


class _Guard:
    """What the running test may do (set per test by :func:`_markers_are_true`)."""

    may_train = True
    refuses_ray = False  # through the fast layer; in a run of every layer, during each fast-layer test


def layer() -> str | None:
    """The layer this run selects: ``"fast"``, ``"rest"`` or ``None`` (all of the default suite)."""
    value = os.environ.get(LAYER_VARIABLE) or None
    if value not in (None, FAST, REST):
        raise pytest.UsageError(f"{LAYER_VARIABLE} must be {FAST!r} or {REST!r}, got {value!r}")
    return value


def in_fast_layer(item: pytest.Item) -> bool:
    """Whether ``item`` belongs to the fast layer (see the module docstring)."""
    if Path(str(item.path)).is_relative_to(EXPERIMENTS):
        return False
    return not any(item.get_closest_marker(name) for name in OUTSIDE_THE_FAST_LAYER)


def _refuse_a_step(*args: object, **kwargs: object) -> None:
    """torch's global optimiser pre-step hook: refuses while the running test may not train."""
    del args, kwargs
    if not _Guard.may_train:
        raise LayerError("this test trains (an optimiser step): mark it `training`")


class _GuardedImports(importlib.abc.MetaPathFinder):
    """Hooks :func:`_refuse_a_step` into torch's optimisers when they load; refuses Ray in the fast layer."""

    def __init__(self, refused: Sequence[str]) -> None:
        self._refused = tuple(refused)  # refused while _Guard.refuses_ray

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top in self._refused and _Guard.refuses_ray:
            raise LayerError(f"the fast layer imports no {top}: mark the test `{top}`")
        if fullname != OPTIMIZER_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _HookedLoader(spec.loader)
        return spec


class _HookedLoader(importlib.abc.Loader):
    """Runs torch's optimizer module, then registers :func:`_refuse_a_step` before every step."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        module.register_optimizer_step_pre_hook(_refuse_a_step)


def pytest_configure(config: pytest.Config) -> None:
    """Check the layer's name and install the import guard, before any test module loads."""
    del config
    _build_the_font_cache()
    platform.processor()  # SB3 saves it with a model; the first call runs `uname -p` (a child process), then caches
    _Guard.refuses_ray = layer() == FAST
    refused = NOT_IN_THE_FAST_LAYER if layer() != REST else ()
    loaded = [name for name in refused if name in sys.modules]
    if loaded:
        raise pytest.UsageError(f"the run started with {loaded} already imported")
    optimizers = sys.modules.get(OPTIMIZER_MODULE)
    if optimizers is not None:
        optimizers.register_optimizer_step_pre_hook(_refuse_a_step)
    sys.meta_path.insert(0, _GuardedImports(refused))


def _build_the_font_cache() -> None:
    """Let matplotlib find its fonts now, outside any test.

    On its first import in a new environment matplotlib asks ``fc-list`` for the system's fonts (a
    child process); the guard would blame whichever unmarked test draws first.
    """
    with contextlib.suppress(ImportError):
        import matplotlib.font_manager  # noqa: F401  (builds or loads the font cache)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The fast layer does not even collect ``tests/training/`` (none of it is in the layer)."""
    del config
    if layer() == FAST and collection_path.is_relative_to(EXPERIMENTS):
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the items of the selected layer; report the others as deselected."""
    selected = layer()
    if selected is None:
        return
    keep = [item for item in items if in_fast_layer(item) == (selected == FAST)]
    dropped = [item for item in items if in_fast_layer(item) != (selected == FAST)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def _refuse_a_process(what: str) -> Any:
    def refuse(*args: object, **kwargs: object) -> None:
        del args, kwargs
        raise LayerError(f"this test starts a process ({what}): mark it `subprocess` (or `ray`)")

    return refuse


@pytest.fixture(autouse=True)
def _markers_are_true(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A test may start processes only if marked so, and train only if marked ``training``."""
    node = request.node
    if not any(node.get_closest_marker(name) for name in MAY_START_PROCESSES):
        monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse_a_process("subprocess"))
        monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", _refuse_a_process("multiprocessing"))
        monkeypatch.setattr(os, "fork", _refuse_a_process("os.fork"))
        monkeypatch.setattr(os, "posix_spawn", _refuse_a_process("os.posix_spawn"))
    _Guard.may_train = node.get_closest_marker("training") is not None
    fast_layer = layer() == FAST
    if layer() is None:  # a run of every layer: a fast-layer test may not import Ray (unless loaded already)
        _Guard.refuses_ray = in_fast_layer(node)
    try:
        yield
    finally:
        _Guard.may_train = True
        _Guard.refuses_ray = fast_layer
