"""Group commit: writes of one kind from concurrent callers, coalesced into one transaction.

Invariants, and why:

* **Durable before released.** A caller returns only with the result of a flush that
  carried its write and committed, or with an error of its own. Nothing is acknowledged
  from memory.
* **Adaptive window, no timer.** A caller that finds no flush running (and nobody queued)
  writes alone, at once, through the single-write path: a sequential workflow pays
  nothing, not even a task switch. Once writers have come together (the last flush was a
  batch, or others queued behind a lone write), such a caller first lets the tasks ready
  to run queue behind it (one pass of the scheduler), so a cohort finishing together
  shares one commit instead of its first member writing alone and the rest after it.
  Callers that arrive while a flush runs queue up; when
  it ends, the first of them leads the next flush and takes everything queued by then (up
  to ``max_batch``). The batch is thus whatever accumulated during one commit: one row
  at low load, hundreds under a burst, growing and shrinking with the arrival rate.
* **One caller's failure affects no other.** A batch that fails as a whole with an error
  (a value one row cannot store, a deadlock, anything not retried below) is re-done one
  write at a time by its callers, each in its own task, so each gets exactly the result
  or error its write alone would have had. Per-row outcomes of a batch that committed
  (e.g. "not recorded: not yours any more") are returned per row; the fencing is each
  row's own, in the batch statement.
* **Cancellation.** A caller cancelled while queued leaves the queue having written
  nothing. One cancelled after its write was taken into a flush is like a single
  statement cancelled in flight: the write commits or not with the batch. A leader
  cancelled mid-flush cancels the flush (its statement rolls back or commits as a whole);
  the other callers of that batch then write alone, which is safe because the writes
  batched here are idempotent (re-recording what committed changes nothing and is told
  apart by the caller, as after a lost reply).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

import trio

I = TypeVar("I")  # noqa: E741 - an item to write
R = TypeVar("R")

_QUEUED, _LEAD, _TAKEN, _DONE, _ALONE = range(5)


class _Slot(Generic[I]):
    __slots__ = ("event", "item", "result", "state")

    def __init__(self, item: I) -> None:
        self.item = item
        self.state = _QUEUED
        self.event = trio.Event()
        self.result: Any = None


class GroupCommit(Generic[I, R]):
    """Coalesces concurrent :meth:`submit` calls into ``write_many`` batches.

    ``write_one(item)`` is the single-write path (used when alone, and to re-do a batch
    that failed as a whole); ``write_many(items)`` writes a batch in one transaction and
    returns one result per item, in order. Both must retry transient errors themselves
    (the backends' statement runners do) and be idempotent.
    """

    def __init__(
        self,
        write_one: Callable[[I], Awaitable[R]],
        write_many: Callable[[Sequence[I]], Awaitable[Sequence[R]]],
        *,
        max_batch: int = 500,
        max_flushes: int = 1,
    ) -> None:
        self._write_one = write_one
        self._write_many = write_many
        self._max_batch = max_batch
        self._max_flushes = max_flushes
        self._flushing = 0
        self._queue: deque[_Slot[I]] = deque()
        # Whether the last flush had company (a batch, or callers queued behind a lone
        # write): then a new lone caller lets the others ready to run join it first.
        self._company = False
        # Counters for benchmarks and tests: flushes run, and the writes they carried.
        self.batches = 0
        self.batched_writes = 0

    async def submit(self, item: I) -> R:
        """Write ``item``, alone or in a batch; its result once durable. Errors are the
        item's own (see the module docstring); cancellation as described there."""
        if self._flushing < self._max_flushes and not self._queue:
            self._flushing += 1
            if not self._company:
                try:
                    return await self._write_one(item)
                finally:
                    # Company: others queued while this write ran.
                    self._company = bool(self._queue)
                    self._flushing -= 1
                    self._hand_over()
            # Writers have been coming together (a cohort of workflows claimed together
            # and finishing together): lead, but let those ready to run now queue behind
            # first, so one flush carries them all instead of this write alone and then
            # theirs. One pass of the scheduler; a sequential writer never pays it.
            slot = _Slot(item)
            slot.state = _LEAD
            try:
                await trio.lowlevel.checkpoint()
            except BaseException:
                self._flushing -= 1  # it never ran: pass the turn on
                self._hand_over()
                raise
        else:
            slot = _Slot(item)
            self._queue.append(slot)
            try:
                await slot.event.wait()
            except BaseException:
                if slot.state == _QUEUED:
                    self._queue.remove(slot)
                elif slot.state == _LEAD:
                    self._flushing -= 1  # it never ran: pass the turn on
                    slot.state = _ALONE
                    self._hand_over()
                raise
        if slot.state == _LEAD:
            await self._lead(slot)
        if slot.state == _ALONE:
            result: R = await self._write_one(item)
            return result
        assert slot.state == _DONE
        done: R = slot.result
        return done

    def _hand_over(self) -> None:
        """A flush ended (or a leader left): the first queued caller leads the next."""
        if self._queue and self._flushing < self._max_flushes:
            slot = self._queue.popleft()
            slot.state = _LEAD
            self._flushing += 1  # counted now, so no one else also takes the turn
            slot.event.set()

    async def _lead(self, leader: _Slot[I]) -> None:
        batch = [leader]
        while self._queue and len(batch) < self._max_batch:
            batch.append(self._queue.popleft())
        if len(batch) == 1:  # nobody else came: the single-write path, by the caller
            self._company = False
            self._flushing -= 1
            leader.state = _ALONE
            self._hand_over()
            return
        self._company = True
        for slot in batch:
            slot.state = _TAKEN
        results: Sequence[Any] = []
        try:
            results = await self._write_many([slot.item for slot in batch])
            self.batches += 1
            self.batched_writes += len(batch)
        except Exception:
            results = []  # as a whole it failed: each re-does its own write, meets its error
        finally:
            # Also when the leader is cancelled: the others must not wait forever.
            self._flushing -= 1
            for index, slot in enumerate(batch):
                if index < len(results):
                    slot.result, slot.state = results[index], _DONE
                else:
                    slot.state = _ALONE
            for slot in batch[1:]:
                slot.event.set()
            self._hand_over()
