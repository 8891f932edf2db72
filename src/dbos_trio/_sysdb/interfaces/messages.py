"""Messages, events and streams: what workflows say to each other and to the outside.

Invariant: a write made from a workflow (``caller``) commits together with the caller's
checkpoint, so a replayed ``send``/``recv``/``set_event``/stream write happens once.
"""

from __future__ import annotations

from typing import Protocol

from dbos_trio._sysdb.records import Caller, OutgoingMessage, StreamBatch


class MessageStore(Protocol):
    """Messages, events and streams (sql/messages.py, sql/bulk.py)."""

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
        """Insert a message (at most once per ``message_uuid``), with the caller's
        ``DBOS.send`` checkpoint. A missing destination raises
        :class:`~dbos_trio.errors.DBOSNonExistentWorkflowError`."""

    async def send_bulk(
        self,
        messages: list[OutgoingMessage],
        *,
        now_ms: int,
        caller: Caller | None,
        step_name: str,
    ) -> None:
        """Insert every message (each at most once per id) and the caller's ``step_name``
        checkpoint in one transaction; a missing destination raises
        :class:`~dbos_trio.errors.DBOSNonExistentWorkflowError` and sends none."""

    async def has_message(self, workflow_id: str, topic: str) -> bool: ...

    async def consume_message(
        self, caller: Caller, topic: str, now_ms: int
    ) -> tuple[str, str | None] | None:
        """Consume the oldest unconsumed message on the topic and record it as the
        caller's ``DBOS.recv`` checkpoint; None (and nothing recorded) if there is none."""

    async def set_event(
        self, caller: Caller, key: str, value: str, serialization: str | None, now_ms: int
    ) -> None:
        """Upsert the event and its history row (and the ``DBOS.setEvent`` checkpoint)."""

    async def get_event(self, workflow_id: str, key: str) -> tuple[str, str | None] | None: ...

    async def get_all_events(self, workflow_id: str) -> list[tuple[str, str, str | None]]:
        """(key, value, serialization) of every event of the workflow, by key."""

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
        """Append at the next offset (and record ``step_name`` as the caller's checkpoint)."""

    async def read_stream(
        self, workflow_id: str, key: str, offset: int, limit: int
    ) -> StreamBatch: ...
