"""Messages, events and streams: the writes other workflows wait for.

Invariants, and why:

* A write made for a running workflow is fenced by its ``owner_xid`` and, from the
  workflow body, records its checkpoint in the same statement: a replay never sends,
  publishes or appends twice, and a stale execution writes nothing.
* A message id (``message_uuid``) is inserted at most once, so a retried send — after a
  reply that never came, or with an idempotency key — leaves one message.
* A receive consumes at most one message per (workflow, step id): if the ``DBOS.recv``
  checkpoint at that id exists already (an earlier attempt committed, its reply lost), it
  is returned instead of consuming another.
* After a write commits its waiters are woken (:meth:`_announce`): here at once, and in
  other processes by NOTIFY where the backend has it. A wakeup is only a hint; waiters
  re-check the database on their own interval anyway.
"""

from __future__ import annotations

import trio

from dbos_trio._sysdb.errors import ForeignKeyViolation, UniqueViolation
from dbos_trio._sysdb.records import Caller, StreamBatch
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.wakeups import event_key, message_key, stream_key
from dbos_trio.errors import DBOSNonExistentWorkflowError

EVENTS_CHANNEL = "dbos_workflow_events_channel"
STREAMS_CHANNEL = "dbos_streams_channel"
# How often an append races another writer of the same workflow for an offset before
# giving up (each loss means another append just succeeded).
STREAM_OFFSET_ATTEMPTS = 20


class MessageOperations(SQLBackendBase):
    async def send(
        self,
        *,
        destination_id: str,
        topic: str,
        message: str,
        serialization: str | None,
        message_uuid: str,
        now_ms: int,
        caller: Caller | None,
    ) -> None:
        params = {
            "caller_id": caller.workflow_id if caller is not None else None,
            "owner_xid": caller.owner_xid if caller is not None else None,
            "function_id": caller.function_id if caller is not None else None,
            "function_name": "DBOS.send",
            "application_name": caller.application_name if caller is not None else None,
            "message_uuid": message_uuid,
            "destination_id": destination_id,
            "topic": topic,
            "message": message,
            "serialization": serialization,
            "now": now_ms,
        }
        try:
            row = await self._db.one("send_message", params)
        except ForeignKeyViolation:
            raise DBOSNonExistentWorkflowError("`send` destination", destination_id) from None
        if caller is not None and (row is None or not row[0]):
            await self._raise_lost_ownership(caller.workflow_id, caller.owner_xid)
        self._announce(message_key(destination_id, topic), None)

    async def has_message(self, workflow_id: str, topic: str) -> bool:
        return await self._exists("has_message", {"workflow_id": workflow_id, "topic": topic})

    async def consume_message(
        self, caller: Caller, topic: str, now_ms: int
    ) -> tuple[str, str | None] | None:
        row = await self._db.one(
            "consume_message",
            {
                "workflow_id": caller.workflow_id,
                "owner_xid": caller.owner_xid,
                "function_id": caller.function_id,
                "topic": topic,
                "started_at": caller.started_at_ms,
                "now": now_ms,
                "application_name": caller.application_name,
            },
        )
        assert row is not None
        if not row[0]:
            await self._raise_lost_ownership(caller.workflow_id, caller.owner_xid)
        if row[1] is not None:
            return row[1], row[2]  # received by an earlier attempt at this step id
        if row[3] is not None:
            return row[3], row[4]
        return None

    async def set_event(
        self, caller: Caller, key: str, value: str, serialization: str | None, now_ms: int
    ) -> None:
        params = {
            "workflow_id": caller.workflow_id,
            "owner_xid": caller.owner_xid,
            "function_id": caller.function_id,
            "key": key,
            "value": value,
            "serialization": serialization,
            "now": now_ms,
            "application_name": caller.application_name,
            "record": caller.record,
        }
        row = await self._db.one("set_event", params)
        if row is None or not row[0]:
            await self._raise_lost_ownership(caller.workflow_id, caller.owner_xid)
        payload = caller.workflow_id + "::" + key
        self._announce(event_key(caller.workflow_id, key), (EVENTS_CHANNEL, payload))

    async def get_event(self, workflow_id: str, key: str) -> tuple[str, str | None] | None:
        row = await self._db.one("get_event", {"workflow_id": workflow_id, "key": key})
        return None if row is None else (row[0], row[1])

    async def write_stream(
        self,
        caller: Caller,
        key: str,
        value: str,
        serialization: str | None,
        now_ms: int,
        *,
        step_name: str,
    ) -> None:
        params = {
            "workflow_id": caller.workflow_id,
            "owner_xid": caller.owner_xid,
            "function_id": caller.function_id,
            "function_name": step_name,
            "key": key,
            "value": value,
            "serialization": serialization,
            "now": now_ms,
            "application_name": caller.application_name,
            "record": caller.record,
        }
        for attempt in range(STREAM_OFFSET_ATTEMPTS):
            try:
                row = await self._db.one("write_stream", params)
                break
            except UniqueViolation:
                # Another writer of this workflow took the same offset first: take the next.
                if attempt == STREAM_OFFSET_ATTEMPTS - 1:
                    raise
                await trio.sleep(0.01 * (attempt + 1))
        if row is None or not row[0]:
            await self._raise_lost_ownership(caller.workflow_id, caller.owner_xid)
        payload = caller.workflow_id + "::" + key
        self._announce(stream_key(caller.workflow_id, key), (STREAMS_CHANNEL, payload))

    async def read_stream(self, workflow_id: str, key: str, offset: int, limit: int) -> StreamBatch:
        rows = await self._db.all(
            "read_stream",
            {"workflow_id": workflow_id, "key": key, "offset": offset, "limit": limit},
        )
        if not rows:
            return StreamBatch(writer_status=None, values=())
        values: list[tuple[int, str, str | None]] = []
        expected = offset
        for _status, found_offset, value, serialization in rows:
            if found_offset is None or found_offset != expected:
                break  # only a contiguous run from the offset can be delivered
            values.append((found_offset, value, serialization))
            expected += 1
        return StreamBatch(writer_status=rows[0][0], values=tuple(values))
