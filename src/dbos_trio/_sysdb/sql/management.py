"""Operator actions on stored workflows: cancel, resume, delete, delay, fork, and lookups.

Each is one statement (a script of a few on SQLite), so it either happens whole or not at
all. Cancelling clears the owner token: that, not a message, is what stops an execution
running elsewhere — its next fenced write finds the workflow no longer its own, and its
executor's watcher, woken by a NOTIFY (or at its next look), cancels it where it waits.
"""

from __future__ import annotations

from dbos_trio._sysdb.errors import UniqueViolation
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.wakeups import CANCEL_CHANNEL, cancels_key
from dbos_trio.errors import DBOSWorkflowIDInUseError


class ManagementOperations(SQLBackendBase):
    async def cancel_workflows(self, workflow_ids: list[str], now_ms: int) -> list[str]:
        rows = await self._db.all(
            "cancel_workflows", {"workflow_ids": list(workflow_ids), "now": now_ms}
        )
        if rows:
            # Executions of these workflows in other processes stop at once, not at their
            # watcher's next look (see engine/watch.py).
            self._announce(cancels_key(), (CANCEL_CHANNEL, ""))
        return [row[0] for row in rows]

    async def pause_workflows(self, workflow_ids: list[str], now_ms: int) -> list[str]:
        rows = await self._db.all(
            "pause_workflows", {"workflow_ids": list(workflow_ids), "now": now_ms}
        )
        if rows:
            # The watchers of other processes look at once (they see PAUSED, not CANCELLED).
            self._announce(cancels_key(), (CANCEL_CHANNEL, ""))
        return [row[0] for row in rows]

    async def pause_own_workflow(self, workflow_id: str, owner_xid: str, now_ms: int) -> bool:
        params = {"workflow_id": workflow_id, "owner_xid": owner_xid, "now": now_ms}
        return await self._db.run("pause_own_workflow", params) > 0

    async def unpause_workflows(self, workflow_ids: list[str], now_ms: int) -> list[str]:
        rows = await self._db.all(
            "unpause_workflows", {"workflow_ids": list(workflow_ids), "now": now_ms}
        )
        for row in rows:
            self._announce_enqueued(row[1], row[2])
        return [row[0] for row in rows]

    async def list_children(self, workflow_ids: list[str]) -> list[str]:
        rows = await self._db.all("list_children", {"workflow_ids": list(workflow_ids)})
        return [row[0] for row in rows]

    async def find_deduplicated(self, queue_name: str, deduplication_id: str) -> str | None:
        row = await self._db.one(
            "find_deduplicated", {"queue_name": queue_name, "deduplication_id": deduplication_id}
        )
        return None if row is None else str(row[0])

    async def existing_workflows(self, workflow_ids: list[str]) -> set[str]:
        rows = await self._db.all("existing_workflows", {"workflow_ids": list(workflow_ids)})
        return {row[0] for row in rows}

    async def resume_workflows(
        self, workflow_ids: list[str], queue_name: str | None, now_ms: int
    ) -> list[str]:
        rows = await self._db.all(
            "resume_workflows",
            {"workflow_ids": list(workflow_ids), "queue_name": queue_name, "now": now_ms},
        )
        return [row[0] for row in rows]

    async def delete_workflows(self, workflow_ids: list[str]) -> None:
        await self._db.run("delete_workflows", {"workflow_ids": list(workflow_ids)})

    async def set_workflow_delay(self, workflow_id: str, delay_until_ms: int, now_ms: int) -> bool:
        changed = await self._db.run(
            "set_workflow_delay",
            {"workflow_id": workflow_id, "delay_until": delay_until_ms, "now": now_ms},
        )
        return changed > 0

    async def fork_workflow(
        self,
        *,
        original_id: str,
        forked_id: str,
        start_step: int,
        application_version: str | None,
        queue_name: str,
        queue_partition_key: str | None,
        timeout_ms: int | None,
        application_name: str | None,
        now_ms: int,
        replacement_children: str | None = None,
    ) -> bool:
        params = {
            "replacement_children": replacement_children,
            "original_id": original_id,
            "forked_id": forked_id,
            "start_step": start_step,
            "application_version": application_version,
            "queue_name": queue_name,
            "queue_partition_key": queue_partition_key,
            "timeout_ms": timeout_ms,
            "application_name": application_name,
            "now": now_ms,
        }
        try:
            row = await self._db.one("fork_workflow", params)
        except UniqueViolation:
            # The fork's id is taken: by this very fork, if an earlier attempt committed
            # and its reply was lost; else by another workflow.
            existing = await self._db.one("forked_from", {"workflow_id": forked_id})
            if existing is not None and existing[0] == original_id:
                return True
            raise DBOSWorkflowIDInUseError(
                forked_id, "a fork needs an id no workflow has yet"
            ) from None
        return row is not None
