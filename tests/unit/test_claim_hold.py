"""After a claim that filled every free slot, the next claim waits for half the worker's
slots or the spacing, whichever is first (engine/runtime/dequeue.py), on virtual time.

Observed by when the hold returns (Trio's virtual clock) and the slots free then: a cohort
that frees together is refilled at once, a single freed slot waits out the spacing, and a
wake-up before enough slots are free does not end the hold early.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import trio
import trio.testing

from dbos_trio._core.admission import QueueConfig, RunningCounts
from dbos_trio._engine.runtime.dequeue import _slots_or_spacing, slots_worth_a_claim
from dbos_trio._sysdb.wakeups import WakeupRegistry, queue_key

SPACING = 0.005
QUEUE = "q"


def worker(running: int, capacity: int = 16) -> tuple[Any, QueueConfig]:
    counts = RunningCounts()
    for _ in range(running):
        counts.add(QUEUE, None)
    return SimpleNamespace(running=counts), QueueConfig(name=QUEUE, worker_concurrency=capacity)


def test_half_the_slots_rounded_up_are_worth_a_claim() -> None:
    assert [slots_worth_a_claim(n) for n in (1, 2, 3, 16, 17)] == [1, 1, 2, 8, 9]
    assert slots_worth_a_claim(None) == 1


async def test_half_the_slots_free_claims_at_once(autojump_clock: trio.abc.Clock) -> None:
    executor, config = worker(running=8)
    registry = WakeupRegistry()
    with registry.subscribe(queue_key(QUEUE)) as wakeup:
        start = trio.current_time()
        await _slots_or_spacing(executor, config, wakeup, start + SPACING)
        assert trio.current_time() == start


async def test_one_freed_slot_waits_out_the_spacing(autojump_clock: trio.abc.Clock) -> None:
    executor, config = worker(running=15)
    registry = WakeupRegistry()
    with registry.subscribe(queue_key(QUEUE)) as wakeup:
        start = trio.current_time()
        async with trio.open_nursery() as nursery:

            async def free_one_slot() -> None:
                await trio.sleep(SPACING / 5)
                executor.running.remove(QUEUE, None)  # 2 free: not enough
                registry.wake(queue_key(QUEUE))

            nursery.start_soon(free_one_slot)
            await _slots_or_spacing(executor, config, wakeup, start + SPACING)
            returned = trio.current_time()
        assert returned == start + SPACING
        assert executor.running.running(QUEUE) == 14


async def test_a_cohort_freeing_together_ends_the_hold_then(
    autojump_clock: trio.abc.Clock,
) -> None:
    executor, config = worker(running=16)
    registry = WakeupRegistry()
    with registry.subscribe(queue_key(QUEUE)) as wakeup:
        start = trio.current_time()
        freed_at: list[float] = []
        async with trio.open_nursery() as nursery:

            async def cohort_ends() -> None:
                await trio.sleep(SPACING / 5)
                for _ in range(16):  # the outcomes of one batch land together
                    executor.running.remove(QUEUE, None)
                    registry.wake(queue_key(QUEUE))
                freed_at.append(trio.current_time())

            nursery.start_soon(cohort_ends)
            await _slots_or_spacing(executor, config, wakeup, start + SPACING)
            returned = trio.current_time()
        assert freed_at == [returned] and returned < start + SPACING
