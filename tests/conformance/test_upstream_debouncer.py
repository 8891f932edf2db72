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
    DBOSQueueDeduplicatedError,
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


async def test_debounce_cancel_then_redebounce(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_cancel_then_redebounce"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    debouncer = dbos.debouncer(echo)
    async with dbos.launched():
        first = await debouncer.debounce("key", 1_000_000, 1)
        assert (await first.get_status()).status == "DELAYED"
        await dbos.cancel_workflow(first.workflow_id)
        second = await debouncer.debounce("key", 1, 2)
        assert second.workflow_id != first.workflow_id
        assert await second.get_result() == 2


async def test_debounce_deadline_caps_initial_delay(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_deadline_caps_initial_delay"""
    from support.backends import query

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    debouncer = dbos.debouncer(echo, debounce_timeout_sec=1000)
    async with dbos.launched():
        handle = await debouncer.debounce("key", 1_000_000, 1)
        url = dbos.config.database_url
        assert url is not None
        [(status, debounced, deadline, delay_until)] = await query(
            url,
            "SELECT status, is_debounced, debounce_deadline_epoch_ms, delay_until_epoch_ms "
            "FROM {t}workflow_status WHERE workflow_uuid = %s",
            handle.workflow_id,
        )
        assert status == "DELAYED" and debounced
        assert deadline is not None and delay_until is not None
        assert delay_until <= deadline
        await dbos.cancel_workflow(handle.workflow_id)


async def test_debounce_user_dedup_conflict_raises(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_user_dedup_conflict_raises"""
    queue = dbos.register_queue("q")

    @dbos.workflow(name="slow")
    async def slow(value: int) -> int:
        await dbos.sleep(1_000_000)
        return value

    debouncer = dbos.debouncer(slow, queue=queue)
    async with dbos.launched():
        with SetEnqueueOptions(deduplication_id="slow-key"):
            blocker = await queue.enqueue(slow, 1)
        with pytest.raises(DBOSQueueDeduplicatedError):
            await debouncer.debounce("key", 1, 2)
        await dbos.cancel_workflow(blocker.workflow_id)


async def test_debounce_key_collision_between_workflows(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_key_collision_between_workflows"""
    dbos.register_queue("collide")
    async with dbos.launched(), Client(dbos_url) as client:
        one = client.debouncer(EnqueueOptions(workflow_name="colw", queue_name="collide"))
        two = client.debouncer(EnqueueOptions(workflow_name="colw-b", queue_name="collide"))
        first = await one.debounce("b-k", 1_000_000, 1)
        status = await first.get_status()
        assert (status.status, status.deduplication_id) == ("DELAYED", "colw-b-k")
        with pytest.raises(DBOSQueueDeduplicatedError):
            await two.debounce("k", 1, 2)  # same deduplication id, another workflow
        status = await first.get_status()
        assert (status.status, status.name) == ("DELAYED", "colw")
        again = await one.debounce("b-k", 1_000_000, 3)
        assert again.workflow_id == first.workflow_id
        await client.cancel_workflow(first.workflow_id)


async def test_debounce_inworkflow_does_not_inherit_parent_deadline(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_inworkflow_does_not_inherit_parent_deadline"""  # noqa: E501

    @dbos.workflow()
    async def child(value: int) -> int:
        return value

    debouncer = dbos.debouncer(child)

    @dbos.workflow()
    async def parent() -> str:
        handle = await debouncer.debounce("deadline-key", 3.0, 5)
        return handle.workflow_id

    async with dbos.launched():
        with SetWorkflowTimeout(1.0):
            started = await dbos.start_workflow(parent)
        child_id = await started.get_result()
        handle = await dbos.retrieve_workflow(child_id)
        status = await handle.get_status()
        assert status.status == "DELAYED" and status.workflow_deadline_epoch_ms is None
        assert await handle.get_result() == 5


async def test_debounce_bounce_path_does_not_leak_pinned_id(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_bounce_path_does_not_leak_pinned_id"""

    @dbos.workflow()
    async def child(value: int) -> int:
        return value

    @dbos.workflow()
    async def other(value: int) -> int:
        return value

    debouncer = dbos.debouncer(child)

    @dbos.workflow()
    async def parent(pinned: str) -> tuple[str, str]:
        first = await debouncer.debounce("leak-key", 1_000_000, 1)
        with SetWorkflowID(pinned):
            bounced = await debouncer.debounce("leak-key", 1_000_000, 2)
        assert bounced.workflow_id == first.workflow_id
        following = await dbos.start_workflow(other, 3)
        return first.workflow_id, following.workflow_id

    async with dbos.launched():
        delayed, following = await (await dbos.start_workflow(parent, "pinned")).get_result()
        assert following != "pinned"
        assert await (await dbos.retrieve_workflow(following)).get_result() == 3
        await dbos.cancel_workflow(delayed)
