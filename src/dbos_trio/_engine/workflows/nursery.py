"""``dbos.open_nursery()``: a Trio nursery whose tasks' durable calls replay exactly.

Inside a workflow, each task started with :meth:`DurableNursery.start_soon` or
:meth:`DurableNursery.start` is a member of the nursery's turn order (:mod:`.turns`), so
the step ids its durable calls take — however Trio schedules the tasks, however many calls
each makes, through nested helpers and nested durable nurseries — are the same on the
first run and on every replay (recovery, fork, resume). Outside a workflow, or inside a
step (where durable calls are plain calls), it is a plain Trio nursery.

Where a new task joins the turn order must not depend on timing either, so tasks are
started only by the nursery's own members: the body of the ``async with`` block and the
tasks of this nursery (a task of a nested nursery starts its siblings through its own
nursery). ``start`` hands the new task its starter's turn until it calls
``task_status.started()`` (the starter is waiting for it meanwhile), then the task takes
its own place, right after its starter.

Cancellation and errors are Trio's: the first exception cancels the other tasks and
propagates out of the block (in an exception group, as from any Trio nursery).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from dbos_trio._engine.context import WorkflowContext, workflow_outside_steps
from dbos_trio._engine.workflows.placement import (
    Unordered,
    WorkflowTurns,
    current_member,
    member_of,
)
from dbos_trio._engine.workflows.turns import Member
from dbos_trio.errors import DBOSException


class DurableNursery:
    """The nursery of ``async with dbos.open_nursery() as nursery:`` (see the module)."""

    def __init__(self, nursery: trio.Nursery, turns: WorkflowTurns | None) -> None:
        self._nursery = nursery
        self._turns = turns

    @property
    def cancel_scope(self) -> trio.CancelScope:
        """The nursery's cancel scope, as Trio's."""
        return self._nursery.cancel_scope

    def start_soon(
        self, async_fn: Callable[..., Awaitable[Any]], *args: Any, name: object = None
    ) -> None:
        """Start ``async_fn(*args)`` as a task of this nursery, placed in its turn order.

        Raises :class:`~dbos_trio.DBOSException` when called from a task that is not one
        of this nursery's members (its place would depend on timing)."""
        if self._turns is None:
            self._nursery.start_soon(async_fn, *args, name=name)
            return
        member = self._spawner().spawn(_label(async_fn, name))
        self._nursery.start_soon(_run_member, member, async_fn, args, name=name)

    async def start(
        self, async_fn: Callable[..., Awaitable[Any]], *args: Any, name: object = None
    ) -> Any:
        """Start ``async_fn(*args, task_status=...)`` and wait for it to report started,
        as ``trio.Nursery.start``; until then its durable calls take its starter's turn.

        Cancellation while waiting cancels the new task, as Trio's ``start`` does."""
        if self._turns is None:
            return await self._nursery.start(async_fn, *args, name=name)
        member = self._spawner().spawn_delegating(_label(async_fn, name))
        return await self._nursery.start(_run_member, member, async_fn, args, name=name)

    def _spawner(self) -> Member:
        assert self._turns is not None
        ctx = self._turns.ctx
        try:
            member = member_of(ctx)
        except Unordered:
            member = None
        if member is None or member.turns is not self._turns:
            raise DBOSException(
                f"workflow {ctx.workflow_id}: a task of a durable nursery can be started "
                "only by the nursery's own block or tasks (start it through the nursery "
                "of the task that starts it)"
            )
        return member


async def _run_member(
    member: Member,
    async_fn: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
    *,
    task_status: trio.TaskStatus[Any] | None = None,
) -> None:
    member.task = trio.lowlevel.current_task()
    token = current_member.set(member)
    try:
        if task_status is None:
            await async_fn(*args)
        else:
            await async_fn(*args, task_status=_StartedHook(task_status, member))
    finally:
        current_member.reset(token)
        if member.delegate_to is None:
            member.finish()
        # else it failed before reporting started: it never joined; its starter's start()
        # raises, and the tickets it took were its starter's.


class _StartedHook:
    """The ``task_status`` handed to a task started with ``start``: reporting started
    gives the task its own place, then tells Trio."""

    def __init__(self, status: trio.TaskStatus[Any], member: Member) -> None:
        self._status = status
        self._member = member

    def started(self, value: Any = None) -> None:
        self._member.stop_delegating()
        self._status.started(value)


@asynccontextmanager
async def open_nursery() -> AsyncIterator[DurableNursery]:
    """A durable nursery for the block (see the module docs); cancellation and errors
    behave as in ``trio.open_nursery()``."""
    ctx = workflow_outside_steps()
    if ctx is None:
        async with trio.open_nursery() as nursery:
            yield DurableNursery(nursery, None)
        return
    turns = _turns_for(ctx)
    owner = turns.owner
    owner.task = trio.lowlevel.current_task()
    token = current_member.set(owner)
    try:
        async with trio.open_nursery() as nursery:
            try:
                yield DurableNursery(nursery, turns)
            finally:
                owner.finish()
    finally:
        current_member.reset(token)


def _turns_for(ctx: WorkflowContext) -> WorkflowTurns:
    parent = member_of(ctx)
    label = "the workflow body" if parent is None else f"{parent.label}'s block"
    return WorkflowTurns(ctx, parent, label)


def _label(async_fn: Callable[..., Awaitable[Any]], name: object) -> str:
    if name is not None:
        return f"task {name}"
    return f"task {getattr(async_fn, '__qualname__', repr(async_fn))}"
