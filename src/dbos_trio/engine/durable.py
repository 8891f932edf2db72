"""Shared pieces of the durable primitives: durable sleep, deadlines, the wait loop.

Invariants, and why:

* A durable wait's deadline is a checkpoint: ``DBOS.sleep`` records the wake-up time
  (epoch seconds, portable JSON) before waiting, so an execution recovered after a crash
  waits only for what remains. ``recv`` and ``get_event`` keep their timeout this way at
  the step id after their own.
* Step ids are reserved at the call, not when the returned coroutine first runs: the
  primitives are plain functions returning a coroutine (as steps are), so concurrent calls
  made from one body get ids in call order. Trio runs newly started tasks in no fixed
  order; ids taken when they first ran would differ between an execution and its replay,
  and a replayed ``recv`` could hand back another topic's message.
* Every wait reads Trio's clock (through :class:`~dbos_trio._clock.Clock`), never the wall
  clock, so a ``MockClock`` drives durable sleeps and timeouts in tests.
* A wait is "subscribe, look, wait a bounded slice, look again": the subscription exists
  before the first look, and the slice is bounded by the backend's re-check interval, so
  a lost notification costs at most one interval, never the result.
* A management call made from a workflow body is itself a checkpoint (``as_step``): its
  result is recorded, so a replay returns the same answer instead of asking again.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from .._context import WorkflowContext, current_step, workflow_outside_steps
from .._errors import DBOSException, SystemDatabaseError
from .._serialization import PORTABLE_JSON
from ..sysdb.records import Caller
from . import checkpoint

if TYPE_CHECKING:
    from .._executor import Executor

T = TypeVar("T")

SLEEP = "DBOS.sleep"
# The latest wake time a checkpoint records (9999-12-31T23:59:59Z): an infinite wait is
# stored as this, since JSON has no infinity and the row's completion time is an integer.
LATEST_WAKE = 253402300799.0


def check_seconds(seconds: float, what: str) -> None:
    """Refuse a duration that is not a number (NaN included); infinity is allowed."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or math.isnan(seconds):
        raise DBOSException(f"{what} needs a number of seconds, not {seconds!r}")


def caller_for(
    executor: Executor, ctx: WorkflowContext, function_id: int, *, record: bool = True
) -> Caller:
    return Caller(
        workflow_id=ctx.workflow_id,
        owner_xid=ctx.owner_xid,
        function_id=function_id,
        started_at_ms=executor.clock.now_ms(),
        application_name=executor.app_name,
        record=record,
    )


async def durable_wake_time(
    executor: Executor, ctx: WorkflowContext, function_id: int, seconds: float
) -> float:
    """The wake-up time checkpointed at ``function_id``: recorded now, or read back."""
    recorded = checkpoint.replayed(ctx, function_id, SLEEP)
    if recorded is not None:
        return float(executor.codec.decode(recorded.output, recorded.serialization))
    started = executor.clock.now_ms()
    wake = min(executor.clock.now() + seconds, LATEST_WAKE)
    await checkpoint.record(
        executor,
        ctx,
        function_id,
        SLEEP,
        started_at_ms=started,
        output=executor.codec.encode(wake, PORTABLE_JSON),
        serialization=PORTABLE_JSON,
        completed_at_ms=int(wake * 1000),
    )
    return wake


def sleep(executor: Executor | None, seconds: float) -> Coroutine[Any, Any, None]:
    """Durable sleep from a workflow body; ``seconds <= 0`` returns at once, using no step id.

    Not a coroutine function: the step id is taken at the call, like a step's, so sleeps
    started concurrently (``nursery.start_soon(dbos.sleep, s)``) are numbered in call
    order whatever order Trio runs them in. ``math.inf`` sleeps until the end of time.
    """
    check_seconds(seconds, "sleep")
    ctx = workflow_outside_steps()
    if seconds <= 0:
        return _sleep(None, 0, 0.0)
    if ctx is None:
        if current_step.get() is not None:
            return _sleep(None, 0, seconds)  # inside a step a durable call is a plain call
        raise DBOSException("sleep() must be called from within a workflow")
    return _sleep(ctx, ctx.reserve_id(), seconds)


async def _sleep(ctx: WorkflowContext | None, function_id: int, seconds: float) -> None:
    if ctx is None:
        await trio.sleep(seconds)
        return
    wake = await durable_wake_time(ctx.executor, ctx, function_id, seconds)
    await ctx.executor.clock.sleep_until(wake)


def as_step(
    executor: Executor, name: str, operation: Callable[[], Awaitable[T]]
) -> Coroutine[Any, Any, T]:
    """Run a management operation; from a workflow body, checkpoint its answer as ``name``.

    Not async: the step id is reserved at the call, so concurrent management calls from one
    body are numbered in call order and a replay hands each its own answer.
    """
    ctx = workflow_outside_steps()
    function_id = ctx.reserve_id() if ctx is not None else None
    return _as_step(executor, ctx, function_id, name, operation)


async def _as_step(
    executor: Executor,
    ctx: WorkflowContext | None,
    function_id: int | None,
    name: str,
    operation: Callable[[], Awaitable[T]],
) -> T:
    if ctx is None or function_id is None:
        return await operation()
    recorded = checkpoint.replayed(ctx, function_id, name)
    if recorded is not None:
        replayed_value: T = checkpoint.replay_value(executor, recorded)
        return replayed_value
    started = executor.clock.now_ms()
    try:
        value = await operation()
    except SystemDatabaseError as failure:
        ctx.control_failure = failure
        raise
    except Exception as error:
        await checkpoint.record_error(
            executor, ctx, function_id, name, error, started_at_ms=started
        )
        raise
    await checkpoint.record_value(executor, ctx, function_id, name, value, started_at_ms=started)
    return value


def decode_payload(executor: Executor, found: tuple[str, str | None] | None) -> Any:
    return None if found is None else executor.codec.decode(found[0], found[1])


async def record_payload(
    executor: Executor,
    ctx: WorkflowContext,
    function_id: int,
    name: str,
    found: tuple[str, str | None] | None,
    *,
    started_at_ms: int,
) -> None:
    """Checkpoint a read payload verbatim, in its own format.

    Nothing found (a timeout) is recorded as an encoded None in the application's format,
    never as a NULL output: dbos 3.4 refuses to replay a ``DBOS.recv``/``DBOS.getEvent``
    checkpoint without an output ("No output recorded"), and another SDK may replay ours.
    """
    if found is None:
        fmt = executor.codec.default_format
        found = (executor.codec.encode(None, fmt), fmt)
    await checkpoint.record(
        executor,
        ctx,
        function_id,
        name,
        started_at_ms=started_at_ms,
        output=found[0],
        serialization=found[1],
    )
