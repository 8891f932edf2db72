"""Errors, with the codes and messages of the official ``dbos`` 3.4 package, by family.

Two roots, and why they differ:

* :class:`DBOSException` (an ``Exception``) for conditions user code may handle: a bad
  argument, a conflicting workflow id, an awaited workflow that was cancelled. Every one
  pickles and unpickles to an equal error (``__reduce__``), because errors are stored as
  workflow and step outcomes and re-raised on replay.
* :class:`DBOSBaseException` (a ``BaseException``, like ``trio.Cancelled``) for control
  flow user code must not swallow: the running workflow was cancelled
  (:class:`DBOSWorkflowCancelledError`), or this execution lost ownership of it
  (:class:`DBOSWorkflowConflictIDError`). The engine never records these as an outcome:
  the row stays as its new owner or the canceller left it. User code cannot construct
  them (calling the class raises ``TypeError``; the engine uses ``_create``), so a raise
  of one always means the engine said so, never a library imitating it.

Families: a parent per kind of trouble, so a caller catches the kind without listing its
members. Each member keeps its class name, ``dbos_error_code`` and message (the names
and codes of dbos 3.4, where it has the class); a parent adds no code and no message of
its own, and is never raised itself:

* :class:`DBOSInvalidArgumentError` (a ``ValueError``) — an argument was refused, before
  anything was written: by a rule (itself), by type (:class:`DBOSArgumentTypeError`, also
  a ``TypeError``), or by the database (:class:`InvalidValueError`).
* :class:`DBOSTimeoutError` — something took longer than the time it was given:
  :class:`DBOSStepTimeoutError`, :class:`DBOSStreamTimeoutError`,
  :class:`DBOSQueryTimeoutError`.
* :class:`DBOSDuplicateIDError` — an id (a workflow id, a deduplication id) is already
  held, and nothing new was started: :class:`DBOSConflictingWorkflowError`,
  :class:`DBOSWorkflowIDInUseError`, :class:`DBOSQueueDeduplicatedError`. Not
  :class:`DBOSWorkflowConflictIDError`: despite its name it is control flow (above).
* :class:`DBOSNondeterminismError` — a workflow's durable calls did not replay as
  recorded, or could not be numbered deterministically: :class:`DBOSUnexpectedStepError`,
  :class:`DBOSStepNondeterminismError`, :class:`DBOSUnorderedTaskError`.
* :class:`DBOSStoredDataError` — what the system database holds cannot be read back:
  :class:`DBOSPayloadError` (a payload), :class:`DBOSCorruptRowError` (a row).
* :class:`DBOSAwaitedWorkflowError` — an awaited workflow ended without an outcome of its
  own: :class:`DBOSAwaitedWorkflowCancelledError`,
  :class:`DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded`.
* :class:`SystemDatabaseError` — the system database failed; never a workflow's outcome
  by itself. :class:`TransientDatabaseError` (:class:`ConnectionLost`,
  :class:`Contention`) once the retries ran out, :class:`DatabaseClosed`,
  :class:`UnexpectedDatabaseError`, :class:`DBOSQueryTimeoutError`.
* :class:`DBOSInitializationError` — nothing was started: :class:`DBOSConfigError`,
  :class:`SystemDatabaseUnreachable`.

Every public error class is importable from here (and from ``dbos_trio``). The roots and
family parents are defined in ``dbos_trio._core.error_roots`` and the database kinds in
``dbos_trio._core.database_errors``, below this module, so that the tree spans modules
without an import cycle; ``dbos_trio._sysdb.errors`` (which maps driver errors onto the
kinds) and ``dbos_trio._datasource.protocol`` re-export them, so rows pickled under those
paths still decode, to these classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from dbos_trio._core.database_errors import (
    ConnectionLost,
    Contention,
    DatabaseClosed,
    DBOSQueryTimeoutError,
    InvalidValueError,
    SystemDatabaseUnreachable,
    TransactionOutcomeUnknown,
    TransientDatabaseError,
    UnexpectedDatabaseError,
)
from dbos_trio._core.error_roots import (
    DBOSAwaitedWorkflowError,
    DBOSBaseException,
    DBOSDuplicateIDError,
    DBOSException,
    DBOSInitializationError,
    DBOSInvalidArgumentError,
    DBOSNondeterminismError,
    DBOSStoredDataError,
    DBOSTimeoutError,
    SystemDatabaseError,
    _construct,
    _NoPublicConstructor,
)
from dbos_trio._core.error_roots import _rebuild as _rebuild  # named by stored pickles

__all__ = [
    "ConnectionLost",
    "Contention",
    "DBOSArgumentTypeError",
    "DBOSAwaitedWorkflowCancelledError",
    "DBOSAwaitedWorkflowError",
    "DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded",
    "DBOSBaseException",
    "DBOSConfigError",
    "DBOSConflictingWorkflowError",
    "DBOSCorruptRowError",
    "DBOSDuplicateIDError",
    "DBOSEnqueueManyError",
    "DBOSException",
    "DBOSInitializationError",
    "DBOSInvalidArgumentError",
    "DBOSMaxStepRetriesExceeded",
    "DBOSNonExistentWorkflowError",
    "DBOSNondeterminismError",
    "DBOSNotLaunchedError",
    "DBOSPayloadError",
    "DBOSQueryTimeoutError",
    "DBOSQueueDeduplicatedError",
    "DBOSStepNondeterminismError",
    "DBOSStepTimeoutError",
    "DBOSStoredDataError",
    "DBOSStreamTimeoutError",
    "DBOSTimeoutError",
    "DBOSUnexpectedStepError",
    "DBOSUnorderedTaskError",
    "DBOSValueTooLargeError",
    "DBOSWorkflowAbortedError",
    "DBOSWorkflowCancelledError",
    "DBOSWorkflowConflictIDError",
    "DBOSWorkflowFunctionNotFoundError",
    "DBOSWorkflowIDInUseError",
    "DatabaseClosed",
    "InvalidValueError",
    "PortableValueError",
    "PortableWorkflowError",
    "SystemDatabaseError",
    "SystemDatabaseUnreachable",
    "TransactionOutcomeUnknown",
    "TransientDatabaseError",
    "UnexpectedDatabaseError",
]


class DBOSArgumentTypeError(DBOSInvalidArgumentError, TypeError):
    """A value passed to a dbos_trio call has the wrong type (the message names the
    argument). Raised before anything is written.

    A ``TypeError``, and a ``ValueError`` too: the official SDK raises ``ValueError`` for
    a bad argument of any kind, and code written for it catches that."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class PortableValueError(DBOSArgumentTypeError):
    """A value (its part at ``path``: ``args[0].lines[2].price``) portable JSON cannot
    store, or JSON that does not fit the type its reader states. Nothing was written."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{problem} (at {path})" if path else problem)


class DBOSValueTooLargeError(DBOSInvalidArgumentError):
    """A value to store (inputs, an output, a message, an event...) is over
    ``Config.max_value_bytes`` once serialized: nothing was written (a ``ValueError``)."""

    def __init__(self, what: str, size: int, limit: int, setting: str) -> None:
        self.what = what
        self.size = size
        self.limit = limit
        self.setting = setting
        super().__init__(
            f"{what} is {size:,} bytes once serialized, over the limit of {limit:,} bytes "
            f"({setting}): store the value elsewhere (a file, an object store) and pass a "
            f"reference, or raise {setting}"
        )


class DBOSConfigError(DBOSInitializationError):
    """A configuration value is invalid; the message names the field."""


class DBOSNotLaunchedError(DBOSException):
    """An operation that needs a launched executor ran before launch or after shutdown."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        super().__init__(
            f"{operation} needs a launched DBOS: call it inside `async with dbos.launched():`"
        )


