"""The backends by name: what ``--backend`` accepts, and :func:`make_backend` to build one.

The concrete backends are imported only when built: ``processes`` starts a pool
(:mod:`training.execution.process_backend`), ``ray`` imports Ray when entered
(:mod:`training.execution.ray_backend`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from training.execution.backend import Backend, SerialBackend


@dataclass(frozen=True)
class BackendEntry:
    """A backend :func:`make_backend` can build.

    Attributes:
        factory: ``factory(address)``: the backend, not yet started.
        takes_address: Whether the backend runs on a cluster given by address.
        needs_module: The top-level module of the optional extra the backend needs (``None``: the
            base install is enough); commands check it is installed before any work.
    """

    factory: Callable[[str | None], Backend]
    takes_address: bool = False
    needs_module: str | None = None


def _process_backend(address: str | None) -> Backend:
    del address  # takes none
    from training.execution.process_backend import ProcessBackend  # multiprocessing: only when used

    return ProcessBackend()


def _ray_backend(address: str | None) -> Backend:
    from training.execution.ray_backend import RayBackend  # imports no ray until entered

    return RayBackend(address)


BACKENDS: dict[str, BackendEntry] = {
    "serial": BackendEntry(lambda address: SerialBackend()),
    "processes": BackendEntry(_process_backend),
    "ray": BackendEntry(_ray_backend, takes_address=True, needs_module="ray"),
}
"""The backends by name (``aco-env evaluate --backend``), in the order the help lists them."""


def make_backend(name: str, address: str | None = None) -> Backend:
    """The backend called ``name`` (a key of :data:`BACKENDS`), not yet started.

    Args:
        name: ``"serial"``, ``"processes"`` or ``"ray"``.
        address: A Ray cluster's ``HOST:PORT`` (``"ray"`` only); ``None`` = a local Ray.

    Raises:
        ValueError: An unknown name, or an address for a backend that takes none.
    """
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    entry = BACKENDS[name]
    if address is not None and not entry.takes_address:
        raise ValueError(f"the {name} backend takes no address (an address names a Ray cluster)")
    return entry.factory(address)


__all__ = ["BACKENDS", "BackendEntry", "make_backend"]
