"""Running the placement service on uvicorn: in the foreground (``aco-env serve``) or in a thread (tests, benchmarks).

uvicorn stops gracefully on SIGINT and SIGTERM: it stops accepting connections, lets the requests
under way finish, then runs the app's shutdown, which writes the state file
(:meth:`serving.service.PlacementService.save`). So every job the service answered is in the
file, and a service started on it again has them all.
"""

from __future__ import annotations

import threading
import time

import uvicorn

from serving.app import create_app
from serving.service import PlacementService

LOOPBACK = "127.0.0.1"


def server_for(
    service: PlacementService, host: str = LOOPBACK, port: int = 8000, token: str | None = None
) -> uvicorn.Server:
    """A uvicorn server of ``service`` (not started); ``port=0`` takes a free port."""
    config = uvicorn.Config(
        create_app(service, token), host=host, port=port, log_level="warning", access_log=False,
        timeout_graceful_shutdown=30, lifespan="on",
    )  # fmt: skip
    return uvicorn.Server(config)


class ServerThread:
    """The service on loopback in a background thread, started by ``with`` and stopped at its end.

    Attributes:
        url: ``http://127.0.0.1:PORT`` once started.
    """

    def __init__(self, service: PlacementService, token: str | None = None) -> None:
        self.server = server_for(service, LOOPBACK, 0, token)
        self._thread = threading.Thread(target=self.server.run, name="aco-env-serve", daemon=True)
        self.url = ""

    def __enter__(self) -> ServerThread:
        self._thread.start()
        for _ in range(2000):  # up to 20 s of 10 ms waits for the socket
            if self.server.started:
                break
            if not self._thread.is_alive():
                raise RuntimeError("the service's server stopped while starting (see its log)")
            time.sleep(0.01)
        else:
            raise RuntimeError("the service's server did not start within 20 s")
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{LOOPBACK}:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=60)
