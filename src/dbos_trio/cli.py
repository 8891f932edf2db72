"""``dbos-trio``: migrate a system database and inspect or manage its workflows.

Every command talks to the database named by ``--database-url`` (or the
``DBOS_SYSTEM_DATABASE_URL`` / ``DBOS_DATABASE_URL`` environment variables) through a
:class:`~dbos_trio.Client`, which never migrates; only ``migrate`` creates or upgrades the
schema. ``--json`` prints machine-readable output; the default is a readable table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs
import trio

from . import cli_schedules
from ._config import DATABASE_URL_ENV, SYSTEM_DATABASE_URL_ENV, redact_url
from ._errors import DBOSException
from .client import Client
from .engine import fork
from .engine.status import StepInfo, WorkflowStatus
from .sysdb.open import is_sqlite_url, open_system_database

Command = Callable[[argparse.Namespace], Coroutine[Any, Any, Any]]

CLI_RETRY_LIMIT_SECONDS = 10.0


def _database_url(args: argparse.Namespace) -> str:
    url = (
        args.database_url
        or os.environ.get(SYSTEM_DATABASE_URL_ENV)
        or os.environ.get(DATABASE_URL_ENV)
    )
    if not url:
        raise DBOSException(f"no database: pass --database-url or set {SYSTEM_DATABASE_URL_ENV}")
    return str(url)


def _iso(epoch_ms: Any) -> str:
    if not isinstance(epoch_ms, int):
        return ""
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).isoformat(timespec="milliseconds")


def _jsonable(value: Any) -> Any:
    if attrs.has(type(value)):
        return {key: _jsonable(item) for key, item in attrs.asdict(value, recurse=False).items()}
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(item) for item in value]
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells)
    return "\n".join(lines)


def _print_workflows(args: argparse.Namespace, workflows: list[WorkflowStatus]) -> None:
    if args.json:
        print(json.dumps(_jsonable(workflows), indent=2))
        return
    print(
        _table(
            ("workflow id", "name", "status", "created", "queue", "app version"),
            [
                (
                    w.workflow_id,
                    w.name or "",
                    w.status,
                    _iso(w.created_at),
                    w.queue_name or "",
                    w.app_version or "",
                )
                for w in workflows
            ],
        )
    )


def _print_steps(args: argparse.Namespace, steps: list[StepInfo]) -> None:
    if args.json:
        print(json.dumps(_jsonable(steps), indent=2))
        return
    print(
        _table(
            ("step", "name", "output", "error", "child"),
            [
                (
                    s.function_id,
                    s.function_name,
                    "" if s.output is None else repr(s.output),
                    "" if s.error is None else repr(s.error),
                    s.child_workflow_id or "",
                )
                for s in steps
            ],
        )
    )


def _client(args: argparse.Namespace) -> Client:
    # A command gives up on an unreachable database rather than wait for it forever.
    return Client(
        _database_url(args),
        schema=args.schema,
        use_listen_notify=False,
        database_retry_limit=CLI_RETRY_LIMIT_SECONDS,
    )


async def _migrate(args: argparse.Namespace) -> None:
    url = _database_url(args)
    sysdb = await open_system_database(
        url,
        schema=args.schema,
        max_connections=1,
        run_migrations=True,
        use_listen_notify=not args.no_listen_notify,
    )
    await sysdb.close()
    if is_sqlite_url(url):
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
        _print_workflows(args, await client.list_workflows(**_list_filters(args)))


async def _queue_list(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        _print_workflows(args, await client.list_queued_workflows(**_list_filters(args)))


async def _workflow_get(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        status = await client.get_workflow_status(args.workflow_id)
    if status is None:
        raise DBOSException(f"no workflow {args.workflow_id!r}")
    _print_workflows(args, [status])


async def _workflow_steps(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        _print_steps(args, await client.list_workflow_steps(args.workflow_id))


async def _workflow_cancel(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        await client.cancel_workflow(args.workflow_id)
    print(f"cancelled {args.workflow_id}")


async def _workflow_resume(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        await client.resume_workflow(args.workflow_id)
    print(f"resumed {args.workflow_id}")


async def _workflow_delete(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        await client.delete_workflow(args.workflow_id, delete_children=args.delete_children)
    print(f"deleted {args.workflow_id}")


async def _workflow_fork(args: argparse.Namespace) -> None:
    from .engine.options import SetWorkflowID

    async with _client(args) as client:
        runtime = client._require("fork_workflow")
        if args.forked_workflow_id:
            with SetWorkflowID(args.forked_workflow_id):
                forked = await fork.fork_workflow(
                    runtime,
                    args.workflow_id,
                    args.step,
                    application_version=args.application_version,
                )
        else:
            forked = await fork.fork_workflow(
                runtime, args.workflow_id, args.step, application_version=args.application_version
            )
    print(json.dumps({"workflow_id": forked}) if args.json else f"forked as {forked}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dbos-trio", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--database-url", "-s", help=f"system database URL (or ${SYSTEM_DATABASE_URL_ENV})"
    )
    common.add_argument("--schema", default="dbos", help="system schema (default: dbos)")
    common.add_argument("--json", action="store_true", help="print JSON")
    commands = parser.add_subparsers(dest="command", required=True)

    migrate = commands.add_parser("migrate", parents=[common], help="create or upgrade the schema")
    migrate.add_argument("--no-listen-notify", action="store_true", help="omit the triggers")
    migrate.set_defaults(run=_migrate)

    listing = argparse.ArgumentParser(add_help=False)
    listing.add_argument("--limit", "-l", type=int, default=10)
    listing.add_argument("--offset", "-o", type=int, default=None)
    listing.add_argument("--sort-desc", "-d", action="store_true")
    listing.add_argument("--status", "-S", default=None)
    listing.add_argument("--name", "-n", default=None)
    listing.add_argument("--app-version", "-v", default=None)
    listing.add_argument("--user", "-u", default=None)
    listing.add_argument("--start-time", "-t", default=None, help="ISO 8601")
    listing.add_argument("--end-time", "-e", default=None, help="ISO 8601")
    listing.add_argument("--application-name", "-a", default=None)

    workflow = commands.add_parser("workflow", help="inspect and manage workflows")
    actions = workflow.add_subparsers(dest="action", required=True)
    actions.add_parser("list", parents=[common, listing]).set_defaults(run=_workflow_list)
    for name, run in (
        ("get", _workflow_get),
        ("steps", _workflow_steps),
        ("cancel", _workflow_cancel),
        ("resume", _workflow_resume),
    ):
        action = actions.add_parser(name, parents=[common])
        action.add_argument("workflow_id")
        action.set_defaults(run=run)
    delete = actions.add_parser("delete", parents=[common])
    delete.add_argument("workflow_id")
    delete.add_argument("--delete-children", action="store_true")
    delete.set_defaults(run=_workflow_delete)
    fork_action = actions.add_parser("fork", parents=[common])
    fork_action.add_argument("workflow_id")
    fork_action.add_argument("--step", "-S", type=int, default=1)
    fork_action.add_argument("--forked-workflow-id", "-f", default=None)
    fork_action.add_argument("--application-version", "-v", default=None)
    fork_action.set_defaults(run=_workflow_fork)

    queue = commands.add_parser("queue", help="queued workflows")
    queue_actions = queue.add_subparsers(dest="action", required=True)
    queue_list = queue_actions.add_parser("list", parents=[common, listing])
    queue_list.add_argument("--queue", "-q", default=None)
    queue_list.set_defaults(run=_queue_list)
    cli_schedules.add_parsers(commands, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command: Command = args.run
    try:
        trio.run(command, args)
    except DBOSException as error:
        print(f"dbos-trio: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
