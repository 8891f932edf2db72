"""Debouncing: many calls with one key within a period become one workflow, run once with
the last call's arguments when the calls stop (or when the timeout from the first call
passes).

The algorithm, and the rows, are the official SDK's (its reference, section 3.17), so a
debounce from either SDK coalesces with one from the other on the same key:

1. **Bounce** (:meth:`SystemDatabase.bounce`): the key's workflow — the DELAYED,
   ``is_debounced`` row holding deduplication id ``{workflow name}-{key}`` on the target
   queue — is pushed back to ``now + period`` (never past its ``debounce_deadline``) and
   given the new arguments, in one transaction. Its handle is the answer.
2. Nobody holds the key: **enqueue** a fresh DELAYED row with that deduplication id,
   ``is_debounced``, ``delay_until = min(now + period, deadline)`` and ``deadline = now +
   timeout`` (none without a timeout). Losing the insert to a concurrent debounce
   (deduplication) means another caller made it first: bounce that one instead.
3. The key is held by something a bounce must not touch — not debounced, another
   workflow's name, another application's — :class:`DBOSQueueDeduplicatedError`. Held by a
   debounced row of ours that just left DELAYED (it is starting): bounce again, which
   finds no holder and enqueues a fresh one.

When the delay passes, the dequeue supervisor's release makes the row ENQUEUED and clears
its deduplication id (``is_debounced``), so the next call starts a new workflow.

From a workflow body each bounce is a checkpoint (``DBOS.debounce_delayed_workflow``,
written in the bounce's own transaction) and each fresh enqueue a child-start checkpoint,
so a replay follows the recorded path and never bounces or enqueues twice. Step ids after
the first are taken as the loop reaches them; the loop only goes round more than once when
racing another process, so concurrent debounces from one body are numbered by when their
races resolve.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from dbos_trio._core import validate
from dbos_trio._core.units import seconds_to_ms
from dbos_trio._sysdb.records import BounceResult
from dbos_trio.errors import DBOSException, DBOSQueueDeduplicatedError

T = TypeVar("T")

BOUNCE_STEP = "DBOS.debounce_delayed_workflow"

Action = Literal["return", "enqueue", "raise", "retry"]


def deduplication_id(workflow_name: str, key: str) -> str:
    """The deduplication id of a debounce key (the cross-SDK form)."""
    return validate.text(f"{workflow_name}-{key}", "debounce_key")


def check_period(period_sec: object) -> int:
    """``debounce_period_sec`` in milliseconds (a non-negative, finite number of seconds)."""
    return seconds_to_ms(validate.seconds(period_sec, "debounce_period_sec"))


def check_timeout(timeout_sec: object) -> float | None:
    return validate.optional_seconds(timeout_sec, "debounce_timeout_sec", positive=True)


def reject_options(
    *,
    deduplication_id: object,
    delay_seconds: object,
    priority: object,
    queue_partition_key: object,
    duplication_policy: object,
) -> None:
    """A debounce owns its workflow's deduplication id (the key) and delay (the period);
    priority and partition keys cannot apply to it. Setting any of them is an error."""
    # dbos 3.4's texts first, word for word (users match on them), then the option's name.
    for option, value, text in (
        (
            "deduplication_id",
            deduplication_id,
            "a deduplication_id set: the debounce key is used as the workflow's deduplication ID",
        ),
        (
            "delay_seconds",
            delay_seconds,
            "a delay set: the debounce period controls the workflow's delay",
        ),
        ("priority", priority, "a priority set: priority is not supported for debounced workflows"),
        (
            "queue_partition_key",
            queue_partition_key,
            "a queue partition key set: partitioned queues do not support deduplication, "
            "which debouncing requires",
        ),
    ):
        if value is not None:
            raise DBOSException(f"Cannot debounce a workflow with {text} (option {option}).")
    if duplication_policy == "return-existing":
        raise DBOSException(
            "Cannot debounce a workflow with duplication_policy 'return-existing': "
            "a debounce owns the workflow's deduplication behavior."
        )


def deadline_and_delay(
    now_ms: int, period_ms: int, timeout: float | None
) -> tuple[int | None, int]:
    """(debounce deadline, delay until) of a fresh debounced workflow, epoch ms."""
    deadline = None if not timeout else now_ms + seconds_to_ms(timeout)
    delay_until = now_ms + period_ms
    return deadline, delay_until if deadline is None else min(delay_until, deadline)


def classify(result: BounceResult, workflow_name: str, application: str | None) -> Action:
    """What a bounce's result means for the caller (see the module docs)."""
    if result.bounced_workflow_id is not None:
        return "return"
    if result.holder_workflow_id is None:
        return "enqueue"
    if not result.holder_is_debounced or result.holder_workflow_name != workflow_name:
        return "raise"
    holder_app = result.holder_application_name
    if application is not None and holder_app is not None and holder_app != application:
        return "raise"  # a foreign holder never leaves DELAYED for us: retrying would spin
    return "retry"


async def coalesce(
    *,
    workflow_name: str,
    queue_name: str,
    key_id: str,
    application: str | None,
    bounce: Callable[[], Awaitable[BounceResult]],
    enqueue: Callable[[], Awaitable[T]],
    handle: Callable[[str], T],
) -> T:
    """The debounce loop: bounce, else enqueue fresh, until one of them lands.

    ``bounce`` makes one attempt (a fresh step id each call, in a workflow body);
    ``enqueue`` makes the fresh workflow and raises :class:`DBOSQueueDeduplicatedError`
    if a concurrent debounce made it first.
    """
    while True:
        result = await bounce()
        action = classify(result, workflow_name, application)
        if action == "return":
            assert result.bounced_workflow_id is not None
            return handle(result.bounced_workflow_id)
        if action == "raise":
            assert result.holder_workflow_id is not None
            raise DBOSQueueDeduplicatedError(result.holder_workflow_id, queue_name, key_id)
        if action == "retry":
            continue
        try:
            return await enqueue()
        except DBOSQueueDeduplicatedError:
            continue  # another debounce took the key between our bounce and insert
