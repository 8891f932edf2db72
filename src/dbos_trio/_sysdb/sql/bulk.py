"""Bulk sends, bulk enqueues, fork lookups and reading every event of a workflow.

A bulk send is one transaction of the single send's statement, once per message: every
message commits or none does (a missing destination rolls the whole batch back), each is
inserted at most once by its id, and from a workflow body the one checkpoint (under the
caller's fence, in every statement) commits with them.

A bulk enqueue writes its rows with the group-commit start statement (``init_workflows``
on PostgreSQL: one statement per :data:`ENQUEUE_CHUNK` rows, up to
:data:`ENQUEUE_CONNECTIONS` at once when no row has a deduplication id; on SQLite one
transaction per chunk),
so each row is made or found exactly as a single ``init_workflow`` would. A chunk that
meets a deduplication id already held (by a row in the table or an earlier row of the
chunk) fails as a whole; its rows are then written one at a time, so each gets its own
answer — the refusal goes to the rows that collide, never to their neighbours. Each
queue written to is announced once per chunk.

A bulk enqueue's plain rows (:class:`~dbos_trio._sysdb.similar.SimilarWorkflows`: one
template, each row its own id and inputs) go, where the backend has one, through a plain
multi-row INSERT (``insert_new_workflows``: no ON CONFLICT, nothing returned, half the
server's work per row of ``init_workflows``). It either inserts the whole chunk or, on any
row already there, nothing; that chunk is then written through ``init_workflows``, which
answers each row as ``init_workflow`` would. So a retry after a lost reply (the chunk is
there, by this insert's creator token) and ids that exist both end in the same answers as
before. A template with a deduplication id takes ``init_workflows`` at once: its rows
collide with each other by design.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, TypeVar

import trio

from dbos_trio._sysdb.errors import ForeignKeyViolation, UniqueViolation
from dbos_trio._sysdb.records import Caller, InitResult, NewWorkflow, OutgoingMessage
from dbos_trio._sysdb.rows import init_result, new_workflow_params, similar_params
from dbos_trio._sysdb.similar import SimilarWorkflows
from dbos_trio._sysdb.sql.step_batches import StepBatchOperations
from dbos_trio._sysdb.statements import Transaction
from dbos_trio._sysdb.wakeups import message_key
from dbos_trio.errors import DBOSNonExistentWorkflowError, DBOSQueueDeduplicatedError

# Rows per statement of a bulk enqueue: a 5,000-row batch as one JSON parameter of
# several MB would hold its locks (and the server's memory) for one long statement.
ENQUEUE_CHUNK = 1000
# Chunks written at once (each on a connection of the pool) when no row can collide with
# another's deduplication id.
ENQUEUE_CONNECTIONS = 3


class _LostFence(Exception):
    """Raised inside a bulk send's transaction to roll it back: the fence did not hold."""


Answers = list[InitResult | DBOSQueueDeduplicatedError]
C = TypeVar("C")


async def _write_concurrently(
    chunks: Sequence[C], write_chunk: Callable[[C], Awaitable[Answers]]
) -> Answers:
    """Chunks of distinct new ids on :data:`ENQUEUE_CONNECTIONS` connections at once: one
    chunk's rows are encoded while the server inserts another's. The answers in chunk
    order; a failure is raised once every chunk has ended (the first chunk's, in order),
    the other chunks committed. Cancelled, each chunk in flight commits or not whole."""
    answers: list[Answers] = [[] for _ in chunks]
    failures: list[tuple[int, Exception]] = []
    limiter = trio.CapacityLimiter(ENQUEUE_CONNECTIONS)

    async def write(index: int, chunk: C) -> None:
        async with limiter:
            try:
                answers[index] = await write_chunk(chunk)
            except Exception as error:  # raised below, outside the nursery's group
                failures.append((index, error))

    async with trio.open_nursery() as nursery:
        for index, chunk in enumerate(chunks):
            nursery.start_soon(write, index, chunk)
    if failures:
        raise min(failures, key=lambda failure: failure[0])[1]
    return [result for answer in answers for result in answer]


class BulkOperations(StepBatchOperations):
    # The backend's plain multi-row insert of SimilarWorkflows (None: row by row).
    SIMILAR_BATCH_STATEMENT: ClassVar[str | None] = None

    async def init_similar_workflows(
        self, rows: SimilarWorkflows
    ) -> list[InitResult | DBOSQueueDeduplicatedError]:
        if self.SIMILAR_BATCH_STATEMENT is None or rows.template.deduplication_id is not None:
            return await self.init_workflows(rows.expanded())
        chunks = [
            rows.chunk(start, start + ENQUEUE_CHUNK) for start in range(0, len(rows), ENQUEUE_CHUNK)
        ]
        return await _write_concurrently(chunks, self._insert_similar)

    async def _insert_similar(
        self, chunk: SimilarWorkflows
    ) -> list[InitResult | DBOSQueueDeduplicatedError]:
        assert self.SIMILAR_BATCH_STATEMENT is not None
        try:
            await self._db.run(self.SIMILAR_BATCH_STATEMENT, similar_params(chunk))
        except UniqueViolation:
            # A row is there already (ours, after a lost reply, or an id that exists):
            # nothing of the chunk was written; answer each row as init_workflow would.
            return await self._init_chunk(chunk.expanded())
        template = chunk.template
        if template.queue_name is not None:
            self._announce_enqueued(template.queue_name, template.status)
        return [chunk.created()] * len(chunk)

    async def init_workflows(
        self, news: Sequence[NewWorkflow]
    ) -> list[InitResult | DBOSQueueDeduplicatedError]:
        chunks = [
            news[start : start + ENQUEUE_CHUNK] for start in range(0, len(news), ENQUEUE_CHUNK)
        ]
        if len(chunks) <= 1 or any(new.deduplication_id for new in news):
            # Deduplication ids may collide across chunks: one at a time, so a collision
            # is a unique violation, never a deadlock between two chunks.
            results: list[InitResult | DBOSQueueDeduplicatedError] = []
            for chunk in chunks:
                results.extend(await self._init_chunk(chunk))
            return results
        return await _write_concurrently(chunks, self._init_chunk)

    async def _init_chunk(
        self, news: Sequence[NewWorkflow]
    ) -> list[InitResult | DBOSQueueDeduplicatedError]:
        try:
            rows = await self._write_starts([new_workflow_params(new, None) for new in news])
        except UniqueViolation:
            return [await self._init_alone(new) for new in news]
        results: list[InitResult | DBOSQueueDeduplicatedError] = []
        announced: set[tuple[str, str]] = set()
        for new, row in zip(news, rows, strict=True):
            assert row is not None  # only a child's start (never batched) writes nothing
            result = init_result(row)
            results.append(result)
            if result.created and new.queue_name is not None:
                announced.add((new.queue_name, new.status))
        for queue_name, status in sorted(announced):
            self._announce_enqueued(queue_name, status)
        return results

    async def _init_alone(self, new: NewWorkflow) -> InitResult | DBOSQueueDeduplicatedError:
        """One row as ``init_workflow`` writes it, its deduplication refusal returned."""
        try:
            row = await self._write_one_start(new_workflow_params(new, None))
        except UniqueViolation:
            if not new.deduplication_id:
                raise
            return DBOSQueueDeduplicatedError(
                new.workflow_id, new.queue_name or "", new.deduplication_id
            )
        assert row is not None
        result = init_result(row)
        if result.created and new.queue_name is not None:
            self._announce_enqueued(new.queue_name, new.status)
        return result

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
