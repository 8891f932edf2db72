"""Statement parameters from records, and records from rows, for both backends.

Both backends' statements name their parameters alike and select their columns in the
same order, so turning a record into parameters (and a row back into a record) is one
piece of code here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dbos_trio._core.admission import (
    QueueConfig,
    RateLimit,
    read_concurrency,
    stored_concurrency,
)
from dbos_trio._sysdb.records import (
    TURN_HEAD,
    TURN_TOKEN,
    ClaimedWorkflow,
    ClaimRequest,
    InitResult,
    NewWorkflow,
    ParentStep,
    RecordedStep,
)
from dbos_trio._sysdb.similar import SimilarWorkflows

# The columns a new workflow row is inserted with, and the parameter each takes its value
# from (new_workflow_params): both backends' inserts are rendered from this one list.
NEW_WORKFLOW_COLUMNS: tuple[tuple[str, str], ...] = (
    ("workflow_uuid", "workflow_id"),
    ("status", "status"),
    ("name", "name"),
    ("class_name", "class_name"),
    ("config_name", "config_name"),
    ("authenticated_user", "authenticated_user"),
    ("authenticated_roles", "authenticated_roles"),
    ("executor_id", "executor_id"),
    ("created_at", "created_at"),
    ("updated_at", "created_at"),
    ("application_version", "application_version"),
    ("application_id", "application_id"),
    ("application_name", "application_name"),
    ("recovery_attempts", "recovery_attempts"),
    ("queue_name", "queue_name"),
    ("workflow_timeout_ms", "timeout_ms"),
    ("workflow_deadline_epoch_ms", "deadline_epoch_ms"),
    ("deduplication_id", "deduplication_id"),
    ("priority", "priority"),
    ("queue_partition_key", "queue_partition_key"),
    ("parent_workflow_id", "parent_workflow_id"),
    ("serialization", "serialization"),
    ("delay_until_epoch_ms", "delay_until_epoch_ms"),
    ("owner_xid", "owner_xid"),
    ("creator_xid", "creator_xid"),
    ("forked_from", "forked_from"),
    ("schedule_name", "schedule_name"),
    ("is_debounced", "is_debounced"),
    ("debounce_deadline_epoch_ms", "debounce_deadline_epoch_ms"),
    ("attributes", "attributes"),
)


# The parameters of a new row that are not text, by their column's SQL type (the record
# of PostgreSQL's batched start, init_workflows, reads them from JSON).
NEW_WORKFLOW_PARAMETER_TYPES = {
    "created_at": "bigint",
    "recovery_attempts": "bigint",
    "timeout_ms": "bigint",
    "deadline_epoch_ms": "bigint",
    "priority": "int",
    "delay_until_epoch_ms": "bigint",
    "is_debounced": "boolean",
    "debounce_deadline_epoch_ms": "bigint",
}


def new_workflow_placeholders(
    parameter: str, casts: dict[str, str] | None = None
) -> dict[str, str]:
    """``{new_workflow_columns}`` and ``{new_workflow_values}`` for a statement file whose
    parameters are written ``parameter.format(name)`` (followed by ``casts[name]``, e.g.
    ``::jsonb``, where a text parameter must become another type)."""
    casts = casts or {}
    return {
        "new_workflow_columns": ", ".join(column for column, _ in NEW_WORKFLOW_COLUMNS),
        "new_workflow_values": ", ".join(
            parameter.format(name) + casts.get(name, "") for _, name in NEW_WORKFLOW_COLUMNS
        ),
    }


def new_workflow_parameters() -> tuple[str, ...]:
    """Each parameter a new row takes a value from, once, in column order, then ``inputs``."""
    names = dict.fromkeys(name for _, name in NEW_WORKFLOW_COLUMNS)
    return (*names, "inputs")


def new_workflow_record(types: dict[str, str]) -> str:
    """The record type of one new row's parameters (``name type, ...``, in
    :func:`new_workflow_parameters` order) for a PostgreSQL ``json_to_recordset`` of a
    batch of starts; a parameter not in ``types`` is text."""
    return ", ".join(f"{name} {types.get(name, 'text')}" for name in new_workflow_parameters())


def new_workflow_batch_values(casts: dict[str, str] | None = None) -> str:
    """The insert's values of a new row, in column order, from the batch alias ``b``."""
    casts = casts or {}
    return ", ".join(f"b.{name}{casts.get(name, '')}" for _, name in NEW_WORKFLOW_COLUMNS)


