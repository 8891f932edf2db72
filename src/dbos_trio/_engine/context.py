"""The workflow context: ambient state of a running workflow body, in contextvars.

A running workflow body has a :class:`WorkflowContext`: its id, ownership token, step-id
counter, recorded steps when replaying, deadline, format. A durable call made by the body
takes its step id from the counter **synchronously**, at the call, before its first
``await`` (:meth:`WorkflowContext.place`), so calls started together from the body get ids
in call order whatever order Trio runs them in. Calls made by the tasks of a durable
nursery get theirs in turn order instead (:mod:`.turns`, :mod:`.placement`). Trio copies
contextvars into child tasks, so tasks spawned by a workflow body share its context
object (and therefore its counter). Inside a step, a :class:`StepContext` marks that
nested durable calls are plain calls.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import attrs
import trio

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor
    from dbos_trio._engine.workflows.turns import Ticket
    from dbos_trio._sysdb.records import RecordedStep


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
    # The task running the body: durable calls made from any other task are placed by
    # a durable nursery, or refused (see :mod:`.placement`).
    body_task: trio.lowlevel.Task | None = None
    warned_unordered: bool = False
    # Work to do once the body ended with an outcome to record, before it is written, by
    # key (a datasource drops its checkpoints here): see :meth:`finish`.
    finishers: dict[object, Callable[[], Awaitable[None]]] = attrs.field(factory=dict)

    def place(self, ticket: Ticket) -> None:
        """Give ``ticket`` the next ids of the counter (as many as it decides to take)."""
        if ticket.decide is not None:
            ticket.count = ticket.decide(self.last_function_id + 1)
        ticket.place(self.last_function_id + 1)
        self.last_function_id += ticket.count

    def recorded_at(self, function_id: int, name: str | None = None) -> RecordedStep | None:
        """The checkpoint recorded at ``function_id``; ``name``: the call looking (None
        for a peek). A replay sandbox answers instead of the loaded map."""
        probe = self.executor.replay
        if probe is not None:
            return probe.lookup(self.workflow_id, function_id, name)
        if self.recorded is None:
            return None
        return self.recorded.get(function_id)

    async def finish(self) -> None:
        """Run the finishers, in the order they were added (each handles its own errors)."""
        for finisher in list(self.finishers.values()):
            await finisher()


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
