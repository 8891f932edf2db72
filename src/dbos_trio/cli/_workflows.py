"""``dbos-trio workflow list|get|steps|cancel|resume|retry|delete|fork`` and ``queue list``
(``workflow pause|unpause`` and ``queue pause|unpause``: :mod:`dbos_trio.cli._pause`).

Each command reaches the database through a client and the operations every face shares
(:mod:`dbos_trio._ops`): the CLI adds only how a person reads the result
(:mod:`dbos_trio.cli._format`). Every command that names a workflow checks that it exists
first (exit 3 otherwise). ``cancel``, ``resume`` and ``delete`` take many ids
(:mod:`dbos_trio.cli._bulk`). ``resume`` of a finished workflow changes nothing and says so,
pointing to ``retry`` (fork a failed workflow from its first failed step, to run the fixed
code from there).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from dbos_trio._client import Client
from dbos_trio._core.statuses import ALL_STATUSES, ERROR, SUCCESS
from dbos_trio._engine.workflows.status import StepInfo, WorkflowStatus
from dbos_trio._ops import inspect, manage
from dbos_trio.cli import _bulk as cli_bulk
from dbos_trio.cli import _bundles as cli_bundles
from dbos_trio.cli import _format as cli_format
from dbos_trio.cli import _pause as cli_pause
from dbos_trio.cli import _versions as cli_versions
from dbos_trio.cli._common import Parser, count, iso_time, open_client, status_name, step_number
from dbos_trio.cli._errors import UsageError
from dbos_trio.errors import DBOSNonExistentWorkflowError


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


async def workflow_list(args: argparse.Namespace) -> None:
    async with open_client(args) as client:
        _print_workflows(args, await inspect.list_workflows(client._reach, _list_filters(args)))


async def queue_list(args: argparse.Namespace) -> None:
    async with open_client(args) as client:
        queued = inspect.list_queued_workflows(client._reach, _list_filters(args))
        _print_workflows(args, await queued)


async def existing(client: Client, workflow_id: str) -> WorkflowStatus:
    """The workflow's status; ``DBOSNonExistentWorkflowError`` (exit 3) if there is none.

    Every command that names a workflow looks first: cancelling, resuming or deleting an
    id that names nothing is a mistake to report, not a success to print."""
    status = await inspect.get_workflow_status(client._reach, workflow_id, previews=True)
    if status is None:
        raise DBOSNonExistentWorkflowError("target", workflow_id)
    return status


async def workflow_get(args: argparse.Namespace) -> None:
    async with open_client(args) as client:
        status = await existing(client, args.workflow_id)
        steps = await inspect.list_workflow_steps(client._reach, args.workflow_id, previews=True)
    if args.json:
        print(cli_format.workflow_json(status, steps))
    else:
        print(cli_format.workflow_detail(status, steps, decoded=args.allow_pickle))


async def workflow_steps(args: argparse.Namespace) -> None:
    async with open_client(args) as client:
        status = await existing(client, args.workflow_id)
        steps = await inspect.list_workflow_steps(client._reach, args.workflow_id, previews=True)
    raw = status.serialization == "py_pickle" and not args.allow_pickle
    _print_steps(args, steps, raw)


async def workflow_cancel(args: argparse.Namespace) -> None:
    async with open_client(args) as client:

        async def cancel(workflow_id: str) -> None:
            await manage.cancel_workflow(client._reach, workflow_id)

        await cli_bulk.each(args, client, "cancelled", existing, cancel)


async def workflow_resume(args: argparse.Namespace) -> None:
    async with open_client(args) as client:

        async def resumable(client: Client, workflow_id: str) -> WorkflowStatus:
            status = await existing(client, workflow_id)
            if status.status in (SUCCESS, ERROR):
                # Resume replays the record: a failed step fails again, a success stays one.
                raise UsageError(
                    f"workflow {workflow_id} is {status.status}: resume changes nothing for a "
                    "finished workflow (nothing was changed). To run a failed one again from "
                    f"its failed step, after fixing the code: dbos-trio workflow retry "
                    f"{workflow_id}"
                )
            return status

        async def resume(workflow_id: str) -> None:
            await manage.resume_workflow(client._reach, workflow_id)

        await cli_bulk.each(args, client, "resumed", resumable, resume)


async def workflow_retry(args: argparse.Namespace) -> None:
    async with open_client(args) as client:
        await existing(client, args.workflow_id)
        retried = await manage.retry_workflow(
            client._reach,
            args.workflow_id,
            application_version=args.application_version,
            forked_id=args.forked_workflow_id or None,
        )
    if args.json:
        print(json.dumps({"workflow_id": retried, "retried": args.workflow_id}))
    else:
        print(
            f"retried {args.workflow_id} as {retried} (from its first failed step; follow it "
            f"with: dbos-trio workflow get {retried})"
        )


async def workflow_delete(args: argparse.Namespace) -> None:
    async with open_client(args) as client:

        async def delete(workflow_id: str) -> None:
            children = args.delete_children
            await manage.delete_workflow(client._reach, workflow_id, delete_children=children)

        await cli_bulk.each(args, client, "deleted", existing, delete)


async def workflow_fork(args: argparse.Namespace) -> None:
    async with open_client(args) as client:
        await existing(client, args.workflow_id)
        forked = await manage.fork_workflow(
            client._reach,
            args.workflow_id,
            args.step,
            application_version=args.application_version,
            forked_id=args.forked_workflow_id or None,
        )
    print(json.dumps({"workflow_id": forked}) if args.json else f"forked as {forked}")


def add_parsers(commands: Any, common: argparse.ArgumentParser, command: Any) -> None:
    """Add ``workflow`` and ``queue`` and their actions to ``commands``."""
    listing = Parser(add_help=False)
    listing.add_argument(
        "--limit", "-l", type=count, default=10, help="show at most this many (default: 10)"
    )
    listing.add_argument("--offset", "-o", type=count, default=None, help="skip this many first")
    listing.add_argument(
        "--sort-desc", "-d", action="store_true", help="newest first (default: oldest first)"
    )
    listing.add_argument(
        "--status",
        "-S",
        type=status_name,
        default=None,
        help="only this status: " + ", ".join(sorted(ALL_STATUSES)),
    )
    listing.add_argument("--name", "-n", default=None, help="only workflows of this name")
    listing.add_argument("--app-version", "-v", default=None, help="only this application version")
    listing.add_argument("--user", "-u", default=None, help="only this authenticated user")
    listing.add_argument(
        "--start-time",
        "-t",
        type=iso_time,
        default=None,
        help="only created at or after this ISO 8601 time",
    )
    listing.add_argument(
        "--end-time",
        "-e",
        type=iso_time,
        default=None,
        help="only created before this ISO 8601 time",
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
        run=workflow_list
    )
    get = command(
        actions,
        "get",
        "show one workflow: status, timings, input, output or error, and its steps",
        [common],
    )
    get.add_argument("workflow_id", help="the workflow's id")
    get.set_defaults(run=workflow_get)
    steps = command(actions, "steps", "list a workflow's checkpointed steps", [common])
    steps.add_argument("workflow_id", help="the workflow's id")
    steps.set_defaults(run=workflow_steps)
    for name, run, text in (
        ("cancel", workflow_cancel, "cancel workflows: each stops at its next checkpoint"),
        ("resume", workflow_resume, "resume workflows (cancelled ones, say) from their last step"),
    ):
        action = command(actions, name, text, [common])
        cli_bulk.add_arguments(action, name)
        action.set_defaults(run=run)
    delete = command(actions, "delete", "delete workflows and their steps", [common])
    cli_bulk.add_arguments(delete, "delete")
    delete.add_argument(
        "--delete-children", action="store_true", help="delete their child workflows too"
    )
    delete.set_defaults(run=workflow_delete)
    fork_action = command(
        actions, "fork", "start a new workflow from another's steps up to a given one", [common]
    )
    fork_action.add_argument("workflow_id", help="the workflow to fork")
    fork_action.add_argument(
        "--step",
        "-S",
        type=step_number,
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
    fork_action.set_defaults(run=workflow_fork)
    retry = command(
        actions,
        "retry",
        "run a failed workflow again from its first failed step, with today's code",
        [common],
    )
    retry.add_argument("workflow_id", help="the failed (ERROR) workflow")
    retry.add_argument(
        "--forked-workflow-id", "-f", default=None, help="the new workflow's id (default: random)"
    )
    retry.add_argument(
        "--application-version",
        "-v",
        default=None,
        help="the version that runs it (default: the application's latest)",
    )
    retry.set_defaults(run=workflow_retry)
    cli_pause.add_workflow_actions(actions, common, command)
    cli_versions.add_workflow_actions(actions, common)
    cli_bundles.add_workflow_actions(actions, common, command)

    queue = command(commands, "queue", "inspect queued workflows, pause and unpause queues", [])
    queue_actions = queue.add_subparsers(dest="action", required=True, metavar="ACTION")
    queue_list_parser = command(
        queue_actions, "list", "list enqueued and running queued workflows", [common, listing]
    )
    queue_list_parser.add_argument("--queue", "-q", default=None, help="only this queue")
    queue_list_parser.set_defaults(run=queue_list)
    cli_pause.add_queue_actions(queue_actions, common, command)
