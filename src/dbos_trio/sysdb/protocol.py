"""The system-database protocol: what the engine may ask of a backend, and nothing more.

Invariant: no driver, row or SQL type appears in any signature. Records go in and come
out (``sysdb/records.py``), payloads cross as already-serialized strings, and operations
that must commit together with a step checkpoint take the caller's workflow id, step id
and ownership token and own the transaction. So the engine never holds a connection, a
second backend (SQLite) is a second implementation, and every write that could race with
another execution is fenced in the one place that can fence it.

Error contract for methods that write on behalf of a running workflow (``owner_xid``):

* :class:`~dbos_trio._errors.DBOSWorkflowCancelledError` — the workflow is CANCELLED;
* :class:`~dbos_trio._errors.DBOSWorkflowConflictIDError` — another execution owns it now;
* :class:`~dbos_trio._errors.SystemDatabaseError` — the database failed; nothing is known
  to be written. All three are control for the engine, never a workflow outcome.
"""

from __future__ import annotations

from typing import Protocol

from .records import (
    InitResult,
    NewWorkflow,
    Outcome,
    ParentStep,
    RecordedStep,
    WorkflowFilters,
    WorkflowRow,
)


class SystemDatabase(Protocol):
    """A connected system database. Methods are safe to call from concurrent Trio tasks."""

    # --- lifecycle -------------------------------------------------------------------

    async def close(self) -> None:
        """Release every connection. Idempotent."""

    async def register_application_version(self, application_name: str, version: str) -> bool:
        """Record that ``version`` of the application runs; True if it is the latest."""

    # --- workflows -------------------------------------------------------------------

    async def init_workflow(self, new: NewWorkflow, parent: ParentStep | None) -> InitResult:
        """Insert the workflow row and its inputs, or return the existing row.

        One round trip. An existing row is returned as found (never modified, attempts
        not counted), with its outcome when terminal. With ``parent``, the parent's
        child-start checkpoint is written in the same transaction, under the parent's
        ownership fence. A deduplication collision raises
        :class:`~dbos_trio._errors.DBOSQueueDeduplicatedError`.
        """

    async def load_steps(self, workflow_id: str) -> dict[int, RecordedStep]:
        """Every checkpoint of the workflow, by step id (one query, for replay)."""

    async def record_step(
        self, owner_xid: str, step: RecordedStep, *, workflow_id: str, application_name: str | None
    ) -> None:
        """Record a step's outcome, if ``owner_xid`` still owns the workflow.

        One statement. Re-recording an identical checkpoint (a retried write) succeeds;
        a different checkpoint already at that id raises
        :class:`~dbos_trio._errors.DBOSStepNondeterminismError`.
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

    async def get_outcome(self, workflow_id: str) -> Outcome | None:
        """The workflow's status and stored outcome, or None if there is no such row."""

    async def get_workflow(self, workflow_id: str) -> WorkflowRow | None: ...

    async def list_workflows(self, filters: WorkflowFilters) -> list[WorkflowRow]: ...

    async def list_steps(
        self, workflow_id: str, *, limit: int | None = None, offset: int | None = None
    ) -> list[RecordedStep]: ...

    # --- management ------------------------------------------------------------------

    async def cancel_workflows(self, workflow_ids: list[str], now_ms: int) -> list[str]:
        """Set CANCELLED on those not SUCCESS/ERROR, clearing owner, queue, dedup id."""

    async def list_children(self, workflow_ids: list[str]) -> list[str]:
        """Ids of the workflows whose parent is one of ``workflow_ids``."""
