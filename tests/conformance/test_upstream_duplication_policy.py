"""Port of the official SDK's ``tests/test_duplication_policy.py``: the
``duplication_policy="return-existing"`` enqueue option."""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    Client,
    DBOSException,
    EnqueueOptions,
    SetEnqueueOptions,
    SetWorkflowID,
)

QUEUE = "dup_policy_queue"


async def test_return_existing_attaches(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_duplication_policy.py::test_return_existing_attaches"""
    queue = dbos.register_queue(QUEUE)
    release = trio.Event()

    @dbos.workflow()
    async def gated(value: str) -> str:
        await release.wait()
        return f"{value}-done"

    async with dbos.launched():
        with SetEnqueueOptions(deduplication_id="d", duplication_policy="return-existing"):
            first = await queue.enqueue(gated, "first")
            second = await queue.enqueue(gated, "second")
        assert second.workflow_id == first.workflow_id
        release.set()
        assert await first.get_result() == await second.get_result() == "first-done"


async def test_return_existing_fresh_after_completion(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_duplication_policy.py::test_return_existing_fresh_after_completion"""
    queue = dbos.register_queue(QUEUE)

    @dbos.workflow()
    async def echo(value: str) -> str:
        return f"{value}-done"

    async with dbos.launched():
        with SetEnqueueOptions(deduplication_id="d", duplication_policy="return-existing"):
            first = await queue.enqueue(echo, "first")
            assert await first.get_result() == "first-done"
            second = await queue.enqueue(echo, "second")
        assert second.workflow_id != first.workflow_id
        assert await second.get_result() == "second-done"


async def test_return_existing_rejects_without_dedup_id(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_duplication_policy.py::test_return_existing_rejects_without_dedup_id"""
    queue = dbos.register_queue(QUEUE)

    @dbos.workflow()
    async def echo() -> str:
        return "done"

    async with dbos.launched():
        with (
            pytest.raises(DBOSException, match="requires a deduplication_id"),
            SetEnqueueOptions(duplication_policy="return-existing"),
        ):
            await queue.enqueue(echo)


async def test_return_existing_rejects_without_queue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_duplication_policy.py::test_return_existing_rejects_without_queue"""

    @dbos.workflow()
    async def echo() -> str:
        return "done"

    async with dbos.launched():
        with (
            pytest.raises(DBOSException) as raised,
            SetEnqueueOptions(duplication_policy="return-existing"),
            SetWorkflowID("wf"),
        ):
            await dbos.start_workflow(echo)
        assert "duplication_policy" in str(raised.value)
        assert "requires a queue" in str(raised.value)
        assert await dbos.get_workflow_status("wf") is None
        with SetEnqueueOptions(duplication_policy="reject"):
            assert await (await dbos.start_workflow(echo)).get_result() == "done"


async def test_return_existing_rejects_invalid_policy() -> None:
    """upstream: tests/test_duplication_policy.py::test_return_existing_rejects_invalid_policy"""
    with pytest.raises(DBOSException, match="Invalid duplication_policy"):
        SetEnqueueOptions(deduplication_id="d", duplication_policy="return-something-else")  # type: ignore[arg-type]


async def test_return_existing_honors_set_workflow_id(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_duplication_policy.py::test_return_existing_honors_set_workflow_id

    (Upstream injects a failure into its private init call; here the id a winning enqueue
    takes is observed directly.)"""
    queue = dbos.register_queue(QUEUE)

    @dbos.workflow()
    async def echo(value: str) -> str:
        return f"{value}-done"

    async with dbos.launched():
        with (
            SetEnqueueOptions(deduplication_id="d", duplication_policy="return-existing"),
            SetWorkflowID("reserved"),
        ):
            handle = await queue.enqueue(echo, "reserved")
        assert handle.workflow_id == "reserved"
        assert await handle.get_result() == "reserved-done"


async def test_return_existing_in_parent_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_duplication_policy.py::test_return_existing_in_parent_workflow"""
    queue = dbos.register_queue(QUEUE)
    release = trio.Event()

    @dbos.workflow()
    async def gated(value: str) -> str:
        await release.wait()
        return f"{value}-done"

    @dbos.workflow()
    async def parent(value: str) -> str:
        with SetEnqueueOptions(deduplication_id="d", duplication_policy="return-existing"):
            handle = await queue.enqueue(gated, value)
        result: str = await handle.get_result()
        return result

    async with dbos.launched():
        with SetEnqueueOptions(deduplication_id="d"), SetWorkflowID("holder"):
            await queue.enqueue(gated, "holder")
        with SetWorkflowID("parent"):
            started = await dbos.start_workflow(parent, "parent")
        await trio.sleep(1)
        release.set()
        assert await started.get_result() == "holder-done"
        steps = await dbos.list_workflow_steps("parent")
        assert steps[0].child_workflow_id == "holder"


async def test_return_existing_enqueue_with_options(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_duplication_policy.py::test_return_existing_enqueue_with_options"""
    dbos.register_queue(QUEUE)
    release = trio.Event()

    @dbos.workflow(name="gated")
    async def gated(value: str) -> str:
        await release.wait()
        return f"{value}-done"

    async with dbos.launched():
        options = EnqueueOptions(
            workflow_name="gated",
            queue_name=QUEUE,
            deduplication_id="d",
            duplication_policy="return-existing",
        )
        first = await dbos.enqueue(options, "first")
        second = await dbos.enqueue(options, "second")
        assert first.workflow_id == second.workflow_id
        release.set()
        assert await second.get_result() == "first-done"


async def test_client_return_existing(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_duplication_policy.py::test_client_return_existing"""
    dbos.register_queue(QUEUE)
    release = trio.Event()

    @dbos.workflow(name="gated")
    async def gated(value: str) -> str:
        await release.wait()
        return f"{value}-done"

    async with dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(
            workflow_name="gated",
            queue_name=QUEUE,
            deduplication_id="d",
            duplication_policy="return-existing",
        )
        first = await client.enqueue(options, "first")
        second = await client.enqueue(options, "second")
        assert first.workflow_id == second.workflow_id
        release.set()
        assert await second.get_result() == "first-done"


async def test_client_return_existing_requires_dedup_id(dbos_url: str) -> None:
    """upstream: tests/test_duplication_policy.py::test_client_return_existing_requires_dedup_id"""
    async with Client(dbos_url) as client:
        with pytest.raises(DBOSException, match="requires a deduplication_id"):
            # Refused when the options are built (dbos 3.4: at the enqueue), never written.
            options = EnqueueOptions(
                workflow_name="gated", queue_name=QUEUE, duplication_policy="return-existing"
            )
            await client.enqueue(options, "first")
        assert await client.list_workflows() == []


async def test_debouncer_rejects_return_existing(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_duplication_policy.py::test_debouncer_rejects_return_existing"""
    dbos.register_queue(QUEUE)

    @dbos.workflow()
    async def echo(value: str) -> str:
        return value

    debouncer = dbos.debouncer(echo, queue=QUEUE)
    async with dbos.launched():
        with (
            pytest.raises(DBOSException, match="Cannot debounce"),
            SetEnqueueOptions(duplication_policy="return-existing"),
        ):
            await debouncer.debounce("key", 0.1, "first")


async def test_return_existing_recovery(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_duplication_policy.py::test_return_existing_recovery"""
    queue = dbos.register_queue(QUEUE)
    release = trio.Event()

    @dbos.workflow()
    async def gated(value: str) -> str:
        await release.wait()
        return f"{value}-done"

    @dbos.workflow()
    async def parent() -> str:
        with SetEnqueueOptions(deduplication_id="d", duplication_policy="return-existing"):
            handle = await queue.enqueue(gated, "child")
        return handle.workflow_id

    async with dbos.launched():
        with SetEnqueueOptions(deduplication_id="d", duplication_policy="return-existing"):
            first = await queue.enqueue(gated, "first")
        with SetWorkflowID("parent"):
            assert await parent() == first.workflow_id
        [step] = await dbos.list_workflow_steps("parent")
        assert step.child_workflow_id == first.workflow_id and step.error is None
        release.set()
        assert await first.get_result() == "first-done"
        # A rerun (as recovery would) re-attaches from the checkpoint, not a new child.
        forked = await dbos.fork_workflow("parent", 2)
        assert await forked.get_result() == first.workflow_id
