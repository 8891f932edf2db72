"""The workflow listing query: one WHERE clause per set filter, values as parameters.

The same filters and order as on PostgreSQL (``ws.created_at`` then ``ws.workflow_uuid``),
written for SQLite: lists are JSON arrays unpacked with ``json_each``, the id prefix is
matched case-sensitively with ``substr`` (SQLite's LIKE ignores ASCII case, PostgreSQL's
does not), and an OFFSET without a LIMIT gets ``LIMIT -1``.
"""

from __future__ import annotations

import json
from typing import Any

from ..records import WorkflowFilters, WorkflowRow

_COLUMNS = (
    "ws.workflow_uuid, ws.status, ws.name, ws.class_name, ws.config_name, "
    "ws.authenticated_user, ws.assumed_role, ws.authenticated_roles, {inputs}, {output}, "
    "{error}, ws.serialization, ws.executor_id, ws.created_at, ws.updated_at, "
    "ws.application_version, ws.application_id, ws.application_name, ws.recovery_attempts, "
    "ws.queue_name, ws.workflow_timeout_ms, ws.workflow_deadline_epoch_ms, "
    "ws.started_at_epoch_ms, ws.deduplication_id, ws.priority, ws.queue_partition_key, "
    "ws.forked_from, ws.was_forked_from, ws.parent_workflow_id, ws.delay_until_epoch_ms, "
    "ws.completed_at, ws.owner_xid"
)

_FIELDS = (
    "workflow_id",
    "status",
    "name",
    "class_name",
    "config_name",
    "authenticated_user",
    "assumed_role",
    "authenticated_roles",
    "inputs",
    "output",
    "error",
    "serialization",
    "executor_id",
    "created_at",
    "updated_at",
    "application_version",
    "application_id",
    "application_name",
    "recovery_attempts",
    "queue_name",
    "workflow_timeout_ms",
    "workflow_deadline_epoch_ms",
    "started_at_epoch_ms",
    "deduplication_id",
    "priority",
    "queue_partition_key",
    "forked_from",
    "was_forked_from",
    "parent_workflow_id",
    "delay_until_epoch_ms",
    "completed_at",
    "owner_xid",
)
_WAS_FORKED_FROM = _FIELDS.index("was_forked_from")


def workflow_row(row: tuple[Any, ...]) -> WorkflowRow:
    values = list(row)
    flag = values[_WAS_FORKED_FROM]
    values[_WAS_FORKED_FROM] = None if flag is None else bool(flag)  # stored as 0/1
    return WorkflowRow(**dict(zip(_FIELDS, values, strict=True)))


def list_workflows_query(f: WorkflowFilters) -> tuple[str, list[Any]]:
    conditions: list[str] = []
    params: list[Any] = []

    def add(condition: str, *values: Any) -> None:
        conditions.append(condition)
        params.extend(values)

    for column, values in (
        ("ws.workflow_uuid", f.workflow_ids),
        ("ws.status", f.statuses),
        ("ws.name", f.names),
        ("ws.application_version", f.app_versions),
        ("ws.queue_name", f.queue_names),
        ("ws.executor_id", f.executor_ids),
        ("ws.forked_from", f.forked_from),
        ("ws.parent_workflow_id", f.parent_workflow_ids),
        ("ws.authenticated_user", f.users),
        ("ws.application_name", f.application_names),
    ):
        if values is not None:
            add(f"{column} IN (SELECT value FROM json_each(?))", json.dumps(list(values)))
    if f.application_names is None and f.scope_application is not None:
        add("(ws.application_name = ? OR ws.application_name IS NULL)", f.scope_application)
    if f.workflow_id_prefix is not None:
        prefix = f.workflow_id_prefix
        add("substr(ws.workflow_uuid, 1, ?) = ?", len(prefix), prefix)
    for column, bound, operator in (
        ("ws.created_at", f.created_after_ms, ">="),
        ("ws.created_at", f.created_before_ms, "<="),
        ("ws.completed_at", f.completed_after_ms, ">="),
        ("ws.completed_at", f.completed_before_ms, "<="),
        ("ws.started_at_epoch_ms", f.dequeued_after_ms, ">="),
        ("ws.started_at_epoch_ms", f.dequeued_before_ms, "<="),
    ):
        if bound is not None:
            add(f"{column} {operator} ?", bound)
    if f.queues_only:
        add("ws.queue_name IS NOT NULL")
    if f.was_forked_from is not None:
        add("ws.was_forked_from = ?", 1 if f.was_forked_from else 0)
    if f.has_parent is not None:
        add(
            "ws.parent_workflow_id IS NOT NULL" if f.has_parent else "ws.parent_workflow_id IS NULL"
        )
    columns = _COLUMNS.format(
        inputs="COALESCE(wi.inputs, ws.inputs)" if f.load_input else "NULL",
        output="COALESCE(wo.output, ws.output)" if f.load_output else "NULL",
        error="COALESCE(wo.error, ws.error)" if f.load_output else "NULL",
    )
    query = (
        f"SELECT {columns} FROM workflow_status AS ws "
        "LEFT JOIN workflow_input AS wi ON wi.workflow_uuid = ws.workflow_uuid "
        "LEFT JOIN workflow_output AS wo ON wo.workflow_uuid = ws.workflow_uuid"
    )
    if conditions:
        query += " WHERE " + " AND ".join(conditions)
    order = "DESC" if f.sort_desc else "ASC"
    query += f" ORDER BY ws.created_at {order}, ws.workflow_uuid {order}"
    if f.limit is not None or f.offset is not None:
        query += " LIMIT ?"
        params.append(-1 if f.limit is None else f.limit)
    if f.offset is not None:
        query += " OFFSET ?"
        params.append(f.offset)
    return query, params
