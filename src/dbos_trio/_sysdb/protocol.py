"""The system-database protocol: what the engine may ask of a backend, and nothing more.

Invariant: no driver, row or SQL type appears in any signature. Records go in and come
out (``sysdb/records.py``), payloads cross as already-serialized strings, and operations
that must commit together with a step checkpoint take the caller's workflow id, step id
and ownership token and own the transaction. So the engine never holds a connection, a
second backend (SQLite) is a second implementation, and every write that could race with
another execution is fenced in the one place that can fence it.

Error contract for methods that write on behalf of a running workflow (``owner_xid``):

* :class:`~dbos_trio.errors.DBOSWorkflowCancelledError` — the workflow is CANCELLED;
* :class:`~dbos_trio.errors.DBOSWorkflowConflictIDError` — another execution owns it now;
* :class:`~dbos_trio.errors.SystemDatabaseError` — the database failed; nothing is known
  to be written. All three are control for the engine, never a workflow outcome.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from dbos_trio._core.admission import QueueConfig
from dbos_trio._sysdb.records import (
    ActiveCount,
    ApplicationVersion,
    Bounce,
    BounceResult,
    Caller,
    ClaimedWorkflow,
    ClaimRequest,
    EventRecord,
    ExecutorSummary,
    InitResult,
    MessageRecord,
    NewWorkflow,
    Outcome,
    OutgoingMessage,
    ParentStep,
    QueueDepth,
    RecordedStep,
    RenameBatch,
    RenameCore,
    ScheduleFilters,
    ScheduleRow,
    StreamBatch,
    StreamEntry,
    WorkflowFilters,
    WorkflowRow,
)
from dbos_trio._sysdb.wakeups import WakeupRegistry

# Background work a backend needs for its lifetime; started by the executor in its nursery.
BackgroundTask = Callable[..., Awaitable[None]]


class QueueContention(Exception):
    """A claim collided with another executor's (lock or serialization conflict).

    Not an error: a busy peer. The worker backs off and polls again.
    """


class SystemDatabase(Protocol):
    """A connected system database. Methods are safe to call from concurrent Trio tasks."""

    # --- lifecycle -------------------------------------------------------------------

    async def close(self) -> None:
        """Flush pending notifications, then release every connection. Idempotent."""

    wakeups: WakeupRegistry

    def background_tasks(self) -> list[BackgroundTask]:
        """Tasks to run for the executor's lifetime (``task_status``-aware), e.g. LISTEN."""

    @property
    def recheck_interval(self) -> float:
        """How long a waiter may wait before looking at the database again.

        Long (60 s) while a listener is known to deliver notifications, short (1 s)
        otherwise: a notification is only ever a hint, the re-check is what delivers.
        """

    async def register_application_version(self, application_name: str, version: str) -> bool:
        """Record that ``version`` of the application runs; True if it is the latest."""

    # --- workflows -------------------------------------------------------------------

    async def init_workflow(self, new: NewWorkflow, parent: ParentStep | None) -> InitResult:
        """Insert the workflow row and its inputs, or return the existing row.

        One round trip. An existing row is returned as found (never modified, attempts
        not counted), with its outcome when terminal. With ``parent``, the parent's
        child-start checkpoint is written in the same transaction, under the parent's
        ownership fence. A deduplication collision raises
        :class:`~dbos_trio.errors.DBOSQueueDeduplicatedError`.
        """

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

    async def find_deduplicated(self, queue_name: str, deduplication_id: str) -> str | None:
        """The id of the active workflow holding ``deduplication_id`` on the queue."""

    # --- recovery and queues ---------------------------------------------------------

    async def reenqueue_abandoned(
        self, executor_id: str, application_version: str, application_name: str, now_ms: int
    ) -> int:
        """Put this executor's PENDING rows back on their queue (or the internal queue).

        One write; the count of rows re-enqueued. Only rows of this executor id and
        application version, owned by this application or unclaimed.
        """

    async def latest_version(self, application_name: str) -> str | None: ...

    async def requeue_workflow(self, workflow_id: str, owner_xid: str, now_ms: int) -> bool:
        """Put a PENDING workflow its owner cannot finish back on its queue (or the internal
        queue); False if it is no longer PENDING and owned by ``owner_xid``."""

    async def upsert_queue(self, config: QueueConfig, *, overwrite: bool) -> None:
        """Create the queue row, or update it when ``overwrite``; a name owned by another
        application raises :class:`~dbos_trio.errors.DBOSException`."""

    async def list_queues(self, application_name: str | None) -> list[QueueConfig]:
        """Queues of this application and unclaimed ones (all queues when None)."""

    async def get_queue(self, name: str) -> QueueConfig | None: ...

    async def delete_queue(self, name: str) -> bool: ...

    async def release_delayed(self, application_name: str, now_ms: int) -> int:
        """DELAYED rows whose delay has passed become ENQUEUED; the count moved."""

    async def list_partitions(self, queue_name: str) -> list[str]:
        """Distinct partition keys with ENQUEUED rows on the queue."""

    async def claim(self, request: ClaimRequest) -> list[ClaimedWorkflow]:
        """Flip up to the allowed number of ENQUEUED rows to PENDING for this executor.

        Counts the attempt (``recovery_attempts + 1``), stamps executor, version, application,
        start time and ``rate_limited``, and sets the deadline from ``workflow_timeout_ms``.
        Returns them in dequeue order (priority, then age). Raises :class:`QueueContention`
        when another executor holds the rows.
        """

    async def pending_of_executor(
        self,
        executor_id: str,
        application_version: str,
        application_name: str,
        updated_before_ms: int,
    ) -> list[tuple[str, str]]:
        """(workflow id, owner token) of the executor's PENDING rows (this application's
        or unclaimed) last updated at or before ``updated_before_ms``."""

    async def dead_letter(self, workflow_id: str, observed_attempts: int, now_ms: int) -> bool:
        """Park a PENDING row as MAX_RECOVERY_ATTEMPTS_EXCEEDED; False if it changed meanwhile."""

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
        """Insert a message (at most once per ``message_uuid``), with the caller's
        ``DBOS.send`` checkpoint. A missing destination raises
        :class:`~dbos_trio.errors.DBOSNonExistentWorkflowError`."""

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

    # --- timeouts and management -----------------------------------------------------

    async def sweep_timeouts(self, application_name: str, now_ms: int) -> list[str]:
        """Cancel expired workflows of the application; one executor at a time sweeps."""

    async def existing_workflows(self, workflow_ids: list[str]) -> set[str]: ...

    async def resume_workflows(
        self, workflow_ids: list[str], queue_name: str | None, now_ms: int
    ) -> list[str]: ...

    async def delete_workflows(self, workflow_ids: list[str]) -> None: ...

    async def set_workflow_delay(
        self, workflow_id: str, delay_until_ms: int, now_ms: int
    ) -> bool: ...

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
        replacement_children: str | None = None,
    ) -> bool:
        """Create ``forked_id`` from ``original_id``'s row and checkpoints before ``start_step``
        (one transaction); False if the original does not exist. ``replacement_children``
        (JSON text of ``{child id: replacement id}``) renames the children the copied
        checkpoints refer to."""

    # --- schedules and debouncing (sql/schedules.py, sql/debounce.py) ------------------

    async def create_schedule(self, row: ScheduleRow) -> None:
        """Insert a schedule; a name that exists raises
        :class:`~dbos_trio.errors.DBOSException` and writes nothing."""

    async def apply_schedules(self, rows: list[ScheduleRow]) -> None:
        """Upsert schedules by name in one transaction, keeping each existing row's id,
        status and ``last_fired_at``; a name owned by another application raises and
        writes nothing."""

    async def list_schedules(self, filters: ScheduleFilters) -> list[ScheduleRow]:
        """Schedules matching ``filters``, by name."""

    async def get_schedule(self, name: str) -> ScheduleRow | None: ...

    async def delete_schedule(self, name: str) -> bool: ...

    async def set_schedule_status(self, name: str, status: str) -> bool:
        """Set ACTIVE or PAUSED; False if there is no such schedule."""

    async def fire_schedule(
        self, new: NewWorkflow, *, fired_at: str | None, version_of: str | None
    ) -> InitResult:
        """Insert a firing's workflow row, or find the existing one, in one transaction
        that stamps the row with the latest version of application ``version_of`` and,
        when this call created the row and ``fired_at`` is given, records it as the
        schedule's ``last_fired_at``."""

    async def bounce(self, bounce: Bounce, caller: Caller | None) -> BounceResult:
        """Push the key's debounced DELAYED workflow back (capped at its deadline) with new
        inputs, or report who holds the key; one transaction. With ``caller``, fenced by its
        owner token and recorded as its ``DBOS.debounce_delayed_workflow`` checkpoint in the
        same transaction (a checkpoint already there is returned instead)."""

    # --- attributes and rewind (sql/attributes.py, sql/rewind.py) -----------------------

    async def update_workflow_attributes(
        self, workflow_id: str, attributes: str | None, *, merge: bool, now_ms: int
    ) -> bool:
        """Replace the workflow's attributes (JSON text; None clears them) or, with
        ``merge``, add their top-level keys to the stored ones; False: no such workflow."""

    async def rewind_workflow(
        self,
        workflow_id: str,
        start_step: int,
        *,
        application_version: str | None,
        queue_name: str | None,
        queue_partition_key: str | None,
        now_ms: int,
    ) -> None:
        """Discard a terminal workflow's history from ``start_step`` on and re-enqueue it
        (one transaction). A missing workflow raises
        :class:`~dbos_trio.errors.DBOSNonExistentWorkflowError`, an active one (or one
        whose status changed meanwhile) :class:`~dbos_trio.errors.DBOSException`."""

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

    async def list_forks(self, workflow_ids: list[str]) -> list[str]:
        """Ids of the workflows forked directly from one of ``workflow_ids``."""

    async def get_all_events(self, workflow_id: str) -> list[tuple[str, str, str | None]]:
        """(key, value, serialization) of every event of the workflow, by key."""

    # --- inspection (read-only, for operators: the dashboard) ----------------------------

    async def list_events(self, workflow_id: str) -> list[EventRecord]:
        """The workflow's events (current values), by key."""

    async def list_messages(self, workflow_id: str, limit: int) -> list[MessageRecord]:
        """Up to ``limit`` messages sent to the workflow, oldest first."""

    async def list_stream_entries(self, workflow_id: str, limit: int) -> list[StreamEntry]:
        """Up to ``limit`` stream values the workflow wrote, by key then offset."""

    async def list_executor_summaries(self) -> list[ExecutorSummary]:
        """Each (executor id, version) that workflow rows name, most recently active first."""

    async def queue_depths(self) -> list[QueueDepth]:
        """Counts of the ENQUEUED, PENDING and DELAYED workflows of every queue."""

    # --- retention (sql/retention.py) ------------------------------------------------

    async def gc_nth_newest(self, application_name: str | None, offset: int) -> int | None:
        """``created_at`` of the ``offset + 1``-th newest workflow (of the application and
        unclaimed ones; every application when None), or None if there are fewer."""

    async def gc_batch(
        self,
        *,
        application_name: str | None,
        after_ms: int,
        created_before_ms: int,
        keep_before_ms: int,
        completed_before_ms: int,
        batch_size: int,
        leader_only: bool,
    ) -> list[int] | None:
        """Delete up to ``batch_size`` terminal workflows (and every row of theirs) created
        at or after ``after_ms`` and before ``created_before_ms`` that were created before
        ``keep_before_ms`` or finished before ``completed_before_ms``, oldest first, in one
        transaction; their ``created_at`` values. None: ``leader_only`` and another process
        holds the application's retention lock (nothing deleted)."""

    async def cancel_created_before(
        self, application_name: str | None, created_before_ms: int, batch_size: int, now_ms: int
    ) -> list[str]:
        """Cancel up to ``batch_size`` PENDING/ENQUEUED/DELAYED workflows created before
        ``created_before_ms``, oldest first, in one statement; the ids cancelled."""

    # --- fencing writes made elsewhere ---------------------------------------------------

    async def check_owner(self, workflow_id: str, owner_xid: str) -> None:
        """Return if ``owner_xid`` still owns the workflow; else raise
        :class:`~dbos_trio.errors.DBOSWorkflowCancelledError` (it was cancelled) or
        :class:`~dbos_trio.errors.DBOSWorkflowConflictIDError`. One read: the fence of a
        datasource transaction, asked while it holds its checkpoint row."""

    # --- application versions and stranded work (sql/versions.py) ------------------------

    async def list_application_versions(
        self, application_name: str | None
    ) -> list[ApplicationVersion]:
        """Versions of the application and unclaimed ones (every one when None), newest
        first."""

    async def set_latest_version(self, version: str, application_name: str, now_ms: int) -> None:
        """Stamp ``version`` with ``now_ms`` (making it the latest), claiming it for the
        application if it was unclaimed, in one transaction. A version not registered, or
        registered by another application, raises
        :class:`~dbos_trio.errors.DBOSException` and writes nothing."""

    async def active_counts(self, application_name: str | None) -> list[ActiveCount]:
        """PENDING, ENQUEUED and DELAYED rows of the application and unclaimed ones (every
        application's when None), counted by version, status, executor and name."""

    async def reenqueue_executor(
        self,
        executor_id: str,
        application_version: str | None,
        application_name: str,
        now_ms: int,
        *,
        updated_before_ms: int | None = None,
    ) -> list[str]:
        """Put another executor's PENDING rows (of ``application_version``, or any version
        when None; this application's or unclaimed; last updated at or before
        ``updated_before_ms`` when given) back on their queue, clearing their owner token:
        one write, the ids moved. The owner's own execution, if it still runs, loses the
        fence at its next write."""

    async def touch_running(self, executor_id: str, workflow_ids: list[str], now_ms: int) -> int:
        """Stamp ``updated_at`` of those of ``workflow_ids`` still PENDING under
        ``executor_id``: the liveness an adopting executor reads. One write; the count."""

    async def silent_executors(
        self, application_name: str, executor_id: str, silent_before_ms: int
    ) -> list[str]:
        """Executors other than ``executor_id`` holding PENDING rows of the application (or
        unclaimed) none of which was updated after ``silent_before_ms``."""

    async def names_ever_run(self, names: list[str]) -> set[str]:
        """Of ``names``, those of which some row was ever dequeued or started (a scan:
        for diagnostics, never on a hot path)."""

    # --- renaming an application (sql/rename.py) -----------------------------------------

    async def rename_application_core(
        self, old_name: str | None, new_name: str, *, adopt_unclaimed: bool
    ) -> RenameCore:
        """Re-own queues, schedules, versions and PENDING/ENQUEUED/DELAYED workflows of
        ``old_name`` (and unclaimed ones with ``adopt_unclaimed``) in one transaction."""

    async def rename_application_batch(
        self,
        table: str,
        old_name: str | None,
        new_name: str,
        *,
        adopt_unclaimed: bool,
        after: str,
        batch_size: int,
    ) -> RenameBatch:
        """Re-own the next ``batch_size`` workflow ids' rows of ``table`` (``"workflows"``
        or ``"steps"``) after key ``after``, in one transaction; the last batch takes
        every row left."""

    # --- observability (reads only; used only while tracing or metrics are on) ----------

    async def workflow_attributes(self, workflow_id: str) -> dict[str, Any] | None:
        """The row's ``attributes`` as a dict (None: no row, no attributes, or not an
        object), e.g. to read the trace carrier persisted with it."""

    def retry_counts(self) -> tuple[int, int]:
        """Statements retried after a transient error, and outages seen (the database
        unreachable), since this backend opened."""
