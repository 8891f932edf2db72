"""Workflow rows and checkpoints: start, record steps and outcomes, read them back.

Invariants, and why:

* Starting is one idempotent operation: a new id inserts the row and its inputs, an
  existing id comes back untouched (with its outcome when finished), and a child's start
  is recorded in its parent in the same transaction, under the parent's ownership fence.
* Every checkpoint write is fenced by the writer's ``owner_xid`` in the statement that
  writes it. Nothing written means "not ours any more" — or, for a step, possibly "our own
  earlier attempt committed before its reply was lost", which the diagnosis tells apart,
  so a retried write never fails on its own success.
* The outcome is written only while the row is PENDING and ours; the count says whether
  this execution won.
"""

from __future__ import annotations

from dbos_trio._core.ids import random_uuid
from dbos_trio._core.statuses import CANCELLED, PENDING
from dbos_trio._sysdb.errors import UniqueViolation
from dbos_trio._sysdb.records import (
    InitResult,
    NewWorkflow,
    Outcome,
    ParentStep,
    RecordedStep,
    WorkflowFilters,
    WorkflowRow,
)
from dbos_trio._sysdb.rows import (
    init_result,
    new_workflow_params,
    notified_itself,
    outcome_params,
    recorded_step,
    step_params,
)
from dbos_trio._sysdb.sql.listing import list_workflows_query, workflow_row
from dbos_trio._sysdb.sql.step_batches import StepBatchOperations
from dbos_trio._sysdb.statements import Row, Transaction
from dbos_trio.errors import (
    DBOSException,
    DBOSQueueDeduplicatedError,
    DBOSStepNondeterminismError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
)


class WorkflowOperations(StepBatchOperations):
    async def register_application_version(self, application_name: str, version: str) -> bool:
        params = {
            "application_name": application_name,
            "version": version,
            "version_id": random_uuid(),
        }

        async def register(tx: Transaction) -> tuple[Row | None, Row | None]:
            await tx.run("claim_unowned_version", params)
            await tx.run("insert_version", params)
            return await tx.one("version_owner", params), await tx.one("latest_version", params)

        owner, latest = await self._db.transaction(register)
        if owner is not None and owner[0] not in (None, application_name):
            raise DBOSException(
                f"application version {version!r} is registered by application {owner[0]!r}"
            )
        return latest is not None and latest[0] == version

    async def latest_version(self, application_name: str) -> str | None:
        row = await self._db.one("latest_version", {"application_name": application_name})
        return None if row is None else str(row[0])

    async def init_workflow(self, new: NewWorkflow, parent: ParentStep | None) -> InitResult:
        params = new_workflow_params(new, parent)
        try:
            if parent is None:
                row = await self._write_start(params)
            else:
                row = await self._db.one("init_child_workflow", params)
        except UniqueViolation:
            if not new.deduplication_id:
                raise
            raise DBOSQueueDeduplicatedError(
                new.workflow_id, new.queue_name or "", new.deduplication_id
            ) from None
        if row is None:
            # Only a child start writes nothing: the parent is no longer ours.
            assert parent is not None
            await self._raise_lost_ownership(parent.workflow_id, parent.owner_xid)
        result = init_result(row)
        if result.created and new.queue_name is not None:
            # PostgreSQL's statement NOTIFYs on the notifier's leading edge.
            self._announce_enqueued(new.queue_name, new.status, sent=notified_itself(row))
        return result

    async def load_steps(self, workflow_id: str) -> dict[int, RecordedStep]:
        rows = await self._db.all("load_steps", {"workflow_id": workflow_id})
        return {row[0]: recorded_step(row) for row in rows}

    async def record_step(
        self, owner_xid: str, step: RecordedStep, *, workflow_id: str, application_name: str | None
    ) -> None:
        params = step_params(workflow_id, owner_xid, step, application_name)
        if await self._write_step(params):
            return
        row = await self._db.one("diagnose_step_write", params)
        assert row is not None
        status, owned, recorded_name, recorded_completed_at = row[0], row[1], row[2], row[3]
        if status == CANCELLED:
            raise DBOSWorkflowCancelledError._create(workflow_id)
        if not owned:
            raise DBOSWorkflowConflictIDError._create(workflow_id)
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
        params = outcome_params(
            workflow_id,
            owner_xid,
            status=status,
            output=output,
            error=error,
            completed_at_ms=completed_at_ms,
        )
        return await self._write_outcome(params)

    async def lost_executions(self, owners: dict[str, str]) -> dict[str, str | None]:
        rows = await self._db.all("owners_of", {"workflow_ids": list(owners)})
        held = {row[0]: (row[1], row[2]) for row in rows}
        lost: dict[str, str | None] = {}
        for workflow_id, owner_xid in owners.items():
            status, holder = held.get(workflow_id, (None, None))
            if status != PENDING or holder != owner_xid:
                lost[workflow_id] = status
        return lost

    async def get_outcome(self, workflow_id: str) -> Outcome | None:
        row = await self._db.one("get_outcome", {"workflow_id": workflow_id})
        if row is None:
            return None
        return Outcome(
            status=row[0],
            output=row[1],
            error=row[2],
            serialization=row[3],
            name=row[4],
            delay_until_epoch_ms=row[5],
        )

    async def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        # A lookup by primary key: not a listing, so not bounded by the listing timeout
        # (which would cost it a transaction of its own).
        query, params = list_workflows_query(
            WorkflowFilters(workflow_ids=(workflow_id,)), self._listing
        )
        rows = await self._db.query(query, params)
        return workflow_row(rows[0]) if rows else None

    async def list_workflows(self, filters: WorkflowFilters) -> list[WorkflowRow]:
        query, params = list_workflows_query(filters, self._listing)
        rows = await self._db.query(query, params, listing=True)
        return [workflow_row(row) for row in rows]

    async def list_steps(
        self, workflow_id: str, *, limit: int | None = None, offset: int | None = None
    ) -> list[RecordedStep]:
        rows = await self._db.all("load_steps", {"workflow_id": workflow_id})
        steps = [recorded_step(row) for row in rows]
        start = offset or 0
        return steps[start : None if limit is None else start + limit]
