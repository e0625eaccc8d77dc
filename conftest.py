"""Collection at the repository's root: the test layers (tests/layers.py) and the compiled modules' doctests.

pytest collects docstring examples by importing each library file; for the modules of
``digital_twin.native.COMPILED_MODULES`` that import finds the compiled build, not the file, and
pytest refuses the mismatch. While the build is active those files are left out here, and
tests/digital_twin/test_native_core.py runs their doctests on the sources (and checks that both play the
same episodes).
"""

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from digital_twin import native

pytest_plugins = ["tests.layers"]  # the test layers and their guards (make test-fast, make test)

# No test asserts a wall time (tests/hang_guard.py): hypothesis' per-example deadline and its
# "too slow" health check would, on a loaded machine. Examples are bounded by their count and size.
settings.register_profile("aco-env", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("aco-env")

collect_ignore = []
if native.status == native.COMPILED:
    collect_ignore = [f"digital_twin/{name.replace('.', '/')}.py" for name in native.COMPILED_MODULES]


def pytest_configure(config: pytest.Config) -> None:
    """In a base install (no torch, FastAPI, ...), a library module that needs an extra has no doctests to run.

    Its doctest module is skipped when its import fails (``--doctest-ignore-import-errors``, set
    only there): the full install (``make install``) still fails on any import error.
    """
    from tests.optional_extras import missing_extras

    if missing_extras():
        config.option.doctest_ignore_import_errors = True


@pytest.fixture(autouse=True, scope="session")
def private_prediction_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Prediction files go to the session's own cache, never ~/.cache: every run starts empty, as CI does.

    A fit found in the user's cache would hide that a test trains (the ``training`` marker's guard
    sees only optimiser steps taken).
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ACO_ENV_CACHE", str(tmp_path_factory.mktemp("aco-env-cache")))
        yield
