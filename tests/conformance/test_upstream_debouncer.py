"""Port of the official SDK's ``tests/test_debouncer.py``: coalescing calls by key, the
period and overall timeout, queues, pinned ids and a client's debouncer."""

from __future__ import annotations

import attrs
import pytest
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    Client,
    DBOSException,
    EnqueueOptions,
    SetEnqueueOptions,
    SetWorkflowID,
    SetWorkflowTimeout,
)


async def test_debouncer(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debouncer"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    async def scenario() -> None:
        first = await dbos.debouncer(echo).debounce("key", 2, 0)
        second = await dbos.debouncer(echo).debounce("key", 2, 1)
        assert first.workflow_id == second.workflow_id
        assert await first.get_result() == await second.get_result() == 1
        third = await dbos.debouncer(echo).debounce("key", 2, 2)
        fourth = await dbos.debouncer(echo).debounce("key", 2, 3)
        assert third.workflow_id != first.workflow_id
        assert third.workflow_id == fourth.workflow_id
        assert await third.get_result() == 3
        pinned_id = await dbos.uuid4()
        with SetWorkflowID(pinned_id):
            pinned = await dbos.debouncer(echo).debounce("key", 2, 0)
        assert pinned.workflow_id == pinned_id
        assert await pinned.get_result() == 0

    in_workflow = dbos.workflow(name="scenario")(scenario)
    async with dbos.launched():
        await scenario()
        with SetWorkflowID("wf"):
            await in_workflow()
        with SetWorkflowID("wf"):
            await in_workflow()  # replayed from its checkpoints


async def test_debouncer_timeout(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debouncer_timeout"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    capped = dbos.debouncer(echo, debounce_timeout_sec=2)
    plain = dbos.debouncer(echo)
    long_period = 10_000_000
    async with dbos.launched():
        first = await capped.debounce("key", long_period, 0)
        second = await capped.debounce("key", long_period, 1)
        assert first.workflow_id == second.workflow_id
        assert await first.get_result() == 1  # started by the timeout, not the period
        third = await capped.debounce("key", long_period, 2)
        fourth = await capped.debounce("key", long_period, 3)
        assert third.workflow_id != first.workflow_id
        assert third.workflow_id == fourth.workflow_id
        assert await fourth.get_result() == 3
        fifth = await plain.debounce("key", long_period, 0)
        sixth = await plain.debounce("key", 1, 1)  # a shorter period moves the start earlier
        assert fifth.workflow_id == sixth.workflow_id != fourth.workflow_id
        assert await sixth.get_result() == 1


async def test_multiple_debouncers(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_multiple_debouncers"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    one, two = dbos.debouncer(echo), dbos.debouncer(echo)
    async with dbos.launched():
        first = await one.debounce("key_one", 2, 0)
        second = await one.debounce("key_one", 2, 1)
        third = await two.debounce("key_two", 2, 2)
        fourth = await two.debounce("key_two", 2, 3)
        assert first.workflow_id == second.workflow_id != third.workflow_id
        assert third.workflow_id == fourth.workflow_id
        assert [await first.get_result(), await third.get_result()] == [1, 3]


async def test_debouncer_queue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debouncer_queue"""
    queue = dbos.register_queue("test-queue")

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    debouncer = dbos.debouncer(echo, queue=queue)
    async with dbos.launched():
        first = await debouncer.debounce("key", 2, 0)
        second = await debouncer.debounce("key", 2, 1)
        assert first.workflow_id == second.workflow_id
        assert await second.get_result() == 1
        assert (await second.get_status()).queue_name == "test-queue"
        with SetWorkflowTimeout(5.0):
            third = await debouncer.debounce("key", 2, 2)
            fourth = await debouncer.debounce("key", 2, 3)
        assert third.workflow_id == fourth.workflow_id != first.workflow_id
        assert await fourth.get_result() == 3
        status = await fourth.get_status()
        assert status.queue_name == "test-queue"
        assert status.workflow_timeout_ms == 5000
        assert status.workflow_deadline_epoch_ms
        with SetWorkflowID("pinned"):
            pinned = await debouncer.debounce("key", 2, 0)
        assert pinned.workflow_id == "pinned"
        assert await pinned.get_result() == 0
        with SetEnqueueOptions(app_version=dbos.app_version):
            versioned = await debouncer.debounce("key", 2, 0)
        assert await versioned.get_result() == 0


async def test_debouncer_client(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debouncer_client"""
    dbos.register_queue("test-queue")

    @dbos.workflow(name="echo")
    async def echo(value: int) -> int:
        return value

    async with dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(workflow_name="echo", queue_name="test-queue")
        debouncer = client.debouncer(options)
        first = await debouncer.debounce("key", 2, 0)
        second = await debouncer.debounce("key", 2, 1)
        assert first.workflow_id == second.workflow_id
        assert await first.get_result() == 1
        third = await debouncer.debounce("key", 2, 2)
        fourth = await debouncer.debounce("key", 2, 3)
        assert third.workflow_id == fourth.workflow_id != first.workflow_id
        assert await fourth.get_result() == 3
        pinned = client.debouncer(attrs.evolve(options, workflow_id="pinned"))
        handle = await pinned.debounce("key", 2, 0)
        assert handle.workflow_id == "pinned"
        assert await handle.get_result() == 0


async def test_debounce_fixed_workflow_id_reuse(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_fixed_workflow_id_reuse"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    debouncer = dbos.debouncer(echo)
    async with dbos.launched():
        with SetWorkflowID("pinned"):
            first = await debouncer.debounce("key", 2, 1)
        with SetWorkflowID("pinned"):
            second = await debouncer.debounce("key", 2, 2)
        assert first.workflow_id == second.workflow_id == "pinned"
        assert await first.get_result() == 2
        with SetWorkflowID("pinned2"):
            await debouncer.debounce("key2", 1_000_000, 3)
        with SetWorkflowID("pinned2"):
            fourth = await debouncer.debounce("key2", 1, 4)
        assert await fourth.get_result() == 4


async def test_debounce_rejects_caller_dedup_and_delay(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_rejects_caller_dedup_and_delay"""

    @dbos.workflow(name="echo")
    async def echo(value: int) -> int:
        return value

    debouncer = dbos.debouncer(echo)
    async with dbos.launched():
        for option, word in (
            ({"deduplication_id": "caller-dedup"}, "deduplication_id"),
            ({"delay_seconds": 100.0}, "delay"),
            ({"priority": 1}, "priority"),
            ({"queue_partition_key": "p"}, "partition key"),
        ):
            with pytest.raises(DBOSException, match=word), SetEnqueueOptions(**option):  # type: ignore[arg-type]
                await debouncer.debounce("k", 1.0, 1)
        assert await dbos.list_workflows(name="echo") == []
        async with Client(dbos_url) as client:
            with pytest.raises(DBOSException, match="deduplication_id"):
                client.debouncer(
                    EnqueueOptions(
                        workflow_name="echo", queue_name="q", deduplication_id="caller-dedup"
                    )
                )
