"""What the ``aco-env`` commands raise for the user's mistakes, and the exit codes they map to.

A command raises :class:`UsageError` when the command line is wrong (an unknown agent, a
negative count, an option that does not apply) and :class:`DataError` when a file or its
content is (a scenario with a bad key, a truncated model zip, an output folder that cannot be
written). :func:`training.cli.main.main` prints either as one line, ``aco-env COMMAND: error:
MESSAGE``, and exits with the code below; ``--debug`` (or ``ACO_ENV_DEBUG=1``) adds the
traceback. The library's own errors (``digital_twin.SpecError`` and its subclasses for
scenarios, traces and jobs) are data errors too, and so is a file that cannot be written
(:class:`digital_twin.atomic_files.OutputError`: the message names the file and the cause, and
the file there before is unchanged). :func:`message_line` keeps every such line readable.
"""

from __future__ import annotations

MESSAGE_LIMIT = 1000
"""Longest error line :func:`message_line` returns (characters)."""
LONGEST_WORD = 160
"""Longest word (a path, a quoted value) :func:`message_line` shows whole; longer ones lose their middle."""

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
       a replay did not match its recording, the work failed (an episode that failed
       every retry, a Ray cluster that does not answer), or a file could not be written
       (a full disk, no permission: the message names the file; the file there before is kept)
  2    usage error: a wrong option or value on the command line
  3    validate: the scenario is valid but data it reads is not present
  130  interrupted (Ctrl-C or SIGTERM): the work stops within seconds on every backend and what
       was finished is kept (the message says how to resume); a second signal stops at once;
       a training run saves model.zip and a checkpoint first (its third signal stops at once)

Errors are one line; add --debug (or set ACO_ENV_DEBUG=1) for the traceback. Every file is
written under a temporary name and renamed into place; two runs cannot write into one --out."""
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


def message_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` on one readable line: spaces collapsed, overlong words cut in the middle, ``limit`` characters at most.

    A line over ``limit`` ends at the last whole word that fits, then `` ...`` (never mid-word).

    A word longer than :data:`LONGEST_WORD` (a 5,000-character path) keeps its start and its end
    (where a file's name is) around ``...``, so the rest of the message (what is wrong) still shows.

    >>> message_line("a  b ")
    'a b'
    >>> line = message_line("/" + "x" * 5000 + "/trace.csv: file not found")
    >>> len(line) < 200, line.endswith("/trace.csv: file not found")
    (True, True)
    >>> message_line("bundled: alpha, beta, gamma", limit=20)
    'bundled: alpha, ...'
    """
    words = [word if len(word) <= LONGEST_WORD else _middle_cut(word) for word in text.split()]
    line = " ".join(words)
    if len(line) <= limit:
        return line
    return line[: limit - 3].rpartition(" ")[0] + " ..."


def _middle_cut(word: str) -> str:
    keep = (LONGEST_WORD - 5) // 2
    return f"{word[:keep]}[...]{word[-keep:]}"
