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
connection, or the client gave up retrying after ``CLI_RETRY_LIMIT_SECONDS``), 130
interrupted. Values are checked before anything connects. Nothing printed shows the
URL's password.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from importlib import metadata
from typing import Any, NoReturn

import trio

from dbos_trio._client import Client
from dbos_trio._config import DATABASE_URL_ENV, SYSTEM_DATABASE_URL_ENV
from dbos_trio._core.filters import epoch_ms
from dbos_trio._core.statuses import ALL_STATUSES
from dbos_trio._engine.workflows.status import StepInfo, WorkflowStatus
from dbos_trio._ops import inspect, manage
from dbos_trio._redact import Scrubber, redact_url
from dbos_trio._sysdb.open import BackendOptions, is_sqlite_url, open_system_database
from dbos_trio.cli import _bulk as cli_bulk
from dbos_trio.cli import _dashboard as cli_dashboard
from dbos_trio.cli import _format as cli_format
from dbos_trio.cli import _gc as cli_gc
from dbos_trio.cli import _schedules as cli_schedules
from dbos_trio.cli import _versions as cli_versions
from dbos_trio.cli._errors import (
    CLI_RETRY_LIMIT_SECONDS,
    EXIT_CODES_HELP,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    exit_code_for,
    one_line,
    scrubbed_traceback,
    unwrap,
    usage_line,
)
from dbos_trio.errors import DBOSNonExistentWorkflowError

Command = Callable[[argparse.Namespace], Coroutine[Any, Any, Any]]

__all__ = ["CLI_RETRY_LIMIT_SECONDS", "main"]


def _configured_url(args: argparse.Namespace | None) -> str | None:
    given = None if args is None else getattr(args, "database_url", None)
    return given or os.environ.get(SYSTEM_DATABASE_URL_ENV) or os.environ.get(DATABASE_URL_ENV)


def _database_url(args: argparse.Namespace) -> str:
    url = _configured_url(args)
    if not url:
        raise UsageError(f"no database: pass --database-url or set {SYSTEM_DATABASE_URL_ENV}")
    return str(url)


def _scrubber(args: argparse.Namespace | None) -> Scrubber:
    """The secrets of every URL this run may print (the one used, and the environment's)."""
    return Scrubber.for_urls(
        _configured_url(args),
        os.environ.get(SYSTEM_DATABASE_URL_ENV),
        os.environ.get(DATABASE_URL_ENV),
    )


def _print_workflows(args: argparse.Namespace, workflows: list[WorkflowStatus]) -> None:
    if args.json:
        print(json.dumps(cli_format.jsonable(workflows), indent=2))
        return
    print(cli_format.workflows_table(workflows))


def _print_steps(args: argparse.Namespace, steps: list[StepInfo], raw: bool) -> None:
    if args.json:
        print(json.dumps(cli_format.jsonable(steps), indent=2))
        return
    print(cli_format.steps_table(steps, raw) + cli_format.failed_steps(steps))


def _client(args: argparse.Namespace) -> Client:
    # A command gives up on an unreachable database rather than wait for it forever.
    return Client(
        _database_url(args),
        schema=args.schema,
        use_listen_notify=False,
        database_retry_limit=CLI_RETRY_LIMIT_SECONDS,
        # Reading a payload must not run code planted in the database, unless asked to.
        allow_pickle=getattr(args, "allow_pickle", False),
    )


async def _migrate(args: argparse.Namespace) -> None:
    url = _database_url(args)
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


def _list_filters(args: argparse.Namespace) -> dict[str, Any]:
    filters: dict[str, Any] = {
        "limit": args.limit,
        "offset": args.offset,
        "sort_desc": args.sort_desc,
        "status": args.status,
        "name": args.name,
        "app_version": args.app_version,
        "user": args.user,
        "start_time": args.start_time,
        "end_time": args.end_time,
        "application_name": args.application_name,
        "load_input": False,
        "load_output": False,
    }
    if getattr(args, "queue", None):
        filters["queue_name"] = args.queue
    return filters


