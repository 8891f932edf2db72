"""``dbos-trio workflow pause|unpause ID`` and ``dbos-trio queue pause|unpause NAME``.

Each goes through the operations every face shares (:mod:`dbos_trio._ops.manage`,
:mod:`dbos_trio._ops.queues`), after looking first, so a mistake changes nothing and says
so: no workflow with the id exits 3, a finished workflow exits 2 (there is nothing left to
pause, or to unpause), no stored queue of the name exits 2. Repeating a pause or an unpause
is not an error: it says nothing changed (exit 0).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from dbos_trio._core.statuses import PAUSED, TERMINAL_STATUSES
from dbos_trio._ops import inspect, manage
from dbos_trio._ops import queues as queue_ops
from dbos_trio.cli._common import open_client
from dbos_trio.cli._errors import UsageError
from dbos_trio.errors import DBOSNonExistentWorkflowError

if TYPE_CHECKING:
    from dbos_trio._client import Client
    from dbos_trio._engine.workflows.status import WorkflowStatus


async def existing(client: Client, workflow_id: str) -> WorkflowStatus:
    """The workflow's status; ``DBOSNonExistentWorkflowError`` (exit 3) if there is none."""
    status = await inspect.get_workflow_status(client._reach, workflow_id)
    if status is None:
        raise DBOSNonExistentWorkflowError("target", workflow_id)
    return status


def _report(args: argparse.Namespace, record: dict[str, Any], text: str) -> None:
    print(json.dumps(record) if args.json else text)


async def workflow_pause(args: argparse.Namespace) -> None:
    workflow_id = args.workflow_id
    async with open_client(args) as client:
        status = await existing(client, workflow_id)
        if status.status in TERMINAL_STATUSES:
            raise UsageError(
                f"workflow {workflow_id} is {status.status}: it has finished, so there is "
                "nothing to pause (nothing was changed)"
            )
        changed = await manage.pause_workflow(client._reach, workflow_id)
    record = {"workflow_id": workflow_id, "status": PAUSED, "changed": changed}
    if changed:
        text = (
            f"paused {workflow_id}: no executor runs it until `dbos-trio workflow unpause "
            f"{workflow_id}` (running, it stops before its next step)"
        )
    else:
        text = f"workflow {workflow_id} was already paused (nothing changed)"
    _report(args, record, text)


async def workflow_unpause(args: argparse.Namespace) -> None:
    workflow_id = args.workflow_id
    async with open_client(args) as client:
        status = await existing(client, workflow_id)
        if status.status in TERMINAL_STATUSES:
            raise UsageError(
                f"workflow {workflow_id} is {status.status}: it has finished, so there is "
                "nothing to unpause (nothing was changed)"
            )
        changed = await manage.unpause_workflow(client._reach, workflow_id)
        now = await existing(client, workflow_id)
    record = {"workflow_id": workflow_id, "status": now.status, "changed": changed}
    if changed:
        text = (
            f"unpaused {workflow_id}: it is {now.status} on queue {now.queue_name} and runs "
            "on from its first step not recorded"
        )
    else:
        text = f"workflow {workflow_id} is {now.status}, not paused (nothing changed)"
    _report(args, record, text)


async def _queue_action(args: argparse.Namespace, pause: bool) -> None:
    name = args.queue_name
    async with open_client(args) as client:
        if await queue_ops.retrieve_queue(client._reach, name) is None:
            raise UsageError(
                f"there is no queue {name!r} in the queues table (a queue is stored when an "
                "application registers it; nothing was changed)"
            )
        action = queue_ops.pause_queue if pause else queue_ops.unpause_queue
        changed = await action(client._reach, name)
    record = {"queue_name": name, "paused": pause, "changed": changed}
    if pause and changed:
        text = (
            f"paused queue {name}: no executor claims new work from it until `dbos-trio "
            f"queue unpause {name}` (running workflows go on)"
        )
    elif pause:
        text = f"queue {name} was already paused (nothing changed)"
    elif changed:
        text = f"unpaused queue {name}: executors claim from it again at their next poll"
    else:
        text = f"queue {name} was not paused (nothing changed)"
    _report(args, record, text)


async def queue_pause(args: argparse.Namespace) -> None:
    await _queue_action(args, pause=True)


async def queue_unpause(args: argparse.Namespace) -> None:
    await _queue_action(args, pause=False)


def add_workflow_actions(actions: Any, common: argparse.ArgumentParser, command: Any) -> None:
    """Add ``pause`` and ``unpause`` to the ``workflow`` command's actions."""
    pause = command(
        actions,
        "pause",
        "pause a workflow durably: it runs no further step until unpaused (restarts "
        "included); a running step finishes first",
        [common],
    )
    pause.add_argument("workflow_id", help="the unfinished workflow to pause")
    pause.set_defaults(run=workflow_pause)
    unpause = command(
        actions,
        "unpause",
        "let a paused workflow run again, on from its first step not recorded",
        [common],
    )
    unpause.add_argument("workflow_id", help="the paused workflow")
    unpause.set_defaults(run=workflow_unpause)


def add_queue_actions(actions: Any, common: argparse.ArgumentParser, command: Any) -> None:
    """Add ``pause`` and ``unpause`` to the ``queue`` command's actions."""
    pause = command(
        actions,
        "pause",
        "stop every executor claiming new work from a queue (durably); running work goes on",
        [common],
    )
    pause.add_argument("queue_name", help="the queue, as registered")
    pause.set_defaults(run=queue_pause)
    unpause = command(actions, "unpause", "let executors claim from a paused queue again", [common])
    unpause.add_argument("queue_name", help="the queue, as registered")
    unpause.set_defaults(run=queue_unpause)