def similar_workflow_record(types: dict[str, str]) -> str:
    """The record type of the columns rows of a ``SimilarWorkflows`` share (every
    parameter but ``workflow_id`` and ``inputs``), for PostgreSQL's
    ``insert_new_workflows``."""
    return ", ".join(
        f"{name} {types.get(name, 'text')}"
        for name in new_workflow_parameters()
        if name not in ("workflow_id", "inputs")
    )


def similar_workflow_values(casts: dict[str, str] | None = None) -> str:
    """The insert's values of one row of a ``SimilarWorkflows``: its id from the row
    alias ``r`` (``r.i``), everything else from the shared record ``s``."""
    casts = casts or {}
    return ", ".join(
        "r.i" if name == "workflow_id" else f"s.{name}{casts.get(name, '')}"
        for _, name in NEW_WORKFLOW_COLUMNS
    )


def new_workflow_params(new: NewWorkflow, parent: ParentStep | None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "workflow_id": new.workflow_id,
        "status": new.status,
        "name": new.name,
        "class_name": new.class_name,
        "config_name": new.config_name,
        "authenticated_user": new.authenticated_user,
        "authenticated_roles": new.authenticated_roles,
        "executor_id": new.executor_id,
        "created_at": new.created_at_ms,
        "application_version": new.application_version,
        "application_id": new.application_id,
        "application_name": new.application_name,
        "recovery_attempts": new.recovery_attempts,
        "queue_name": new.queue_name,
        "timeout_ms": new.timeout_ms,
        "deadline_epoch_ms": new.deadline_epoch_ms,
        "deduplication_id": new.deduplication_id,
        "priority": new.priority,
        "queue_partition_key": new.queue_partition_key,
        "parent_workflow_id": new.parent_workflow_id,
        "serialization": new.serialization,
        "delay_until_epoch_ms": new.delay_until_epoch_ms,
        "owner_xid": new.owner_xid,
        "creator_xid": new.creator_xid,
        "forked_from": new.forked_from,
        "schedule_name": new.schedule_name,
        "is_debounced": new.is_debounced,
        "debounce_deadline_epoch_ms": new.debounce_deadline_epoch_ms,
        "attributes": new.attributes,
        "inputs": new.inputs,
        # PostgreSQL's init_workflow NOTIFYs this channel itself when set (the notifier's
        # leading edge: see postgres/notifier.py); None leaves the push to the notifier.
        "notify_channel": None,
    }
    if parent is not None:
        params.update(
            parent_id=parent.workflow_id,
            parent_owner_xid=parent.owner_xid,
            parent_function_id=parent.function_id,
            parent_function_name=parent.function_name,
            parent_started_at=parent.started_at_ms,
            parent_application_name=parent.application_name,
        )
    return params


def step_params(
    workflow_id: str, owner_xid: str, step: RecordedStep, application_name: str | None
) -> dict[str, Any]:
    return {
        "workflow_id": workflow_id,
        "owner_xid": owner_xid,
        "function_id": step.function_id,
        "function_name": step.function_name,
        "output": step.output,
        "error": step.error,
        "serialization": step.serialization,
        "child_workflow_id": step.child_workflow_id,
        "started_at": step.started_at_ms,
        "completed_at": step.completed_at_ms,
        "application_name": application_name,
    }


def outcome_params(
    workflow_id: str,
    owner_xid: str,
    *,
    status: str,
    output: str | None,
    error: str | None,
    completed_at_ms: int,
) -> dict[str, Any]:
    """The parameters of ``record_outcome`` (one row of ``record_outcomes``)."""
    return {
        "workflow_id": workflow_id,
        "owner_xid": owner_xid,
        "status": status,
        "output": output,
        "error": error,
        "completed_at": completed_at_ms,
    }


def queue_params(config: QueueConfig, overwrite: bool) -> dict[str, Any]:
    limiter, partition_limiter = config.limiter, config.partition_limiter
    return {
        "name": config.name,
        "concurrency": stored_concurrency(config),
        "worker_concurrency": config.worker_concurrency,
        "rate_limit_max": limiter.limit if limiter else None,
        "rate_limit_period_sec": limiter.period if limiter else None,
        "partitioned": config.partitioned,
        "polling_interval_sec": config.polling_interval_sec,
        "application_name": config.application_name,
        "partition_concurrency": config.partition_concurrency,
        "partition_worker_concurrency": config.partition_worker_concurrency,
        "partition_rate_limit_max": partition_limiter.limit if partition_limiter else None,
        "partition_rate_limit_period_sec": partition_limiter.period if partition_limiter else None,
        "overwrite": overwrite,
    }


