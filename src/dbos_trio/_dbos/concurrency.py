"""Concurrency inside workflows that replays exactly, as methods of ``DBOS``."""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.workflows import concurrency, nursery
from dbos_trio._engine.workflows.handle import WorkflowHandle
from dbos_trio._engine.workflows.nursery import DurableNursery


class Concurrency(DBOSBase):
    def open_nursery(self) -> AbstractAsyncContextManager[DurableNursery]:
        """``async with dbos.open_nursery() as nursery:`` — a Trio nursery whose tasks'
        durable calls take the same step ids on every execution of the workflow.

        Use it instead of ``trio.open_nursery()`` for tasks that call steps (or any
        durable call): their ids follow a turn order among the tasks, not Trio's
        scheduling, so recovery, fork and resume replay each task's own checkpoints.
        Outside a workflow it is a plain nursery. Errors and cancellation behave as in
        ``trio.open_nursery()``; see :mod:`dbos_trio._engine.workflows.nursery` for the rules.
        """
        return nursery.open_nursery()

    async def gather(self, *awaitables: Awaitable[Any]) -> list[Any]:
        """Run ``awaitables`` concurrently (as tasks of a durable nursery); their results
        in argument order. The first exception cancels the rest and is raised as itself;
        cancellation cancels them all."""
        return await concurrency.gather(*awaitables)

    async def wait_all(self, handles: Sequence[WorkflowHandle[Any]]) -> list[Any]:
        """Every handle's result, in order; the first error cancels the other waits (the
        workflows themselves keep running) and is raised."""
        return await concurrency.wait_all(handles)

    def first_completed(
        self, *awaitables: Awaitable[Any], timeout: float | None = None
    ) -> Coroutine[Any, Any, tuple[int, Any]]:
        """Race durable calls: ``(index, result)`` of the first to finish (its exception if
        it raised); the others are cancelled. In a workflow the winner is a checkpoint
        (``DBOS.asyncio_wait``), so a replay returns the same winner without running the
        others, and ``timeout`` is durable (``TimeoutError`` when it comes first). Each
        competitor must be one durable call (a step, a child workflow or its
        ``get_result()``, ``recv``, ``get_event``, ``sleep``)."""
        self._require_executor("first_completed")
        return concurrency.first_completed(*awaitables, timeout=timeout)