class DBOSWorkflowFunctionNotFoundError(DBOSException):
    """A workflow's row names a function, class or configured instance this process has
    not registered (code 4), so it cannot run it here. Register it (with the same name)
    in the process meant to run it, or let an executor that has it take the row."""

    def __init__(self, workflow_id: str, message: str | None = None) -> None:
        self.workflow_id = workflow_id
        self.detail = message
        super().__init__(f"Could not execute workflow {workflow_id}: {message}", 4)


class DBOSNonExistentWorkflowError(DBOSException):
    """No workflow has the given id (code 5): a handle, a message, a fork or a wait named
    a workflow that was never started or has been deleted. ``destination`` says which use
    (``"target"``, ``"`send` destination"``, ``"awaited"``, ``"fork"``)."""

    def __init__(self, destination: str, destination_id: str) -> None:
        self.destination = destination
        self.destination_id = destination_id
        super().__init__(_no_such_workflow(destination, destination_id), 5)


class DBOSMaxStepRetriesExceeded(DBOSException):
    """A step with ``retries_allowed`` failed on every attempt (code 7). ``errors`` holds
    each attempt's exception, in order; it becomes the step's recorded error and is raised
    in the workflow, which may catch it."""

    def __init__(self, step_name: str, max_retries: int, errors: Sequence[BaseException]) -> None:
        self.step_name = step_name
        self.max_retries = max_retries
        self.errors = list(errors)
        super().__init__(f"Step {step_name} has exceeded its maximum of {max_retries} retries", 7)


