"""The PostgreSQL implementation of :class:`~dbos_trio.sysdb.protocol.SystemDatabase`.

Invariants, and why:

* One round trip per operation on the hot path: every statement runs on an autocommit
  connection and does its checks in the statement itself (CTEs with row locks), so a step
  costs one commit and nothing else — not a BEGIN, a SELECT and a COMMIT.
* Every write made for a running workflow is fenced by the workflow's ``owner_xid`` under a
  row lock, in the same statement as the write.
* A transient failure (connection lost, serialization failure, deadlock) is retried a
  few times with backoff on a fresh connection: every operation here is idempotent by
  construction (ON CONFLICT, token comparison), so a retry after an unseen commit lands on
  the same state. What still fails becomes :class:`SystemDatabaseError`, which the engine
  treats as control, never as a workflow outcome.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
import trio
from psycopg import errors as pg_errors
from psycopg import sql

from ..._errors import (
    DBOSException,
    DBOSInitializationError,
    DBOSNonExistentWorkflowError,
    DBOSQueueDeduplicatedError,
    DBOSStepNondeterminismError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
    SystemDatabaseError,
)
from ...core.admission import QueueConfig
from ..protocol import BackgroundTask, QueueContention
from ..records import (
    CANCELLED,
    Caller,
    ClaimedWorkflow,
    ClaimRequest,
    InitResult,
    NewWorkflow,
    Outcome,
    ParentStep,
    RecordedStep,
    StreamBatch,
    WorkflowFilters,
    WorkflowRow,
)
from ..rows import (
    list_workflows_query,
    new_workflow_params,
    queue_config,
    queue_params,
    recorded_step,
    step_params,
    workflow_row,
)
from ..wakeups import WakeupRegistry, event_key, message_key, stream_key
from . import migrate
from .driver import TrioConnection
from .listener import POLLING_RECHECK_SECONDS, Listener
from .notifier import Notifier
from .pool import Pool
from .queries import Queries

logger = logging.getLogger("dbos_trio.sysdb")

T = TypeVar("T")

RETRY_DELAYS = (0.05, 0.25, 1.0)


def is_transient(error: BaseException) -> bool:
    """Worth retrying on a fresh connection: the connection or the transaction lost a race."""
    if isinstance(error, pg_errors.QueryCanceled):
        return False
    return isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)


class PostgresSystemDatabase:
    """System database on PostgreSQL, through a Trio-native psycopg pool."""

    def __init__(
        self,
        pool: Pool,
        schema: str,
        *,
        wakeups: WakeupRegistry | None = None,
        use_listen_notify: bool = True,
        notification_coalesce: float = 0.01,
    ) -> None:
        self._pool = pool
        self.schema = schema
        self.q = Queries(schema)
        self._listing = PostgresListing(self.q.schema)
        self.wakeups = wakeups if wakeups is not None else WakeupRegistry()
        self.listener = Listener(pool, self.wakeups) if use_listen_notify else None
        self.notifier = Notifier(
            pool,
            self.wakeups,
            window=notification_coalesce,
            push=use_listen_notify,
            notify_sql=self.q.notify_batch,
        )
        # A stable 64-bit key per (schema, application) for the timeout-sweep leader lock.
        self._sweep_lock_keys: dict[str, int] = {}
        self._claims = {
            (consistent, partitioned): self.q.claim.replace(
                "{lock}", "NOWAIT" if consistent else "SKIP LOCKED"
            ).replace(
                "{partition}", "AND queue_partition_key = %(partition_key)s" if partitioned else ""
            )
            for consistent in (False, True)
            for partitioned in (False, True)
        }

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        schema: str,
        max_connections: int,
        connect_timeout: float,
        run_migrations: bool,
        use_listen_notify: bool,
        wakeups: WakeupRegistry | None = None,
        notification_coalesce: float = 0.01,
    ) -> PostgresSystemDatabase:
        """Connect, then migrate (or only verify) the schema. Fails fast on a bad URL."""
        pool = Pool(url, max_size=max_connections, connect_timeout=connect_timeout)
        try:
            try:
                await pool.open()
            except psycopg.Error as error:
                raise DBOSInitializationError(
                    f"cannot connect to the system database: {error}"
                ) from None
            async with pool.connection() as conn:
                if run_migrations:
                    await migrate.migrate(conn, schema, use_listen_notify=use_listen_notify)
                else:
                    await migrate.verify(conn, schema)
        except BaseException:
            with trio.CancelScope(shield=True):
                await pool.close()
            raise
        return cls(
            pool,
            schema,
            wakeups=wakeups,
            use_listen_notify=use_listen_notify,
            notification_coalesce=notification_coalesce,
        )

    async def close(self) -> None:
        if not self._pool.closed:
            await self.notifier.flush()
        await self._pool.close()

    def background_tasks(self) -> list[BackgroundTask]:
        tasks: list[BackgroundTask] = [self.notifier.run]
        if self.listener is not None:
            tasks.append(self.listener.run)
        return tasks

    @property
    def recheck_interval(self) -> float:
        if self.listener is None:
            return POLLING_RECHECK_SECONDS
        return self.listener.recheck_interval

    @property
    def pool(self) -> Pool:
        return self._pool

    # --- plumbing --------------------------------------------------------------------

    async def _run(
        self, operation: Callable[[TrioConnection], Awaitable[T]], *, retry: bool = True
    ) -> T:
        """Run ``operation`` on a pooled connection, retrying transient failures."""
        attempt = 0
        while True:
            try:
                async with self._pool.connection() as conn:
                    return await operation(conn)
            except psycopg.Error as error:
                attempt = await self._after_failure(error, attempt, retry=retry)

    async def _after_failure(self, error: psycopg.Error, attempt: int, *, retry: bool) -> int:
        """Back off before the next attempt (returned), or raise what the caller sees."""
        if not retry or not is_transient(error) or attempt == len(RETRY_DELAYS):
            raise SystemDatabaseError(f"system database error: {error}") from error
        logger.warning("transient system database error, retrying: %s", error)
        await trio.sleep(RETRY_DELAYS[attempt])
        return attempt + 1

    # The three shapes of a single-statement operation, inlined rather than built on
    # _run: they are the hot path, one per checkpoint.

    async def _fetchone(
        self, query: str, params: dict[str, Any], *, prepare: bool = True
    ) -> tuple[Any, ...] | None:
        attempt = 0
        while True:
            try:
                async with self._pool.connection() as conn:
                    cur = await conn.execute(query, params, prepare=prepare)
                    row: tuple[Any, ...] | None = await cur.fetchone()
                    return row
            except psycopg.Error as error:
                attempt = await self._after_failure(error, attempt, retry=True)

    async def _fetchall(
        self, query: str | sql.Composed, params: dict[str, Any] | list[Any], *, prepare: bool = True
    ) -> list[tuple[Any, ...]]:
        attempt = 0
        while True:
            try:
                async with self._pool.connection() as conn:
                    cur = await conn.execute(query, params, prepare=prepare)
                    rows: list[tuple[Any, ...]] = await cur.fetchall()
                    return rows
            except psycopg.Error as error:
                attempt = await self._after_failure(error, attempt, retry=True)

    async def _execute(self, query: str, params: dict[str, Any], *, prepare: bool = True) -> int:
        attempt = 0
        while True:
            try:
                async with self._pool.connection() as conn:
                    cur = await conn.execute(query, params, prepare=prepare)
                    return cur.rowcount
            except psycopg.Error as error:
                attempt = await self._after_failure(error, attempt, retry=True)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[TrioConnection]:
        """A connection inside one transaction (for the rare multi-statement operation)."""
        try:
            async with self._pool.connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as error:
            raise SystemDatabaseError(f"system database error: {error}") from error

    # --- lifecycle -------------------------------------------------------------------

    async def register_application_version(self, application_name: str, version: str) -> bool:
        params = {
            "application_name": application_name,
            "version": version,
            "version_id": str(uuid.uuid4()),
        }
        async with self.transaction() as conn:
            await conn.execute(self.q.claim_unowned_version, params)
            await conn.execute(self.q.insert_version, params)
            cur = await conn.execute(self.q.version_owner, params)
            owner = await cur.fetchone()
            cur = await conn.execute(self.q.latest_version, params)
            latest = await cur.fetchone()
        if owner is not None and owner[0] not in (None, application_name):
            raise DBOSException(
                f"application version {version!r} is registered by application {owner[0]!r}"
            )
        return latest is not None and latest[0] == version

    async def latest_version(self, application_name: str) -> str | None:
        row = await self._fetchone(self.q.latest_version, {"application_name": application_name})
        return None if row is None else str(row[0])

    # --- workflows -------------------------------------------------------------------

    async def init_workflow(self, new: NewWorkflow, parent: ParentStep | None) -> InitResult:
        params = new_workflow_params(new, parent)
        query = self.q.init_child_workflow if parent is not None else self.q.init_workflow
        try:
            row = await self._fetchone(query, params)
        except SystemDatabaseError as error:
            if isinstance(error.__cause__, pg_errors.UniqueViolation) and new.deduplication_id:
                raise DBOSQueueDeduplicatedError(
                    new.workflow_id, new.queue_name or "", new.deduplication_id
                ) from None
            raise
        if row is None:
            # Only a child start writes nothing: the parent is no longer ours.
            assert parent is not None
            await self._raise_lost_ownership(parent.workflow_id, parent.owner_xid)
            raise AssertionError("unreachable")
        return InitResult(
            created=bool(row[0]),
            status=row[1],
            name=row[2],
            class_name=row[3],
            config_name=row[4],
            queue_name=row[5],
            serialization=row[6],
            deadline_epoch_ms=row[7],
            output=row[8],
            error=row[9],
            recorded_child_id=row[10],
        )

    async def _raise_lost_ownership(self, workflow_id: str, owner_xid: str) -> None:
        row = await self._fetchone(
            self.q.diagnose_step_write,
            {"workflow_id": workflow_id, "owner_xid": owner_xid, "function_id": -1},
        )
        if row is not None and row[0] == CANCELLED:
            raise DBOSWorkflowCancelledError(workflow_id)
        raise DBOSWorkflowConflictIDError(workflow_id)

    async def load_steps(self, workflow_id: str) -> dict[int, RecordedStep]:
        rows = await self._fetchall(self.q.load_steps, {"workflow_id": workflow_id})
        return {row[0]: recorded_step(row) for row in rows}

    async def record_step(
        self, owner_xid: str, step: RecordedStep, *, workflow_id: str, application_name: str | None
    ) -> None:
        params = step_params(workflow_id, owner_xid, step, application_name)
        if await self._fetchone(self.q.record_step, params) is not None:
            return
        row = await self._fetchone(self.q.diagnose_step_write, params)
        assert row is not None
        status, owned, recorded_name, recorded_completed_at = row[0], row[1], row[2], row[3]
        if status == CANCELLED:
            raise DBOSWorkflowCancelledError(workflow_id)
        if not owned:
            raise DBOSWorkflowConflictIDError(workflow_id)
        if recorded_name == step.function_name and recorded_completed_at == step.completed_at_ms:
            return  # our own earlier attempt committed before its reply was lost
        raise DBOSStepNondeterminismError(workflow_id, step.function_id)

    async def record_outcome(
        self,
        workflow_id: str,
        owner_xid: str,
        *,
        status: str,
        output: str | None,
        error: str | None,
        completed_at_ms: int,
    ) -> bool:
        row = await self._fetchone(
            self.q.record_outcome,
            {
                "workflow_id": workflow_id,
                "owner_xid": owner_xid,
                "status": status,
                "output": output,
                "error": error,
                "completed_at": completed_at_ms,
            },
        )
        return row is not None and row[0] == 1

    async def get_outcome(self, workflow_id: str) -> Outcome | None:
        row = await self._fetchone(self.q.get_outcome, {"workflow_id": workflow_id})
        if row is None:
            return None
        return Outcome(status=row[0], output=row[1], error=row[2], serialization=row[3])

    async def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        rows = await self.list_workflows(WorkflowFilters(workflow_ids=(workflow_id,)))
        return rows[0] if rows else None

    async def list_workflows(self, filters: WorkflowFilters) -> list[WorkflowRow]:
        query, params = list_workflows_query(filters, self._listing)
        rows = await self._fetchall(query, params, prepare=False)
        return [workflow_row(row) for row in rows]

    async def list_steps(
        self, workflow_id: str, *, limit: int | None = None, offset: int | None = None
    ) -> list[RecordedStep]:
        rows = await self._fetchall(self.q.load_steps, {"workflow_id": workflow_id})
        steps = [recorded_step(row) for row in rows]
        start = offset or 0
        return steps[start : None if limit is None else start + limit]

    # --- management ------------------------------------------------------------------

    async def cancel_workflows(self, workflow_ids: list[str], now_ms: int) -> list[str]:
        rows = await self._fetchall(
            self.q.cancel_workflows, {"workflow_ids": workflow_ids, "now": now_ms}
        )
        return [row[0] for row in rows]

    async def list_children(self, workflow_ids: list[str]) -> list[str]:
        rows = await self._fetchall(self.q.list_children, {"workflow_ids": workflow_ids})
        return [row[0] for row in rows]

    async def find_deduplicated(self, queue_name: str, deduplication_id: str) -> str | None:
        row = await self._fetchone(
            self.q.find_deduplicated,
            {"queue_name": queue_name, "deduplication_id": deduplication_id},
        )
        return None if row is None else str(row[0])

    # --- recovery and queues ---------------------------------------------------------

    async def reenqueue_abandoned(
        self, executor_id: str, application_version: str, application_name: str, now_ms: int
    ) -> int:
        return await self._execute(
            self.q.reenqueue_abandoned,
            {
                "executor_id": executor_id,
                "application_version": application_version,
                "application_name": application_name,
                "now": now_ms,
            },
        )

    async def requeue_workflow(self, workflow_id: str, owner_xid: str, now_ms: int) -> bool:
        changed = await self._execute(
            self.q.requeue_workflow,
            {"workflow_id": workflow_id, "owner_xid": owner_xid, "now": now_ms},
        )
        return changed > 0

    async def upsert_queue(self, config: QueueConfig, *, overwrite: bool) -> None:
        params = queue_params(config, overwrite)
        async with self.transaction() as conn:
            await conn.execute(self.q.upsert_queue, params)
            cur = await conn.execute(self.q.queue_owner, params)
            owner = await cur.fetchone()
        if owner is not None and owner[0] not in (None, config.application_name):
            raise DBOSException(
                f"queue {config.name!r} belongs to application {owner[0]!r}: queue names are "
                "unique across the applications sharing a system database"
            )

    async def list_queues(self, application_name: str | None) -> list[QueueConfig]:
        rows = await self._fetchall(self.q.list_queues, {"application_name": application_name})
        return [queue_config(row) for row in rows]

    async def get_queue(self, name: str) -> QueueConfig | None:
        row = await self._fetchone(self.q.get_queue, {"name": name})
        return None if row is None else queue_config(row)

    async def delete_queue(self, name: str) -> bool:
        return await self._execute(self.q.delete_queue, {"name": name}) > 0

    async def release_delayed(self, application_name: str, now_ms: int) -> int:
        return await self._execute(
            self.q.release_delayed, {"application_name": application_name, "now": now_ms}
        )

    async def list_partitions(self, queue_name: str) -> list[str]:
        rows = await self._fetchall(self.q.list_partitions, {"queue_name": queue_name})
        return [row[0] for row in rows]

    async def claim(self, request: ClaimRequest) -> list[ClaimedWorkflow]:
        query = self._claims[(request.consistent, request.partition_key is not None)]
        params = {
            "queue_name": request.queue_name,
            "partition_key": request.partition_key,
            "owner_xid": request.owner_xid,
            "executor_id": request.executor_id,
            "application_version": request.application_version,
            "application_name": request.application_name,
            "runs_latest_version": request.runs_latest_version,
            "workflow_names": list(request.workflow_names),
            "now": request.now_ms,
            "local_budget": request.local_budget,
            "global_concurrency": request.global_concurrency,
            "rate_limit_max": request.rate_limit_max,
            "rate_limit_period_ms": request.rate_limit_period_ms,
            "partition_concurrency": request.partition_concurrency,
            "partition_rate_limit_max": request.partition_rate_limit_max,
            "partition_rate_limit_period_ms": request.partition_rate_limit_period_ms,
            "rate_limited": request.rate_limited,
        }

        async def run(conn: TrioConnection) -> list[tuple[Any, ...]]:
            if not request.consistent:
                cur = await conn.execute(query, params, prepare=True)
                return await cur.fetchall()
            # One partition's rows never lock-conflict with another's, so a queue-wide
            # budget spent from two partitions at once needs SERIALIZABLE to be caught.
            queue_wide = (
                request.global_concurrency is not None or request.rate_limit_max is not None
            )
            if request.partition_key is not None and queue_wide:
                await conn.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
            else:
                await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            try:
                cur = await conn.execute(query, params, prepare=True)
                claimed = await cur.fetchall()
                await conn.execute("COMMIT")
            except BaseException:
                with trio.CancelScope(shield=True):
                    if not conn.closed:
                        await conn.execute("ROLLBACK")
                raise
            return claimed

        try:
            rows = await self._run(run, retry=False)
        except SystemDatabaseError as error:
            if isinstance(
                error.__cause__, pg_errors.LockNotAvailable | pg_errors.SerializationFailure
            ):
                raise QueueContention(str(error.__cause__)) from None
            raise
        claimed = [
            ClaimedWorkflow(
                workflow_id=row[0],
                name=row[1],
                class_name=row[2],
                config_name=row[3],
                inputs=row[4],
                serialization=row[5],
                deadline_epoch_ms=row[6],
                recovery_attempts=row[7],
                queue_name=row[8],
                partition_key=row[9],
                priority=row[10],
                created_at=row[11],
                steps=None
                if row[12] is None
                else {step[0]: recorded_step(step) for step in row[12]},
            )
            for row in rows
        ]
        claimed.sort(key=lambda c: (c.priority, c.created_at))
        return claimed

    async def dead_letter(self, workflow_id: str, observed_attempts: int, now_ms: int) -> bool:
        changed = await self._execute(
            self.q.dead_letter,
            {"workflow_id": workflow_id, "observed_attempts": observed_attempts, "now": now_ms},
        )
        return changed > 0

    # --- messages, events, streams ---------------------------------------------------

    async def _fenced_write(self, query: str, params: dict[str, Any], caller: Caller) -> None:
        """Run a fenced write; raise cancelled/conflict if the caller no longer owns it."""
        row = await self._fetchone(query, params)
        if row is None or row[0] == 0:
            await self._raise_lost_ownership(caller.workflow_id, caller.owner_xid)

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
            row = await self._fetchone(self.q.send_message, params)
        except SystemDatabaseError as error:
            if isinstance(error.__cause__, pg_errors.ForeignKeyViolation):
                raise DBOSNonExistentWorkflowError("`send` destination", destination_id) from None
            raise
        if caller is not None and (row is None or row[0] == 0):
            await self._raise_lost_ownership(caller.workflow_id, caller.owner_xid)
        # The notifications trigger pushes the NOTIFY; waiters here need no round trip.
        self.wakeups.wake(message_key(destination_id, topic))

    async def has_message(self, workflow_id: str, topic: str) -> bool:
        row = await self._fetchone(self.q.has_message, {"workflow_id": workflow_id, "topic": topic})
        return bool(row and row[0])

    async def consume_message(
        self, caller: Caller, topic: str, now_ms: int
    ) -> tuple[str, str | None] | None:
        row = await self._fetchone(
            self.q.consume_message,
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
        if row[0] == 0:
            await self._raise_lost_ownership(caller.workflow_id, caller.owner_xid)
        if row[1] is None:
            return None
        return row[1], row[2]

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
        await self._fenced_write(self.q.set_event, params, caller)
        payload = caller.workflow_id + "::" + key
        self.notifier.publish(
            "dbos_workflow_events_channel", payload, event_key(caller.workflow_id, key)
        )

    async def get_event(self, workflow_id: str, key: str) -> tuple[str, str | None] | None:
        row = await self._fetchone(self.q.get_event, {"workflow_id": workflow_id, "key": key})
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
        for attempt in range(20):
            try:
                await self._fenced_write(self.q.write_stream, params, caller)
                break
            except SystemDatabaseError as error:
                # Another writer of this workflow took the same offset first: take the next.
                if not isinstance(error.__cause__, pg_errors.UniqueViolation) or attempt == 19:
                    raise
                await trio.sleep(0.01 * (attempt + 1))
        payload = caller.workflow_id + "::" + key
        self.notifier.publish("dbos_streams_channel", payload, stream_key(caller.workflow_id, key))

    async def read_stream(self, workflow_id: str, key: str, offset: int, limit: int) -> StreamBatch:
        rows = await self._fetchall(
            self.q.read_stream,
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

    # --- timeouts and management -----------------------------------------------------

    def _sweep_lock_key(self, application_name: str) -> int:
        key = self._sweep_lock_keys.get(application_name)
        if key is None:
            digest = hashlib.sha256(
                f"dbos.background_job.{self.schema}.{application_name}.background_jobs".encode()
            ).digest()
            key = int.from_bytes(digest[:8], "big", signed=True)
            self._sweep_lock_keys[application_name] = key
        return key

    async def sweep_timeouts(self, application_name: str, now_ms: int) -> list[str]:
        async with self.transaction() as conn:
            cur = await conn.execute(
                self.q.try_timeout_sweep_lock,
                {"lock_key": self._sweep_lock_key(application_name)},
            )
            leader = await cur.fetchone()
            if not (leader and leader[0]):
                return []
            cur = await conn.execute(
                self.q.sweep_timeouts, {"application_name": application_name, "now": now_ms}
            )
            rows = await cur.fetchall()
        return [row[0] for row in rows]

    async def existing_workflows(self, workflow_ids: list[str]) -> set[str]:
        rows = await self._fetchall(self.q.existing_workflows, {"workflow_ids": workflow_ids})
        return {row[0] for row in rows}

    async def resume_workflows(
        self, workflow_ids: list[str], queue_name: str | None, now_ms: int
    ) -> list[str]:
        rows = await self._fetchall(
            self.q.resume_workflows,
            {"workflow_ids": workflow_ids, "queue_name": queue_name, "now": now_ms},
        )
        return [row[0] for row in rows]

    async def delete_workflows(self, workflow_ids: list[str]) -> None:
        await self._execute(self.q.delete_workflows, {"workflow_ids": workflow_ids})

    async def set_workflow_delay(self, workflow_id: str, delay_until_ms: int, now_ms: int) -> bool:
        changed = await self._execute(
            self.q.set_workflow_delay,
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
    ) -> bool:
        row = await self._fetchone(
            self.q.fork_workflow,
            {
                "original_id": original_id,
                "forked_id": forked_id,
                "start_step": start_step,
                "application_version": application_version,
                "queue_name": queue_name,
                "queue_partition_key": queue_partition_key,
                "timeout_ms": timeout_ms,
                "application_name": application_name,
                "now": now_ms,
            },
        )
        return row is not None


class PostgresListing:
    """PostgreSQL's spelling of the listing query's dialect-specific parts."""

    placeholder = "%s"

    def __init__(self, quoted_schema: str) -> None:
        self.table_prefix = quoted_schema + "."

    def member_of(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(%s)", [list(values)]

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return f"{column} LIKE %s", [escaped + "%"]

    def boolean(self, value: bool) -> Any:
        return value

    def paging(self, limit: int | None, offset: int | None) -> tuple[str, list[Any]]:
        clause, params = "", []
        if limit is not None:
            clause, params = " LIMIT %s", [limit]
        if offset is not None:
            clause, params = clause + " OFFSET %s", [*params, offset]
        return clause, params
