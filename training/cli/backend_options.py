"""``--backend`` and ``--address``: where a command's units run, and the check of the two together.

The check raises :class:`training.errors.UsageError` for a wrong pair, before any backend starts.
"""

from __future__ import annotations

import argparse

from training.errors import UsageError


def add_backend_arguments(parser: argparse.ArgumentParser, units: str) -> None:
    """``--backend`` (default ``processes``) and ``--address``, the options checked by :func:`check_backend`.

    Args:
        parser: The command's parser.
        units: What the backend runs, for the help (e.g. ``"the episodes"``).
    """
    from training.execution.registry import BACKENDS

    parser.add_argument(
        "--backend",
        choices=list(BACKENDS),
        default="processes",
        help=f"where {units} run: serial (this process), processes (one per core) or ray "
        "(a local Ray, or the cluster at --address) (default: %(default)s)",
    )
    parser.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="with --backend ray: the address of a running Ray cluster's head (`ray start --head`)",
    )


def check_backend(name: str, address: str | None) -> None:
    """Check ``--backend`` and ``--address`` together (the backend is not started).

    Raises:
        UsageError: ``--address`` for a backend that takes none, or not ``HOST:PORT``,
            ``ray://HOST:PORT`` or ``auto``.
        ModuleNotFoundError: The backend's optional extra is not installed (``aco-env`` says
            which to install).
    """
    import importlib.util

    from training.execution.ray_backend import parse_address  # imports no ray
    from training.execution.registry import BACKENDS

    entry = BACKENDS[name]  # argparse's choices checked the name
    if address is not None:
        if not entry.takes_address:
            with_address = ", ".join(n for n, e in BACKENDS.items() if e.takes_address)
            raise UsageError(f"--address names a Ray cluster; it goes with --backend {with_address}, not {name}")
        if address != "auto" and parse_address(address) is None:
            raise UsageError(f"--address {address}: expected HOST:PORT (a Ray head's address), ray://HOST:PORT or auto")
    if entry.needs_module is not None and importlib.util.find_spec(entry.needs_module) is None:
        raise ModuleNotFoundError(f"No module named {entry.needs_module!r}", name=entry.needs_module)


__all__ = ["add_backend_arguments", "check_backend"]
