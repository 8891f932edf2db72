"""``dbos-trio schedule list|get|pause|resume|trigger|backfill|delete``.

Kept apart from :mod:`dbos_trio.cli._main` so the two evolve separately: :func:`add_parsers`
adds the ``schedule`` command to its subparsers and every action runs through
:func:`run`. Each action opens a :class:`~dbos_trio.Client` on the database named by
``--database-url`` (or the environment), which never migrates; ``pause``, ``resume`` and
``delete`` reach every executor of the application within its scheduler's polling
interval.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

import attrs

from dbos_trio._client import Client
from dbos_trio._ops.schedules import WorkflowSchedule
from dbos_trio.cli._common import open_client
from dbos_trio.cli._format import when
from dbos_trio.errors import DBOSException

CLI_RETRY_LIMIT_SECONDS = 10.0


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``schedule`` and its actions to ``commands`` (an argparse subparsers object);
    ``common`` holds the connection options (``--database-url``, ``--schema``, ``--json``)."""
    text = "inspect and manage schedules"
    schedule = commands.add_parser("schedule", help=text, description=text)
    actions = schedule.add_subparsers(dest="schedule_action", required=True, metavar="ACTION")
    listing = actions.add_parser(
        "list", parents=[common], help="list schedules", description="list schedules"
    )
    listing.add_argument("--status", "-S", default=None, help="ACTIVE or PAUSED")
    listing.add_argument(
        "--workflow-name", "-n", default=None, help="only schedules of this workflow"
    )
    listing.add_argument("--prefix", "-p", default=None, help="schedule name prefix")
    listing.add_argument(
        "--application-name", "-a", default=None, help="only this application's schedules"
    )
    for name, help_text in (
        ("get", "show one schedule"),
        ("pause", "stop a schedule firing"),
        ("resume", "let a paused schedule fire again"),
        ("trigger", "enqueue one run now"),
        ("delete", "delete a schedule"),
    ):
        action = actions.add_parser(name, parents=[common], help=help_text, description=help_text)
        action.add_argument("schedule_name", help="the schedule's name")
    text = "enqueue the ticks between two times"
    backfill = actions.add_parser("backfill", parents=[common], help=text, description=text)
    backfill.add_argument("schedule_name", help="the schedule's name")
    backfill.add_argument("start", help="ISO 8601 (exclusive; naive times are UTC)")
    backfill.add_argument("end", help="ISO 8601 (exclusive)")
    for action in actions.choices.values():
        action.set_defaults(run=run)


def _client(args: argparse.Namespace) -> Client:
    return open_client(args)


def _moment(text: str, argument: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise DBOSException(f"{argument} must be an ISO 8601 time, not {text!r}") from None


def _row(schedule: WorkflowSchedule) -> dict[str, Any]:
    row = attrs.asdict(schedule)
    context = row["context"]
    if not (context is None or isinstance(context, bool | int | float | str | list | dict)):
        row["context"] = repr(context)
    return row


def _fired(stored: str | None) -> str:
    """The stored ISO 8601 tick time as every command shows a time (``_format.when``); a
    text that is not one is shown as stored."""
    if not stored:
        return ""
    try:
        moment = datetime.fromisoformat(stored.replace("Z", "+00:00"))
    except ValueError:
        return stored
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return when(moment.timestamp() * 1000)


def _print_schedules(args: argparse.Namespace, found: list[WorkflowSchedule]) -> None:
    if args.json:
        print(json.dumps([_row(s) for s in found], indent=2, default=repr))
        return
    headers = ("schedule", "workflow", "cron", "time zone", "status", "last fired", "queue")
    cells = [
        (
            s.schedule_name,
            s.workflow_name,
            s.schedule,
            s.cron_timezone or "UTC",
            s.status,
            _fired(s.last_fired_at),
            s.queue_name or "",
        )
        for s in found
    ]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


def _done(args: argparse.Namespace, what: str, payload: dict[str, Any]) -> None:
    print(json.dumps(payload) if args.json else what)


async def run(args: argparse.Namespace) -> None:
    """Run the ``schedule`` action ``args`` names (errors are :class:`DBOSException`)."""
    action, name = args.schedule_action, getattr(args, "schedule_name", None)
    async with _client(args) as client:
        if action == "list":
            found = await client.list_schedules(
                status=args.status.upper() if args.status else None,
                workflow_name=args.workflow_name,
                schedule_name_prefix=args.prefix,
                application_name=args.application_name,
            )
            _print_schedules(args, found)
            return
        assert name is not None
        if action == "get":
            schedule = await client.get_schedule(name)
            if schedule is None:
                raise DBOSException(f"no schedule {name!r}")
            if args.json:  # one schedule: an object, not a list of one
                print(json.dumps(_row(schedule), indent=2, default=repr))
            else:
                _print_schedules(args, [schedule])
        elif action == "pause":
            await _existing(client, name)
            await client.pause_schedule(name)
            _done(args, f"paused {name}", {"schedule_name": name, "status": "PAUSED"})
        elif action == "resume":
            await _existing(client, name)
            await client.resume_schedule(name)
            _done(args, f"resumed {name}", {"schedule_name": name, "status": "ACTIVE"})
        elif action == "delete":
            await _existing(client, name)
            await client.delete_schedule(name)
            _done(args, f"deleted {name}", {"schedule_name": name})
        elif action == "trigger":
            handle = await client.trigger_schedule(name)
            _done(args, f"triggered {handle.workflow_id}", {"workflow_id": handle.workflow_id})
        elif action == "backfill":
            start, end = _moment(args.start, "start"), _moment(args.end, "end")
            if start.tzinfo is None:
                start = start.replace(tzinfo=UTC)
            handles = await client.backfill_schedule(name, start, end)
            ids = [h.workflow_id for h in handles]
            _done(args, f"backfilled {len(ids)} runs of {name}", {"workflow_ids": ids})


async def _existing(client: Client, name: str) -> None:
    if await client.get_schedule(name) is None:
        raise DBOSException(f"no schedule {name!r}")
