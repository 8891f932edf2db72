"""Read-only views of the system database for operators (the dashboard's pages).

Invariant: nothing here writes, locks or waits for a lock; each call is one statement
whose answer is a snapshot, so a page may show counts a moment stale but never blocks a
running executor. Listings are bounded by the caller's ``limit`` where a workflow may own
an unbounded number of rows (messages, stream values).
"""

from __future__ import annotations

from dbos_trio._sysdb.records import (
    EventRecord,
    ExecutorSummary,
    MessageRecord,
    QueueDepth,
    ReplicationState,
    StreamEntry,
)
from dbos_trio._sysdb.sql.base import SQLBackendBase


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
