"""Compile the twin's hot modules with mypyc (:mod:`digital_twin.native` says how a build is used).

Usage::

    python -m digital_twin.compile_core            # build into digital_twin/_compiled/
    python -m digital_twin.compile_core --status   # which twin an import of digital_twin runs, and why

``make install`` runs the first (so ``make run`` and ``make test`` do); it needs mypy (which
ships mypyc; the ``test`` extra), setuptools and a C compiler, and takes about 30 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from digital_twin import native


def build() -> None:
    """Compile :data:`~digital_twin.native.COMPILED_MODULES` into :data:`~digital_twin.native.BUILD_DIR`.

    The build is made in a temporary directory and moved in place, replacing any previous
    one, only when complete, with the digest of the sources it was made from (read before
    compiling: if a source changes during the build, the digest will not match and the build
    is never used).

    Raises:
        ImportError: mypyc or setuptools is not installed.
        SystemExit: mypy found a type error, or the C compiler failed (setuptools' exit).
    """
    from mypyc.build import mypycify  # a development dependency: imported only to build
    from setuptools import setup

    digest = native.source_digest()
    with tempfile.TemporaryDirectory(prefix="digital_twin-build-") as tmp:
        staging = Path(tmp) / native.BUILD_DIR.name
        cwd = Path.cwd()
        try:
            os.chdir(native.PACKAGE_DIR.parent)  # mypy reads the project's configuration, and names modules, from here
            extensions = mypycify(
                [f"digital_twin/{name.replace('.', '/')}.py" for name in native.COMPILED_MODULES],
                target_dir=str(Path(tmp) / "c"),
                group_name=native.GROUP,
            )
            os.chdir(tmp)  # not the project's: setuptools would read its pyproject.toml
            setup(
                name="digital_twin-native-core",
                ext_modules=extensions,
                script_args=["--quiet", "build_ext", "--build-lib", str(staging), "--build-temp", str(Path(tmp) / "o")],
            )
        finally:
            os.chdir(cwd)
        (staging / native.DIGEST_FILE.name).write_text(digest + "\n")
        previous = native.BUILD_DIR.with_name(native.BUILD_DIR.name + ".old")
        shutil.rmtree(previous, ignore_errors=True)
        if native.BUILD_DIR.exists():
            native.BUILD_DIR.rename(previous)
        shutil.move(staging, native.BUILD_DIR)
        shutil.rmtree(previous, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m digital_twin.compile_core", description=__doc__.splitlines()[0])
    parser.add_argument("--status", action="store_true", help="say which twin an import runs, and why; build nothing")
    args = parser.parse_args(argv)
    if not args.status:
        build()
        print(f"digital_twin: compiled {len(native.COMPILED_MODULES)} modules into {native.BUILD_DIR}")
        return 0
    native.decide()
    print(f"digital_twin runs {native.status}: {native.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
