"""A workflow cancelled elsewhere runs no step body that starts after the cancel.

"Elsewhere" is anyone but this executor: here a SQL ``UPDATE`` shaped like the official
SDKs' cancel (status CANCELLED, owner cleared) or a :class:`~dbos_trio.Client`; the CLI
and the official client are in tests/integration. Three mechanisms, each observed by
what the workflow body sees when it stops:

* a durable sleep looks at its row when it wakes — the sleep raises
  ``DBOSWorkflowCancelledError`` (the watcher is switched off to show it alone);
* the cancel watcher looks every interval — a plain ``trio.sleep`` between steps, or a
  step's body, is cancelled (``Cancelled``) one interval after the cancel, long before it
  would have ended;
* a cancel written by dbos_trio announces itself (NOTIFY on PostgreSQL, the in-process
  peers on SQLite) — the watcher wakes at once, well inside its interval.

Time is a ``MockClock`` that stands still unless the test jumps it, so which mechanism
fired is decided by the test, not by how fast the machine is. Step bodies append to
``ran``; the row is read on the test's own connection.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

from dbos_trio import DBOS, DBOSAwaitedWorkflowCancelledError, SetWorkflowID, WorkflowHandle
from dbos_trio._client import Client
from dbos_trio._engine.runtime import watch

from support.backends import execute, status_row, steps_of
from support.time_fixtures import running
from support.waiting import wait_until

LONG = 1000.0


@pytest.fixture
def frozen_clock() -> trio.testing.MockClock:
    """Virtual time that moves only when the test jumps it."""
    return trio.testing.MockClock(rate=0)


async def cancel_in_sql(url: str, workflow_id: str) -> None:
    """What the official SDKs' cancel writes, with no NOTIFY."""
    changed = await execute(
        url,
        "UPDATE {t}workflow_status SET status = 'CANCELLED', owner_xid = NULL, "
        "queue_name = NULL, deduplication_id = NULL, started_at_epoch_ms = NULL "
        "WHERE workflow_uuid = %s",
        workflow_id,
    )
    assert changed == 1


async def outcome_of(handle: WorkflowHandle[Any], *, real_seconds: float = 20) -> BaseException:
    """What ``handle.get_result()`` raises, failing the test after ``real_seconds`` of real
    time (the frozen clock would let a hang last forever)."""
    raised: list[BaseException] = []

    async def get() -> None:
        try:
            await handle.get_result()
        except Exception as error:
            raised.append(error)
        nursery.cancel_scope.cancel()

    async def guard() -> None:
        await trio.to_thread.run_sync(time.sleep, real_seconds, abandon_on_cancel=True)
        raise AssertionError(f"no outcome after {real_seconds} real seconds")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(get)
        nursery.start_soon(guard)
    assert raised, "the workflow returned"
    return raised[0]


async def wait_for_step(url: str, workflow_id: str, name: str) -> None:
    async def recorded() -> bool:
        return name in [row[1] for row in await steps_of(url, workflow_id)]

    await wait_until(recorded, timeout=20)
    await trio.testing.wait_all_tasks_blocked()


class Probe:
    """A workflow of two steps around a wait, and what its body saw."""

    def __init__(self, dbos: DBOS, wait: Callable[[], object]) -> None:
        self.ran: list[str] = []
        self.seen: list[str] = []

        @dbos.step(name="step")
        async def step(label: str) -> str:
            self.ran.append(label)
            return label

        @dbos.workflow()
        async def workflow() -> str:
            await step("a")
            try:
                await wait()  # type: ignore[misc]
            except BaseException as stopped:
                self.seen.append(type(stopped).__name__)
                raise
            return await step("b")

        self.workflow = workflow


