"""What the ``aco-env`` commands raise for the user's mistakes, and the exit codes they map to.

A command raises :class:`UsageError` when the command line is wrong (an unknown agent, a
negative count, an option that does not apply) and :class:`DataError` when a file or its
content is (a scenario with a bad key, a truncated model zip, an output folder that cannot be
written). :func:`training.cli.main.main` prints either as one line, ``aco-env COMMAND: error:
MESSAGE``, and exits with the code below; ``--debug`` (or ``ACO_ENV_DEBUG=1``) adds the
traceback. The library's own errors (``digital_twin.SpecError`` and its subclasses for
scenarios, traces and jobs) are data errors too.
"""

from __future__ import annotations

EXIT_OK = 0
"""Success."""
EXIT_DATA = 1
"""A data error: a file, its content, or the work it asked for failed (also a replay mismatch)."""
EXIT_USAGE = 2
"""A usage error: the command line is wrong (argparse uses the same code)."""
EXIT_MISSING_DATA = 3
"""``aco-env validate``: the scenario is valid but data it reads is not present."""
EXIT_INTERRUPTED = 130
"""Ctrl-C or SIGTERM (128 + SIGINT, the shell convention); a training run saves its work first."""

EXIT_CODES_HELP = """\
exit codes:
  0    success
  1    data error: a scenario, trace, model or output path is wrong (the message names it),
       a replay did not match its recording, or the work failed (an episode that failed
       every retry, a Ray cluster that does not answer)
  2    usage error: a wrong option or value on the command line
  3    validate: the scenario is valid but data it reads is not present
  130  interrupted (Ctrl-C or SIGTERM); a training run saves model.zip and a checkpoint first

Errors are one line; add --debug (or set ACO_ENV_DEBUG=1) for the traceback."""
"""The epilog of ``aco-env --help``."""


class CommandError(Exception):
    """An error a command reports as one line (the message says what is wrong and how to fix it)."""

    exit_code = EXIT_DATA


class UsageError(CommandError):
    """The command line is wrong: an unknown name, a value out of range, options that conflict."""

    exit_code = EXIT_USAGE


class DataError(CommandError):
    """A file or its content is wrong, or an output cannot be written."""

    exit_code = EXIT_DATA
