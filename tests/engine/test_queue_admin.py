"""Queues registered from a client (with the official ``on_conflict`` modes) and changed
at run time through ``set_*``, on both backends. The stored ``queues`` row is read back
on the test's own connection; a running executor is seen to serve the change.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from dbos_trio import (
    DBOS,
    Client,
    DBOSException,
    DBOSInvalidArgumentError,
    RateLimit,
    SetWorkflowID,
)

from support.backends import query


async def stored(url: str, name: str) -> tuple[object, ...]:
    [row] = await query(
        url,
        "SELECT worker_concurrency, concurrency, rate_limit_max, rate_limit_period_sec, "
        "application_name FROM {t}queues WHERE name = %s",
        name,
    )
    return row


async def test_a_client_registers_queues_with_the_on_conflict_modes(dbos_url: str) -> None:
    async with Client(dbos_url, app_name="orders") as client:
        queue = await client.register_queue("q", worker_concurrency=2)
        assert queue.config.worker_concurrency == 2
        assert await stored(dbos_url, "q") == (2, None, None, None, "orders")
        await client.register_queue("q", worker_concurrency=5, on_conflict="never_update")
        assert await stored(dbos_url, "q") == (2, None, None, None, "orders")
        await client.register_queue(
            "q", global_concurrency=9, limiter=RateLimit(limit=3, period=2.0)
        )
        assert await stored(dbos_url, "q") == (None, 9, 3, 2.0, "orders")
        with pytest.raises(DBOSInvalidArgumentError, match="update_if_latest_version"):
            await client.register_queue("q", on_conflict="update_if_latest_version")
        with pytest.raises(DBOSInvalidArgumentError, match="on_conflict"):
            await client.register_queue("q", on_conflict="sometimes")  # type: ignore[arg-type]
        with pytest.raises(DBOSInvalidArgumentError):
            await client.register_queue("q", worker_concurrency=10, global_concurrency=2)
        with pytest.raises(DBOSInvalidArgumentError):
            await client.register_queue("_dbos_mine")
    async with Client(dbos_url, app_name="billing") as other:
        for mode in ("always_update", "never_update"):
            with pytest.raises(DBOSException, match="belongs to application 'orders'"):
                await other.register_queue("q", on_conflict=mode)  # type: ignore[arg-type]
    assert await stored(dbos_url, "q") == (None, 9, 3, 2.0, "orders")


async def test_setters_change_one_field_of_the_stored_row_and_refuse_invalid_values(
    dbos_url: str,
) -> None:
    async with Client(dbos_url, app_name="orders") as client:
        mine = await client.register_queue("q", worker_concurrency=1, global_concurrency=4)
        # Another copy, stale: its setter must not undo the first one's change.
        stale = await client.retrieve_queue("q")
        assert stale is not None
        await mine.set_worker_concurrency(3)
        await stale.set_limiter(RateLimit(limit=10, period=1.0))
        assert await stored(dbos_url, "q") == (3, 4, 10, 1.0, "orders")
        with pytest.raises(DBOSInvalidArgumentError):
            await mine.set_worker_concurrency(5)  # above the global concurrency of 4
        assert await stored(dbos_url, "q") == (3, 4, 10, 1.0, "orders")
        config = await mine.set_global_concurrency(None)
        assert (config.worker_concurrency, config.global_concurrency) == (3, None)
        assert await client.retrieve_queue("nope") is None


async def test_a_running_executor_serves_a_worker_concurrency_set_at_run_time(
    make_dbos: Callable[..., DBOS],
) -> None:
    dbos = make_dbos()
    queue = dbos.register_queue("slots", worker_concurrency=1, polling_interval_sec=0.05)
    release = trio.Event()
    started: list[str] = []
    second = trio.Event()

    @dbos.workflow()
    async def blocked(name: str) -> str:
        started.append(name)
        if len(started) == 2:
            second.set()
        await release.wait()
        return name

    async with dbos.launched():
        for name in ("a", "b"):
            with SetWorkflowID(name):
                await queue.enqueue(blocked, name)
        with trio.move_on_after(0.5):
            await second.wait()
        assert len(started) == 1  # one slot: the second waits
        config = await queue.set_worker_concurrency(2)
        assert config.worker_concurrency == 2 and queue.worker_concurrency == 2
        with trio.fail_after(15):
            await second.wait()
        release.set()


async def test_a_declared_queue_honours_its_on_conflict_mode_at_launch(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    # v1 then v2 register, so a later launch of v1 is not the latest version.
    async with make_dbos(app_version="v1").launched():
        pass
    latest = make_dbos(app_version="v2")
    latest.register_queue("kept", worker_concurrency=1)
    latest.register_queue("forced", worker_concurrency=1)
    async with latest.launched():
        pass
    old = make_dbos(app_version="v1")
    old.register_queue("kept", worker_concurrency=7)  # default: only from the latest
    old.register_queue("forced", worker_concurrency=7, on_conflict="always_update")
    async with old.launched():
        pass
    assert (await stored(dbos_url, "kept"))[0] == 1
    assert (await stored(dbos_url, "forced"))[0] == 7
    newest = make_dbos(app_version="v3")
    newest.register_queue("kept", worker_concurrency=9, on_conflict="never_update")
    async with newest.launched():
        pass
    assert (await stored(dbos_url, "kept"))[0] == 1
    with pytest.raises(DBOSInvalidArgumentError, match="on_conflict"):
        newest.register_queue("other", on_conflict="maybe")  # type: ignore[arg-type]
