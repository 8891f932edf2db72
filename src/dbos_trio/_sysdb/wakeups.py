"""The waiter registry: who is waiting for what, so a hint can wake them.

Every waiting call (``recv``, ``get_event``, ``read_stream``, ``get_result``) follows one
loop: *subscribe, look at the database, wait a bounded interval, look again*. A wakeup is
only ever a hint to look again; the loop is what delivers, so waits stay correct when a
notification is lost, late, or never sent.

Invariants, and why:

* Subscribing is synchronous and happens before the first look, so there is no ``await``
  between deciding to wait and being wakeable: a wakeup landing after the subscription and
  before the wait is remembered by the subscription, not lost.
* Keys are flat strings built by concatenating a prefix (``m::``, ``e::``, ``s::``) with
  the wire payload ``id::key`` the NOTIFY channels carry; they are never split, so ids
  and keys containing ``::`` only ever cost a spurious wakeup, never a missed one.
* Several waiters on one key share one registration and are all woken.
* An exclusive subscription (``recv``) refuses a second receiver on the same key in this
  process: two receivers would race to consume one message each, in an order that
  depends on scheduling.

Pure Trio, no database.
"""

from __future__ import annotations

from types import TracebackType

import trio

from dbos_trio._core.statuses import DELAYED as DELAYED_STATUS
from dbos_trio._core.statuses import ENQUEUED
from dbos_trio.errors import DBOSException

MESSAGES = "m::"
EVENTS = "e::"
STREAMS = "s::"
OUTCOMES = "o::"
QUEUES = "q::"
CANCELS = "c::"
DELAYED = "d::"
CANCEL_CHANNEL = "dbos_trio_cancel_channel"
"""The NOTIFY channel of cancellations written by dbos_trio (other SDKs send none: their
cancels are found by polling). The payload is empty: it only says "look again"."""
QUEUE_CHANNEL = "dbos_trio_queue_channel"
"""The NOTIFY channel of enqueues written by dbos_trio (a Client, another executor, an
enqueue in the caller's transaction); the payload is the queue's name, so a listener
wakes :func:`queue_key` of that queue. Rows written by other SDKs send nothing and are
found by the queue's polling."""
DELAYED_CHANNEL = "dbos_trio_delayed_channel"
"""The NOTIFY channel of DELAYED rows written by dbos_trio: the payload is empty; it wakes
:func:`delayed_key` so the dequeue supervisor re-reads when the next delay comes due."""


def message_key(destination_id: str, topic: str) -> str:
    return MESSAGES + destination_id + "::" + topic


def event_key(workflow_id: str, key: str) -> str:
    return EVENTS + workflow_id + "::" + key


def stream_key(workflow_id: str, key: str) -> str:
    return STREAMS + workflow_id + "::" + key


def queue_key(queue_name: str) -> str:
    """Woken when this process enqueues on the queue or frees one of its slots, and
    (through NOTIFY on :data:`QUEUE_CHANNEL`) when another dbos_trio process enqueues."""
    return QUEUES + queue_name


def delayed_key() -> str:
    """Woken when a DELAYED workflow was written, here or (through NOTIFY) elsewhere."""
    return DELAYED


def enqueue_announcement(queue_name: str, status: str) -> tuple[str, str, str] | None:
    """What a new row of ``status`` on ``queue_name`` wakes, as (key, channel, payload):
    an ENQUEUED row its queue's worker, a DELAYED row the dequeue supervisor (which
    releases it when due); None for any other status."""
    if status == DELAYED_STATUS:
        return delayed_key(), DELAYED_CHANNEL, ""
    if status == ENQUEUED:
        return queue_key(queue_name), QUEUE_CHANNEL, queue_name
    return None


def cancels_key() -> str:
    """Woken when a workflow was cancelled, here or (through NOTIFY) in another process."""
    return CANCELS


def outcome_key(workflow_id: str) -> str:
    """Woken when this process records (or adopts) the workflow's outcome."""
    return OUTCOMES + workflow_id


class Subscription:
    """One waiter's registration; a context manager whose exit deregisters it."""

    __slots__ = ("_event", "_registry", "key")

    def __init__(self, registry: WakeupRegistry, key: str) -> None:
        self._registry = registry
        self.key = key
        self._event = trio.Event()

    def _wake(self) -> None:
        self._event.set()

    @property
    def woken(self) -> bool:
        """Whether a wakeup arrived since the last wait returned."""
        return self._event.is_set()

    async def wait(self, timeout: float) -> bool:
        """Wait until woken or ``timeout`` seconds pass (Trio clock); True if woken.

        A wakeup that arrived before this call returns at once. Either way the
        subscription is re-armed for the next wait.
        """
        with trio.move_on_after(timeout):
            await self._event.wait()
        woken = self._event.is_set()
        if woken:
            self._event = trio.Event()
        return woken

    def __enter__(self) -> Subscription:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._registry._remove(self)


class WakeupRegistry:
    """Keys to the subscriptions waiting on them."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[Subscription]] = {}
        self._exclusive: dict[str, Subscription] = {}

    def subscribe(self, key: str) -> Subscription:
        subscription = Subscription(self, key)
        self._waiters.setdefault(key, set()).add(subscription)
        return subscription

    def subscribe_exclusive(self, key: str) -> Subscription:
        """Like :meth:`subscribe`, refusing a second exclusive waiter on ``key``.

        Kept apart from the shared subscriptions: a waiter alone on its key (every
        ``recv``) then costs one dict entry, not a set of its own (memory per waiting
        workflow, issue 21)."""
        if key in self._exclusive:
            raise DBOSException(
                f"another receiver is already waiting on {key[len(MESSAGES) :]!r} in this process"
            )
        subscription = Subscription(self, key)
        self._exclusive[key] = subscription
        return subscription

    def _remove(self, subscription: Subscription) -> None:
        key = subscription.key
        if self._exclusive.get(key) is subscription:
            del self._exclusive[key]
            return
        waiters = self._waiters.get(key)
        if waiters is None or subscription not in waiters:
            return
        waiters.discard(subscription)
        if not waiters:
            del self._waiters[key]

    def wake(self, key: str) -> None:
        exclusive = self._exclusive.get(key)
        if exclusive is not None:
            exclusive._wake()
        for subscription in self._waiters.get(key, ()):
            subscription._wake()

    def wake_all(self) -> None:
        """Wake every waiter: after a listener (re)connects, NOTIFYs may have been missed."""
        for exclusive in self._exclusive.values():
            exclusive._wake()
        for waiters in self._waiters.values():
            for subscription in waiters:
                subscription._wake()

    def keys(self) -> list[str]:
        """Keys someone is waiting on (for the polling fallback)."""
        return list(dict.fromkeys([*self._exclusive, *self._waiters]))

    def __len__(self) -> int:
        shared = sum(len(waiters) for waiters in self._waiters.values())
        return len(self._exclusive) + shared
