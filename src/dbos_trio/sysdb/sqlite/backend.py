"""The SQLite implementation of :class:`~dbos_trio.sysdb.protocol.SystemDatabase`.

Invariants, and why:

* Semantics mirror the PostgreSQL backend operation for operation (the same statements,
  by the same names where they correspond, in ``queries.sql``); what differs is how
  atomicity is bought. Each operation is one transaction on the one connection, and a
  write starts with ``BEGIN IMMEDIATE``, which takes SQLite's single write lock: the
  ownership check and the write it guards run under that lock, so a stale execution
  writes nothing — the same fence ``FOR NO KEY UPDATE`` gives on PostgreSQL. One writer
  at a time also makes ``SKIP LOCKED``/``NOWAIT`` and the timeout sweep's advisory lock
  unnecessary: a claim computes its budget and spends it with nobody in between.
* Nothing here reads SQLite's clock for workflow time: every timestamp comes from the
  engine (``now_ms`` and friends), so a ``MockClock`` drives sleeps, deadlines and rate
  limits. (Queue rows and version registrations, whose times the protocol does not carry,
  use the database's clock, as on PostgreSQL.)
* No LISTEN: waiters poll every :attr:`recheck_interval`, and writes here wake the
  waiters of every backend of this process open on the same file at once
  (:mod:`.peers`), as the PostgreSQL notifier wakes local waiters.
* Errors follow the protocol: lost ownership is :class:`DBOSWorkflowCancelledError` or
  :class:`DBOSWorkflowConflictIDError`, any SQLite failure :class:`SystemDatabaseError`.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import trio

from ..._errors import (
    DBOSException,
    DBOSInitializationError,
    DBOSNonExistentWorkflowError,
    DBOSQueueDeduplicatedError,
    DBOSStepNondeterminismError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
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
from .connection import (
    MEMORY,
    Connection,
    DatabaseBusy,
    database_path,
    file_exists,
    is_foreign_key_violation,
    is_unique_violation,
)
from .listing import SQLITE_LISTING
from .peers import Peers
from .queries import Queries

POLLING_RECHECK_SECONDS = 1.0
"""How often a waiter re-checks the database: the only way to see other processes' writes."""

Row = tuple[Any, ...]
T = TypeVar("T")


class _NotRecorded(Exception):
    """Inside a transaction: the fence failed; roll back, then raise what ``status`` says."""

    def __init__(self, workflow_id: str, status: str | None) -> None:
        self.workflow_id = workflow_id
        self.status = status


def _lost_ownership(workflow_id: str, status: str | None) -> BaseException:
    if status == CANCELLED:
        return DBOSWorkflowCancelledError(workflow_id)
    return DBOSWorkflowConflictIDError(workflow_id)


def _ids(workflow_ids: list[str]) -> str:
    return json.dumps(list(workflow_ids))


