"""Where a durable call's ticket goes: the workflow's counter, a durable nursery's turn
order, or nowhere (a refusal).

Invariant: every step id a workflow execution uses is given by a rule that does not
depend on how Trio schedules tasks — the counter, for the workflow body's own calls (in
program order, at the call); the turn order of a durable nursery for its tasks' calls
(:mod:`.turns`). A call from a task that is neither — a plain ``trio.open_nursery()``
task inside a workflow — cannot be placed deterministically: it raises
:class:`~dbos_trio.DBOSUnorderedTaskError`, or with ``Config(unordered_tasks="warn")``
logs a warning once per execution and takes the next id of the counter (the official
SDK's behaviour, scheduling-dependent).

Which task is calling is Trio's current task, compared with the one recorded for the
body and for each member: contextvars alone cannot tell, since Trio copies them into
every child task.
"""

from __future__ import annotations

import contextvars
import logging

import trio

from dbos_trio._engine.context import WorkflowContext
from dbos_trio._engine.workflows.turns import Member, Ticket, Turns
from dbos_trio.errors import DBOSException, DBOSUnorderedTaskError

logger = logging.getLogger("dbos_trio.workflow")

current_member: contextvars.ContextVar[Member | None] = contextvars.ContextVar(
    "dbos_trio_member", default=None
)
# Set in the tasks of a race (first_completed): what to call them when they are refused.
racing: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "dbos_trio_racing", default=None
)


class WorkflowTurns(Turns):
    """The turns of a durable nursery opened in the body (or a task) of ``ctx``."""

    def __init__(self, ctx: WorkflowContext, forward: Member | None, owner_label: str) -> None:
        super().__init__(ctx.place if forward is None else forward.submit, owner_label)
        self.ctx = ctx


def member_of(ctx: WorkflowContext) -> Member | None:
    """The durable-nursery member the calling task is, in ``ctx``'s execution; None for
    the body itself. Raises (or warns) for a task that is neither."""
    member = current_member.get()
    task = trio.lowlevel.current_task()
    if member is not None and _belongs_to(member, ctx):
        if member.task is task:
            return member
    elif task is ctx.body_task or ctx.body_task is None:
        return None
    raise Unordered()


def current_turns(ctx: WorkflowContext) -> Turns | None:
    """The turns the calling task's tickets wait in, if any (for a waiting ticket's warning)."""
    member = current_member.get()
    return member.turns if member is not None and _belongs_to(member, ctx) else None


def submit(ctx: WorkflowContext, ticket: Ticket) -> None:
    """Place ``ticket`` now (the counter) or queue it for its turn."""
    try:
        member = member_of(ctx)
    except Unordered:
        race = racing.get()
        if race is not None:
            raise DBOSException(
                f"workflow {ctx.workflow_id}: {ticket.name} was called by {race}, which "
                "must itself be one durable call (a step, a child workflow, recv, "
                "get_event, sleep): race child workflows to race several calls"
            ) from None
        if ctx.executor.config.unordered_tasks == "error":
            raise DBOSUnorderedTaskError(ctx.workflow_id, ticket.name) from None
        if not ctx.warned_unordered:
            ctx.warned_unordered = True
            logger.warning("%s", DBOSUnorderedTaskError(ctx.workflow_id, ticket.name).message)
        member = None
    if member is None:
        ctx.place(ticket)
    else:
        member.submit(ticket)


def _belongs_to(member: Member, ctx: WorkflowContext) -> bool:
    turns = member.turns
    return isinstance(turns, WorkflowTurns) and turns.ctx is ctx


class Unordered(Exception):
    """The calling task is neither the body nor a member (see :func:`member_of`)."""
