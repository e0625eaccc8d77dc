"""Serve an agent over a live cluster: ``aco-env serve --agent SPEC --fleet SCENARIO``.

An HTTP service (FastAPI on uvicorn; the ``serve`` extra) that places the jobs a cluster submits
with any registered agent or ``sb3:`` model, on the scenario's fleet, from the events the cluster
pushes (jobs submitted, finished and cancelled; node telemetry; spot nodes down and up). It
also answers kube-scheduler as a scheduler extender. Routes: ``/docs`` on the running service,
docs/serving.md.

It binds 127.0.0.1 unless ``--host`` says otherwise. ``--token-file`` (or the environment
variable ``ACO_ENV_SERVE_TOKEN``) makes every route but ``/healthz`` need ``Authorization:
Bearer TOKEN``. Ctrl-C or SIGTERM stops it gracefully: requests under way finish, then the
journal of every event and decision is written to ``--state`` (a temporary file renamed into
place); started again with the same ``--state``, it replays the journal and goes on.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from training.errors import EXIT_OK, DataError, UsageError

HELP = "serve an agent over a live cluster (HTTP placement service, Kubernetes scheduler extender)"
TOKEN_VARIABLE = "ACO_ENV_SERVE_TOKEN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--agent, --fleet, --host, --port, --token-file, --state, --seed, --default-duration-s."""
    parser.add_argument("--agent", required=True, help="registered agent (options allowed: NAME[k=v]) or sb3:PATH")
    parser.add_argument(
        "--fleet",
        default="fleet5-synthetic",
        help="scenario whose fleet and settings the service places on (bundled name or YAML path)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (0: any free port; default 8000)")
    parser.add_argument("--token-file", type=Path, help=f"file holding the bearer token (or set {TOKEN_VARIABLE})")
    parser.add_argument("--state", type=Path, help="journal file: replayed at start when it exists, written at stop")
    parser.add_argument("--seed", type=int, default=0, help="seeds the agent (default 0)")
    parser.add_argument("--default-duration-s", type=float, default=3600.0,
                        help="run time declared for jobs submitted without one (default 3600 s)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Check the options, build the live cluster and serve until stopped."""
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: a port is 0..65535")
    if not args.default_duration_s > 0:
        raise UsageError(f"--default-duration-s {args.default_duration_s}: must be > 0")
    token = read_token(args.token_file)
    from serving.server import server_for  # the serve extra, imported only here

    service = build_checked(args.agent, args.fleet, args.seed, args.default_duration_s, args.state)
    server = server_for(service, args.host, args.port, token)
    print(f"aco-env serve: {args.agent} on {service.cluster.scenario.name} at http://{args.host}:{args.port} "
          f"(docs at /docs{', token required' if token else ''})", flush=True)  # fmt: skip
    saved = f"; every accepted job is in {args.state}" if args.state is not None else ""
    try:
        server.run()
    except KeyboardInterrupt:  # SIGTERM or Ctrl-C, after uvicorn drained the requests and the journal was written
        raise KeyboardInterrupt(f"stopped gracefully{saved}") from None
    print(f"aco-env serve: stopped{saved}", flush=True)
    return EXIT_OK


def build_checked(agent: str, fleet: str, seed: int, default_duration_s: float, state: Path | None):
    """:func:`serving.build.build_service`, its errors as the CLI's (an unknown agent: usage; a file: data)."""
    from agents import AgentSpecError
    from serving.build import build_service

    try:
        return build_service(agent, fleet, seed, default_duration_s, state)
    except AgentSpecError as exc:
        raise UsageError(f"--agent {agent}: {exc}") from None
    except ValueError as exc:  # a scenario, model or state file that cannot be used: the message names it
        raise DataError(str(exc)) from None


def read_token(path: Path | None) -> str | None:
    """The bearer token: the file's first line, else the environment's, else none.

    Raises:
        DataError: The file cannot be read or is empty.
    """
    if path is None:
        return os.environ.get(TOKEN_VARIABLE) or None
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the token file ({exc.strerror or exc})") from None
    if not token:
        raise DataError(f"{path}: the token file is empty")
    return token
