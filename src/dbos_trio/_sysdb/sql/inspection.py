"""Read-only views of the system database for operators (the dashboard's pages).

Invariant: nothing here writes, locks or waits for a lock; each call is one statement
whose answer is a snapshot, so a page may show counts a moment stale but never blocks a
running executor. Listings are bounded by the caller's ``limit`` where a workflow may own
an unbounded number of rows (messages, stream values), and the ``*_bounded`` reads bound
each payload too (:mod:`dbos_trio._sysdb.bounded`): one over the bound comes as its start
and its size, never whole.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._sysdb.bounded import Bounded, PayloadBound, clipped_fields
from dbos_trio._sysdb.records import (
    EventRecord,
    ExecutorSummary,
    MessageRecord,
    QueueDepth,
    RecordedStep,
    ReplicationState,
    StreamEntry,
    WorkflowFilters,
    WorkflowRow,
)
from dbos_trio._sysdb.rows import recorded_step
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.sql.listing import bounded_workflow_row, list_workflows_query

# "No limit" for the bounded statements' LIMIT (a parameter on both engines: PostgreSQL
# refuses a negative one, SQLite a NULL one).
_ALL_ROWS = 2**63 - 1


def _bounds(workflow_id: str, bound: PayloadBound, limit: int | None) -> dict[str, Any]:
    return {
        "workflow_id": workflow_id,
        "whole": bound.whole_up_to,
        "head": bound.head_chars,
        "limit": _ALL_ROWS if limit is None else limit,
    }


class InspectionOperations(SQLBackendBase):
    async def list_events(self, workflow_id: str, limit: int) -> list[EventRecord]:
        rows = await self._db.all("list_events", {"workflow_id": workflow_id, "limit": limit})
        return [EventRecord(key=r[0], value=r[1], serialization=r[2]) for r in rows]

    async def list_messages(self, workflow_id: str, limit: int) -> list[MessageRecord]:
        rows = await self._db.all("list_messages", {"workflow_id": workflow_id, "limit": limit})
        return [
            MessageRecord(
                message_uuid=str(r[0]),
                topic=r[1],
                message=r[2],
                serialization=r[3],
                consumed=bool(r[4]),
                created_at_epoch_ms=None if r[5] is None else int(r[5]),
            )
            for r in rows
        ]

    async def list_stream_entries(self, workflow_id: str, limit: int) -> list[StreamEntry]:
        rows = await self._db.all(
            "list_stream_entries", {"workflow_id": workflow_id, "limit": limit}
        )
        return [
            StreamEntry(key=r[0], offset=int(r[1]), value=r[2], serialization=r[3]) for r in rows
        ]

    async def replication_state(self) -> ReplicationState | None:
        return None  # PostgreSQL overrides it; SQLite has no standbys

    async def list_executor_summaries(self) -> list[ExecutorSummary]:
        rows = await self._db.all("list_executor_summaries", {})
        return [
            ExecutorSummary(
                executor_id=r[0],
                application_version=r[1],
                application_name=r[2],
                pending=int(r[3] or 0),
                total=int(r[4] or 0),
                last_updated_at=None if r[5] is None else int(r[5]),
            )
            for r in rows
        ]

    async def queue_depths(self) -> list[QueueDepth]:
        rows = await self._db.all("queue_depths", {})
        return [QueueDepth(queue_name=r[0], status=r[1], count=int(r[2])) for r in rows]

    # --- bounded reads, for the faces that show values (sysdb/bounded.py) -------------

    async def get_workflow_bounded(
        self, workflow_id: str, bound: PayloadBound
    ) -> Bounded[WorkflowRow] | None:
        query, params = list_workflows_query(
            WorkflowFilters(workflow_ids=(workflow_id,)), self._listing, bound
        )
        rows = await self._db.query(query, params)
        return bounded_workflow_row(rows[0], bound) if rows else None

    async def list_workflows_bounded(
        self, filters: WorkflowFilters, bound: PayloadBound
    ) -> list[Bounded[WorkflowRow]]:
        query, params = list_workflows_query(filters, self._listing, bound)
        rows = await self._db.query(query, params, listing=True)
        return [bounded_workflow_row(row, bound) for row in rows]

    async def list_steps_bounded(
        self,
        workflow_id: str,
        bound: PayloadBound,
        *,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[Bounded[RecordedStep]]:
        params = {**_bounds(workflow_id, bound, limit), "offset": offset or 0}
        rows = await self._db.all("list_steps_bounded", params)
        return [
            Bounded(recorded_step(r), clipped_fields({"output": r[8], "error": r[9]}, bound))
            for r in rows
        ]

    async def list_events_bounded(
        self, workflow_id: str, limit: int, bound: PayloadBound
    ) -> list[Bounded[EventRecord]]:
        rows = await self._db.all("list_events_bounded", _bounds(workflow_id, bound, limit))
        return [
            Bounded(
                EventRecord(key=r[0], value=r[1], serialization=r[2]),
                clipped_fields({"value": r[3]}, bound),
            )
            for r in rows
        ]

    async def list_messages_bounded(
        self, workflow_id: str, limit: int, bound: PayloadBound
    ) -> list[Bounded[MessageRecord]]:
        rows = await self._db.all("list_messages_bounded", _bounds(workflow_id, bound, limit))
        return [
            Bounded(
                MessageRecord(
                    message_uuid=str(r[0]),
                    topic=r[1],
                    message=r[2],
                    serialization=r[3],
                    consumed=bool(r[4]),
                    created_at_epoch_ms=None if r[5] is None else int(r[5]),
                ),
                clipped_fields({"message": r[6]}, bound),
            )
            for r in rows
        ]

    async def list_stream_entries_bounded(
        self, workflow_id: str, limit: int, bound: PayloadBound
    ) -> list[Bounded[StreamEntry]]:
        rows = await self._db.all("list_stream_entries_bounded", _bounds(workflow_id, bound, limit))
        return [
            Bounded(
                StreamEntry(key=r[0], offset=int(r[1]), value=r[2], serialization=r[3]),
                clipped_fields({"value": r[4]}, bound),
            )
            for r in rows
        ]
