"""A running workflow's durable record: its row, its step checkpoints, its outcome, and the
ownership fence every write on its behalf passes.

Invariant: every write made for a running execution is fenced by its owner token
(``owner_xid``, or the parent's for a child's start) in the same statement or transaction,
so an execution that lost its workflow writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from dbos_trio._sysdb.records import (
    InitResult,
    NewWorkflow,
    Outcome,
    ParentStep,
    RecordedStep,
)
from dbos_trio._sysdb.similar import SimilarWorkflows
from dbos_trio.errors import DBOSQueueDeduplicatedError


class WorkflowStore(Protocol):
    """What executing a workflow writes and replays."""

    async def init_workflow(self, new: NewWorkflow, parent: ParentStep | None) -> InitResult:
        """Insert the workflow row and its inputs, or return the existing row.

        One round trip. An existing row is returned as found (never modified, attempts
        not counted), with its outcome when terminal. With ``parent``, the parent's
        child-start checkpoint is written in the same transaction, under the parent's
        ownership fence. A deduplication collision raises
        :class:`~dbos_trio.errors.DBOSQueueDeduplicatedError`.
        """

    async def init_workflows(
        self, news: Sequence[NewWorkflow]
    ) -> list[InitResult | DBOSQueueDeduplicatedError]:
        """:meth:`init_workflow` for many top-level rows (no parent) in few statements; per
        row, what a single call would have returned, or the deduplication refusal it would
        have raised. Rows are committed in chunks, not all or nothing: after a failure of
        the database, some chunks may be written (re-running the same ids is idempotent).
        """

    async def init_similar_workflows(
        self, rows: SimilarWorkflows
    ) -> list[InitResult | DBOSQueueDeduplicatedError]:
        """:meth:`init_workflows` for rows alike but for their id and inputs (a bulk
        enqueue's plain calls), with the same answers per row, in order; where the
        backend can, each chunk as one plain multi-row insert (see sysdb/sql/bulk.py).
        Committed in chunks, as :meth:`init_workflows`."""

    async def load_steps(self, workflow_id: str) -> dict[int, RecordedStep]:
        """Every checkpoint of the workflow, by step id (one query, for replay)."""

    async def record_step(
        self, owner_xid: str, step: RecordedStep, *, workflow_id: str, application_name: str | None
    ) -> None:
        """Record a step's outcome, if ``owner_xid`` still owns the workflow.

        One statement. Re-recording an identical checkpoint (a retried write) succeeds;
        a different checkpoint already at that id raises
        :class:`~dbos_trio.errors.DBOSStepNondeterminismError`.
        """

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
        """Write SUCCESS/ERROR and the payload if still PENDING and owned; False otherwise."""

    async def lost_executions(self, owners: dict[str, str]) -> dict[str, str | None]:
        """Of ``{workflow_id: owner_xid}``, the rows no longer PENDING under that token —
        cancelled, finished, re-enqueued or re-owned elsewhere, or deleted (None) — with
        their status now. One read, no lock."""

    async def get_outcome(self, workflow_id: str) -> Outcome | None:
        """The workflow's status and stored outcome, or None if there is no such row."""

    # --- fencing writes made elsewhere ---------------------------------------------------

    async def check_owner(self, workflow_id: str, owner_xid: str) -> None:
        """Return if ``owner_xid`` still owns the workflow; else raise
        :class:`~dbos_trio.errors.DBOSWorkflowCancelledError` (it was cancelled) or
        :class:`~dbos_trio.errors.DBOSWorkflowConflictIDError`. One read: the fence of a
        datasource transaction, asked while it holds its checkpoint row."""

    # --- observability (reads only; used only while tracing or metrics are on) ----------

    async def workflow_attributes(self, workflow_id: str) -> dict[str, Any] | None:
        """The row's ``attributes`` as a dict (None: no row, no attributes, or not an
        object), e.g. to read the trace carrier persisted with it."""
