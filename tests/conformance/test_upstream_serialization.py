"""Port of the official SDK's ``tests/test_serialization.py`` (the parts that are not about
its private row helpers): a configured serializer, portable workflows, and portable
errors."""

from __future__ import annotations

from typing import Any

import pytest
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    Client,
    Config,
    EnqueueOptions,
    PortableJSONSerializer,
    PortableWorkflowError,
    SetWorkflowID,
)

from support.backends import query


class PlainError(Exception):
    pass


async def serialization_of(url: str, workflow_id: str) -> Any:
    rows = await query(
        url, "SELECT serialization FROM {t}workflow_status WHERE workflow_uuid = %s", workflow_id
    )
    return rows[0][0]


async def test_custom_serializer(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_serialization.py::test_custom_serializer (the portable one)"""
    dbos = DBOS(
        Config(app_name="wf-tests", database_url=dbos_url, serializer=PortableJSONSerializer())
    )
    queue = dbos.register_queue("example_queue")

    @dbos.workflow(name="recv_workflow")
    async def recv_workflow(value: str) -> Any:
        await dbos.set_event("key", value)
        return await dbos.recv()

    async with dbos.launched():
        handle = await queue.enqueue(recv_workflow, "val")
        assert await dbos.get_event(handle.workflow_id, "key") == "val"
        await dbos.send(handle.workflow_id, "val")
        assert await handle.get_result() == "val"
        assert await serialization_of(dbos_url, handle.workflow_id) == "portable_json"
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        assert "setEvent" in steps[0].function_name
        assert "DBOS.recv" in steps[1].function_name and steps[1].output == "val"
        async with Client(dbos_url, serializer=PortableJSONSerializer()) as client:
            assert len(await client.list_workflows()) == 1
            options = EnqueueOptions(workflow_name="recv_workflow", queue_name="example_queue")
            again = await client.enqueue(options, "val")
            await client.send(again.workflow_id, "val")
            assert await again.get_result() == "val"


async def test_portable_ser(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_serialization.py::test_portable_ser"""

    @dbos.workflow(name="workflowDefault")
    async def default_format(text: str, number: int, obj: dict[str, Any]) -> str:
        return f"{text}-{number}-{obj['k']}"

    @dbos.workflow(name="workflowPortable", serialization="portable")
    async def portable(text: str, number: int, obj: dict[str, Any]) -> str:
        return f"{text}-{number}-{obj['k']}"

    @dbos.workflow(name="workflowPortableDirect", serialization="portable")
    async def direct() -> str:
        await dbos.set_event("defstat", {"status": "Happy"})
        await dbos.write_stream("defstream", {"stream": "OhYeah"})
        return "direct"

    @dbos.workflow(name="workflowPortableError", serialization="portable")
    async def failing() -> None:
        raise PlainError("This is just a plain error")

    async with dbos.launched():
        with SetWorkflowID("default"):
            assert await default_format("s", 1, {"k": "v"}) == "s-1-v"
        with SetWorkflowID("portable"):
            assert await portable("s", 1, {"k": "v"}) == "s-1-v"
        assert await serialization_of(dbos_url, "default") == "py_pickle"
        assert await serialization_of(dbos_url, "portable") == "portable_json"
        with SetWorkflowID("direct"):
            assert await direct() == "direct"
        assert await dbos.get_event("direct", "defstat") == {"status": "Happy"}
        assert [v async for v in dbos.read_stream("direct", "defstream")] == [{"stream": "OhYeah"}]
        with SetWorkflowID("error"), pytest.raises(PlainError):
            await failing()
        handle = await dbos.retrieve_workflow("error")
        with pytest.raises(PortableWorkflowError) as raised:
            await handle.get_result()
        assert "This is just a plain error" in str(raised.value)