def recorded_step(row: Sequence[Any]) -> RecordedStep:
    """A checkpoint from (function_id, function_name, output, error, serialization,
    child_workflow_id, started_at_epoch_ms, completed_at_epoch_ms)."""
    return RecordedStep(
        function_id=row[0],
        function_name=row[1],
        output=row[2],
        error=row[3],
        serialization=row[4],
        child_workflow_id=row[5],
        started_at_ms=row[6],
        completed_at_ms=row[7],
    )


def _rate_limit(limit: int | None, period: float | None) -> RateLimit | None:
    return RateLimit(limit, period) if limit is not None and period is not None else None


def queue_config(row: Sequence[Any]) -> QueueConfig:
    """A queue from (name, concurrency, worker_concurrency, rate_limit_max,
    rate_limit_period_sec, partition_concurrency, partition_worker_concurrency,
    partition_rate_limit_max, partition_rate_limit_period_sec, polling_interval_sec,
    application_name) — loaded as stored, never re-validated (another SDK may have
    written it)."""
    global_concurrency, paused = read_concurrency(row[1])
    return QueueConfig(
        name=row[0],
        global_concurrency=global_concurrency,
        paused=paused,
        worker_concurrency=row[2],
        limiter=_rate_limit(row[3], row[4]),
        partition_concurrency=row[5],
        partition_worker_concurrency=row[6],
        partition_limiter=_rate_limit(row[7], row[8]),
        polling_interval_sec=row[9],
        application_name=row[10],
    )


def init_result(row: Sequence[Any]) -> InitResult:
    """What ``init_workflow`` returns: (created, status, name, class_name, config_name,
    queue_name, serialization, deadline, output, error, recorded child id)."""
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


def notified_itself(row: Sequence[Any]) -> bool:
    """Whether an ``init_workflow`` row says its statement NOTIFYed the new row's queue
    (PostgreSQL's, with a ``notify_channel``: a twelfth column; SQLite's has none)."""
    return len(row) > 11 and bool(row[11])


def claimed_workflow(row: Sequence[Any]) -> ClaimedWorkflow:
    """A claimed row from (workflow_uuid, name, class_name, config_name, inputs,
    serialization, deadline, recovery_attempts, queue_name, partition key, priority,
    created_at, insertion order, checkpoints as a JSON array or NULL)."""
    steps = row[13]
    return ClaimedWorkflow(
        workflow_id=row[0],
        name=row[1],
        class_name=row[2],
        config_name=row[3],
        inputs=row[4],
        serialization=row[5],
        deadline_epoch_ms=row[6],
        recovery_attempts=row[7] or 0,
        queue_name=row[8],
        partition_key=row[9],
        # Written by someone else, these may be NULL; ordering them first is harmless.
        priority=row[10] or 0,
        created_at=row[11] or 0,
        sequence=row[12] or 0,
        steps=None if steps is None else {step[0]: recorded_step(step) for step in steps},
    )


def in_dequeue_order(claimed: list[ClaimedWorkflow]) -> list[ClaimedWorkflow]:
    """Claimed rows in the order they run: priority, then age, then insertion order."""
    return sorted(claimed, key=lambda c: (c.priority, c.created_at, c.sequence))


def claim_params(request: ClaimRequest) -> dict[str, Any]:
    """The parameters of a claim statement (each backend's uses those it needs)."""
    return {
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
        "turn_window_ms": request.turn_window_ms,
        "turn_token": TURN_TOKEN,
        "turn_head": TURN_HEAD,
    }


def similar_params(rows: SimilarWorkflows) -> dict[str, str]:
    """The parameters of PostgreSQL's ``insert_new_workflows``: the shared columns as one
    JSON object, and the rows as a JSON array of ``{"i": id, "x": inputs}``. Characters
    beyond ASCII go as themselves (as in every batch parameter: a backslash-u escape fails
    in a database whose encoding is not UTF-8)."""
    shared: dict[str, Any] = new_workflow_params(rows.template, None)
    del shared["workflow_id"], shared["inputs"], shared["notify_channel"]
    pairs = [
        {"i": workflow_id, "x": inputs}
        for workflow_id, inputs in zip(rows.workflow_ids, rows.inputs, strict=True)
    ]
    return {
        "shared": json.dumps(shared, ensure_ascii=False),
        "rows": json.dumps(pairs, ensure_ascii=False),
    }
