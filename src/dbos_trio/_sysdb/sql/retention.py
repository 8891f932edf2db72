"""Garbage collection and the global timeout: the batch statements retention runs.

Invariants, and why:

* One batch is one transaction (one statement on PostgreSQL, one script on SQLite) that
  deletes a workflow's row and every row that refers to it — inputs, outputs, steps by
  hand (they have no foreign key since migration 112), messages, events and streams by
  cascade — so a crash or a cancellation between batches leaves no half-deleted
  workflow, and a purge of a million rows never holds a long transaction that would
  stall claims and checkpoints.
* Only terminal rows are deleted: the status filter is in the statement, re-checked on
  the locked row, so a workflow resumed while the purge runs is never taken.
* With ``leader_only`` the batch first takes the application's retention lock in its own
  transaction (:meth:`_retention_leader`; PostgreSQL's advisory lock, always granted on
  SQLite's single writer): a batch that cannot is not run, and the policy's run stops.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.statements import Row, Transaction
from dbos_trio._sysdb.wakeups import CANCEL_CHANNEL, cancels_key


class RetentionOperations(SQLBackendBase):
    async def _retention_leader(self, tx: Transaction, application_name: str | None) -> bool:
        """Inside a batch's transaction: whether this process collects now."""
        return True

    async def gc_nth_newest(self, application_name: str | None, offset: int) -> int | None:
        row = await self._db.one(
            "gc_nth_newest", {"application_name": application_name, "offset": offset}
        )
        return None if row is None else int(row[0])

    async def gc_batch(
        self,
        *,
        application_name: str | None,
        after_ms: int,
        created_before_ms: int,
        keep_before_ms: int,
        completed_before_ms: int,
        batch_size: int,
        leader_only: bool,
    ) -> list[int] | None:
        params: dict[str, Any] = {
            "application_name": application_name,
            "after": after_ms,
            "created_before": created_before_ms,
            "keep_before": keep_before_ms,
            "completed_before": completed_before_ms,
            "batch_size": batch_size,
        }
        if not leader_only:
            rows = await self._db.all("gc_batch", params)
        else:

            async def batch(tx: Transaction) -> list[Row] | None:
                if not await self._retention_leader(tx, application_name):
                    return None
                return await tx.all("gc_batch", params)

            found = await self._db.transaction(batch)
            if found is None:
                return None
            rows = found
        return [int(row[0]) for row in rows]

    async def cancel_created_before(
        self, application_name: str | None, created_before_ms: int, batch_size: int, now_ms: int
    ) -> list[str]:
        rows = await self._db.all(
            "cancel_created_before",
            {
                "application_name": application_name,
                "created_before": created_before_ms,
                "batch_size": batch_size,
                "now": now_ms,
            },
        )
        if rows:
            self._announce(cancels_key(), (CANCEL_CHANNEL, ""))
        return [row[0] for row in rows]

    async def payload_references(self, after: str, batch_size: int) -> list[str]:
        rows = await self._db.all("payload_references", {"after": after, "batch_size": batch_size})
        return [row[0] for row in rows]
