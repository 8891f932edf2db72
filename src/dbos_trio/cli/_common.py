"""What every command of ``dbos-trio`` shares: the database it names, the client it reads
through, the secrets it must never print, and the values it checks before connecting.

Values are checked by argparse types here (exit 2 before anything connects); the client
never migrates, gives up on an unreachable database after ``CLI_RETRY_LIMIT_SECONDS``, and
unpickles nothing unless ``--allow-pickle`` (or ``$DBOS_TRIO_ALLOW_PICKLE``) says so.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

from dbos_trio._client import Client
from dbos_trio._config import DATABASE_URL_ENV, SYSTEM_DATABASE_URL_ENV
from dbos_trio._core.filters import epoch_ms
from dbos_trio._core.statuses import ALL_STATUSES
from dbos_trio._payload_store import DirectoryPayloadStore
from dbos_trio._redact import Scrubber
from dbos_trio.cli._errors import CLI_RETRY_LIMIT_SECONDS, EXIT_USAGE, UsageError, usage_line

# Set to 1 to decode py_pickle payloads in every command (as --allow-pickle does).
ALLOW_PICKLE_ENV = "DBOS_TRIO_ALLOW_PICKLE"
# The payload store directory every command reads values from (as --payload-store does).
PAYLOAD_STORE_ENV = "DBOS_TRIO_PAYLOAD_STORE"


def configured_url(args: argparse.Namespace | None) -> str | None:
    given = None if args is None else getattr(args, "database_url", None)
    return given or os.environ.get(SYSTEM_DATABASE_URL_ENV) or os.environ.get(DATABASE_URL_ENV)


def database_url(args: argparse.Namespace) -> str:
    url = configured_url(args)
    if not url:
        raise UsageError(f"no database: pass --database-url or set {SYSTEM_DATABASE_URL_ENV}")
    return str(url)


def scrubber(args: argparse.Namespace | None) -> Scrubber:
    """The secrets of every URL this run may print (the one used, and the environment's)."""
    return Scrubber.for_urls(
        configured_url(args),
        os.environ.get(SYSTEM_DATABASE_URL_ENV),
        os.environ.get(DATABASE_URL_ENV),
    )


def open_client(
    args: argparse.Namespace, *, app_name: str | None = None, allow_pickle: bool | None = None
) -> Client:
    """The client a command reads and acts through, on the database ``args`` name
    (:class:`UsageError` if none): it never migrates, never listens, and gives up on an
    unreachable database after ``CLI_RETRY_LIMIT_SECONDS`` rather than wait forever.
    ``app_name`` scopes it to one application; ``allow_pickle`` (default: the command's
    ``--allow-pickle``) is whether it may unpickle a payload."""
    return Client(
        database_url(args),
        schema=args.schema,
        app_name=app_name,
        use_listen_notify=False,
        database_retry_limit=CLI_RETRY_LIMIT_SECONDS,
        # Reading a payload must not run code planted in the database, unless asked to.
        allow_pickle=getattr(args, "allow_pickle", False) if allow_pickle is None else allow_pickle,
        payload_store=payload_store_of(args),
    )


def payload_store_of(args: argparse.Namespace) -> DirectoryPayloadStore | None:
    """The payload store ``--payload-store`` names (values kept outside the rows), or None:
    then such a value is shown as its hash and size, not read."""
    directory = getattr(args, "payload_store", None)
    if not directory:
        return None
    if not os.path.isdir(directory):
        raise UsageError(f"--payload-store: {directory} is not a directory")
    return DirectoryPayloadStore(directory)


def count(text: str) -> int:
    """A non-negative integer (``--limit``, ``--offset``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


def step_number(text: str) -> int:
    """A step id: 1 or more (steps are numbered from 1)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 or more (steps start at 1)")
    return value


def status_name(text: str) -> str:
    """One of the workflow statuses (any case)."""
    status = text.strip().upper()
    if status not in ALL_STATUSES:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a workflow status (one of {', '.join(sorted(ALL_STATUSES))})"
        )
    return status


def iso_time(text: str) -> int:
    """An ISO 8601 time (``2026-01-31T08:00:00Z``), as epoch milliseconds."""
    try:
        return epoch_ms(text, "time")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time such as 2026-01-31T08:00:00Z"
        ) from None


class Parser(argparse.ArgumentParser):
    """argparse, reporting a usage error as one line (exit 2) like every other error."""

    def error(self, message: str) -> NoReturn:
        print(usage_line(f"{message} (see {self.prog} --help)", scrubber(None)), file=sys.stderr)
        sys.exit(EXIT_USAGE)
