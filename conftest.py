"""Collection at the repository's root: the test layers (tests/layers.py) and the compiled modules' doctests.

pytest collects docstring examples by importing each library file; for the modules of
``digital_twin.native.COMPILED_MODULES`` that import finds the compiled build, not the file, and
pytest refuses the mismatch. While the build is active those files are left out here, and
tests/digital_twin/test_native_core.py runs their doctests on the sources (and checks that both play the
same episodes).
"""

from collections.abc import Iterator

import pytest

from digital_twin import native

pytest_plugins = ["tests.layers"]  # the test layers and their guards (make test-fast, make test)

collect_ignore = []
if native.status == native.COMPILED:
    collect_ignore = [f"digital_twin/{name.replace('.', '/')}.py" for name in native.COMPILED_MODULES]


@pytest.fixture(autouse=True, scope="session")
def private_prediction_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Prediction files go to the session's own cache, never ~/.cache: every run starts empty, as CI does.

    A fit found in the user's cache would hide that a test trains (the ``training`` marker's guard
    sees only optimiser steps taken).
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ACO_ENV_CACHE", str(tmp_path_factory.mktemp("aco-env-cache")))
        yield
