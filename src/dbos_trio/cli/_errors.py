"""How the command line reports a failure: one line on stderr, and an exit code by kind.

Invariants, and why:

* A failure is ONE line, ``dbos-trio: error: <what went wrong>``: a script reading stderr
  (or a person) gets the cause, not a 34-line exception-group traceback. ``--debug``
  prints the traceback too.
* The exit code says whose move it is, so scripts can branch on it:

  ====  ==================================================================
  0     success
  1     any other error (an unmigrated schema, a workflow that cannot be
        forked, a bug)
  2     bad usage: argparse's own errors and invalid values (``--status
        BOGUS``, ``--limit -1``, a time that is not ISO 8601, a bad URL)
  3     not found: no workflow with the given id
  4     no system database to talk to: no connection could be made, the
        PostgreSQL database or the SQLite file does not exist (the same code
        for both, the message says how to create it), or the client gave
        up retrying after ``CLI_RETRY_LIMIT_SECONDS``
  130   interrupted (Ctrl-C)
  ====  ==================================================================

* An error is classified after unwrapping single-exception groups (Trio nurseries wrap
  what they raise), by its class, never by its text.
* Everything printed goes through a :class:`~dbos_trio._redact.Scrubber` of the configured
  URL: an error text may quote a password.
"""

from __future__ import annotations

import re
import traceback

from dbos_trio._redact import Scrubber
from dbos_trio._sysdb.errors import (
    DatabaseClosed,
    SystemDatabaseUnreachable,
    TransientDatabaseError,
)
from dbos_trio.errors import (
    DBOSConfigError,
    DBOSException,
    DBOSInitializationError,
    DBOSPayloadError,
)
from dbos_trio.errors import DBOSNonExistentWorkflowError as NotFound

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_UNREACHABLE = 4
EXIT_INTERRUPTED = 130

CLI_RETRY_LIMIT_SECONDS = 10.0
"""How long a command retries a database that went away before it gives up (exit 4)."""

PREFIX = "dbos-trio: error: "

EXIT_CODES_HELP = f"""\
exit codes:
  {EXIT_OK}    success
  {EXIT_ERROR}    any other error (e.g. an unmigrated schema)
  {EXIT_USAGE}    bad usage: unknown options, invalid values (--status, --limit, times, URL),
       an action that cannot apply (resume, pause or unpause of a finished workflow, a
       queue with no stored row: nothing is changed)
  {EXIT_NOT_FOUND}    not found: no workflow with the given id
  {EXIT_UNREACHABLE}    database unreachable: no connection, no such PostgreSQL database or
       SQLite file, or gave up after {CLI_RETRY_LIMIT_SECONDS:g} s of retries
  {EXIT_INTERRUPTED}  interrupted
"""


class UsageError(Exception):
    """The command line asked for something that cannot be done as asked (exit 2)."""


def unwrap(error: BaseException) -> BaseException:
    """The one exception inside (nested) single-exception groups, or ``error`` itself."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def exit_code_for(error: BaseException) -> int:
    """The exit code of a command that failed with ``error`` (see the module docs)."""
    error = unwrap(error)
    if isinstance(error, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(error, NotFound):
        return EXIT_NOT_FOUND
    if isinstance(
        error, SystemDatabaseUnreachable | TransientDatabaseError | DatabaseClosed | OSError
    ):
        return EXIT_UNREACHABLE
    if isinstance(error, UsageError | DBOSConfigError | ValueError):
        return EXIT_USAGE
    return EXIT_ERROR


def describe(error: BaseException) -> str:
    """What went wrong, for a person (the text after ``dbos-trio: error:``)."""
    error = unwrap(error)
    if isinstance(error, NotFound):
        return f"workflow {error.destination_id!r} not found"
    if isinstance(error, SystemDatabaseUnreachable):
        return f"database unreachable: {error.detail}"
    if isinstance(error, TransientDatabaseError | DatabaseClosed):
        return (
            f"database unreachable (gave up after retrying for {CLI_RETRY_LIMIT_SECONDS:g} s): "
            f"{error.message}"
        )
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    if isinstance(error, DBOSInitializationError):
        return error.detail
    if isinstance(error, DBOSPayloadError) and "allow_pickle=False" in error.message:
        return (
            f"{error.message} — pass --allow-pickle to decode it, if you trust every writer "
            "of this database"
        )
    if isinstance(error, DBOSException):
        return error.message
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    if isinstance(error, UsageError | ValueError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def one_line(error: BaseException, scrub: Scrubber) -> str:
    """``dbos-trio: error: ...`` for ``error``: scrubbed, on one line."""
    return PREFIX + _flatten(scrub(describe(error)))


def usage_line(message: str, scrub: Scrubber) -> str:
    """``dbos-trio: error: ...`` for an argparse error message."""
    return PREFIX + _flatten(scrub(message))


def scrubbed_traceback(error: BaseException, scrub: Scrubber) -> str:
    """The full traceback of ``error`` (as ``--debug`` prints it), scrubbed."""
    return scrub("".join(traceback.format_exception(error)))


def _flatten(text: str) -> str:
    # libpq's messages span lines ("...failed: Connection refused\n\tIs the server...").
    return re.sub(r"\s*\n\s*", " ", text.strip())
