"""Every row of some workflows, table by table, as the bundle tests compare them: what an
import must reproduce byte for byte (``tests/sysdb/test_bundles.py``,
``test_bundle_payloads.py``)."""

from __future__ import annotations

from typing import Any

from support.backends import query

TABLES = {
    "workflow_status": (
        "workflow_uuid, status, name, inputs, output, error, serialization, created_at, "
        "updated_at, application_version, recovery_attempts, parent_workflow_id, "
        "owner_xid, creator_xid, completed_at, started_at_epoch_ms",
        "workflow_uuid",
    ),
    "workflow_input": ("workflow_uuid, inputs", "workflow_uuid"),
    "workflow_output": ("workflow_uuid, output, error", "workflow_uuid"),
    "operation_outputs": (
        "workflow_uuid, function_id, function_name, output, error, child_workflow_id, "
        "started_at_epoch_ms, completed_at_epoch_ms, serialization",
        "workflow_uuid",
    ),
    "workflow_events": ("workflow_uuid, key, value, serialization", "workflow_uuid"),
    "workflow_events_history": (
        "workflow_uuid, function_id, key, value, serialization",
        "workflow_uuid",
    ),
    "streams": ('workflow_uuid, key, "offset", value, function_id', "workflow_uuid"),
    "notifications": (
        "destination_uuid, message_uuid, topic, message, consumed, consumed_by_function_id",
        "destination_uuid",
    ),
}


async def rows_of(url: str, ids: tuple[str, ...]) -> dict[str, list[tuple[Any, ...]]]:
    found = {}
    for table, (columns, key) in TABLES.items():
        rows = []
        order = ", ".join(str(i) for i in range(1, min(3, columns.count(",") + 1) + 1))
        for workflow_id in ids:
            rows += await query(
                url,
                f"SELECT {columns} FROM {{t}}{table} WHERE {key} = %s ORDER BY {order}",
                workflow_id,
            )
        found[table] = [tuple(bool(v) if isinstance(v, bool) else v for v in r) for r in rows]
    return found
