"""Records that cross the system-database protocol: frozen, driver-free, payloads as strings.

Nothing here knows a driver or an SQL dialect; a backend turns these into rows and rows
into these. Payload fields (inputs, outputs, errors, messages, values) are already
serialized strings, with the name of their format beside them, so a backend stores them
verbatim and the engine alone decides how to read them.
"""

from __future__ import annotations

import json
from typing import Any, Final

import attrs

INTERNAL_QUEUE: Final = "_dbos_internal_queue"
NULL_TOPIC: Final = "__null__topic__"
STREAM_CLOSED: Final = "__DBOS_STREAM_CLOSED__"


@attrs.frozen(kw_only=True)
class NewWorkflow:
    """A workflow row to create (or find, if its id exists already)."""

    workflow_id: str
    status: str  # PENDING (direct start), ENQUEUED or DELAYED
    name: str
    class_name: str | None
    config_name: str | None
    inputs: str
    serialization: str
    creator_xid: str
    owner_xid: str | None  # the creator's token for a direct start, None when enqueued
    recovery_attempts: int  # 1 for a direct start, 0 when enqueued
    created_at_ms: int
    executor_id: str | None = None
    application_version: str | None = None
    application_id: str | None = None
    application_name: str | None = None
    queue_name: str | None = None
    deduplication_id: str | None = None
    priority: int = 0
    queue_partition_key: str | None = None
    timeout_ms: int | None = None
    deadline_epoch_ms: int | None = None
    delay_until_epoch_ms: int | None = None
    parent_workflow_id: str | None = None
    authenticated_user: str | None = None
    authenticated_roles: str | None = None
    forked_from: str | None = None
    # Written by the scheduler and the debouncer (the official SDK's row shapes).
    schedule_name: str | None = None
    is_debounced: bool = False
    debounce_deadline_epoch_ms: int | None = None
    # User attributes (``SetWorkflowAttributes``) and the trace carrier, as JSON text;
    # stored as JSONB on PostgreSQL, as TEXT on SQLite.
    attributes: str | None = None


@attrs.frozen(kw_only=True)
class ParentStep:
    """The parent's checkpoint for starting a child, written atomically with the child row."""

    workflow_id: str
    owner_xid: str
    function_id: int
    function_name: str
    started_at_ms: int
    application_name: str | None


@attrs.frozen(kw_only=True)
class InitResult:
    """What :meth:`SystemDatabase.init_workflow` found or made."""

    created: bool  # this call inserted the row (its creator_xid came back)
    status: str
    name: str
    class_name: str | None
    config_name: str | None
    queue_name: str | None
    serialization: str | None
    deadline_epoch_ms: int | None
    output: str | None = None  # the stored outcome, when the row is already terminal
    error: str | None = None
    # For a child start: the child id the parent's checkpoint holds (ours, or the one an
    # earlier execution recorded at this step id).
    recorded_child_id: str | None = None


@attrs.frozen(kw_only=True)
class RecordedStep:
    """A checkpoint in ``operation_outputs``."""

    function_id: int
    function_name: str
    output: str | None
    error: str | None
    serialization: str | None
    child_workflow_id: str | None = None
    started_at_ms: int | None = None
    completed_at_ms: int | None = None


@attrs.frozen(kw_only=True)
class Outcome:
    """A workflow's status and, once terminal, its stored result or error."""

    status: str
    output: str | None
    error: str | None
    serialization: str | None
    # For waiters: a row without a name can never run; a DELAYED one without a time is
    # released at once.
    name: str | None = None
    delay_until_epoch_ms: int | None = None


@attrs.frozen(kw_only=True)
class WorkflowRow:
    """Everything ``workflow_status`` (with its input/output rows) says about a workflow."""

    workflow_id: str
    status: str
    name: str | None
    class_name: str | None
    config_name: str | None
    authenticated_user: str | None
    assumed_role: str | None
    authenticated_roles: str | None
    inputs: str | None
    output: str | None
    error: str | None
    serialization: str | None
    executor_id: str | None
    created_at: int | None
    updated_at: int | None
    application_version: str | None
    application_id: str | None
    application_name: str | None
    recovery_attempts: int | None
    queue_name: str | None
    workflow_timeout_ms: int | None
    workflow_deadline_epoch_ms: int | None
    started_at_epoch_ms: int | None
    deduplication_id: str | None
    priority: int | None
    queue_partition_key: str | None
    forked_from: str | None
    was_forked_from: bool | None
    parent_workflow_id: str | None
    delay_until_epoch_ms: int | None
    completed_at: int | None
    owner_xid: str | None = None
    schedule_name: str | None = None
    # A dict as PostgreSQL's driver decodes JSONB, JSON text as SQLite stores it.
    attributes: Any = None


