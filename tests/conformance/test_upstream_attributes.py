"""Port of the official SDK's ``tests/test_attributes.py``: ``SetWorkflowAttributes``,
listing by attributes and ``update_workflow_attributes``."""

from __future__ import annotations

from typing import Any

import pytest
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    Client,
    DBOSException,
    EnqueueOptions,
    SetWorkflowAttributes,
    SetWorkflowID,
)


async def attributes_of(dbos: DBOS, workflow_id: str) -> Any:
    [status] = await dbos.list_workflows(workflow_ids=[workflow_id])
    return status.attributes


async def test_attributes_direct_invocation(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_attributes_direct_invocation"""

    @dbos.workflow()
    async def child() -> str:
        assert dbos.workflow_id is not None
        return dbos.workflow_id

    @dbos.workflow()
    async def parent() -> str:
        return await child()

    attributes = {"customer": "acme", "tier": 3}
    async with dbos.launched():
        with SetWorkflowAttributes(attributes), SetWorkflowID("wf"):
            child_id = await parent()
        assert await attributes_of(dbos, "wf") == attributes
        assert await attributes_of(dbos, child_id) is None  # children do not inherit
        with SetWorkflowID("plain"):
            await parent()
        assert await attributes_of(dbos, "plain") is None


async def test_attributes_start_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_attributes_start_workflow (and _enqueue)"""
    queue = dbos.register_queue("q")

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowAttributes({"via": "start"}):
            started = await dbos.start_workflow(noop)
        with SetWorkflowAttributes({"via": "queue"}):
            queued = await queue.enqueue(noop)
        await started.get_result()
        await queued.get_result()
        assert await attributes_of(dbos, started.workflow_id) == {"via": "start"}
        assert await attributes_of(dbos, queued.workflow_id) == {"via": "queue"}


async def test_attributes_fork(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_attributes_fork"""

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowAttributes({"k": "v"}), SetWorkflowID("wf"):
            await noop()
        forked = await dbos.fork_workflow("wf", 1)
        await forked.get_result()
        assert await attributes_of(dbos, forked.workflow_id) == {"k": "v"}


async def test_attributes_client(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_attributes_client"""
    dbos.register_queue("q")

    @dbos.workflow(name="noop")
    async def noop() -> None:
        return None

    async with dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(workflow_name="noop", queue_name="q", attributes={"c": 1})
        handle = await client.enqueue(options)
        await handle.get_result()
        assert await attributes_of(dbos, handle.workflow_id) == {"c": 1}
        [listed] = await client.list_workflows(workflow_ids=[handle.workflow_id])
        assert listed.attributes == {"c": 1}


async def test_attributes_list_filter(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_attributes_list_filter"""

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowAttributes({"customer": "acme", "tier": 1, "beta": True, "note": None}):
            first = await dbos.start_workflow(noop)
        with SetWorkflowAttributes({"customer": "bigco", "tier": 2, "meta": {"r": "us"}}):
            second = await dbos.start_workflow(noop)
        await first.get_result()
        await second.get_result()

        async def matched(**filters: Any) -> set[str]:
            return {s.workflow_id for s in await dbos.list_workflows(**filters)}

        one, two = first.workflow_id, second.workflow_id
        assert await matched(attributes={"customer": "acme"}) == {one}
        assert await matched(attributes={"customer": "bigco", "tier": 2}) == {two}
        assert await matched(attributes={"customer": "acme", "tier": 2}) == set()
        assert await matched(attributes={"tier": 1}) == {one}
        assert await matched(attributes={"beta": True}) == {one}
        assert await matched(attributes={"note": None}) == {one}
        assert await matched(attributes={"meta": {"r": "us"}}) == {two}
        assert await matched(attributes={"tier": 1}, workflow_ids=[two]) == set()
        assert await matched(attributes={"missing": "key"}) == set()


async def test_attributes_validation() -> None:
    """upstream: tests/test_attributes.py::test_attributes_validation"""
    with pytest.raises(DBOSException, match="must be a dict"):
        SetWorkflowAttributes(["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(DBOSException, match="must be JSON-serializable"):
        SetWorkflowAttributes({"obj": object()})
    SetWorkflowAttributes(None)
    SetWorkflowAttributes({"a": 1, "b": [1, 2], "c": {"d": None}})


async def test_update_workflow_attributes(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_update_workflow_attributes"""

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowAttributes({"customer": "acme", "tier": 1}), SetWorkflowID("wf"):
            await noop()
        await dbos.update_workflow_attributes("wf", {"customer": "acme", "tier": 2})
        assert await attributes_of(dbos, "wf") == {"customer": "acme", "tier": 2}
        with SetWorkflowID("bare"):
            await noop()
        await dbos.update_workflow_attributes("bare", {"added": "later"})
        assert await attributes_of(dbos, "bare") == {"added": "later"}
        await dbos.update_workflow_attributes("wf", None)
        assert await attributes_of(dbos, "wf") is None


async def test_update_workflow_attributes_validation(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_update_workflow_attributes_validation"""

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await noop()
        with pytest.raises(DBOSException, match="must be a dict"):
            await dbos.update_workflow_attributes("wf", ["not", "a", "dict"])  # type: ignore[arg-type]
        with pytest.raises(DBOSException, match="must be JSON-serializable"):
            await dbos.update_workflow_attributes("wf", {"obj": object()})


async def test_update_workflow_attributes_in_workflow(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_attributes.py::test_update_workflow_attributes_in_workflow"""

    @dbos.workflow()
    async def updating() -> None:
        assert dbos.workflow_id is not None
        await dbos.update_workflow_attributes(dbos.workflow_id, {"phase": "running"})

    async with dbos.launched():
        with SetWorkflowAttributes({"phase": "start"}), SetWorkflowID("wf"):
            await updating()
        assert await attributes_of(dbos, "wf") == {"phase": "running"}
        steps = await dbos.list_workflow_steps("wf")
        assert [s.function_name for s in steps] == ["DBOS.updateWorkflowAttributes"]


async def test_update_workflow_attributes_client(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_attributes.py::test_update_workflow_attributes_client"""

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched(), Client(dbos_url) as client:
        with SetWorkflowID("wf"):
            await noop()
        await client.update_workflow_attributes("wf", {"from": "client"})
        assert await attributes_of(dbos, "wf") == {"from": "client"}


async def test_attributes_debouncer(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_attributes_debouncer"""

    @dbos.workflow()
    async def noop(value: int) -> int:
        return value

    debouncer = dbos.debouncer(noop)
    async with dbos.launched():
        with SetWorkflowAttributes({"k": "debounced"}):
            handle = await debouncer.debounce("key", 1.0, 5)
        assert await handle.get_result() == 5
        assert await attributes_of(dbos, handle.workflow_id) == {"k": "debounced"}


async def test_attributes_enqueue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_attributes_enqueue"""
    queue = dbos.register_queue("q")

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowAttributes({"via": "queue"}), SetWorkflowID("wf"):
            handle = await queue.enqueue(noop)
        await handle.get_result()
        assert (await handle.get_status()).attributes == {"via": "queue"}


async def test_attributes_list_queued(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_attributes_list_queued"""
    import trio

    queue = dbos.register_queue("q", global_concurrency=1)
    release = trio.Event()

    @dbos.workflow()
    async def blocked() -> None:
        await release.wait()

    async with dbos.launched():
        with SetWorkflowAttributes({"team": "a"}):
            first = await queue.enqueue(blocked)
        with SetWorkflowAttributes({"team": "b"}):
            second = await queue.enqueue(blocked)
        listed = await dbos.list_queued_workflows(attributes={"team": "b"})
        assert [w.workflow_id for w in listed] == [second.workflow_id]
        release.set()
        await first.get_result()
        await second.get_result()


async def test_attributes_client_list(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_attributes.py::test_attributes_client_list"""

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched(), Client(dbos_url) as client:
        with SetWorkflowAttributes({"k": 1}), SetWorkflowID("one"):
            await noop()
        with SetWorkflowID("two"):
            await noop()
        listed = await client.list_workflows(attributes={"k": 1})
        assert [w.workflow_id for w in listed] == ["one"]