class DBOSConflictingWorkflowError(DBOSDuplicateIDError):
    """A workflow id was reused for a different function, class or configured instance
    (code 9): the existing row wins. Use a fresh id, or the same function."""

    def __init__(self, workflow_id: str, message: str | None = None) -> None:
        self.workflow_id = workflow_id
        self.detail = message
        super().__init__(
            f"Conflicting workflow invocation with the same ID ({workflow_id}): {message}", 9
        )


class DBOSUnexpectedStepError(DBOSNondeterminismError):
    """On replay, the step recorded at this step id has another name than the call the
    workflow made (code 11): the workflow is not deterministic, or its code changed under
    a running workflow. Keep workflow code deterministic and change it only with a new
    application version (see the versions page)."""

    def __init__(
        self, workflow_id: str, step_id: int, expected_name: str, recorded_name: str
    ) -> None:
        self.workflow_id = workflow_id
        self.step_id = step_id
        self.expected_name = expected_name
        self.recorded_name = recorded_name
        super().__init__(
            f"During execution of workflow {workflow_id} step {step_id}, function "
            f"{recorded_name} was recorded when {expected_name} was expected. Check that "
            "your workflow is deterministic.",
            11,
        )


class DBOSQueueDeduplicatedError(DBOSDuplicateIDError):
    """Enqueueing with a ``deduplication_id`` that an unfinished workflow on the same queue
    already holds (code 12). Nothing was enqueued; ``workflow_id`` is the refused one."""

    def __init__(self, workflow_id: str, queue_name: str, deduplication_id: str) -> None:
        self.workflow_id = workflow_id
        self.queue_name = queue_name
        self.deduplication_id = deduplication_id
        super().__init__(
            f"Workflow {workflow_id} was deduplicated due to an existing workflow in queue "
            f"{queue_name} with deduplication ID {deduplication_id}.",
            12,
        )


class DBOSEnqueueManyError(DBOSException):
    """Rows of an ``enqueue_many`` refused while writing (a held deduplication id, ...);
    every other row was enqueued. ``failures``: each refused row's index and the error a
    one-by-one ``enqueue`` of it would have raised; ``workflow_ids``: per row, the id its
    handle follows (the holder's for ``return-existing``), or None where refused."""

    def __init__(self, failures: dict[int, DBOSException], workflow_ids: list[str | None]) -> None:
        self.failures = dict(failures)
        self.workflow_ids = list(workflow_ids)
        shown = "; ".join(
            f"row {index}: {error.message}" for index, error in sorted(self.failures.items())[:10]
        )
        more = len(self.failures) - 10
        super().__init__(
            f"enqueue_many: {len(self.failures)} of {len(self.workflow_ids)} rows were not "
            f"enqueued (the others were): {shown}" + (f"; and {more} more" if more > 0 else "")
        )


