"""The ``aco-env`` command line: one entry point, one module per subcommand.

Each module in :mod:`training.cli.commands` listed in :data:`COMMANDS` defines ``HELP`` (one line,
a string literal: ``aco-env --help`` reads it from the source without importing the module),
``add_arguments(parser)`` and ``run(args) -> int`` (the exit code), and may define ``PARSER``,
the class (or factory) of its parser (``train``: simple-parsing's, generated from a dataclass), and
``STOP_POLICY``, how it answers repeated signals (:mod:`training.execution.interrupts`; training
commands save first). Commands check their arguments and outputs before any work starts and raise
:class:`training.errors.UsageError` or :class:`~training.errors.DataError`; :func:`main` turns
those, the library's data errors, files that cannot be written and interruptions into one line on
stderr and the exit codes of :mod:`training.errors`. Every command runs inside
:class:`training.execution.interrupts.Interrupts`: Ctrl-C or SIGTERM ends it with exit 130 within
seconds, a second one at once.

Only the named command's module is imported (its options are added to its parser): ``aco-env
--help`` and ``--version`` import none of the twin, numpy or torch. An unknown command is
answered with the closest names (exit 2).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import importlib
import importlib.util
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any, NoReturn

from training.errors import (
    EXIT_CODES_HELP,
    EXIT_DATA,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CommandError,
    UsageError,
    message_line,
)

COMMANDS = (
    "run",
    "train",
    "sweep",
    "evaluate",
    "results",
    "suite",
    "export-planted",
    "scenarios",
    "validate",
    "replay",
    "bench",
    "reproduce",
    "rllib",
    "capacity-fill",
    "serve",
    "slurm-bridge",
)
"""Subcommand names; ``training/cli/commands/<name>.py`` implements each."""
DEBUG_ENV = "ACO_ENV_DEBUG"
"""Set to 1 for tracebacks (as ``--debug``)."""
PROG = "aco-env"
TRAIN_EXTRA = frozenset({"torch", "stable_baselines3", "sb3_contrib", "tensorboard"})
"""Top-level modules of the ``train`` extra (``pip install 'aco-env[train]'``)."""
RAY_EXTRA = frozenset({"ray"})
"""Top-level modules of the ``ray`` extra (``pip install 'aco-env[ray]'``): ``--backend ray``."""
SERVE_EXTRA = frozenset({"fastapi", "uvicorn", "starlette", "httpx"})
"""Top-level modules of the ``serve`` extra (``pip install 'aco-env[serve]'``): ``serve``, ``slurm-bridge``."""


ALL = "*"
"""``build_parser(ALL)``: every subcommand with its options (imports every command module)."""


def build_parser(command: str | None = ALL) -> argparse.ArgumentParser:
    """The parser with every subcommand; the options of ``command`` (of all with :data:`ALL`) are added.

    Only the modules of the commands whose options are added are imported (torch only where needed);
    the others' parsers show their one-line help and take no options.
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Job placement on a heterogeneous compute fleet: scenarios, agents, evaluation, benchmarks.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_debug_option(parser)
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    subparsers = parser.add_subparsers(  # type: ignore[call-overload]  # argparse calls any parser_class
        dest="command", metavar="COMMAND", title="commands", parser_class=_new_parser
    )
    for name in COMMANDS:
        if command not in (ALL, name):
            subparsers.add_parser(name, help=help_line(name), parser_class=argparse.ArgumentParser)
            continue
        module = importlib.import_module(_module_name(name))
        sub = subparsers.add_parser(
            name,
            help=module.HELP,
            description=module.__doc__,
            epilog=EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            parser_class=getattr(module, "PARSER", argparse.ArgumentParser),
        )
        _add_debug_option(sub)
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run, _stop_policy=getattr(module, "STOP_POLICY", None))
    return parser


def _module_name(command: str) -> str:
    return f"training.cli.commands.{command.replace('-', '_')}"


def help_line(command: str) -> str:
    """The ``HELP`` string literal of ``command``'s module, read from its source (the module is not imported).

    Raises:
        ValueError: The module has no ``HELP = "..."`` literal at its top level.
    """
    spec = importlib.util.find_spec(_module_name(command))
    source = spec.loader.get_source(spec.name) if spec is not None and spec.loader is not None else None
    for node in ast.parse(source or "").body:
        named = isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "HELP" for t in node.targets)
        if named and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node.value.value
    raise ValueError(f"{_module_name(command)} has no HELP string literal")


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (``None`` when there is none)."""
    return next((word for word in argv if not word.startswith("-")), None)


def unknown_command(word: str) -> str:
    """The usage error for a command that does not exist, with the closest names."""
    close = difflib.get_close_matches(word, COMMANDS, n=2, cutoff=0.7)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"{PROG}: error: unknown command {word!r}{hint} (the commands: {', '.join(COMMANDS)})"


def _add_debug_option(parser: argparse.ArgumentParser) -> None:
    """``--debug``, before or after the command (a parent parser would not reach simple-parsing's parsers)."""
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help=f"show tracebacks and debug messages (or set {DEBUG_ENV}=1)",
    )


