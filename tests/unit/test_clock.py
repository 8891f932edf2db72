"""The one clock: epoch time that follows Trio's clock, and real-time limits for I/O."""

from __future__ import annotations

import threading
import time

import pytest
import trio
import trio.testing

from dbos_trio._clock import Clock, monotonic, real_time_limit, wall_clock_now

from support.waiting import HANG_GUARD


async def test_clock_now_starts_at_the_wall_clock() -> None:
    clock = Clock()

    assert abs(clock.now() - time.time()) < 1
    assert abs(clock.now_ms() - time.time() * 1000) < 1000
    assert isinstance(clock.now_ms(), int)


async def test_clock_now_advances_with_trio_sleep_under_the_autojump_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = Clock()
    before, real_before = clock.now(), time.monotonic()

    await trio.sleep(7 * 24 * 3600)

    assert clock.now() - before == pytest.approx(7 * 24 * 3600)
    # A week on Trio's clock; on the wall clock not even the hang guard (60 s).
    assert time.monotonic() - real_before < HANG_GUARD


async def test_sleep_until_wakes_when_now_reaches_the_epoch_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = Clock()
    wake_at = clock.now() + 90.5

    await clock.sleep_until(wake_at)

    assert clock.now() == pytest.approx(wake_at)
    assert clock.trio_time_at(wake_at) == pytest.approx(trio.current_time())


async def test_sleep_until_a_past_time_returns_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = Clock()
    started = trio.current_time()

    await clock.sleep_until(clock.now() - 100)

    assert trio.current_time() == started


async def test_a_real_time_limit_fires_after_real_seconds_under_the_autojump_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Stands in for a socket wait: something the autojump clock cannot see the end of.
    started = time.monotonic()
    with real_time_limit(0.2) as limit:
        await trio.sleep_forever()
    took = time.monotonic() - started

    assert limit.cancelled_caught
    # Not before its real 0.2 s; and it did fire (the autojump clock cannot end this wait,
    # so without the limit it would last for ever: a fail_after guard would fire at once).
    assert 0.19 <= took < HANG_GUARD


async def test_a_real_time_limit_is_not_shortened_by_virtual_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with real_time_limit(5) as limit:
        await trio.sleep(3600)  # an hour of virtual time, a blink of real time

    assert not limit.cancelled_caught


async def test_a_real_time_limit_that_does_not_expire_leaves_no_timer_thread_behind() -> None:
    before = threading.active_count()
    for _ in range(5):
        with real_time_limit(30) as limit:
            await trio.lowlevel.checkpoint()
        assert not limit.cancelled_caught

    for _ in range(100):
        if threading.active_count() <= before:
            break
        await trio.sleep(0.01)
    assert threading.active_count() <= before


async def test_an_exception_inside_a_real_time_limit_propagates() -> None:
    with pytest.raises(KeyError), real_time_limit(5):
        raise KeyError("inside")


def test_the_wall_and_monotonic_helpers_read_real_time() -> None:
    assert abs(wall_clock_now() - time.time()) < 1
    first = monotonic()
    assert monotonic() >= first