class DBOSAwaitedWorkflowCancelledError(DBOSAwaitedWorkflowError):
    """The workflow whose result was awaited ended CANCELLED (code 13): someone cancelled
    it, or its timeout (``SetWorkflowTimeout``, ``timeout_seconds``) expired.
    ``resume_workflow`` runs it again from its last checkpoint."""

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        super().__init__(
            f"Awaited workflow {workflow_id} was cancelled (by a cancel request, or because "
            "its timeout expired)",
            13,
        )


class DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded(DBOSAwaitedWorkflowError):
    """The workflow whose result was awaited was dead-lettered after too many recovery
    attempts (code 14): it kept dying (a crash in a step, an out-of-memory kill) more often
    than its ``max_recovery_attempts``, and is now MAX_RECOVERY_ATTEMPTS_EXCEEDED.
    ``resume_workflow`` runs it again."""

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        super().__init__(
            f"Awaited workflow {workflow_id} exceeded its maximum recovery attempts", 14
        )


class DBOSStreamTimeoutError(DBOSTimeoutError):
    """Reading a stream with ``timeout_seconds``, no next value arrived in time (code 16).
    The stream is unchanged: read again from the same offset to keep waiting."""

    def __init__(self, workflow_id: str, key: str, timeout_seconds: float | None) -> None:
        self.workflow_id = workflow_id
        self.key = key
        self.timeout_seconds = timeout_seconds
        within = f" within {timeout_seconds} seconds" if timeout_seconds is not None else ""
        super().__init__(f"No value arrived on stream {key} of workflow {workflow_id}{within}", 16)


class DBOSStepTimeoutError(DBOSTimeoutError):
    """A step ran longer than its ``timeout_seconds`` and was cancelled (code 18). The
    attempt counts as failed: with ``retries_allowed`` the step is retried, otherwise this
    is its recorded error, raised in the workflow."""

    def __init__(self, step_name: str, timeout_seconds: float) -> None:
        self.step_name = step_name
        self.timeout_seconds = timeout_seconds
        super().__init__(
            f"Step {step_name} was cancelled after exceeding its timeout of "
            f"{timeout_seconds} seconds",
            18,
        )


class DBOSWorkflowIDInUseError(DBOSDuplicateIDError):
    """A new workflow was asked for under an id another workflow already has."""

    def __init__(
        self,
        workflow_id: str,
        detail: str | None = None,
        *,
        workflow_status: str | None = None,
        workflow_name: str | None = None,
    ) -> None:
        self.workflow_id = workflow_id
        self.detail = detail
        # As dbos 3.4 names them (not ``status``: a portable error's code field).
        self.workflow_status = workflow_status
        self.workflow_name = workflow_name
        if workflow_status is not None:
            message = (
                f"Workflow ID {workflow_id} is already in use by workflow {workflow_name} "
                f"with status {workflow_status}."
            )
        else:
            suffix = f": {detail}" if detail else ""
            message = f"Workflow ID {workflow_id} is already in use{suffix}"
        super().__init__(message, 27)


class DBOSPayloadError(DBOSStoredDataError, TypeError, ValueError):
    """A stored payload cannot be read: not in its format, in a format this process does
    not have, or a pickle this process refuses (``allow_pickle=False``).

    Also a ``TypeError`` and a ``ValueError``, the errors of the deserializers it stands
    in for (code that caught those keeps working), with the original as its cause."""

    def __init__(self, what: str, fmt: str | None, problem: BaseException | str) -> None:
        self.what = what
        self.format = fmt
        self.problem = str(problem) if isinstance(problem, str) else repr(problem)
        super().__init__(
            f"cannot read {what} (stored as {fmt or 'the default format'}): {self.problem}"
        )


class DBOSCorruptRowError(DBOSStoredDataError):
    """A stored row holds what no DBOS SDK writes (an unknown status, say): it is reported,
    naming the workflow, the column and the problem, rather than waited on forever."""

    def __init__(self, workflow_id: str, column: str, problem: str) -> None:
        self.workflow_id = workflow_id
        self.column = column
        self.problem = problem
        super().__init__(f"workflow {workflow_id}: {column} {problem}")


