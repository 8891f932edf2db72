"""Enqueue and send inside the caller's own transaction, as methods of
:class:`~dbos_trio.Client`.

``enqueue_in_transaction(conn, options, ...)`` and ``send_in_transaction(conn, ...)`` write
the same rows ``enqueue`` and ``send`` write, with the same statements, but on the
caller's connection, inside whatever transaction the caller has open there: they commit
with the caller's business rows, or vanish with them on a rollback (the outbox pattern,
without an outbox). Invariants, and why:

* **Nothing is committed here.** The caller owns the transaction; a failure (a held
  deduplication id, a missing destination) raises and leaves it aborted, as any failed
  statement would. So ``duplication_policy="return-existing"`` is refused: after a unique
  violation the caller's transaction can run nothing more to look the holder up.
* **Same database, PostgreSQL.** The connection must reach the client's system database
  (the schema is the client's); SQLite has no second connection to share a transaction
  with, so a client on SQLite refuses.
* **Wakeups come from the commit.** Nothing here can wake an executor before the caller
  commits: an enqueue NOTIFYs its queue's workers in the caller's transaction (with
  notifications on), and a message wakes its receiver through the migration-1 trigger's
  NOTIFY; PostgreSQL sends both at commit, and neither after a rollback. Executors that
  miss one find the row by polling their queue.

The connection may be a blocking ``psycopg.Connection`` (its statement runs in a worker
thread, so the Trio loop is not blocked; do not use the connection from elsewhere
meanwhile), a dbos_trio connection (``TrioConnection``, or the ``TransactionConnection``
of a ``@ds.transaction`` function), or any connection with psycopg's async interface.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
import trio

from dbos_trio._client.base import ClientBase, ClientWorkflowHandle
from dbos_trio._client.options import EnqueueOptions, SerializationChoice, payload_format
from dbos_trio._client.rows import stored_row
from dbos_trio._core import validate
from dbos_trio._core.statuses import ENQUEUED
from dbos_trio._engine.state import Runtime
from dbos_trio._engine.workflows.start import check_same_workflow
from dbos_trio._ops import messages as messaging
from dbos_trio._ops.messages import SEND, SEND_BULK, SendMessage
from dbos_trio._sysdb.postgres.backend import PostgresSystemDatabase, statement_text
from dbos_trio._sysdb.rows import init_result, new_workflow_params, notified_itself
from dbos_trio._sysdb.wakeups import QUEUE_CHANNEL, enqueue_announcement
from dbos_trio.errors import (
    DBOSArgumentTypeError,
    DBOSException,
    DBOSNonExistentWorkflowError,
    DBOSQueueDeduplicatedError,
)

Row = tuple[Any, ...]


class ClientTransactional(ClientBase):
    async def enqueue_in_transaction(
        self, conn: Any, options: EnqueueOptions, *args: Any, **kwargs: Any
    ) -> ClientWorkflowHandle[Any]:
        """Write the ENQUEUED (or DELAYED) row of :meth:`enqueue` on ``conn``, in the
        caller's open transaction (nothing is committed here; see the module docs).

        An existing ``workflow_id`` returns that workflow's handle (if it names the same
        function). A deduplication id already held raises
        :class:`~dbos_trio.DBOSQueueDeduplicatedError` and leaves the caller's transaction
        aborted; ``duplication_policy="return-existing"`` is refused before anything is
        sent. Cancellation while the statement runs leaves the caller's transaction in an
        unknown state: roll it back.
        """
        runtime, schema = self._transactional("enqueue_in_transaction")
        if not isinstance(options, EnqueueOptions):
            raise DBOSArgumentTypeError(
                f"enqueue_in_transaction needs EnqueueOptions, not {type(options).__name__}"
            )
        if options.duplication_policy == "return-existing":
            raise DBOSException(
                "enqueue_in_transaction: duplication_policy='return-existing' is not "
                "supported (after a deduplication conflict the caller's transaction is "
                "aborted, so the holder cannot be looked up in it)"
            )
        new = await stored_row(runtime, options, args, kwargs)
        sql = statement_text(schema, "init_workflow")
        params = new_workflow_params(new, None)
        pushes = _pushes(runtime)
        if pushes and new.status == ENQUEUED:
            # The insert NOTIFYs its queue itself (init_workflow's notify_channel), in the
            # caller's transaction: delivered at commit, dropped with a rollback.
            params["notify_channel"] = QUEUE_CHANNEL
        try:
            row = await _fetch_one(conn, sql, params)
        except psycopg.errors.UniqueViolation:
            if not new.deduplication_id:
                raise
            raise DBOSQueueDeduplicatedError(
                new.workflow_id, new.queue_name or "", new.deduplication_id
            ) from None
        if row is None:
            raise DBOSException("enqueue_in_transaction: the insert returned no row")
        init = init_result(row)
        check_same_workflow(
            new.workflow_id, init, options.workflow_name, options.class_name, options.instance_name
        )
        announcement = enqueue_announcement(new.queue_name or "", new.status)
        if init.created and announcement is not None and pushes and not notified_itself(row):
            # A DELAYED row's: in the caller's transaction too, so PostgreSQL delivers it
            # at commit and drops it with a rollback (no wake-up for a row that never was).
            _, channel, payload = announcement
            notify = statement_text(schema, "notify_batch")
            await _fetch(conn, notify, {"channel": channel, "payloads": [payload]})
        return self._handle(new.workflow_id)

    async def send_in_transaction(
        self,
        conn: Any,
        destination_id: str,
        message: Any,
        topic: str | None = None,
        idempotency_key: str | None = None,
        *,
        serialization: SerializationChoice | None = None,
        send_to_forks: bool = False,
    ) -> None:
        """Insert the message :meth:`send` would, on ``conn``, in the caller's open
        transaction (nothing is committed here). With an ``idempotency_key`` any number of
        sends leave one message; with ``send_to_forks`` it also goes to every workflow
        forked from the destination (found in the caller's transaction). A missing
        destination raises :class:`~dbos_trio.DBOSNonExistentWorkflowError` and leaves
        the caller's transaction aborted.
        """
        one = SendMessage(
            destination_id=destination_id,
            message=message,
            topic=topic,
            idempotency_key=idempotency_key,
        )
        await self._send_on(conn, [one], serialization, send_to_forks, SEND, "send_in_transaction")

    async def send_bulk_in_transaction(
        self,
        conn: Any,
        messages: Sequence[SendMessage],
        *,
        serialization: SerializationChoice | None = None,
        send_to_forks: bool = False,
    ) -> None:
        """Insert every message :meth:`send_bulk` would, on ``conn``, in the caller's open
        transaction: they commit with the caller's rows or vanish with a rollback (nothing
        is committed here). The batch is checked first, as by :meth:`send_bulk`; a missing
        destination raises :class:`~dbos_trio.DBOSNonExistentWorkflowError` and leaves the
        caller's transaction aborted. Cancellation while a statement runs leaves the
        caller's transaction in an unknown state: roll it back.
        """
        await self._send_on(
            conn, messages, serialization, send_to_forks, SEND_BULK, "send_bulk_in_transaction"
        )

    async def _send_on(
        self,
        conn: Any,
        messages: Sequence[SendMessage],
        serialization: SerializationChoice | None,
        send_to_forks: bool,
        step_name: str,
        operation: str,
    ) -> None:
        batch = messaging.checked_batch(messages)
        validate.boolean(send_to_forks, "send_to_forks")
        runtime, schema = self._transactional(operation)
        fmt = payload_format(runtime.codec, serialization)

        async def forks(workflow_id: str) -> list[str]:
            return await _forks_on(conn, schema, workflow_id)

        rows = await messaging.outgoing(runtime, batch, fmt, forks if send_to_forks else None)
        sql = statement_text(schema, "send_message")
        now = runtime.clock.now_ms()
        for row in rows:
            params = {
                "caller_id": None,
                "owner_xid": None,
                "function_id": None,
                "function_name": step_name,
                "application_name": None,
                "message_uuid": row.message_uuid,
                "destination_id": row.destination_id,
                "topic": row.topic,
                "message": row.message,
                "serialization": row.serialization,
                "now": now,
            }
            try:
                await _fetch(conn, sql, params)
            except psycopg.errors.ForeignKeyViolation:
                raise DBOSNonExistentWorkflowError(
                    "`send` destination", row.destination_id
                ) from None

    def _transactional(self, operation: str) -> tuple[Runtime, str]:
        runtime = self._require(operation)
        sysdb = runtime.sysdb
        if not isinstance(sysdb, PostgresSystemDatabase):
            raise DBOSException(
                f"Client.{operation} needs a PostgreSQL system database (SQLite has no "
                "second connection to share a transaction with)"
            )
        return runtime, sysdb.schema


def _pushes(runtime: Runtime) -> bool:
    """Whether the client NOTIFYs other processes (``use_listen_notify``)."""
    sysdb = runtime.sysdb
    return isinstance(sysdb, PostgresSystemDatabase) and sysdb.notifier.pushes


async def _forks_on(conn: Any, schema: str, workflow_id: str) -> list[str]:
    """Every workflow forked from ``workflow_id``, recursively, read on the caller's
    connection (so the walk sees the caller's own uncommitted forks too)."""
    sql = statement_text(schema, "list_forks")
    found: list[str] = []
    seen = {workflow_id}
    level = [workflow_id]
    while level:
        rows = await _fetch(conn, sql, {"workflow_ids": level})
        level = [row[0] for row in rows if row[0] not in seen]
        seen.update(level)
        found.extend(level)
    return found


async def _fetch_one(conn: Any, sql: str, params: dict[str, Any]) -> Row | None:
    """The first row of ``sql`` run on the caller's connection, whatever its kind."""
    rows = await _fetch(conn, sql, params)
    return rows[0] if rows else None


async def _fetch(conn: Any, sql: str, params: dict[str, Any]) -> list[Row]:
    """Every row of ``sql`` run on the caller's connection, whatever its kind."""
    if isinstance(conn, psycopg.Connection):

        def run() -> list[Row]:
            rows: list[Row] = conn.execute(sql, params).fetchall()
            return rows

        # abandon_on_cancel=False: the statement runs to its end on the caller's
        # connection; a Cancelled raised before it did would leave it mid-conversation.
        return await trio.to_thread.run_sync(run)
    fetch_all = getattr(conn, "fetch_all", None)
    if fetch_all is not None:  # a datasource's TransactionConnection
        found: list[Row] = await fetch_all(sql, params)
        return found
    execute = getattr(conn, "execute", None)
    if execute is None:
        raise DBOSArgumentTypeError(
            f"conn must be a psycopg connection (sync or async), not {type(conn).__name__}"
        )
    cursor = await execute(sql, params)
    rows: list[Row] = await cursor.fetchall()
    return rows