async def _workflow_list(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        _print_workflows(args, await inspect.list_workflows(client._reach, _list_filters(args)))


async def _queue_list(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        queued = inspect.list_queued_workflows(client._reach, _list_filters(args))
        _print_workflows(args, await queued)


async def _existing(client: Client, workflow_id: str) -> WorkflowStatus:
    """The workflow's status; ``DBOSNonExistentWorkflowError`` (exit 3) if there is none.

    Every command that names a workflow looks first: cancelling, resuming or deleting an
    id that names nothing is a mistake to report, not a success to print."""
    status = await inspect.get_workflow_status(client._reach, workflow_id)
    if status is None:
        raise DBOSNonExistentWorkflowError("target", workflow_id)
    return status


async def _workflow_get(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        status = await _existing(client, args.workflow_id)
        steps = await inspect.list_workflow_steps(client._reach, args.workflow_id)
    if args.json:
        print(cli_format.workflow_json(status, steps))
    else:
        print(cli_format.workflow_detail(status, steps, decoded=args.allow_pickle))


async def _workflow_steps(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        status = await _existing(client, args.workflow_id)
        steps = await inspect.list_workflow_steps(client._reach, args.workflow_id)
    raw = status.serialization == "py_pickle" and not args.allow_pickle
    _print_steps(args, steps, raw)


async def _workflow_cancel(args: argparse.Namespace) -> None:
    async with _client(args) as client:

        async def cancel(workflow_id: str) -> None:
            await manage.cancel_workflow(client._reach, workflow_id)

        await cli_bulk.each(args, client, "cancelled", _existing, cancel)


async def _workflow_resume(args: argparse.Namespace) -> None:
    async with _client(args) as client:

        async def resume(workflow_id: str) -> None:
            await manage.resume_workflow(client._reach, workflow_id)

        await cli_bulk.each(args, client, "resumed", _existing, resume)


async def _workflow_delete(args: argparse.Namespace) -> None:
    async with _client(args) as client:

        async def delete(workflow_id: str) -> None:
            children = args.delete_children
            await manage.delete_workflow(client._reach, workflow_id, delete_children=children)

        await cli_bulk.each(args, client, "deleted", _existing, delete)


async def _workflow_fork(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        await _existing(client, args.workflow_id)
        forked = await manage.fork_workflow(
            client._reach,
            args.workflow_id,
            args.step,
            application_version=args.application_version,
            forked_id=args.forked_workflow_id or None,
        )
    print(json.dumps({"workflow_id": forked}) if args.json else f"forked as {forked}")


# --- values, checked before anything connects (exit 2) ------------------------------


def _count(text: str) -> int:
    """A non-negative integer (``--limit``, ``--offset``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


def _step(text: str) -> int:
    """A step id: 1 or more (steps are numbered from 1)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 or more (steps start at 1)")
    return value


def _status(text: str) -> str:
    """One of the workflow statuses (any case)."""
    status = text.strip().upper()
    if status not in ALL_STATUSES:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a workflow status (one of {', '.join(sorted(ALL_STATUSES))})"
        )
    return status


def _time(text: str) -> int:
    """An ISO 8601 time (``2026-01-31T08:00:00Z``), as epoch milliseconds."""
    try:
        return epoch_ms(text, "time")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time such as 2026-01-31T08:00:00Z"
        ) from None


class _Parser(argparse.ArgumentParser):
    """argparse, reporting a usage error as one line (exit 2) like every other error."""

    def error(self, message: str) -> NoReturn:
        print(usage_line(f"{message} (see {self.prog} --help)", _scrubber(None)), file=sys.stderr)
        sys.exit(EXIT_USAGE)


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


# Set to 1 to decode py_pickle payloads in every command (as --allow-pickle does).
ALLOW_PICKLE_ENV = "DBOS_TRIO_ALLOW_PICKLE"


def _parser() -> argparse.ArgumentParser:
    layout: dict[str, Any] = {
        "epilog": EXIT_CODES_HELP,
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
    parser = _Parser(prog="dbos-trio", description=DESCRIPTION, **layout)
    parser.add_argument("--debug", action="store_true", help="print tracebacks and debug logs")
    parser.add_argument(
        "--version", action="version", version=f"dbos-trio {_version()}", help="print the version"
    )
    common = _Parser(add_help=False)
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

    listing = _Parser(add_help=False)
    listing.add_argument(
        "--limit", "-l", type=_count, default=10, help="show at most this many (default: 10)"
    )
    listing.add_argument("--offset", "-o", type=_count, default=None, help="skip this many first")
    listing.add_argument(
        "--sort-desc", "-d", action="store_true", help="newest first (default: oldest first)"
    )
    listing.add_argument(
        "--status",
        "-S",
        type=_status,
        default=None,
        help="only this status: " + ", ".join(sorted(ALL_STATUSES)),
    )
    listing.add_argument("--name", "-n", default=None, help="only workflows of this name")
    listing.add_argument("--app-version", "-v", default=None, help="only this application version")
    listing.add_argument("--user", "-u", default=None, help="only this authenticated user")
    listing.add_argument(
        "--start-time",
        "-t",
        type=_time,
        default=None,
        help="only created at or after this ISO 8601 time",
    )
    listing.add_argument(
        "--end-time", "-e", type=_time, default=None, help="only created before this ISO 8601 time"
    )
    listing.add_argument(
        "--application-name",
        "-a",
        default=None,
        help="only this application's workflows (default: every application in the database)",
    )

    workflow = command(commands, "workflow", "inspect and manage workflows", [])
    actions = workflow.add_subparsers(dest="action", required=True, metavar="ACTION")
    command(actions, "list", "list workflows, oldest first", [common, listing]).set_defaults(
        run=_workflow_list
    )
    get = command(
        actions,
        "get",
        "show one workflow: status, timings, input, output or error, and its steps",
        [common],
    )
    get.add_argument("workflow_id", help="the workflow's id")
    get.set_defaults(run=_workflow_get)
    steps = command(actions, "steps", "list a workflow's checkpointed steps", [common])
    steps.add_argument("workflow_id", help="the workflow's id")
    steps.set_defaults(run=_workflow_steps)
    for name, run, text in (
        ("cancel", _workflow_cancel, "cancel workflows: each stops at its next checkpoint"),
        ("resume", _workflow_resume, "resume workflows (cancelled ones, say) from their last step"),
    ):
        action = command(actions, name, text, [common])
        cli_bulk.add_arguments(action, name)
        action.set_defaults(run=run)
    delete = command(actions, "delete", "delete workflows and their steps", [common])
    cli_bulk.add_arguments(delete, "delete")
    delete.add_argument(
        "--delete-children", action="store_true", help="delete their child workflows too"
    )
    delete.set_defaults(run=_workflow_delete)
    fork_action = command(
        actions, "fork", "start a new workflow from another's steps up to a given one", [common]
    )
    fork_action.add_argument("workflow_id", help="the workflow to fork")
    fork_action.add_argument(
        "--step",
        "-S",
        type=_step,
        default=1,
        help="run again from this step; the steps before it are copied (default: 1)",
    )
    fork_action.add_argument(
        "--forked-workflow-id", "-f", default=None, help="the new workflow's id (default: random)"
    )
    fork_action.add_argument(
        "--application-version",
        "-v",
        default=None,
        help="the version that runs the fork (default: the original's)",
    )
    fork_action.set_defaults(run=_workflow_fork)
    cli_versions.add_workflow_actions(actions, common)

    queue = command(commands, "queue", "inspect queued workflows", [])
    queue_actions = queue.add_subparsers(dest="action", required=True, metavar="ACTION")
    queue_list = command(
        queue_actions, "list", "list enqueued and running queued workflows", [common, listing]
    )
    queue_list.add_argument("--queue", "-q", default=None, help="only this queue")
    queue_list.set_defaults(run=_queue_list)
    cli_schedules.add_parsers(commands, common)
    cli_dashboard.add_parsers(commands, common)
    cli_versions.add_parsers(commands, common)
    cli_gc.add_parsers(commands, common, **layout)
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
    scrub = _scrubber(args)
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