@attrs.frozen(kw_only=True)
class WorkflowFilters:
    """Filters of ``list_workflows``; every set field narrows the result (AND)."""

    workflow_ids: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    names: tuple[str, ...] | None = None
    app_versions: tuple[str, ...] | None = None
    queue_names: tuple[str, ...] | None = None
    executor_ids: tuple[str, ...] | None = None
    forked_from: tuple[str, ...] | None = None
    parent_workflow_ids: tuple[str, ...] | None = None
    users: tuple[str, ...] | None = None
    application_names: tuple[str, ...] | None = None
    schedule_names: tuple[str, ...] | None = None
    # Rows of this application plus unclaimed ones; ignored when application_names is set.
    scope_application: str | None = None
    # One prefix, or several (a row matching any of them is listed).
    workflow_id_prefix: str | tuple[str, ...] | None = None
    created_after_ms: int | None = None
    created_before_ms: int | None = None
    completed_after_ms: int | None = None
    completed_before_ms: int | None = None
    dequeued_after_ms: int | None = None
    dequeued_before_ms: int | None = None
    queues_only: bool = False
    was_forked_from: bool | None = None
    has_parent: bool | None = None
    is_fork: bool | None = None  # forked_from set (True) or not (False)
    # JSON text of an object: rows whose attributes contain it (see sql/listing.py).
    attributes: str | None = None
    limit: int | None = None
    offset: int | None = None
    sort_desc: bool = False
    load_input: bool = True
    load_output: bool = True


# The owner token of an ENQUEUED row that an executor waits on as its turn (see
# QueueStore.request_turn). Not a UUID, so it can never be a claim's or an official SDK's
# token; the official SDKs ignore owner_xid and started_at_epoch_ms of ENQUEUED rows.
TURN_TOKEN = "dbos-trio-turn"
# Turns are marked at the head of a queue, so claims look for them among its first rows
# only (an index range however long the backlog).
TURN_HEAD = 100


@attrs.frozen(kw_only=True)
class ClaimRequest:
    """One dequeue attempt on one queue (or one partition of it).

    Limits left as None do not apply. The counted limits (global/partition concurrency and
    rate limits) are checked by the claim statement against the rows themselves; the local
    budget (worker concurrency) is computed in memory by the caller.
    """

    queue_name: str
    partition_key: str | None
    owner_xid: str
    executor_id: str
    application_version: str
    application_name: str
    runs_latest_version: bool
    workflow_names: tuple[str, ...]
    now_ms: int
    local_budget: int | None
    global_concurrency: int | None
    rate_limit_max: int | None
    rate_limit_period_ms: int | None
    partition_concurrency: int | None
    partition_rate_limit_max: int | None
    partition_rate_limit_period_ms: int | None
    # Claim in a consistent snapshot (REPEATABLE READ + NOWAIT) because other executors
    # spend the same budget; otherwise SKIP LOCKED under READ COMMITTED.
    consistent: bool
    rate_limited: bool
    # Turn-taking under a global limit (unpartitioned queues): how long an
    # executor's turn on the queue stays valid after it asked for it; None: no turns.
    turn_window_ms: int | None = None


@attrs.frozen(kw_only=True)
class ClaimedWorkflow:
    """A row a claim flipped from ENQUEUED to PENDING for this executor."""

    workflow_id: str
    name: str
    class_name: str | None
    config_name: str | None
    inputs: str | None
    serialization: str | None
    deadline_epoch_ms: int | None
    recovery_attempts: int
    queue_name: str
    partition_key: str | None
    priority: int
    created_at: int
    # Ties of priority and age run in insertion order where the backend knows it (SQLite's
    # rowid); 0 where it does not.
    sequence: int = 0
    # The row's checkpoints as the claim found them, when the backend can read them in the
    # claim itself and knows no write raced it; None: the execution loads them.
    steps: dict[int, RecordedStep] | None = None


@attrs.frozen(kw_only=True)
class Caller:
    """The workflow execution on whose behalf a write is made, and its checkpoint slot.

    Writes taking a ``Caller`` are fenced by ``owner_xid`` and, when ``record`` is true,
    record their checkpoint at ``function_id`` in the same transaction. From inside a step
    the write is fenced but not recorded (the step's own checkpoint covers it).
    """

    workflow_id: str
    owner_xid: str
    function_id: int
    started_at_ms: int
    application_name: str | None
    record: bool = True


@attrs.frozen(kw_only=True)
class StreamBatch:
    """Consecutive stream values from an offset, and the writer's status (None: no writer)."""

    writer_status: str | None
    values: tuple[tuple[int, str, str | None], ...]  # (offset, value, serialization)


@attrs.frozen(kw_only=True)
class ScheduleRow:
    """A row of ``workflow_schedules``, as stored (``context`` serialized by the writer's
    serializer, ``last_fired_at`` an ISO 8601 string)."""

    schedule_id: str
    schedule_name: str
    workflow_name: str
    workflow_class_name: str | None
    schedule: str
    status: str
    context: str
    last_fired_at: str | None
    automatic_backfill: bool
    cron_timezone: str | None
    queue_name: str | None
    application_name: str | None


