"""Time discipline, dynamically: under ``MockClock(rate=10)`` — virtual time running ten
times faster than real time, *not* the autojump clock, under which a task waiting on a
PostgreSQL socket counts as idle — durable sleeps and timeouts follow Trio's clock and are
recorded in the clock's epoch.

Nothing here bounds real time: the tests jump the clock an hour ahead, so that a sleep or
a timeout that waited on the wall clock instead would take that hour, far past the hang
guard.

The static check, that the library reads time only through Trio's clock, is
``tests/unit/test_time_discipline.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
import trio
import trio.testing

from dbos_trio import DBOS
from dbos_trio._sysdb.wakeups import event_key, message_key

from support.backends import query, status_row
from support.time_fixtures import running
from support.waiting import HANG_GUARD, wait_until

HOUR = 3600.0
# The hang guard in virtual seconds: at ten times real time, HANG_GUARD real seconds.
GUARD = 10 * HANG_GUARD


@pytest.fixture
def fast_clock() -> trio.testing.MockClock:
    """Virtual time at ten times real time (pytest-trio runs the test on this clock)."""
    return trio.testing.MockClock(rate=10)


async def test_a_durable_sleep_follows_the_trio_clock(
    fast_clock: trio.testing.MockClock, new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()

    @dbos.workflow()
    async def sleeper() -> str:
        await dbos.sleep(5)
        return "woke"

    async with running(dbos):
        # Virtual time an hour ahead of the wall clock: a sleep that waited on the wall
        # clock would end an hour from now.
        fast_clock.jump(HOUR)
        trio_start = trio.current_time()
        handle = await dbos.start_workflow(sleeper)
        with trio.fail_after(GUARD):
            assert await handle.get_result() == "woke"
        trio_elapsed = trio.current_time() - trio_start
        wall_now = time.time()

    assert trio_elapsed >= 5.0
    [(output, started_at, completed_at)] = await query(
        db_url,
        "SELECT output, started_at_epoch_ms, completed_at_epoch_ms FROM {t}operation_outputs "
        "WHERE workflow_uuid = %s AND function_name = 'DBOS.sleep'",
        handle.workflow_id,
    )
    wake = json.loads(output)
    # The wake time is 5 s after the sleep began, in the clock's epoch...
    assert wake - started_at / 1000 == pytest.approx(5.0, abs=0.2)
    assert completed_at == int(wake * 1000)
    row = await status_row(db_url, handle.workflow_id)
    assert row["updated_at"] - row["created_at"] >= 5000
    # ... which ran ahead of the wall clock: the sleep did not wait for real time.
    assert wake - wall_now > HOUR / 2


async def test_recv_and_get_event_timeouts_and_fallback_polling_follow_the_trio_clock(
    fast_clock: trio.testing.MockClock,
    new_dbos: Callable[..., DBOS],
    wakeup_waits: list[tuple[str, float]],
) -> None:
    writer = new_dbos(use_listen_notify=False, executor_id="writer")
    reader = new_dbos(use_listen_notify=False, executor_id="reader")
    go = trio.Event()

    @writer.workflow()
    async def receiver() -> object:
        return await writer.recv("t", timeout_seconds=HOUR)

    @writer.workflow()
    async def setter() -> None:
        await go.wait()
        await writer.set_event("k", "v")

    async def waiting_with_a_deadline(key: str) -> None:
        """Once the waiter on ``key`` waits (its deadline is set): only then may the clock
        jump, or the deadline would be set an hour later."""
        await wait_until(lambda: any(k == key for k, _ in wakeup_waits))

    async with running(writer), running(reader):
        # An hour's timeout, once the clock jumps an hour: a timeout on the wall clock
        # would still have an hour to go.
        handle = await writer.start_workflow(receiver)
        await waiting_with_a_deadline(message_key(handle.workflow_id, "t"))
        fast_clock.jump(HOUR)
        with trio.fail_after(GUARD):
            assert await handle.get_result() is None

        got: list[object] = []
        returned = trio.Event()

        async def get_nothing() -> None:
            got.append(await reader.get_event("nobody", "k", timeout_seconds=HOUR))
            returned.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(get_nothing)
            await waiting_with_a_deadline(event_key("nobody", "k"))
            fast_clock.jump(HOUR)
            with trio.fail_after(GUARD):  # entered after the jump, which it would not survive
                await returned.wait()
        assert got == [None]

        # With notifications off another executor is found by its 1 s (virtual) re-check.
        handle = await writer.start_workflow(setter)
        async with trio.open_nursery() as nursery:

            async def set_soon() -> None:
                await waiting_with_a_deadline(event_key(handle.workflow_id, "k"))
                await trio.sleep(2)  # virtual: the reader has been waiting a while
                go.set()

            nursery.start_soon(set_soon)
            with trio.fail_after(GUARD):
                assert await reader.get_event(handle.workflow_id, "k", timeout_seconds=30) == "v"
        # Found by re-checks a (virtual) second apart at most, the only way across executors.
        key = event_key(handle.workflow_id, "k")
        rechecks = [timeout for k, timeout in wakeup_waits if k == key]
        assert rechecks and all(timeout <= 1.0 for timeout in rechecks), rechecks
        await handle.get_result()
