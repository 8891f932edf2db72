"""The errors of a call refused before anything was written: a bad argument, a bad
configuration, a call made outside a launch, an id that names nothing or is already held.

Defined here, below :mod:`dbos_trio.errors` (their public home, which re-exports each one and
documents the families), so the error classes are split by concern without an import cycle:
this module imports only the roots (:mod:`.error_roots`). Invariant: each is raised before
its call wrote anything, so catching one and trying again with a fixed value is always safe;
each keeps dbos 3.4's class name, code and message where that SDK has the class.
"""

from __future__ import annotations

from dbos_trio._core.error_roots import (
    DBOSDuplicateIDError,
    DBOSException,
    DBOSInitializationError,
    DBOSInvalidArgumentError,
)


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


class DBOSNonExistentWorkflowError(DBOSException):
    """No workflow has the given id (code 5): a handle, a message, a fork or a wait named
    a workflow that was never started or has been deleted. ``destination`` says which use
    (``"target"``, ``"`send` destination"``, ``"awaited"``, ``"fork"``)."""

    def __init__(self, destination: str, destination_id: str) -> None:
        self.destination = destination
        self.destination_id = destination_id
        super().__init__(_no_such_workflow(destination, destination_id), 5)


def _no_such_workflow(destination: str, workflow_id: str) -> str:
    """The message for a missing workflow: dbos 3.4's text, naming the use that looked it
    up (``"Non-existent target workflow ID: wf-1"``), so code matching on it moves over."""
    return f"Non-existent {destination} workflow ID: {workflow_id}"


class DBOSConflictingWorkflowError(DBOSDuplicateIDError):
    """A workflow id was reused for a different function, class or configured instance
    (code 9): the existing row wins. Use a fresh id, or the same function."""

    def __init__(self, workflow_id: str, message: str | None = None) -> None:
        self.workflow_id = workflow_id
        self.detail = message
        super().__init__(
            f"Conflicting workflow invocation with the same ID ({workflow_id}): {message}", 9
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
