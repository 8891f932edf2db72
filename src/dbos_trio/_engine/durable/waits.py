"""Waiting for another workflow's events, stream values and outcomes: context-free.

Both a workflow body (which then checkpoints what it got) and a
:class:`~dbos_trio.Client` (which checkpoints nothing) wait through these functions, so
they wait the same way. Every wait is "subscribe, look, wait a bounded slice, look
again": the subscription exists before the first look, so a wakeup landing in between is
not lost, and the slice is bounded by the backend's re-check interval, so a lost (or
never sent) notification costs at most one interval, never the result.

Cancellation: a cancelled wait unsubscribes and returns nothing; nothing is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING

import trio

from dbos_trio._core.statuses import ACTIVE_STATUSES, TERMINAL_STATUSES
from dbos_trio._sysdb.records import WorkflowFilters
from dbos_trio._sysdb.wakeups import Subscription, event_key, outcome_key
from dbos_trio.errors import DBOSNonExistentWorkflowError, DBOSStreamTimeoutError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime

# Values read from a stream per round trip.
STREAM_BATCH = 100
# Writer termination has no notification: a stream reader re-checks at least this often.
TERMINATION_RECHECK_SECONDS = 1.0

Payload = tuple[str, str | None]


async def wait_for_event(
    runtime: Runtime, workflow_id: str, key: str, wake_at: Callable[[], Awaitable[float]]
) -> Payload | None:
    """The event's value (and format), waiting until epoch time ``await wake_at()`` — asked
    only if the event is not set yet — for it to be set; None if it was not."""
    sysdb, clock = runtime.sysdb, runtime.clock
    with runtime.wakeups.subscribe(event_key(workflow_id, key)) as wakeup:
        found = await sysdb.get_event(workflow_id, key)
        if found is None:
            wake = await wake_at()
            while found is None and (remaining := wake - clock.now()) > 0:
                await wakeup.wait(min(remaining, sysdb.recheck_interval))
                found = await sysdb.get_event(workflow_id, key)
    return found


async def next_stream_values(
    runtime: Runtime,
    wakeup: Subscription,
    workflow_id: str,
    key: str,
    offset: int,
    *,
    timeout_seconds: float | None = None,
    poll_interval: float | None = None,
) -> list[Payload]:
    """The stream's values from ``offset`` on (at least one), waiting for them; ``[]`` once
    its writer is no longer active and everything written was read.

    ``wakeup`` is the caller's subscription to the stream (held across calls, so no write
    between two calls goes unseen). With ``timeout_seconds``, waiting longer than that
    raises :class:`DBOSStreamTimeoutError`; a missing workflow raises
    :class:`DBOSNonExistentWorkflowError`. ``poll_interval`` (seconds) replaces the default
    re-check interval between looks; a notification still wakes the wait at once.
    """
    sysdb, clock = runtime.sysdb, runtime.clock
    deadline = None if timeout_seconds is None else clock.now() + timeout_seconds
    while True:
        batch = await sysdb.read_stream(workflow_id, key, offset, STREAM_BATCH)
        if batch.writer_status is None:
            raise DBOSNonExistentWorkflowError("target", workflow_id)
        if batch.values:
            return [(value, fmt) for _, value, fmt in batch.values]
        if batch.writer_status not in ACTIVE_STATUSES:
            return []  # drained after the writer ended (the status came in the same snapshot)
        wait = (
            min(sysdb.recheck_interval, TERMINATION_RECHECK_SECONDS)
            if poll_interval is None
            else poll_interval
        )
        if deadline is not None:
            remaining = deadline - clock.now()
            if remaining <= 0:
                raise DBOSStreamTimeoutError(workflow_id, key, timeout_seconds)
            wait = min(wait, remaining)
        await wakeup.wait(wait)


async def first_finished(runtime: Runtime, workflow_ids: Sequence[str]) -> str:
    """The id of one of ``workflow_ids`` whose status is terminal, once there is one.

    Workflows finishing in this process wake the wait at once; others are found by
    re-reading every ``outcome_poll_interval`` (completion has no notification).
    """
    filters = WorkflowFilters(
        workflow_ids=tuple(workflow_ids),
        statuses=tuple(sorted(TERMINAL_STATUSES)),
        limit=1,
        load_input=False,
        load_output=False,
    )
    with ExitStack() as stack:
        subscriptions = [
            stack.enter_context(runtime.wakeups.subscribe(outcome_key(workflow_id)))
            for workflow_id in workflow_ids
        ]
        while True:
            rows = await runtime.sysdb.list_workflows(filters)
            if rows:
                return rows[0].workflow_id
            await wait_any(subscriptions, runtime.outcome_poll_interval)


async def wait_any(subscriptions: list[Subscription], timeout: float) -> None:
    """Return when any subscription is woken, or after ``timeout`` seconds."""
    if any(subscription.woken for subscription in subscriptions):
        for subscription in subscriptions:
            await subscription.wait(0)  # re-arm
        return
    with trio.move_on_after(timeout):
        async with trio.open_nursery() as nursery:

            async def wake_on(subscription: Subscription) -> None:
                await subscription.wait(float("inf"))
                nursery.cancel_scope.cancel()

            for subscription in subscriptions:
                nursery.start_soon(wake_on, subscription)