class DBOSWorkflowAbortedError(DBOSException):
    """A workflow ended by raising a ``BaseException`` that is not an ``Exception`` and not
    a stop of the process: a ``trio.Cancelled`` of a scope it does not own, a
    ``GeneratorExit``, a class of its own. Recorded as the workflow's error (with the
    original's type and message) rather than left to stop the executor."""

    def __init__(self, raised: BaseException | str, type_name: str | None = None) -> None:
        if isinstance(raised, BaseException):
            type_name, detail = type(raised).__name__, str(raised)
        else:
            detail = raised
        self.type_name = type_name or "BaseException"
        self.detail = detail
        super().__init__(
            f"the workflow raised {self.type_name}"
            + (f" ({detail})" if detail else "")
            + ", which is not an Exception: recorded as its error"
        )


class DBOSStepNondeterminismError(DBOSNondeterminismError):
    """One execution tried to record two different results for the same step (code 28),
    which a deterministic workflow never does. Make the workflow's order of durable calls
    independent of timing and of values read outside steps."""

    def __init__(self, workflow_id: str, step_id: int) -> None:
        self.workflow_id = workflow_id
        self.step_id = step_id
        super().__init__(
            f"Step {step_id} of workflow {workflow_id} was recorded twice by the same execution "
            "with different results. Check that your workflow is deterministic.",
            28,
        )


class DBOSUnorderedTaskError(DBOSNondeterminismError):
    """A durable call was made from a task whose place among its siblings the engine
    cannot know (a plain ``trio`` task inside a workflow): its step id would depend on
    how Trio schedules tasks, and a replay could hand it another call's checkpoint."""

    def __init__(self, workflow_id: str, call: str) -> None:
        self.workflow_id = workflow_id
        self.call = call
        super().__init__(
            f"workflow {workflow_id}: {call} was called from a task started with "
            "trio.open_nursery() (or another plain Trio task), whose step ids would depend "
            "on how Trio schedules tasks. Start the task with `async with "
            "dbos.open_nursery() as nursery:` instead, or make the call in the workflow "
            "body and hand the task its coroutine"
        )


def _no_such_workflow(destination: str, workflow_id: str) -> str:
    """The message for a missing workflow: dbos 3.4's text, naming the use that looked it
    up (``"Non-existent target workflow ID: wf-1"``), so code matching on it moves over."""
    return f"Non-existent {destination} workflow ID: {workflow_id}"


class DBOSWorkflowCancelledError(DBOSBaseException, metaclass=_NoPublicConstructor):
    """The running workflow was cancelled (by ``cancel_workflow`` or its timeout): raised
    inside it at its next durable call. Let it propagate. Only dbos_trio raises it:
    calling the class raises ``TypeError``."""

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        super().__init__(f"Workflow {workflow_id} was cancelled", 10)

    @classmethod
    def _create(cls, workflow_id: str) -> Self:
        result: Self = _construct(cls, workflow_id)
        return result


class DBOSWorkflowConflictIDError(DBOSBaseException, metaclass=_NoPublicConstructor):
    """This execution lost ownership of its workflow; another execution now owns it and
    will finish it. Let it propagate. Only dbos_trio raises it: calling the class raises
    ``TypeError``."""

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        super().__init__(f"Workflow {workflow_id} is no longer owned by this execution", 1)

    @classmethod
    def _create(cls, workflow_id: str) -> Self:
        result: Self = _construct(cls, workflow_id)
        return result


class PortableWorkflowError(Exception):
    """An error stored in ``portable_json``: what any SDK can read back of an exception."""

    def __init__(
        self, message: str, name: str = "Error", code: int | str | None = None, data: Any = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.code = code
        self.data = data

    def __reduce__(self) -> tuple[Any, ...]:
        return (PortableWorkflowError, (self.message, self.name, self.code, self.data))

    def __str__(self) -> str:
        return self.message
