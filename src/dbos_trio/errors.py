"""Errors, with the codes and messages of the official ``dbos`` 3.4 package.

Two families, and why they differ:

* :class:`DBOSException` (an ``Exception``) for conditions user code may handle: a bad
  argument, a conflicting workflow id, an awaited workflow that was cancelled. Every one
  pickles and unpickles to an equal error (``__reduce__``), because errors are stored as
  workflow and step outcomes and re-raised on replay.
* :class:`DBOSBaseException` (a ``BaseException``, like ``trio.Cancelled``) for control
  flow user code must not swallow: the running workflow was cancelled, or this execution
  lost ownership of it. The engine never records these as an outcome: the row stays as
  its new owner or the canceller left it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _format(message: str, code: int | None) -> str:
    return f"DBOS Error {code}: {message}" if code is not None else f"DBOS Error: {message}"


class DBOSException(Exception):
    """Base class of dbos_trio errors; ``dbos_error_code`` is the cross-SDK code."""

    def __init__(self, message: str, dbos_error_code: int | None = None) -> None:
        self.message = message
        self.dbos_error_code = dbos_error_code
        super().__init__(message)

    def __str__(self) -> str:
        return _format(self.message, self.dbos_error_code)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.__dict__.copy()))


def _rebuild(cls: type[BaseException], state: dict[str, Any]) -> BaseException:
    error = cls.__new__(cls)
    error.__dict__.update(state)
    error.args = (state.get("message", ""),)
    return error


class DBOSBaseException(BaseException):
    """Control flow that must propagate through user code, like ``trio.Cancelled``."""

    def __init__(self, message: str, dbos_error_code: int | None = None) -> None:
        self.message = message
        self.dbos_error_code = dbos_error_code
        super().__init__(message)

    def __str__(self) -> str:
        return _format(self.message, self.dbos_error_code)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.__dict__.copy()))


class DBOSInvalidArgumentError(DBOSException, ValueError):
    """A value passed to a dbos_trio call breaks a rule (the message names the argument
    and the rule). Raised before anything is written."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class DBOSArgumentTypeError(DBOSException, TypeError, ValueError):
    """A value passed to a dbos_trio call has the wrong type (the message names the
    argument). Raised before anything is written.

    A ``TypeError``, and a ``ValueError`` too: the official SDK raises ``ValueError`` for
    a bad argument of any kind, and code written for it catches that."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class DBOSInitializationError(DBOSException):
    """Launch (or opening a :class:`~dbos_trio.Client` or datasource) failed: the database
    could not be reached or opened, or its schema is not migrated and this process may
    not migrate it. Nothing was started; fix what ``detail`` names and launch again.

    Code 3, as in the official SDK. ``detail`` is the message without the prefix, so a
    caller that wraps it never repeats "DBOS Error 3"."""

    def __init__(self, message: str) -> None:
        self.detail = message
        super().__init__(f"Error initializing dbos_trio: {message}", 3)


class DBOSConfigError(DBOSInitializationError):
    """A configuration value is invalid; the message names the field."""


class DBOSNotLaunchedError(DBOSException):
    """An operation that needs a launched executor ran before launch or after shutdown."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        super().__init__(
            f"{operation} needs a launched DBOS: call it inside `async with dbos.launched():`"
        )


class DBOSRecoveryError(DBOSException):
    """A workflow could not be recovered (code 2); the message names it and why."""

    def __init__(self, workflow_id: str, message: str | None = None) -> None:
        self.workflow_id = workflow_id
        self.detail = message
        super().__init__(f"Recovery error for workflow ID {workflow_id}: {message}", 2)


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


class MaxRecoveryAttemptsExceededError(DBOSException):
    """A workflow was started or recovered more often than its ``max_recovery_attempts``
    (code 6) and is now dead-lettered (MAX_RECOVERY_ATTEMPTS_EXCEEDED). Find why it keeps
    dying (a crash in a step, an out-of-memory kill); ``resume_workflow`` runs it again."""

    def __init__(self, workflow_id: str, max_attempts: int | None) -> None:
        self.workflow_id = workflow_id
        self.max_attempts = max_attempts
        limit = f" of {max_attempts}" if max_attempts is not None else " number of"
        super().__init__(
            f"Workflow {workflow_id} has exceeded its maximum{limit} execution or recovery "
            "attempts. Further attempts to execute or recover it will fail.",
            6,
        )


