"""set_event and get_event: latest value wins, history per step id, waits in both modes.

Latency is measured from the moment ``set_event`` returned in the writer to the moment
``get_event`` returned in the reader. "Another process" is a second executor in this
Trio run: it has its own waiter registry, so only LISTEN (or, with notifications off, its
fallback re-check) can tell it that a value was set.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
import trio

from dbos_trio import DBOS, DBOSException, SetWorkflowID
from dbos_trio._sysdb.wakeups import event_key

from support.backends import query, steps_of
from support.dbos_fixtures import reexecute
from support.time_fixtures import (
    GLACIAL_RECHECK,
    Stopwatch,
    make_polling_glacial,
    running,
    until_waiting,
    wait_for_waiter,
    waiting_on,
)
from support.waiting import HANG_GUARD


async def test_events_set_from_a_workflow_and_its_steps_are_read_inside_and_outside_workflows(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)
    reads = 0

    @dbos.step()
    async def set_in_step() -> None:
        await dbos.set_event("key4", "badvalue")
        await dbos.set_event("key4", "value4")

    @dbos.workflow()
    async def setter() -> None:
        await dbos.set_event("key1", "value1")
        await dbos.set_event("key2", "value2")
        await dbos.set_event("key3", None)
        await set_in_step()

    @dbos.workflow()
    async def getter(target: str, key: str, timeout: float = 0.0) -> Any:
        nonlocal reads
        reads += 1
        return await dbos.get_event(target, key, timeout)

    async with running(dbos):
        workflow_id = str(uuid.uuid4())
        for _ in range(2):  # the second start runs nothing
            with SetWorkflowID(workflow_id):
                await setter()

        assert await getter(workflow_id, "key1") == "value1"
        assert await getter(workflow_id, "key2") == "value2"
        assert await dbos.get_event(workflow_id, "key1", 0) == "value1"
        assert await dbos.get_event(workflow_id, "key2", 0) == "value2"
        assert await getter(workflow_id, "key3") is None
        assert await dbos.get_event(workflow_id, "key4", 0) == "value4"

        steps = [(s[0], s[1]) for s in await steps_of(db_url, workflow_id)]
        assert steps == [
            (1, "DBOS.setEvent"),
            (2, "DBOS.setEvent"),
            (3, "DBOS.setEvent"),
            (4, set_in_step.__qualname__),
        ]
        # One history row per (step id, key): the step's two writes share id 4.
        history = await query(
            db_url,
            "SELECT function_id, key FROM {t}workflow_events_history "
            "WHERE workflow_uuid = %s ORDER BY function_id",
            workflow_id,
        )
        assert history == [(1, "key1"), (2, "key2"), (3, "key3"), (4, "key4")]

        with pytest.raises(
            DBOSException, match=r"set_event\(\) must be called from within a workflow or step"
        ):
            await dbos.set_event("key1", "value1")


async def test_the_latest_value_wins_and_history_keeps_every_step(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)
    proceed = trio.Event()

    @dbos.step()
    async def set_in_step(value: str) -> None:
        await dbos.set_event("step_key", value)

    @dbos.workflow()
    async def setter() -> None:
        await dbos.set_event("wf_key", "v1")  # 1
        await set_in_step("v1")  # 2
        await proceed.wait()
        await dbos.set_event("wf_key", "v2")  # 3
        await set_in_step("v2")  # 4

    async with running(dbos):
        handle = await dbos.start_workflow(setter)
        assert await dbos.get_event(handle.workflow_id, "wf_key", 5) == "v1"
        assert await dbos.get_event(handle.workflow_id, "step_key", 5) == "v1"
        proceed.set()
        await handle.get_result()
        assert await dbos.get_event(handle.workflow_id, "wf_key") == "v2"
        assert await dbos.get_event(handle.workflow_id, "step_key") == "v2"
        latest = await query(
            db_url,
            "SELECT key FROM {t}workflow_events WHERE workflow_uuid = %s ORDER BY key",
            handle.workflow_id,
        )
        assert latest == [("step_key",), ("wf_key",)]
        history = await query(
            db_url,
            "SELECT function_id, key FROM {t}workflow_events_history "
            "WHERE workflow_uuid = %s ORDER BY function_id",
            handle.workflow_id,
        )
        assert history == [(1, "wf_key"), (2, "step_key"), (3, "wf_key"), (4, "step_key")]


async def test_a_get_event_timeout_inside_a_workflow_is_checkpointed_and_replays_at_once(
    new_dbos: Callable[..., DBOS],
    db_url: str,
    notify: bool,
    glacial_polling: float,
    wakeup_waits: list[tuple[str, float]],
) -> None:
    dbos = new_dbos(use_listen_notify=notify)
    runs = 0

    @dbos.workflow()
    async def getter(target: str) -> Any:
        nonlocal runs
        runs += 1
        return await dbos.get_event(target, "key1", 0.5)

    @dbos.workflow()
    async def setter() -> None:
        await dbos.set_event("key1", "late")

    async with running(dbos):
        target = str(uuid.uuid4())
        clock = Stopwatch()
        handle = await dbos.start_workflow(getter, target)
        # The wait's own deadline ends it: the next look at the database is ten minutes
        # away, far past the guard.
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() is None
        assert clock() > 0.45  # not before the timeout
        steps = [(s[0], s[1]) for s in await steps_of(db_url, handle.workflow_id)]
        assert steps == [(1, "DBOS.getEvent"), (2, "DBOS.sleep")]
        # Nothing found is recorded as an encoded None, as dbos 3.4 records (and expects) it.
        [(output, serialization)] = await query(
            db_url,
            "SELECT output, serialization FROM {t}operation_outputs "
            "WHERE workflow_uuid = %s AND function_id = 1",
            handle.workflow_id,
        )
        assert output is not None and serialization == "py_pickle"
        assert dbos._require_executor("test").codec.decode(output, serialization) is None

        # The value appears afterwards; a replay still returns what was read the first time.
        with SetWorkflowID(target):
            await setter()
        # Only the event's own waits count: the executor's background tasks (queue
        # workers, the delayed-row and cancel watchers) wait on their keys meanwhile.
        key = event_key(target, "key1")
        waits_before = len(wakeup_waits)
        assert any(k == key for k, _ in wakeup_waits)  # the first run did wait
        assert await reexecute(dbos, db_url, getter, handle.workflow_id) is None
        assert [w for w in wakeup_waits[waits_before:] if w[0] == key] == []  # without waiting
        assert runs == 2

        # Outside a workflow nothing is recorded: each call waits its own timeout.
        for _ in range(2):
            clock.restart()
            assert await dbos.get_event(str(uuid.uuid4()), "key1", 0.3) is None
            assert clock() > 0.25


async def test_a_get_event_waiting_before_the_set_returns_right_after_it(
    new_dbos: Callable[..., DBOS], notify: bool, glacial_polling: float
) -> None:
    dbos = new_dbos(use_listen_notify=notify)
    go = trio.Event()

    @dbos.workflow()
    async def setter() -> None:
        await go.wait()
        await dbos.set_event("key", "value")

    @dbos.workflow()
    async def getter(target: str) -> Any:
        return await dbos.get_event(target, "key", timeout_seconds=glacial_polling)

    async with running(dbos):
        set_handle = await dbos.start_workflow(setter)
        get_handle = await dbos.start_workflow(getter, set_handle.workflow_id)
        await wait_for_waiter(dbos, event_key(set_handle.workflow_id, "key"))
        await trio.sleep(0.1)
        go.set()
        # Same process: the writer wakes the reader itself, whatever the mode. Its next
        # look at the database, and its timeout, are ten minutes away: only a wakeup
        # returns the value within the guard.
        with trio.fail_after(HANG_GUARD):
            assert await get_handle.get_result() == "value"


async def test_a_get_event_in_another_process_is_woken_by_the_listener_or_the_fallback(
    new_dbos: Callable[..., DBOS],
    notify: bool,
    monkeypatch: pytest.MonkeyPatch,
    wakeup_waits: list[tuple[str, float]],
) -> None:
    if notify:
        # Only the NOTIFY, through the reader's listener, can then wake it within the guard.
        make_polling_glacial(monkeypatch)
    writer = new_dbos(use_listen_notify=notify, executor_id="writer")
    reader = new_dbos(use_listen_notify=notify, executor_id="reader")
    go = trio.Event()

    @writer.workflow()
    async def setter() -> None:
        await go.wait()
        await writer.set_event("key", "value")

    async with running(writer), running(reader):
        handle = await writer.start_workflow(setter)
        got: list[Any] = []

        async def read() -> None:
            got.append(
                await reader.get_event(handle.workflow_id, "key", timeout_seconds=GLACIAL_RECHECK)
            )

        key = event_key(handle.workflow_id, "key")
        with trio.fail_after(HANG_GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                await wait_for_waiter(reader, key)
                await until_waiting(wakeup_waits, key)  # past its first look: waiting
                go.set()
        assert got == ["value"]
        if not notify:
            # Found by the reader's fallback re-check, which looks every second.
            rechecks = [timeout for k, timeout in wakeup_waits if k == key]
            assert rechecks and all(timeout <= 1.0 for timeout in rechecks), rechecks
        await handle.get_result()


async def test_a_cancelled_get_event_leaves_no_subscription(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    @dbos.workflow()
    async def getter(target: str) -> Any:
        with trio.move_on_after(0.3):
            await dbos.get_event(target, "key", timeout_seconds=30)  # ids 1-2, abandoned
        return await dbos.get_event(target, "key", timeout_seconds=0)  # ids 3-4

    async with running(dbos):
        target = str(uuid.uuid4())
        key = event_key(target, "key")
        with trio.move_on_after(0.3):
            await dbos.get_event(target, "key", timeout_seconds=30)
        assert not waiting_on(dbos, key)

        handle = await dbos.start_workflow(getter, target)
        assert await handle.get_result() is None
        assert not waiting_on(dbos, key)
        steps = [(s[0], s[1]) for s in await steps_of(db_url, handle.workflow_id)]
        # The abandoned read recorded its deadline but no value; the next read is at 3.
        assert (1, "DBOS.getEvent") not in steps
        assert (2, "DBOS.sleep") in steps
        assert (3, "DBOS.getEvent") in steps
