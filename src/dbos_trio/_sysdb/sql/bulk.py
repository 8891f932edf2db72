"""Bulk sends, fork lookups and reading every event of a workflow.

A bulk send is one transaction of the single send's statement, once per message: every
message commits or none does (a missing destination rolls the whole batch back), each is
inserted at most once by its id, and from a workflow body the one checkpoint (under the
caller's fence, in every statement) commits with them.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._sysdb.errors import ForeignKeyViolation
from dbos_trio._sysdb.records import Caller, OutgoingMessage
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.statements import Transaction
from dbos_trio._sysdb.wakeups import message_key
from dbos_trio.errors import DBOSNonExistentWorkflowError


class _LostFence(Exception):
    """Raised inside a bulk send's transaction to roll it back: the fence did not hold."""


class BulkOperations(SQLBackendBase):
    async def send_bulk(
        self,
        messages: list[OutgoingMessage],
        *,
        now_ms: int,
        caller: Caller | None,
        step_name: str,
    ) -> None:
        common: dict[str, Any] = {
            "caller_id": caller.workflow_id if caller is not None else None,
            "owner_xid": caller.owner_xid if caller is not None else None,
            "function_id": caller.function_id if caller is not None else None,
            "function_name": step_name,
            "application_name": caller.application_name if caller is not None else None,
            "now": now_ms,
        }
        missing: list[str] = []

        async def send_all(tx: Transaction) -> None:
            for message in messages:
                missing[:] = [message.destination_id]
                row = await tx.one(
                    "send_message",
                    {
                        **common,
                        "message_uuid": message.message_uuid,
                        "destination_id": message.destination_id,
                        "topic": message.topic,
                        "message": message.message,
                        "serialization": message.serialization,
                    },
                )
                if caller is not None and (row is None or not row[0]):
                    raise _LostFence  # not ours any more: roll every message back
            missing.clear()

        try:
            await self._db.transaction(send_all)
        except ForeignKeyViolation:
            raise DBOSNonExistentWorkflowError(
                "`send` destination", missing[0] if missing else "?"
            ) from None
        except _LostFence:
            assert caller is not None
            await self._raise_lost_ownership(caller.workflow_id, caller.owner_xid)
        for message in messages:
            self._announce(message_key(message.destination_id, message.topic), None)

    async def list_forks(self, workflow_ids: list[str]) -> list[str]:
        rows = await self._db.all("list_forks", {"workflow_ids": list(workflow_ids)})
        return [row[0] for row in rows]

    async def get_all_events(self, workflow_id: str) -> list[tuple[str, str, str | None]]:
        rows = await self._db.all("get_all_events", {"workflow_id": workflow_id})
        return [(row[0], row[1], row[2]) for row in rows]