@attrs.frozen(kw_only=True)
class ScheduleFilters:
    """Filters of ``list_schedules``; every set field narrows the result (AND)."""

    statuses: tuple[str, ...] | None = None
    workflow_names: tuple[str, ...] | None = None
    name_prefixes: tuple[str, ...] | None = None
    # Schedules of these applications plus unclaimed ones; None: all of them.
    application_names: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class Bounce:
    """One debounce attempt: push the key's DELAYED workflow back and give it new inputs."""

    workflow_name: str
    queue_name: str
    deduplication_id: str
    delay_until_epoch_ms: int
    inputs: str
    serialization: str
    application_name: str | None
    now_ms: int


@attrs.frozen(kw_only=True)
class BounceResult:
    """What a bounce found: the workflow it pushed back, or else who holds the key."""

    bounced_workflow_id: str | None
    holder_workflow_id: str | None = None
    holder_is_debounced: bool = False
    holder_workflow_name: str | None = None
    holder_application_name: str | None = None

    def to_json(self) -> str:
        """As a ``DBOS.debounce_delayed_workflow`` checkpoint records it: portable JSON
        with the official SDK's keys (a record format, readable by any SDK)."""
        return json.dumps(attrs.asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> BounceResult:
        recorded: dict[str, Any] = json.loads(text)
        return cls(
            bounced_workflow_id=recorded.get("bounced_workflow_id"),
            holder_workflow_id=recorded.get("holder_workflow_id"),
            holder_is_debounced=bool(recorded.get("holder_is_debounced")),
            holder_workflow_name=recorded.get("holder_workflow_name"),
            holder_application_name=recorded.get("holder_application_name"),
        )


@attrs.frozen(kw_only=True)
class OutgoingMessage:
    """One message of a bulk send: already serialized, with its (idempotent) id."""

    destination_id: str
    topic: str
    message: str
    serialization: str | None
    message_uuid: str


# --- inspection (read-only views for operators: the dashboard) -------------------------


@attrs.frozen(kw_only=True)
class EventRecord:
    """A workflow's current value under one event key (``workflow_events``)."""

    key: str
    value: str
    serialization: str | None


@attrs.frozen(kw_only=True)
class MessageRecord:
    """One message sent to a workflow (``notifications``), consumed or waiting."""

    message_uuid: str
    topic: str | None
    message: str
    serialization: str | None
    consumed: bool
    created_at_epoch_ms: int | None


@attrs.frozen(kw_only=True)
class StreamEntry:
    """One value written to a workflow's stream (``streams``)."""

    key: str
    offset: int
    value: str
    serialization: str | None


@attrs.frozen(kw_only=True)
class ReplicationState:
    """What a PostgreSQL server says of how durable an acknowledged commit is: its
    ``synchronous_commit`` (for this session) and ``synchronous_standby_names``, and the
    standbys streaming from it, each ``(application_name, sync_state)`` (``sync``,
    ``quorum``, ``potential`` or ``async``; empty when none is visible to this role)."""

    synchronous_commit: str
    synchronous_standby_names: str
    standbys: tuple[tuple[str, str], ...]


@attrs.frozen(kw_only=True)
class ExecutorSummary:
    """What the workflow rows say of one (executor id, application version): how many
    workflows it holds PENDING and when it last touched one."""

    executor_id: str
    application_version: str | None
    application_name: str | None
    pending: int
    total: int
    last_updated_at: int | None


@attrs.frozen(kw_only=True)
class QueueDepth:
    """How many workflows of one queue are in one unfinished status."""

    queue_name: str
    status: str
    count: int


@attrs.frozen(kw_only=True)
class ApplicationVersion:
    """A row of ``application_versions``: the latest of an application is the one with the
    highest ``version_timestamp`` among its own rows and unclaimed ones."""

    version_id: str
    version_name: str
    version_timestamp: int
    created_at: int
    application_name: str | None


@attrs.frozen(kw_only=True)
class ActiveCount:
    """How many rows of one (application version, status, executor, workflow name) are
    still to run (PENDING, ENQUEUED or DELAYED), and when the newest of them was touched."""

    application_version: str | None
    status: str
    executor_id: str | None
    name: str | None
    count: int
    last_updated_ms: int | None


@attrs.frozen(kw_only=True)
class RenameCore:
    """Rows a rename moved in its one transaction, by table."""

    queues: int
    schedules: int
    versions: int
    workflows: int


@attrs.frozen(kw_only=True)
class RenameBatch:
    """One batch of a rename's finished rows: how many moved, and the key it ended at
    (None: it was the last batch)."""

    moved: int
    upper: str | None
