"""The waiter registry: wakeups are hints that are never lost, only ever spurious.

Pure Trio, no database; the autojump clock makes every timeout instant, and shows whether
a wait returned because it was woken (no virtual time passed) or because it timed out.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from dbos_trio import DBOSException
from dbos_trio._sysdb.wakeups import (
    WakeupRegistry,
    event_key,
    message_key,
    outcome_key,
    stream_key,
)


async def test_a_wakeup_between_subscribing_and_waiting_is_not_missed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    registry = WakeupRegistry()
    with registry.subscribe(message_key("wf", "topic")) as subscription:
        # ... the waiter looks at the database here, finds nothing, and meanwhile:
        registry.wake(message_key("wf", "topic"))
        started = trio.current_time()

        assert subscription.woken
        assert await subscription.wait(60) is True
        assert trio.current_time() == started


async def test_a_wait_that_nobody_wakes_times_out_after_its_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    registry = WakeupRegistry()
    with registry.subscribe(event_key("wf", "k")) as subscription:
        started = trio.current_time()

        assert await subscription.wait(5) is False
        assert trio.current_time() - started == pytest.approx(5)


async def test_a_subscription_is_rearmed_after_each_wakeup(
    autojump_clock: trio.testing.MockClock,
) -> None:
    registry = WakeupRegistry()
    key = stream_key("wf", "s")
    with registry.subscribe(key) as subscription:
        registry.wake(key)
        registry.wake(key)  # two hints before one look are one reason to look again
        assert await subscription.wait(10) is True
        assert not subscription.woken
        assert await subscription.wait(10) is False
        registry.wake(key)
        assert await subscription.wait(10) is True


async def test_a_wakeup_while_waiting_returns_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    registry = WakeupRegistry()
    key = outcome_key("wf")
    results: list[tuple[bool, float]] = []
    with registry.subscribe(key) as subscription:

        async def wait() -> None:
            started = trio.current_time()
            results.append((await subscription.wait(60), trio.current_time() - started))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.sleep(1)
            registry.wake(key)

    assert results == [(True, pytest.approx(1))]


async def test_several_waiters_on_one_key_are_all_woken(
    autojump_clock: trio.testing.MockClock,
) -> None:
    registry = WakeupRegistry()
    key = event_key("wf", "status")
    woken: list[bool] = []

    async def wait(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with registry.subscribe(key) as subscription:
            task_status.started()
            woken.append(await subscription.wait(60))

    started = trio.current_time()
    async with trio.open_nursery() as nursery:
        for _ in range(3):
            await nursery.start(wait)
        assert len(registry) == 3
        registry.wake(key)

    assert woken == [True, True, True]
    assert trio.current_time() == started
    assert len(registry) == 0


async def test_a_wakeup_for_another_key_does_not_wake_a_waiter() -> None:
    registry = WakeupRegistry()
    with registry.subscribe(message_key("wf", "a")) as subscription:
        registry.wake(message_key("wf", "b"))
        registry.wake(event_key("wf", "a"))
        registry.wake(stream_key("wf", "a"))
        registry.wake(outcome_key("wf"))

        assert not subscription.woken


async def test_ids_and_keys_containing_double_colons_only_cost_spurious_wakeups() -> None:
    registry = WakeupRegistry()
    # "a::b" + "c" and "a" + "b::c" are the same flat key: a wakeup for either wakes both
    # (spurious for one of them, which then looks and finds nothing), and never neither.
    first = message_key("a::b", "c")
    second = message_key("a", "b::c")
    with registry.subscribe(first) as waiter_one, registry.subscribe(second) as waiter_two:
        registry.wake(message_key("a::b", "c"))

        assert waiter_one.woken
        assert waiter_two.woken

    with registry.subscribe(event_key("x::y", "z")) as waiter:
        registry.wake(event_key("x::y", "z"))
        assert waiter.woken


async def test_an_exclusive_subscription_refuses_a_second_receiver_and_frees_the_key_on_exit() -> (
    None
):
    registry = WakeupRegistry()
    key = message_key("wf-1", "topic")
    with registry.subscribe_exclusive(key):
        with pytest.raises(DBOSException, match="wf-1::topic"):
            registry.subscribe_exclusive(key)
        # Another key, and a plain (non-consuming) waiter on the same key, are fine.
        with registry.subscribe_exclusive(message_key("wf-1", "other")):
            pass
        with registry.subscribe(key):
            pass

    with registry.subscribe_exclusive(key) as again:
        registry.wake(key)
        assert again.woken
    assert len(registry) == 0
    assert registry.keys() == []


async def test_an_exclusive_subscription_is_freed_when_its_block_raises() -> None:
    registry = WakeupRegistry()
    key = message_key("wf", "t")
    with pytest.raises(RuntimeError), registry.subscribe_exclusive(key):
        raise RuntimeError("the receiver failed")

    with registry.subscribe_exclusive(key):
        pass


async def test_wake_all_wakes_every_waiter_on_every_key() -> None:
    registry = WakeupRegistry()
    with (
        registry.subscribe(message_key("a", "t")) as one,
        registry.subscribe(event_key("b", "k")) as two,
        registry.subscribe(event_key("b", "k")) as three,
        registry.subscribe_exclusive(message_key("c", "t")) as four,
    ):
        registry.wake_all()

        assert [s.woken for s in (one, two, three, four)] == [True, True, True, True]


async def test_leaving_a_subscription_deregisters_it() -> None:
    registry = WakeupRegistry()
    key = stream_key("wf", "s")
    with registry.subscribe(key) as subscription:
        assert registry.keys() == [key]
        assert len(registry) == 1

    assert registry.keys() == []
    assert len(registry) == 0
    registry.wake(key)  # nobody waits: a no-op
    assert not subscription.woken
    subscription.__exit__(None, None, None)  # leaving twice is harmless
    assert len(registry) == 0


def test_keys_are_flat_prefixed_concatenations() -> None:
    assert message_key("wf", "topic") == "m::wf::topic"
    assert event_key("wf", "key") == "e::wf::key"
    assert stream_key("wf", "key") == "s::wf::key"
    assert outcome_key("wf") == "o::wf"


async def test_an_exclusive_waiter_and_shared_waiters_on_one_key_are_all_woken() -> None:
    registry = WakeupRegistry()
    key = message_key("wf", "t")
    with registry.subscribe_exclusive(key) as receiver, registry.subscribe(key) as watcher:
        assert registry.keys() == [key] and len(registry) == 2
        registry.wake(key)
        assert receiver.woken and watcher.woken
    assert registry.keys() == [] and len(registry) == 0
