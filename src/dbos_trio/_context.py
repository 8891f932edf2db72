"""Ambient state, in contextvars, so it follows Trio tasks the way users expect.

Two kinds of state live here, and the split is the point:

* The *workflow context* of a running workflow body (:class:`WorkflowContext`): its id,
  ownership token, step-id counter, recorded steps when replaying, deadline, format. Step
  ids are reserved **synchronously** by :meth:`WorkflowContext.reserve_id` at the moment a
  durable call is made, before its first ``await``, so concurrent calls started from one
  body (``nursery.start_soon`` in a loop) get ids in call order whatever order Trio
  schedules them in. Trio copies contextvars into child tasks, so tasks spawned by a
  workflow body share its context object (and therefore its counter).
* The caller's *options* for the next start (``SetWorkflowID``, ``SetWorkflowTimeout``,
  ``SetEnqueueOptions``): plain ``with`` blocks, inherited by tasks spawned inside them,
  cleared inside a workflow body so they apply to one start, not to its children.
"""

from __future__ import annotations

import contextvars
import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import attrs

from ._errors import DBOSException

logger = logging.getLogger("dbos_trio")

if TYPE_CHECKING:
    from ._executor import Executor
    from .sysdb.records import RecordedStep

MAX_PRIORITY = 2_147_483_647


@attrs.define(eq=False)
class WorkflowContext:
    """One execution of one workflow body."""

    executor: Executor
    workflow_id: str
    owner_xid: str
    serialization: str
    deadline_epoch_ms: int | None
    # Steps recorded by earlier executions, loaded once when this execution started from a
    # stored row; None when this execution created the row (nothing can be recorded yet).
    recorded: dict[int, RecordedStep] | None
    last_function_id: int = 0
    # A system-database failure seen inside this body. Once set, the outcome is never
    # recorded even if user code swallowed the error: the row stays PENDING for recovery.
    control_failure: BaseException | None = None

    def reserve_id(self) -> int:
        self.last_function_id += 1
        return self.last_function_id

    def recorded_at(self, function_id: int) -> RecordedStep | None:
        if self.recorded is None:
            return None
        return self.recorded.get(function_id)


@attrs.frozen
class StepContext:
    """Set while a step body runs: nested durable calls become plain calls."""

    workflow: WorkflowContext
    step_id: int


current_workflow: contextvars.ContextVar[WorkflowContext | None] = contextvars.ContextVar(
    "dbos_trio_workflow", default=None
)
current_step: contextvars.ContextVar[StepContext | None] = contextvars.ContextVar(
    "dbos_trio_step", default=None
)


def workflow_outside_steps() -> WorkflowContext | None:
    """The running workflow, unless we are inside one of its steps (or outside any)."""
    if current_step.get() is not None:
        return None
    return current_workflow.get()


# --- Options for the next start ------------------------------------------------------


@attrs.define(eq=False)
class _AssignedId:
    workflow_id: str
    used: bool = False


_assigned_id: contextvars.ContextVar[_AssignedId | None] = contextvars.ContextVar(
    "dbos_trio_assigned_id", default=None
)
# None: no timeout set here (inherit the parent's deadline); 0.0: explicitly none.
_timeout: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "dbos_trio_timeout", default=None
)


@attrs.frozen(kw_only=True)
class EnqueueOptions:
    """What ``SetEnqueueOptions`` sets for the next enqueue."""

    deduplication_id: str | None = None
    priority: int | None = None
    app_version: str | None = None
    queue_partition_key: str | None = None
    delay_seconds: float | None = None
    duplication_policy: Literal["reject", "return-existing"] | None = None

    def is_empty(self) -> bool:
        return self == EnqueueOptions()


_enqueue_options: contextvars.ContextVar[EnqueueOptions | None] = contextvars.ContextVar(
    "dbos_trio_enqueue_options", default=None
)


@contextmanager
def SetWorkflowID(workflow_id: str) -> Iterator[None]:
    """The first workflow started in this block takes ``workflow_id``."""
    if not isinstance(workflow_id, str) or not workflow_id.strip():
        raise DBOSException(f"SetWorkflowID needs a non-empty workflow id, not {workflow_id!r}")
    token = _assigned_id.set(_AssignedId(workflow_id))
    try:
        yield
    finally:
        _assigned_id.reset(token)


def take_assigned_id() -> str | None:
    """Consume the ``SetWorkflowID`` id, if one is set and still unused."""
    assigned = _assigned_id.get()
    if assigned is None:
        return None
    if assigned.used:
        logger.warning(
            "SetWorkflowID(%r) was taken by an earlier workflow started in the same block; "
            "this one gets a generated id",
            assigned.workflow_id,
        )
        return None
    assigned.used = True
    return assigned.workflow_id


@contextmanager
def SetWorkflowTimeout(seconds: float | None) -> Iterator[None]:
    """Workflows started in this block time out after ``seconds`` (None: no timeout)."""
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise DBOSException(f"SetWorkflowTimeout needs seconds or None, not {seconds!r}")
        if seconds < 0 or math.isnan(seconds):
            raise DBOSException(f"SetWorkflowTimeout needs a non-negative timeout, not {seconds}")
    token = _timeout.set(0.0 if seconds is None else float(seconds))
    try:
        yield
    finally:
        _timeout.reset(token)


def timeout_option() -> float | None:
    """The ``SetWorkflowTimeout`` in force: None if unset, 0.0 if explicitly no timeout."""
    return _timeout.get()


@contextmanager
def SetEnqueueOptions(
    *,
    deduplication_id: str | None = None,
    priority: int | None = None,
    app_version: str | None = None,
    queue_partition_key: str | None = None,
    delay_seconds: float | None = None,
    duplication_policy: Literal["reject", "return-existing"] | None = None,
) -> Iterator[None]:
    """Options for workflows enqueued in this block."""
    if priority is not None and (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not 1 <= priority <= MAX_PRIORITY
    ):
        raise DBOSException(f"priority must be an integer in 1..{MAX_PRIORITY}, not {priority!r}")
    if delay_seconds is not None and (
        isinstance(delay_seconds, bool)
        or not isinstance(delay_seconds, int | float)
        or not delay_seconds >= 0
    ):
        raise DBOSException(f"delay_seconds must be a non-negative number, not {delay_seconds!r}")
    if duplication_policy not in (None, "reject", "return-existing"):
        raise DBOSException(
            f"duplication_policy must be 'reject' or 'return-existing', not {duplication_policy!r}"
        )
    if deduplication_id is not None and queue_partition_key is not None:
        raise DBOSException("deduplication is not supported together with a queue partition key")
    options = EnqueueOptions(
        deduplication_id=deduplication_id,
        priority=priority,
        app_version=app_version,
        queue_partition_key=queue_partition_key,
        delay_seconds=delay_seconds,
        duplication_policy=duplication_policy,
    )
    token = _enqueue_options.set(options)
    try:
        yield
    finally:
        _enqueue_options.reset(token)


def enqueue_options() -> EnqueueOptions:
    return _enqueue_options.get() or EnqueueOptions()


@contextmanager
def options_cleared() -> Iterator[None]:
    """Run a workflow body with the caller's start options out of sight."""
    tokens: list[tuple[contextvars.ContextVar[Any], contextvars.Token[Any]]] = [
        (_assigned_id, _assigned_id.set(None)),
        (_timeout, _timeout.set(None)),
        (_enqueue_options, _enqueue_options.set(None)),
    ]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)