class DBOSMaxStepRetriesExceeded(DBOSException):
    """A step with ``retries_allowed`` failed on every attempt (code 7). ``errors`` holds
    each attempt's exception, in order; it becomes the step's recorded error and is raised
    in the workflow, which may catch it."""

    def __init__(self, step_name: str, max_retries: int, errors: Sequence[BaseException]) -> None:
        self.step_name = step_name
        self.max_retries = max_retries
        self.errors = list(errors)
        super().__init__(f"Step {step_name} has exceeded its maximum of {max_retries} retries", 7)


class DBOSConflictingWorkflowError(DBOSException):
    """A workflow id was reused for a different function, class or configured instance
    (code 9): the existing row wins. Use a fresh id, or the same function."""

    def __init__(self, workflow_id: str, message: str | None = None) -> None:
        self.workflow_id = workflow_id
        self.detail = message
        super().__init__(
            f"Conflicting workflow invocation with the same ID ({workflow_id}): {message}", 9
        )


class DBOSUnexpectedStepError(DBOSException):
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


class DBOSQueueDeduplicatedError(DBOSException):
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


class DBOSAwaitedWorkflowCancelledError(DBOSException):
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


class DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded(DBOSException):
    """The workflow whose result was awaited was dead-lettered after too many recovery
    attempts (code 14); see :class:`MaxRecoveryAttemptsExceededError`."""

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        super().__init__(
            f"Awaited workflow {workflow_id} exceeded its maximum recovery attempts", 14
        )


class DBOSStreamTimeoutError(DBOSException):
    """Reading a stream with ``timeout_seconds``, no next value arrived in time (code 16).
    The stream is unchanged: read again from the same offset to keep waiting."""

    def __init__(self, workflow_id: str, key: str, timeout_seconds: float | None) -> None:
        self.workflow_id = workflow_id
        self.key = key
        self.timeout_seconds = timeout_seconds
        within = f" within {timeout_seconds} seconds" if timeout_seconds is not None else ""
        super().__init__(f"No value arrived on stream {key} of workflow {workflow_id}{within}", 16)


class DBOSStepTimeoutError(DBOSException):
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


class DBOSWorkflowIDInUseError(DBOSException):
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


class DBOSPayloadError(DBOSException, TypeError, ValueError):
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


class DBOSCorruptRowError(DBOSException):
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


class DBOSStepNondeterminismError(DBOSException):
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


class DBOSUnorderedTaskError(DBOSException):
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
    """The message for a missing workflow, worded for the use that looked it up."""
    if destination == "target":
        return f"There is no workflow with ID {workflow_id}"
    if destination == "awaited":
        return f"The awaited workflow {workflow_id} does not exist"
    if destination == "`send` destination":
        return f"Cannot send to workflow {workflow_id}: there is no workflow with that ID"
    if destination == "fork":
        return f"Cannot fork workflow {workflow_id}: there is no workflow with that ID"
    return f"There is no workflow with ID {workflow_id} (the {destination})"


class DBOSWorkflowCancelledError(DBOSBaseException):
    """The running workflow was cancelled (by ``cancel_workflow`` or its timeout)."""

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        super().__init__(f"Workflow {workflow_id} was cancelled", 10)


class DBOSWorkflowConflictIDError(DBOSBaseException):
    """This execution lost ownership of its workflow; another execution now owns it."""

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        super().__init__(f"Workflow {workflow_id} is no longer owned by this execution", 1)


class SystemDatabaseError(DBOSException):
    """The system database failed (connection lost, server error). Never a workflow outcome."""


class DBOSQueryTimeoutError(SystemDatabaseError):
    """A listing or introspection query ran longer than the configured
    ``statement_timeout`` and the server cancelled it (nothing was changed). Narrow the
    filters, page with ``limit``/``offset``, or raise the timeout."""


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