def _new_parser(parser_class: Callable[..., argparse.ArgumentParser], **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand's parser, of the class its module asks for (``add_subparsers`` has one class for all)."""
    return parser_class(**kwargs)


def console() -> NoReturn:
    """The ``aco-env`` program: :func:`main`, then exit with its code.

    Signals that arrive after the command returned end the process at once with exit 130. An
    interrupted command (exit 130) has stopped its workers already: the process then exits without
    the interpreter's shutdown clean-up, during which Python would restore the default signal
    handlers (another SIGTERM would kill it by the signal) and could wait on a pool's threads.
    """
    code = main(exiting=True)
    if code == EXIT_INTERRUPTED:
        _release_multiprocessing()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _release_multiprocessing() -> None:
    """Run multiprocessing's exit clean-up (its semaphores), which ``os._exit`` skips.

    Without it multiprocessing's resource tracker, a process of its own, reports the semaphores of
    a killed pool's queues as leaked (a warning on stderr after the command's line). The workers
    are dead by now, so its joins return at once. ``multiprocessing.util._exit_function`` is the
    atexit handler multiprocessing registers itself (there since Python 2.6).
    """
    util = sys.modules.get("multiprocessing.util")
    exit_function = getattr(util, "_exit_function", None)
    if exit_function is not None:
        with contextlib.suppress(Exception):
            exit_function()


def main(argv: Sequence[str] | None = None, exiting: bool = False) -> int:
    """Parse ``argv`` and run the subcommand; returns its exit code (see :mod:`training.errors`).

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).
        exiting: The process exits when this returns (:func:`console`): stop signals that come
            later end it at once with exit 130. Otherwise the signal handlers before the call come back.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    command = chosen_command(argv)
    if command is not None and command not in COMMANDS:
        print(unknown_command(command), file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser(command)
    args = parser.parse_args(argv)  # argparse prints its own usage errors and exits 2
    args._argv = argv  # the command line as given, for the provenance of what the command writes
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    debug = getattr(args, "debug", False) or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    configure_logging(debug)
    from training.execution.interrupts import DEFAULT, Interrupts

    where = f"{PROG} {args.command}"
    line = None  # printed once the signal handling is over: a later signal cannot add a second line
    with Interrupts(where, args._stop_policy or DEFAULT, until_exit=exiting):
        try:
            code = int(args._run(args))
        except BrokenPipeError:  # the reader of stdout went away (`aco-env scenarios | head`): stop, quietly
            _stdout_to_devnull()
            code = EXIT_DATA
        except KeyboardInterrupt as exc:  # the message, if any, says what was saved
            code, line = EXIT_INTERRUPTED, f"{where}: interrupted" + (f": {message_line(str(exc))}" if str(exc) else "")
        except Exception as exc:  # every failure ends as one line; --debug adds the traceback
            if debug:
                traceback.print_exc()
            code, message = describe(exc)
            line = f"{where}: error: {message}"
    if line is not None:
        print(line, file=sys.stderr)
    return code


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush cannot fail on the closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def describe(exc: BaseException) -> tuple[int, str]:
    """The exit code and one-line message for an error a command let through."""
    from digital_twin import SpecError  # the scenario, trace, job and fleet errors
    from digital_twin.atomic_files import OutputError
    from digital_twin.errors import TraceError

    if isinstance(exc, CommandError):
        return exc.exit_code, message_line(str(exc))
    if isinstance(exc, SpecError | TraceError | OutputError):
        return EXIT_DATA, message_line(str(exc))
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in TRAIN_EXTRA:
        return EXIT_DATA, (
            f"this needs {exc.name}, which comes with the training extra: pip install 'aco-env[train]' "
            "(README: how to get the CPU build of torch)"
        )
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in SERVE_EXTRA:
        return EXIT_DATA, f"this needs {exc.name}, which comes with the serve extra: pip install 'aco-env[serve]'"
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in RAY_EXTRA:
        return EXIT_DATA, f"this needs {exc.name}, which comes with the ray extra: pip install 'aco-env[ray]'"
    if isinstance(exc, OSError) and exc.filename is not None:
        return EXIT_DATA, message_line(f"{exc.filename}: {exc.strerror or exc}")
    return EXIT_DATA, (
        f"unexpected {type(exc).__name__}: {message_line(str(exc), 400)} "
        f"(a bug: rerun with --debug or {DEBUG_ENV}=1 and report the traceback)"
    )


def configure_logging(debug: bool = False) -> None:
    """Library messages on stderr: notes as they are, warnings prefixed ``warning:``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_CliFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    for noisy in ("matplotlib", "PIL", "h5py", "urllib3", "filelock", "fsspec"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


class _CliFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.levelno >= logging.WARNING:
            return f"{record.levelname.lower()}: {message}"
        return message


def _version() -> str:
    try:
        return metadata.version("aco-env")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


__all__ = [
    "ALL",
    "COMMANDS",
    "UsageError",
    "build_parser",
    "chosen_command",
    "configure_logging",
    "console",
    "describe",
    "help_line",
    "main",
]

if __name__ == "__main__":
    console()