class SQLiteSystemDatabase:
    """System database in one SQLite file, driven synchronously from the Trio thread."""

    def __init__(
        self,
        connection: Connection,
        *,
        wakeups: WakeupRegistry | None = None,
        recheck_interval: float = POLLING_RECHECK_SECONDS,
    ) -> None:
        self._db = connection
        self.q = Queries()
        self.wakeups = wakeups if wakeups is not None else WakeupRegistry()
        self._recheck_interval = recheck_interval
        self._peers = Peers(None if connection.path == MEMORY else connection.path, self.wakeups)

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        run_migrations: bool = True,
        wakeups: WakeupRegistry | None = None,
        recheck_interval: float = POLLING_RECHECK_SECONDS,
    ) -> SQLiteSystemDatabase:
        """Open (creating it if allowed) and migrate, or only verify, the database file."""
        path = database_path(url)
        if not run_migrations and not file_exists(path):
            raise DBOSInitializationError(
                f"the SQLite system database {path!r} does not exist and run_migrations is "
                "off, so it is not created here: migrate it first, or launch with "
                "run_migrations=True"
            )
        connection = await Connection.open(path)
        try:
            if run_migrations:
                await migrate.migrate(connection)
            else:
                await migrate.verify(connection)
        except BaseException:
            connection.close()
            raise
        return cls(connection, wakeups=wakeups, recheck_interval=recheck_interval)

    async def close(self) -> None:
        self._peers.leave()
        self._db.close()
        # Still an async call, but one that completes even in a cancelled scope.
        await trio.lowlevel.cancel_shielded_checkpoint()

    def background_tasks(self) -> list[BackgroundTask]:
        return []

    @property
    def recheck_interval(self) -> float:
        return self._recheck_interval

    @property
    def connection(self) -> Connection:
        return self._db

    # --- plumbing --------------------------------------------------------------------

    def _one(self, raw: sqlite3.Connection, query: str, params: dict[str, Any]) -> Row | None:
        row: Row | None = raw.execute(query, params).fetchone()
        return row

    def _all(self, raw: sqlite3.Connection, query: str, params: dict[str, Any]) -> list[Row]:
        rows: list[Row] = raw.execute(query, params).fetchall()
        return rows

    async def _fetchone(self, query: str, params: dict[str, Any]) -> Row | None:
        return await self._db.fetch(lambda raw: self._one(raw, query, params))

    async def _fetchall(self, query: str, params: dict[str, Any]) -> list[Row]:
        return await self._db.fetch(lambda raw: self._all(raw, query, params))

    def _check_owner(self, raw: sqlite3.Connection, workflow_id: str, owner_xid: str) -> None:
        """Under the write lock: raise :class:`_NotRecorded` unless ``owner_xid`` owns it."""
        row = self._one(raw, self.q.owner_of, {"workflow_id": workflow_id})
        if row is None or row[1] is None or row[1] != owner_xid:
            raise _NotRecorded(workflow_id, None if row is None else row[0])

    async def _fenced(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run a fenced write transaction; a failed fence becomes cancelled/conflict."""
        try:
            return await self._db.write(operation)
        except _NotRecorded as lost:
            raise _lost_ownership(lost.workflow_id, lost.status) from None

    # --- lifecycle -------------------------------------------------------------------

    async def register_application_version(self, application_name: str, version: str) -> bool:
        params = {
            "application_name": application_name,
            "version": version,
            "version_id": str(uuid.uuid4()),
        }

        def register(raw: sqlite3.Connection) -> tuple[Row | None, Row | None]:
            raw.execute(self.q.claim_unowned_version, params)
            raw.execute(self.q.insert_version, params)
            return self._one(raw, self.q.version_owner, params), self._one(
                raw, self.q.latest_version, params
            )

        owner, latest = await self._db.write(register)
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

        def init(raw: sqlite3.Connection) -> InitResult:
            if parent is not None:
                self._check_owner(raw, parent.workflow_id, parent.owner_xid)
            try:
                raw.execute(self.q.insert_workflow, params)
            except sqlite3.IntegrityError as error:
                if is_unique_violation(error) and new.deduplication_id:
                    raise DBOSQueueDeduplicatedError(
                        new.workflow_id, new.queue_name or "", new.deduplication_id
                    ) from None
                raise
            row = self._one(raw, self.q.init_result, params)
            assert row is not None
            created = row[0] == new.creator_xid
            if created:
                raw.execute(self.q.insert_inputs, params)
            recorded_child_id = None
            if parent is not None:
                raw.execute(self.q.insert_child_checkpoint, params)
                child = self._one(raw, self.q.recorded_child, params)
                recorded_child_id = None if child is None else child[0]
            return InitResult(
                created=created,
                status=row[1],
                name=row[2],
                class_name=row[3],
                config_name=row[4],
                queue_name=row[5],
                serialization=row[6],
                deadline_epoch_ms=row[7],
                output=row[8],
                error=row[9],
                recorded_child_id=recorded_child_id,
            )

        return await self._fenced(init)

    async def load_steps(self, workflow_id: str) -> dict[int, RecordedStep]:
        rows = await self._fetchall(self.q.load_steps, {"workflow_id": workflow_id})
        return {row[0]: recorded_step(row) for row in rows}

    async def record_step(
        self, owner_xid: str, step: RecordedStep, *, workflow_id: str, application_name: str | None
    ) -> None:
        params = step_params(workflow_id, owner_xid, step, application_name)

        def record(raw: sqlite3.Connection) -> None:
            self._check_owner(raw, workflow_id, owner_xid)
            if raw.execute(self.q.insert_step, params).rowcount == 1:
                return
            recorded = self._one(raw, self.q.recorded_step, params)
            assert recorded is not None
            if recorded[0] == step.function_name and recorded[1] == step.completed_at_ms:
                return  # our own earlier attempt committed before its reply was lost
            raise DBOSStepNondeterminismError(workflow_id, step.function_id)

        await self._fenced(record)

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
        params = {
            "workflow_id": workflow_id,
            "owner_xid": owner_xid,
            "status": status,
            "output": output,
            "error": error,
            "completed_at": completed_at_ms,
        }

        def finish(raw: sqlite3.Connection) -> bool:
            if raw.execute(self.q.finish_workflow, params).rowcount != 1:
                return False
            raw.execute(self.q.store_outcome, params)
            return True

        won: bool = await self._db.write(finish)
        return won

    async def get_outcome(self, workflow_id: str) -> Outcome | None:
        row = await self._fetchone(self.q.get_outcome, {"workflow_id": workflow_id})
        if row is None:
            return None
        return Outcome(status=row[0], output=row[1], error=row[2], serialization=row[3])

    async def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        rows = await self.list_workflows(WorkflowFilters(workflow_ids=(workflow_id,)))
        return rows[0] if rows else None

    async def list_workflows(self, filters: WorkflowFilters) -> list[WorkflowRow]:
        query, params = list_workflows_query(filters, SQLITE_LISTING)

        def run(raw: sqlite3.Connection) -> list[Row]:
            rows: list[Row] = raw.execute(query, params).fetchall()
            return rows

        return [workflow_row(row) for row in await self._db.fetch(run)]

    async def list_steps(
        self, workflow_id: str, *, limit: int | None = None, offset: int | None = None
    ) -> list[RecordedStep]:
        rows = await self._fetchall(self.q.load_steps, {"workflow_id": workflow_id})
        steps = [recorded_step(row) for row in rows]
        start = offset or 0
        return steps[start : None if limit is None else start + limit]

    # --- management ------------------------------------------------------------------

    async def cancel_workflows(self, workflow_ids: list[str], now_ms: int) -> list[str]:
        params = {"workflow_ids": _ids(workflow_ids), "now": now_ms}
        rows = await self._db.write(lambda raw: self._all(raw, self.q.cancel_workflows, params))
        return [row[0] for row in rows]

    async def list_children(self, workflow_ids: list[str]) -> list[str]:
        rows = await self._fetchall(self.q.list_children, {"workflow_ids": _ids(workflow_ids)})
        return [row[0] for row in rows]

    async def find_deduplicated(self, queue_name: str, deduplication_id: str) -> str | None:
        row = await self._fetchone(
            self.q.find_deduplicated,
            {"queue_name": queue_name, "deduplication_id": deduplication_id},
        )
        return None if row is None else str(row[0])

    # --- recovery and queues ---------------------------------------------------------

    async def _execute(self, query: str, params: dict[str, Any]) -> int:
        """One writing statement in its own write transaction; the rows it changed."""
        changed: int = await self._db.write(lambda raw: raw.execute(query, params).rowcount)
        return changed

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

        def upsert(raw: sqlite3.Connection) -> Row | None:
            raw.execute(self.q.upsert_queue, params)
            return self._one(raw, self.q.queue_owner, params)

        owner = await self._db.write(upsert)
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

    async def _exists(self, query: str, params: dict[str, Any]) -> bool:
        row = await self._fetchone(query, params)
        return bool(row and row[0])

    async def release_delayed(self, application_name: str, now_ms: int) -> int:
        params = {"application_name": application_name, "now": now_ms}
        if not await self._exists(self.q.has_due_delayed, params):
            return 0  # an idle sweep takes no write lock
        return await self._execute(self.q.release_delayed, params)

    async def list_partitions(self, queue_name: str) -> list[str]:
        rows = await self._fetchall(self.q.list_partitions, {"queue_name": queue_name})
        return [row[0] for row in rows]

    def _budget(self, raw: sqlite3.Connection, request: ClaimRequest) -> int | None:
        """How many rows this claim may take: the least of the limits that apply."""
        base = {
            "queue_name": request.queue_name,
            "application_name": request.application_name,
            "now": request.now_ms,
        }
        limits: list[int] = []
        if request.local_budget is not None:
            limits.append(request.local_budget)
        for cap, period_ms, partition_key in (
            (request.rate_limit_max, request.rate_limit_period_ms, None),
            (
                request.partition_rate_limit_max,
                request.partition_rate_limit_period_ms,
                request.partition_key,
            ),
        ):
            if cap is not None and period_ms is not None:
                params = {**base, "period_ms": period_ms, "partition_key": partition_key}
                row = self._one(raw, self.q.count_recent_starts, params)
                limits.append(cap - (row[0] if row else 0))
        for cap, partition_key in (
            (request.global_concurrency, None),
            (request.partition_concurrency, request.partition_key),
        ):
            if cap is not None:
                row = self._one(raw, self.q.count_running, {**base, "partition_key": partition_key})
                limits.append(cap - (row[0] if row else 0))
        return max(0, min(limits)) if limits else None

    async def claim(self, request: ClaimRequest) -> list[ClaimedWorkflow]:
        params = {
            "queue_name": request.queue_name,
            "partition_key": request.partition_key,
            "owner_xid": request.owner_xid,
            "executor_id": request.executor_id,
            "application_version": request.application_version,
            "application_name": request.application_name,
            "runs_latest_version": request.runs_latest_version,
            "workflow_names": json.dumps(list(request.workflow_names)),
            "now": request.now_ms,
            "rate_limited": request.rate_limited,
        }

        def claim(raw: sqlite3.Connection) -> list[Row]:
            budget = self._budget(raw, request)
            if budget == 0:
                return []
            return self._all(
                raw, self.q.claim, {**params, "budget": -1 if budget is None else budget}
            )

        if not await self._exists(self.q.has_claimable, params):
            return []  # an idle poll takes no write lock
        try:
            # A held lock means a peer executor is claiming: back off rather than wait.
            rows = await self._db.run(claim, mode="write", wait_if_busy=False)
        except DatabaseBusy as busy:
            raise QueueContention(str(busy)) from None
        rows.sort(key=lambda row: (row[10], row[11], row[12]))  # priority, age, insertion
        return [
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
            )
            for row in rows
        ]

    async def dead_letter(self, workflow_id: str, observed_attempts: int, now_ms: int) -> bool:
        changed = await self._execute(
            self.q.dead_letter,
            {"workflow_id": workflow_id, "observed_attempts": observed_attempts, "now": now_ms},
        )
        return changed > 0

    # --- messages, events, streams ---------------------------------------------------

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
            "workflow_id": caller.workflow_id if caller is not None else None,
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

        def send(raw: sqlite3.Connection) -> None:
            if caller is not None:
                self._check_owner(raw, caller.workflow_id, caller.owner_xid)
            try:
                raw.execute(self.q.insert_message, params)
            except sqlite3.IntegrityError as error:
                if is_foreign_key_violation(error):
                    raise DBOSNonExistentWorkflowError(
                        "`send` destination", destination_id
                    ) from None
                raise
            if caller is not None:
                raw.execute(self.q.insert_checkpoint, params)

        await self._fenced(send)
        self._peers.wake(message_key(destination_id, topic))

    async def has_message(self, workflow_id: str, topic: str) -> bool:
        row = await self._fetchone(self.q.has_message, {"workflow_id": workflow_id, "topic": topic})
        return bool(row and row[0])

    async def consume_message(
        self, caller: Caller, topic: str, now_ms: int
    ) -> tuple[str, str | None] | None:
        params = {
            "workflow_id": caller.workflow_id,
            "function_id": caller.function_id,
            "topic": topic,
            "started_at": caller.started_at_ms,
            "now": now_ms,
            "application_name": caller.application_name,
        }

        def consume(raw: sqlite3.Connection) -> tuple[str, str | None] | None:
            self._check_owner(raw, caller.workflow_id, caller.owner_xid)
            oldest = self._one(raw, self.q.oldest_message, params)
            if oldest is None:
                return None
            message_uuid, message, serialization = oldest
            raw.execute(self.q.consume_message, {**params, "message_uuid": message_uuid})
            raw.execute(
                self.q.insert_recv_checkpoint,
                {**params, "message": message, "serialization": serialization},
            )
            return message, serialization

        return await self._fenced(consume)

    async def set_event(
        self, caller: Caller, key: str, value: str, serialization: str | None, now_ms: int
    ) -> None:
        params = {
            "workflow_id": caller.workflow_id,
            "function_id": caller.function_id,
            "function_name": "DBOS.setEvent",
            "key": key,
            "value": value,
            "serialization": serialization,
            "now": now_ms,
            "application_name": caller.application_name,
        }

        def publish(raw: sqlite3.Connection) -> None:
            self._check_owner(raw, caller.workflow_id, caller.owner_xid)
            raw.execute(self.q.upsert_event, params)
            raw.execute(self.q.upsert_event_history, params)
            if caller.record:
                raw.execute(self.q.insert_checkpoint, params)

        await self._fenced(publish)
        self._peers.wake(event_key(caller.workflow_id, key))

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
            "function_id": caller.function_id,
            "function_name": step_name,
            "key": key,
            "value": value,
            "serialization": serialization,
            "now": now_ms,
            "application_name": caller.application_name,
        }

        def append(raw: sqlite3.Connection) -> None:
            self._check_owner(raw, caller.workflow_id, caller.owner_xid)
            raw.execute(self.q.append_stream, params)
            if caller.record:
                raw.execute(self.q.insert_checkpoint, params)

        await self._fenced(append)
        self._peers.wake(stream_key(caller.workflow_id, key))

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

    async def sweep_timeouts(self, application_name: str, now_ms: int) -> list[str]:
        params = {"application_name": application_name, "now": now_ms}
        if not await self._exists(self.q.has_expired, params):
            return []  # an idle sweep takes no write lock
        rows = await self._db.write(lambda raw: self._all(raw, self.q.sweep_timeouts, params))
        return [row[0] for row in rows]

    async def existing_workflows(self, workflow_ids: list[str]) -> set[str]:
        rows = await self._fetchall(self.q.existing_workflows, {"workflow_ids": _ids(workflow_ids)})
        return {row[0] for row in rows}

    async def resume_workflows(
        self, workflow_ids: list[str], queue_name: str | None, now_ms: int
    ) -> list[str]:
        params = {"workflow_ids": _ids(workflow_ids), "queue_name": queue_name, "now": now_ms}
        rows = await self._db.write(lambda raw: self._all(raw, self.q.resume_workflows, params))
        return [row[0] for row in rows]

    async def delete_workflows(self, workflow_ids: list[str]) -> None:
        params = {"workflow_ids": _ids(workflow_ids)}

        def delete(raw: sqlite3.Connection) -> None:
            for query in (
                self.q.delete_inputs,
                self.q.delete_outputs,
                self.q.delete_steps,
                self.q.delete_workflows,
            ):
                raw.execute(query, params)

        await self._db.write(delete)

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
        params: dict[str, Any] = {
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

        def fork(raw: sqlite3.Connection) -> bool:
            original = self._one(raw, self.q.fork_original, params)
            if original is None:
                return False
            names = (
                "name",
                "class_name",
                "config_name",
                "application_id",
                "authenticated_user",
                "authenticated_roles",
                "assumed_role",
                "serialization",
                "attributes",
                "owner",
                "inputs",
            )
            copied = {**params, **dict(zip(names, original, strict=True))}
            for query in (
                self.q.fork_insert,
                self.q.fork_inputs,
                self.q.fork_mark,
                self.q.fork_steps,
                self.q.fork_history,
                self.q.fork_events,
                self.q.fork_streams,
            ):
                raw.execute(query, copied)
            return True

        forked: bool = await self._db.write(fork)
        return forked
