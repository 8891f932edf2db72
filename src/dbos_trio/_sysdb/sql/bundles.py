"""Exporting and importing a workflow's rows (queries/bundles.sql), for both backends.

Invariant: columns pass through as stored. Each table's column list below is the order of
its ``bundle_*`` SELECT; values come back as the driver gives them, booleans made plain
``bool`` (SQLite stores integers) and nothing else converted, so payload text is never
decoded or re-encoded. An import is one transaction: refused ids raise before any insert.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dbos_trio._sysdb.interfaces.bundles import Columns, WorkflowRows
from dbos_trio._sysdb.rows import NEW_WORKFLOW_COLUMNS
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.statements import Transaction
from dbos_trio.errors import DBOSException

STATUS_COLUMNS = (
    "workflow_uuid", "status", "name", "authenticated_user", "assumed_role",
    "authenticated_roles", "request", "output", "error", "executor_id", "created_at",
    "updated_at", "application_version", "application_id", "class_name", "config_name",
    "recovery_attempts", "queue_name", "workflow_timeout_ms", "workflow_deadline_epoch_ms",
    "inputs", "started_at_epoch_ms", "deduplication_id", "priority", "queue_partition_key",
    "forked_from", "was_forked_from", "owner_xid", "parent_workflow_id", "serialization",
    "delay_until_epoch_ms", "rate_limited", "completed_at", "attributes", "schedule_name",
    "debounce_deadline_epoch_ms", "is_debounced", "application_name", "creator_xid",
)  # fmt: skip
STEP_COLUMNS = (
    "function_id", "function_name", "output", "error", "child_workflow_id",
    "started_at_epoch_ms", "completed_at_epoch_ms", "serialization", "application_name",
)  # fmt: skip
EVENT_COLUMNS = ("key", "value", "serialization")
EVENT_HISTORY_COLUMNS = ("function_id", "key", "value", "serialization")
STREAM_COLUMNS = ("key", "offset", "value", "function_id", "serialization")
NOTIFICATION_COLUMNS = (
    "message_uuid", "topic", "message", "created_at_epoch_ms", "serialization", "consumed",
    "consumed_by_function_id",
)  # fmt: skip
_BOOLEANS = frozenset({"was_forked_from", "rate_limited", "is_debounced", "consumed"})
# The status columns bundle_update_status sets (those the insert of a new row does not),
# and the parameter each is passed as.
_UPDATED = {
    "assumed_role": "assumed_role",
    "request": "request",
    "output": "output",
    "error": "error",
    "inputs": "legacy_inputs",
    "started_at_epoch_ms": "started_at_epoch_ms",
    "was_forked_from": "was_forked_from",
    "rate_limited": "rate_limited",
    "completed_at": "completed_at",
    "updated_at": "updated_at",
}
_DELETES = (
    "bundle_delete_notifications",
    "bundle_delete_streams",
    "bundle_delete_event_history",
    "bundle_delete_events",
    "bundle_delete_steps",
    "bundle_delete_output",
    "bundle_delete_input",
    "bundle_delete_status",
)


def _named(columns: tuple[str, ...], row: Sequence[Any]) -> Columns:
    named: Columns = {}
    for column, value in zip(columns, row, strict=True):
        named[column] = bool(value) if column in _BOOLEANS and value is not None else value
    return named


class BundleOperations(SQLBackendBase):
    async def export_workflow_rows(self, workflow_id: str) -> WorkflowRows | None:
        params = {"workflow_id": workflow_id}
        status = await self._db.one("bundle_status", params)
        if status is None:
            return None
        found_input = await self._db.one("bundle_input", params)
        found_output = await self._db.one("bundle_output", params)

        async def table(name: str, columns: tuple[str, ...]) -> list[Columns]:
            return [_named(columns, row) for row in await self._db.all(name, params)]

        return WorkflowRows(
            status=_named(STATUS_COLUMNS, status),
            input=None if found_input is None else {"inputs": found_input[0]},
            output=None
            if found_output is None
            else {"output": found_output[0], "error": found_output[1]},
            steps=await table("bundle_steps", STEP_COLUMNS),
            events=await table("bundle_events", EVENT_COLUMNS),
            event_history=await table("bundle_event_history", EVENT_HISTORY_COLUMNS),
            streams=await table("bundle_streams", STREAM_COLUMNS),
            notifications=await table("bundle_notifications", NOTIFICATION_COLUMNS),
        )

    async def import_workflow_rows(
        self, workflows: Sequence[WorkflowRows], *, overwrite: bool
    ) -> list[str]:
        ids = [workflow.workflow_id for workflow in workflows]
        if not overwrite:
            rows = await self._db.all("existing_workflows", {"workflow_ids": ids})
            existing = sorted(str(row[0]) for row in rows)
            if existing:
                raise DBOSException(
                    f"workflow(s) {', '.join(existing)} already exist in this database: "
                    "nothing imported (import with overwrite to replace them)"
                )

        async def body(tx: Transaction) -> None:
            for workflow in workflows:
                if overwrite:
                    for name in _DELETES:
                        await tx.run(name, {"workflow_id": workflow.workflow_id})
                await _insert(tx, workflow)

        await self._db.transaction(body)
        return ids


async def _insert(tx: Transaction, workflow: WorkflowRows) -> None:
    workflow_id = workflow.workflow_id
    status = workflow.status
    params: Columns = {"workflow_id": workflow_id, "inputs": None}
    for column, parameter in NEW_WORKFLOW_COLUMNS:
        if column != "updated_at":  # its parameter is created_at's
            params[parameter] = status.get(column)
    await tx.run("bundle_insert_status", params)
    updated = {parameter: status.get(column) for column, parameter in _UPDATED.items()}
    await tx.run("bundle_update_status", {"workflow_id": workflow_id, **updated})
    if workflow.input is not None:
        await tx.run("bundle_insert_input", {"workflow_id": workflow_id, **workflow.input})
    if workflow.output is not None:
        await tx.run("bundle_insert_output", {"workflow_id": workflow_id, **workflow.output})
    for name, rows in (
        ("bundle_insert_step", workflow.steps),
        ("bundle_insert_event", workflow.events),
        ("bundle_insert_event_history", workflow.event_history),
        ("bundle_insert_stream", workflow.streams),
        ("bundle_insert_notification", workflow.notifications),
    ):
        for row in rows:
            await tx.run(name, {"workflow_id": workflow_id, **row})
