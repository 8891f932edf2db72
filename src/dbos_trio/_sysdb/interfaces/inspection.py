"""Reading workflows for listing and introspection: rows, steps, children, forks, and the
dashboard's views of events, messages, streams, executors and queues.

Invariant: read-only; nothing here takes a lock or writes. The ``*_bounded`` reads are
for the faces that show values to a person: a payload over their
:class:`~dbos_trio._sysdb.bounded.PayloadBound` comes as its first characters and its size
(:class:`~dbos_trio._sysdb.bounded.Bounded`), never whole.
"""

from __future__ import annotations

from typing import Protocol

from dbos_trio._sysdb.bounded import Bounded, PayloadBound
from dbos_trio._sysdb.records import (
    EventRecord,
    ExecutorSummary,
    MessageRecord,
    QueueDepth,
    RecordedStep,
    ReplicationState,
    StreamEntry,
    WorkflowFilters,
    WorkflowRow,
)


class InspectionStore(Protocol):
    """Listing and introspection (read-only)."""

    async def get_workflow(self, workflow_id: str) -> WorkflowRow | None: ...

    async def list_workflows(self, filters: WorkflowFilters) -> list[WorkflowRow]: ...

    async def list_steps(
        self, workflow_id: str, *, limit: int | None = None, offset: int | None = None
    ) -> list[RecordedStep]: ...

    async def existing_workflows(self, workflow_ids: list[str]) -> set[str]: ...

    async def list_children(self, workflow_ids: list[str]) -> list[str]:
        """Ids of the workflows whose parent is one of ``workflow_ids``."""

    async def list_forks(self, workflow_ids: list[str]) -> list[str]:
        """Ids of the workflows forked directly from one of ``workflow_ids``."""

    # --- for operators: the dashboard -------------------------------------------------

    async def list_events(self, workflow_id: str, limit: int) -> list[EventRecord]:
        """Up to ``limit`` of the workflow's events (current values), by key."""

    async def list_messages(self, workflow_id: str, limit: int) -> list[MessageRecord]:
        """Up to ``limit`` messages sent to the workflow, oldest first."""

    async def list_stream_entries(self, workflow_id: str, limit: int) -> list[StreamEntry]:
        """Up to ``limit`` stream values the workflow wrote, by key then offset."""

    async def list_executor_summaries(self) -> list[ExecutorSummary]:
        """Each (executor id, version) that workflow rows name, most recently active first."""

    async def replication_state(self) -> ReplicationState | None:
        """How durable a commit is on this server (PostgreSQL: its settings and standbys);
        None on a backend that has no replication (SQLite)."""

    async def queue_depths(self) -> list[QueueDepth]:
        """Counts of the ENQUEUED, PENDING and DELAYED workflows of every queue."""

    # --- bounded, for the faces that show values (the CLI, the dashboard) ------------

    async def get_workflow_bounded(
        self, workflow_id: str, bound: PayloadBound
    ) -> Bounded[WorkflowRow] | None:
        """:meth:`get_workflow`, its inputs, output and error bounded."""

    async def list_workflows_bounded(
        self, filters: WorkflowFilters, bound: PayloadBound
    ) -> list[Bounded[WorkflowRow]]:
        """:meth:`list_workflows`, the payloads it loads bounded."""

    async def list_steps_bounded(
        self,
        workflow_id: str,
        bound: PayloadBound,
        *,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[Bounded[RecordedStep]]:
        """:meth:`list_steps`, outputs and errors bounded (paged by the statement)."""

    async def list_events_bounded(
        self, workflow_id: str, limit: int, bound: PayloadBound
    ) -> list[Bounded[EventRecord]]:
        """:meth:`list_events`, values bounded."""

    async def list_messages_bounded(
        self, workflow_id: str, limit: int, bound: PayloadBound
    ) -> list[Bounded[MessageRecord]]:
        """:meth:`list_messages`, messages bounded."""

    async def list_stream_entries_bounded(
        self, workflow_id: str, limit: int, bound: PayloadBound
    ) -> list[Bounded[StreamEntry]]:
        """:meth:`list_stream_entries`, values bounded."""
