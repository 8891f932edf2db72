"""The errors of running and awaiting workflows: what a step, a replay, an awaited workflow
or the engine's control flow raises while a workflow runs.

Defined here, below :mod:`dbos_trio.errors` (their public home, which re-exports each one and
documents the families), so the error classes are split by concern without an import cycle:
this module imports only the roots (:mod:`.error_roots`). Invariants: each keeps dbos 3.4's
class name, code and message where that SDK has the class; the two control-flow errors
(:class:`DBOSWorkflowCancelledError`, :class:`DBOSWorkflowConflictIDError`) cannot be made by
user code (their metaclass refuses a call; the engine uses ``_create``), so a raise of one
always means the engine said so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from dbos_trio._core.error_roots import (
    DBOSAwaitedWorkflowError,
    DBOSBaseException,
    DBOSException,
    DBOSNondeterminismError,
    DBOSTimeoutError,
    _construct,
    _NoPublicConstructor,
)


class DBOSWorkflowFunctionNotFoundError(DBOSException):
    """A workflow's row names a function, class or configured instance this process has
    not registered (code 4), so it cannot run it here. Register it (with the same name)
    in the process meant to run it, or let an executor that has it take the row."""

    def __init__(self, workflow_id: str, message: str | None = None) -> None:
        self.workflow_id = workflow_id
        self.detail = message
        super().__init__(f"Could not execute workflow {workflow_id}: {message}", 4)


class DBOSMaxStepRetriesExceeded(DBOSException):
    """A step with ``retries_allowed`` failed on every attempt (code 7). ``errors`` holds
    each attempt's exception, in order; it becomes the step's recorded error and is raised
    in the workflow, which may catch it."""

    def __init__(self, step_name: str, max_retries: int, errors: Sequence[BaseException]) -> None:
        self.step_name = step_name
        self.max_retries = max_retries
        self.errors = list(errors)
        super().__init__(f"Step {step_name} has exceeded its maximum of {max_retries} retries", 7)


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
