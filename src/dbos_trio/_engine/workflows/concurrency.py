"""Concurrency in a workflow that replays exactly: ``gather``, ``wait_all`` and a race.

* :func:`gather` runs awaitables as tasks of a durable nursery (:mod:`.nursery`): any
  durable call they make is placed in turn order, so a helper coroutine doing several
  steps replays as it ran. Results come back in argument order.
* :func:`wait_all` is ``gather`` over handles' ``get_result()``.
* :func:`first_completed` races durable calls and records which one won as one
  checkpoint (``DBOS.asyncio_wait``, the official SDK's name for a durable
  ``asyncio.wait``; its output is the list of the indices that finished, here the one
  winner, or none when the timeout came first). A replay reads the winner, awaits only it
  (a durable call replays its own checkpoint) and never starts the others. So that the
  race decides nothing else, each competitor must be *one* durable call — a step, a child
  workflow or its ``get_result()``, ``recv``, ``get_event``, ``sleep`` — whose step id was
  taken when it was created: a competitor that makes durable calls of its own would take
  ids in the order the race happened to run, and is refused (a
  :class:`~dbos_trio.DBOSException` naming it); race child workflows instead.

Outside a workflow all three are plain Trio concurrency.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import trio

from dbos_trio._core import validate
from dbos_trio._core.ending import collapse
from dbos_trio._engine.durable.sleep import SLEEP, durable_wake_time
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._engine.workflows.nursery import open_nursery
from dbos_trio._engine.workflows.placement import racing
from dbos_trio.errors import DBOSException

if TYPE_CHECKING:
    from dbos_trio._engine.workflows.handle import WorkflowHandle

ASYNCIO_WAIT = "DBOS.asyncio_wait"


async def gather(*awaitables: Awaitable[Any]) -> list[Any]:
    """The results of ``awaitables``, run concurrently, in argument order.

    The first exception cancels the others and is raised as itself (an
    ``ExceptionGroup`` only if several failed). Cancellation cancels them all."""
    results: list[Any] = [None] * len(awaitables)

    async def run(index: int, awaitable: Awaitable[Any]) -> None:
        results[index] = await awaitable

    failed: BaseException | None = None
    try:
        async with open_nursery() as nursery:
            for index, awaitable in enumerate(awaitables):
                nursery.start_soon(run, index, awaitable, name=f"gather[{index}]")
    except BaseExceptionGroup as group:
        failed = collapse(group)
        if failed is group:
            raise
    if failed is not None:
        raise failed  # outside the except block: its own traceback and context stay
    return results


async def wait_all(handles: Sequence[WorkflowHandle[Any]]) -> list[Any]:
    """Every handle's result, in order (as :func:`gather` of their ``get_result()``)."""
    return await gather(*(handle.get_result() for handle in handles))


def first_completed(
    *awaitables: Awaitable[Any], timeout: float | None = None
) -> Coroutine[Any, Any, tuple[int, Any]]:
    """Run ``awaitables`` until the first finishes; ``(its index, its result)``.

    If the first to finish raised, its exception is raised. The others are cancelled.
    ``timeout`` (seconds, durable in a workflow) raises ``TimeoutError`` if nothing
    finished by then. From a workflow body the race takes its step ids now (see the module
    docs). Raises ``ValueError`` for no awaitables."""
    if not awaitables:
        raise ValueError("first_completed needs at least one awaitable")
    if timeout is not None:
        validate.seconds(timeout, "timeout")
    slot = checkpoint.reserve(ASYNCIO_WAIT, ids=1 if timeout is None else 2)
    return _race(slot, list(awaitables), timeout)


async def _race(slot: Slot | None, awaitables: list[Awaitable[Any]], timeout: float | None) -> Any:
    try:
        return await _decide(slot, awaitables, timeout)
    finally:
        for awaitable in awaitables:
            _discard(awaitable)  # the ones never started (cancelled, crashed, replayed)


async def _decide(
    slot: Slot | None, awaitables: list[Awaitable[Any]], timeout: float | None
) -> Any:
    if slot is not None:
        await slot.placed()
        recorded = slot.recorded()
        if recorded is not None:
            done = await checkpoint.replayed_value(slot.executor, recorded)
            return await _replay(slot, awaitables, done)
    deadline: float | None = None
    if timeout is not None:
        if slot is None:
            deadline = trio.current_time() + timeout
        else:
            wake = await durable_wake_time(slot.following(SLEEP), timeout)
            deadline = slot.executor.clock.trio_time_at(wake)
    started = None if slot is None else slot.executor.clock.now_ms()
    winner, finished = await _run_race(awaitables, deadline)
    if slot is not None and started is not None:
        done = [] if winner is None else [winner]
        with checkpoint.control_latch(slot.ctx):
            await checkpoint.record_value(slot, done, started_at_ms=started)
    if winner is None or finished is None:
        raise TimeoutError(f"first_completed: nothing finished within {timeout} s")
    return winner, finished.unwrap()


async def _replay(slot: Slot, awaitables: list[Awaitable[Any]], done: Any) -> Any:
    if (
        not isinstance(done, list)
        or len(done) > 1
        or not all(isinstance(i, int) and 0 <= i < len(awaitables) for i in done)
    ):
        raise DBOSException(
            f"workflow {slot.ctx.workflow_id} step {slot.function_id}: the race recorded "
            f"{done!r}, which does not fit the {len(awaitables)} awaitables it has now"
        )
    if not done:
        raise TimeoutError("first_completed: nothing finished within its timeout")
    return done[0], await awaitables[done[0]]


async def _run_race(
    awaitables: list[Awaitable[Any]], deadline: float | None
) -> tuple[int | None, _Finished | None]:
    finished: list[tuple[int, _Finished]] = []

    async def compete(index: int, awaitable: Awaitable[Any]) -> None:
        token = racing.set(f"competitor {index} of first_completed")
        try:
            result = _Finished(value=await awaitable)
        except Exception as error:
            result = _Finished(error=error)
        finally:
            racing.reset(token)
        if not finished:
            finished.append((index, result))
            nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        if deadline is not None:
            nursery.cancel_scope.deadline = deadline
        for index, awaitable in enumerate(awaitables):
            nursery.start_soon(compete, index, awaitable)
    if not finished:
        return None, None  # the deadline came first (an outer cancel propagates instead)
    return finished[0]


@attrs.frozen
class _Finished:
    value: Any = None
    error: Exception | None = None

    def unwrap(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


def _discard(awaitable: Awaitable[Any]) -> None:
    """Close a coroutine that never started, so it is not reported as never awaited."""
    if inspect.iscoroutine(awaitable) and inspect.getcoroutinestate(awaitable) == "CORO_CREATED":
        awaitable.close()