async def test_a_durable_sleep_looks_at_its_row_when_it_wakes(
    frozen_clock: trio.testing.MockClock,
    new_dbos: Callable[..., DBOS],
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watch, "WATCH_INTERVAL_SECONDS", 10 * LONG)  # the watcher never looks
    dbos = new_dbos()
    probe = Probe(dbos, lambda: dbos.sleep(5))
    async with running(dbos):
        with SetWorkflowID("sleeper"):
            handle = await dbos.start_workflow(probe.workflow)
        await wait_for_step(db_url, "sleeper", "DBOS.sleep")
        await cancel_in_sql(db_url, "sleeper")
        frozen_clock.jump(5)
        assert isinstance(await outcome_of(handle), DBOSAwaitedWorkflowCancelledError)
    assert probe.seen == ["DBOSWorkflowCancelledError"]
    assert probe.ran == ["a"]
    row = await status_row(db_url, "sleeper")
    assert (row["status"], row["output"], row["error"]) == ("CANCELLED", None, None)


async def test_the_watcher_cancels_a_plain_wait_between_steps_within_one_interval(
    frozen_clock: trio.testing.MockClock,
    new_dbos: Callable[..., DBOS],
    db_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="dbos_trio")
    dbos = new_dbos()
    probe = Probe(dbos, partial(trio.sleep, LONG))
    async with running(dbos):
        with SetWorkflowID("napper"):
            handle = await dbos.start_workflow(probe.workflow)
        await wait_for_step(db_url, "napper", "step")
        await cancel_in_sql(db_url, "napper")
        started = trio.current_time()
        frozen_clock.jump(watch.WATCH_INTERVAL_SECONDS)
        assert isinstance(await outcome_of(handle), DBOSAwaitedWorkflowCancelledError)
        assert trio.current_time() - started < LONG
    assert probe.seen == ["Cancelled"]
    assert probe.ran == ["a"]
    logged = [record.getMessage() for record in caplog.records]
    assert any("napper was cancelled: stopping" in message for message in logged)


async def test_the_watcher_cancels_a_step_body_running_when_the_cancel_lands(
    frozen_clock: trio.testing.MockClock, new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    ran: list[str] = []
    seen: list[str] = []

    @dbos.step()
    async def long_step() -> None:
        ran.append("long")
        try:
            await trio.sleep(LONG)
        except BaseException as stopped:
            seen.append(type(stopped).__name__)
            raise
        ran.append("long finished")

    @dbos.step()
    async def after() -> None:
        ran.append("after")

    @dbos.workflow()
    async def workflow() -> None:
        await long_step()
        await after()

    async with running(dbos):
        with SetWorkflowID("stepping"):
            handle = await dbos.start_workflow(workflow)
        await wait_until(lambda: ran == ["long"], timeout=20)
        await trio.testing.wait_all_tasks_blocked()
        await cancel_in_sql(db_url, "stepping")
        frozen_clock.jump(watch.WATCH_INTERVAL_SECONDS)
        assert isinstance(await outcome_of(handle), DBOSAwaitedWorkflowCancelledError)
    assert seen == ["Cancelled"]
    assert ran == ["long"]
    assert await steps_of(db_url, "stepping") == []


async def test_a_cancel_by_a_client_wakes_the_watcher_at_once(
    frozen_clock: trio.testing.MockClock,
    new_dbos: Callable[..., DBOS],
    db_url: str,
) -> None:
    dbos = new_dbos()
    probe = Probe(dbos, partial(trio.sleep, LONG))
    async with running(dbos), Client(db_url) as client:
        with SetWorkflowID("announced"):
            handle = await dbos.start_workflow(probe.workflow)
        await wait_for_step(db_url, "announced", "step")
        started = trio.current_time()
        await client.cancel_workflow("announced")
        await trio.testing.wait_all_tasks_blocked()  # the notifier's window has begun
        # Far inside the watcher's interval: only the announcement can wake it (on
        # PostgreSQL the NOTIFY goes out after its 10 ms coalescing window).
        frozen_clock.jump(0.05)
        assert isinstance(await outcome_of(handle), DBOSAwaitedWorkflowCancelledError)
        assert trio.current_time() - started < watch.WATCH_INTERVAL_SECONDS
    assert probe.seen == ["Cancelled"]
    assert probe.ran == ["a"]
