"""Durable sleep, and the durable deadlines of ``recv`` and ``get_event``.

Invariants, and why:

* A durable wait's deadline is a checkpoint: ``DBOS.sleep`` records the wake-up time
  (epoch seconds, portable JSON) before waiting, so an execution recovered after a crash
  waits only for what remains. ``recv`` and ``get_event`` keep their timeout this way at
  the step id after their own.
* The step id is reserved at the call, not when the returned coroutine first runs
  (:func:`sleep` is a plain function returning a coroutine), so sleeps started
  concurrently from one body are numbered in call order.
* A cancel that lands while a workflow sleeps stops it when it wakes (or sooner, through
  the cancel watcher): the row is looked at before the sleep returns, since no fenced
  write follows a wait as it follows every other durable call.
* Every wait reads Trio's clock (through :class:`~dbos_trio._clock.Clock`), never the wall
  clock, so a ``MockClock`` drives durable sleeps and timeouts in tests.
"""

from __future__ import annotations

import math
from collections.abc import Coroutine
from typing import Any

import trio

from dbos_trio._engine.context import current_step
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._serialization import PORTABLE_JSON
from dbos_trio.errors import DBOSArgumentTypeError, DBOSException, DBOSInvalidArgumentError

SLEEP = "DBOS.sleep"
# The latest wake time a checkpoint records (9999-12-31T23:59:59Z): an infinite wait is
# stored as this, since JSON has no infinity and the row's completion time is an integer.
LATEST_WAKE = 253402300799.0


def check_seconds(seconds: float, what: str) -> None:
    """Refuse a duration that is not a number (NaN included); infinity is allowed (a wait
    without end), and so is a negative one (no wait). ``what`` names the call and the
    argument, e.g. ``"recv: timeout_seconds"``."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise DBOSArgumentTypeError(f"{what} needs a number of seconds, not {seconds!r}")
    if math.isnan(seconds):
        raise DBOSInvalidArgumentError(f"{what} needs a number of seconds, not {seconds!r}")


async def durable_wake_time(slot: Slot, seconds: float, *, projected: bool = True) -> float:
    """The wake-up time checkpointed at ``slot`` (a ``DBOS.sleep``): recorded now, or read
    back from an earlier execution.

    ``projected``: the row's completion time is the wake time, so its duration is the
    sleep's (a durable sleep). A timeout its caller may abandon early (``recv``,
    ``get_event``) passes False and records an instant registration, as dbos 3.4 does.
    """
    await slot.placed()
    executor = slot.executor
    recorded = slot.recorded()
    if recorded is not None:
        return float(executor.codec.decode(recorded.output, recorded.serialization))
    started = executor.clock.now_ms()
    wake = min(executor.clock.now() + seconds, LATEST_WAKE)
    await checkpoint.record(
        slot,
        started_at_ms=started,
        output=executor.codec.encode(wake, PORTABLE_JSON),
        serialization=PORTABLE_JSON,
        completed_at_ms=int(wake * 1000) if projected else started,
    )
    return wake


def sleep(seconds: float) -> Coroutine[Any, Any, None]:
    """Durable sleep from a workflow body; ``seconds <= 0`` returns at once, using no step id.

    Not a coroutine function: the step id is taken at the call, like a step's, so sleeps
    started concurrently (``nursery.start_soon(dbos.sleep, s)``) are numbered in call
    order whatever order Trio runs them in. ``math.inf`` sleeps until the end of time.
    Inside a step it is a plain ``trio.sleep``; outside any workflow it is refused.
    """
    check_seconds(seconds, "sleep: seconds")
    if seconds <= 0:
        return _plain_sleep(0.0)
    slot = checkpoint.reserve(SLEEP)
    if slot is None:
        if current_step.get() is not None:
            return _plain_sleep(seconds)  # inside a step a durable call is a plain call
        raise DBOSException("sleep() must be called from within a workflow")
    return _durable_sleep(slot, seconds)


async def _plain_sleep(seconds: float) -> None:
    await trio.sleep(seconds)


async def _durable_sleep(slot: Slot, seconds: float) -> None:
    await slot.placed()
    replay = slot.recorded() is not None
    wake = await durable_wake_time(slot, seconds)
    clock = slot.executor.clock
    if replay and clock.now() >= wake:
        return  # a replay past its wake time waits for nothing; the next write is fenced
    await clock.sleep_until(wake)
    # The one durable wait that ends without a fenced write: a cancel that landed while it
    # slept must stop the workflow here, before the next step's body starts.
    ctx = slot.ctx
    with checkpoint.control_latch(ctx):
        await ctx.executor.sysdb.check_owner(ctx.workflow_id, ctx.owner_xid)
