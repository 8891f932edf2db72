"""Time discipline, dynamically: under ``MockClock(rate=10)`` — virtual time running ten
times faster than real time, *not* the autojump clock, under which a task waiting on a
PostgreSQL socket counts as idle — durable sleeps and timeouts take a tenth of their
nominal real time and are recorded in the clock's epoch.

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

from support.backends import query, status_row
from support.time_fixtures import running


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
        real_start, trio_start = time.monotonic(), trio.current_time()
        handle = await dbos.start_workflow(sleeper)
        assert await handle.get_result() == "woke"
        real_elapsed = time.monotonic() - real_start
        trio_elapsed = trio.current_time() - trio_start
        wall_now = time.time()

    assert trio_elapsed >= 5.0
    assert 0.4 < real_elapsed < 2.0  # a tenth of the nominal 5 s (plus round trips)
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
    assert wake - wall_now > 3.0


async def test_recv_and_get_event_timeouts_and_fallback_polling_follow_the_trio_clock(
    fast_clock: trio.testing.MockClock, new_dbos: Callable[..., DBOS]
) -> None:
    writer = new_dbos(use_listen_notify=False, executor_id="writer")
    reader = new_dbos(use_listen_notify=False, executor_id="reader")
    go = trio.Event()

    @writer.workflow()
    async def receiver() -> object:
        return await writer.recv("t", timeout_seconds=3)

    @writer.workflow()
    async def setter() -> None:
        await go.wait()
        await writer.set_event("k", "v")

    async with running(writer), running(reader):
        real_start = time.monotonic()
        handle = await writer.start_workflow(receiver)
        assert await handle.get_result() is None
        assert 0.25 < time.monotonic() - real_start < 1.5  # 3 virtual seconds

        real_start = time.monotonic()
        assert await reader.get_event("nobody", "k", timeout_seconds=3) is None
        assert 0.25 < time.monotonic() - real_start < 1.5

        # With notifications off another executor is found by its 1 s (virtual) re-check.
        handle = await writer.start_workflow(setter)
        async with trio.open_nursery() as nursery:

            async def set_soon() -> None:
                await trio.sleep(2)  # virtual: the reader has been waiting a while
                go.set()

            nursery.start_soon(set_soon)
            real_start = time.monotonic()
            assert await reader.get_event(handle.workflow_id, "k", timeout_seconds=30) == "v"
            assert time.monotonic() - real_start < 1.0  # 2 + at most 1 virtual seconds
        await handle.get_result()
