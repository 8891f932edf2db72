"""``dbos-trio``: migrate a system database and inspect or manage its workflows.

Every command talks to the database named by ``--database-url`` (or the
``DBOS_SYSTEM_DATABASE_URL`` / ``DBOS_DATABASE_URL`` environment variables) through a
:class:`~dbos_trio.Client`, which never migrates; only ``migrate`` creates or upgrades the
schema. The default output is for people (UTC times, durations, tables; ``workflow get``
a full detail with the steps: :mod:`dbos_trio.cli._format`); ``--json`` is for scripts,
with stored values as stored and the natural shape, an object for one thing, a list for
many. ``cancel``, ``resume`` and ``delete`` take many ids (:mod:`dbos_trio.cli._bulk`).

A failure is one line on stderr, ``dbos-trio: error: ...`` (with the traceback too under
``--debug``), and a non-zero exit code by kind (:mod:`dbos_trio.cli._errors`): 1 any other
error, 2 bad usage (unknown options, invalid values such as ``--status BOGUS``, ``--limit
-1`` or a time that is not ISO 8601), 3 not found (no workflow with the given id: every
command that names one checks that it exists first), 4 database unreachable (no
connection, no such PostgreSQL database or SQLite file, or the client gave up retrying
after ``CLI_RETRY_LIMIT_SECONDS``), 130 interrupted. Values are checked before anything
connects. Nothing printed shows the URL's password.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from importlib import metadata
from typing import Any

import trio

from dbos_trio._config import DATABASE_URL_ENV, SYSTEM_DATABASE_URL_ENV
from dbos_trio._redact import Scrubber, redact_url
from dbos_trio._sysdb.open import BackendOptions, is_sqlite_url, open_system_database
from dbos_trio.cli import _check as cli_check
from dbos_trio.cli import _dashboard as cli_dashboard
from dbos_trio.cli import _gc as cli_gc
from dbos_trio.cli import _init as cli_init
from dbos_trio.cli import _schedules as cli_schedules
from dbos_trio.cli import _versions as cli_versions
from dbos_trio.cli import _workflows as cli_workflows
from dbos_trio.cli._common import (
    ALLOW_PICKLE_ENV,
    PAYLOAD_STORE_ENV,
    Parser,
    database_url,
    scrubber,
)
from dbos_trio.cli._errors import (
    CLI_RETRY_LIMIT_SECONDS,
    EXIT_CODES_HELP,
    EXIT_OK,
    exit_code_for,
    one_line,
    scrubbed_traceback,
    unwrap,
)

Command = Callable[[argparse.Namespace], Coroutine[Any, Any, Any]]

__all__ = ["CLI_RETRY_LIMIT_SECONDS", "main"]


async def _migrate(args: argparse.Namespace) -> None:
    url = database_url(args)
    sysdb = await open_system_database(
        url,
        BackendOptions(
            schema=args.schema,
            max_connections=1,
            run_migrations=True,
            use_listen_notify=not args.no_listen_notify,
        ),
    )
    await sysdb.close()
    sqlite = is_sqlite_url(url)
    if args.json:
        shown = {"migrated": redact_url(url), "schema": None if sqlite else args.schema}
        print(json.dumps(shown))
    elif sqlite:
        print(f"migrated {redact_url(url)}")
    else:
        print(f"migrated schema {args.schema!r} of {redact_url(url)}")


# --- values, checked before anything connects (exit 2) ------------------------------


DESCRIPTION = """\
Migrate a DBOS system database (PostgreSQL or SQLite) and inspect or manage its workflows,
queues and schedules. Every command but migrate reads through a client that never
changes the schema. Times are shown in UTC; --json prints the stored values (epoch
milliseconds) for scripts."""


def _version() -> str:
    try:
        return metadata.version("dbos-trio")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    layout: dict[str, Any] = {
        "epilog": EXIT_CODES_HELP,
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
    parser = Parser(prog="dbos-trio", description=DESCRIPTION, **layout)
    parser.add_argument("--debug", action="store_true", help="print tracebacks and debug logs")
    parser.add_argument(
        "--version", action="version", version=f"dbos-trio {_version()}", help="print the version"
    )
    common = Parser(add_help=False)
    common.add_argument(
        "--database-url",
        "-s",
        help=f"system database URL, postgresql://... or sqlite:///path (default: "
        f"${SYSTEM_DATABASE_URL_ENV}, then ${DATABASE_URL_ENV})",
    )
    common.add_argument("--schema", default="dbos", help="system schema (default: dbos)")
    common.add_argument(
        "--json", action="store_true", help="print JSON: an object for one, a list for many"
    )
    common.add_argument(
        "--allow-pickle",
        action="store_true",
        default=os.environ.get(ALLOW_PICKLE_ENV, "").lower() in ("1", "true", "yes"),
        help="decode py_pickle payloads (unpickling runs code of whoever wrote them: only "
        f"for a database whose every writer you trust; ${ALLOW_PICKLE_ENV}=1 sets it for "
        "every command). Errors are readable without it: their type, message, traceback and "
        "attempts are read from the pickle without unpickling it",
    )
    common.add_argument(
        "--payload-store",
        default=os.environ.get(PAYLOAD_STORE_ENV) or None,
        metavar="DIRECTORY",
        help="the applications' payload store directory (Config.payload_store): values kept "
        f"there are shown (else as their hash and size), and gc removes its entries no row "
        f"references any more (default: ${PAYLOAD_STORE_ENV})",
    )
    # SUPPRESS: a subcommand's default must not undo a --debug given before it.
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="print tracebacks"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(where: Any, name: str, text: str, parents: list[Any]) -> Any:
        return where.add_parser(name, parents=parents, help=text, description=text, **layout)

    migrate = command(commands, "migrate", "create or upgrade the system database schema", [common])
    migrate.add_argument(
        "--no-listen-notify",
        action="store_true",
        help="omit the LISTEN/NOTIFY triggers (PostgreSQL; for poolers that cannot LISTEN)",
    )
    migrate.set_defaults(run=_migrate)

    cli_workflows.add_parsers(commands, common, command)
    cli_schedules.add_parsers(commands, common)
    cli_dashboard.add_parsers(commands, common)
    cli_versions.add_parsers(commands, common)
    cli_gc.add_parsers(commands, common, **layout)
    cli_check.add_parsers(commands, common, **layout)
    cli_init.add_parsers(commands, **layout)
    return parser


def _configure_logging(debug: bool, scrub: Scrubber) -> None:
    """Debug logs to stderr under ``--debug`` (scrubbed); otherwise none at all, so a
    failure stays one line (a retry WARNING would otherwise reach stderr too)."""
    library = logging.getLogger("dbos_trio")
    if not debug:
        library.addHandler(logging.NullHandler())
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("dbos-trio: %(levelname)s: %(name)s: %(message)s"))

    def scrubbed(record: logging.LogRecord) -> bool:
        record.msg, record.args = scrub(record.getMessage()), None
        return True

    handler.addFilter(scrubbed)
    library.addHandler(handler)
    library.setLevel(logging.DEBUG)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (see the module docs). Never raises, except
    ``SystemExit`` for ``--help`` and usage errors; Ctrl-C returns 130."""
    args = _parser().parse_args(argv)
    scrub = scrubber(args)
    debug = bool(getattr(args, "debug", False))
    _configure_logging(debug, scrub)
    command: Command = args.run
    try:
        trio.run(command, args)
    except (Exception, KeyboardInterrupt, BaseExceptionGroup) as raised:
        error = unwrap(raised)
        if debug:
            print(scrubbed_traceback(raised, scrub), file=sys.stderr, end="")
        print(one_line(error, scrub), file=sys.stderr)
        return exit_code_for(error)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
