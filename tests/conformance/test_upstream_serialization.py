"""Port of the official SDK's ``tests/test_serialization.py`` (the parts that are not about
its private row helpers): a configured serializer, portable workflows, and portable
errors."""

from __future__ import annotations

import json
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


class NotJSON:
    """Has no portable JSON form."""


class AppErrorWithData(ValueError):
    """An application error whose ``data`` attribute portable JSON cannot hold."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = 409
        self.data = NotJSON()


class CustomException(Exception):
    pass


class JsonSerializer:
    """A custom serializer, stored as ``custom_json``."""

    def serialize(self, value: Any) -> str:
        return json.dumps(value)

    def deserialize(self, text: str) -> Any:
        return json.loads(text)

    def name(self) -> str:
        return "custom_json"


async def test_portable_error_with_unserializable_data(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_serialization.py::test_portable_error_with_unserializable_data"""

    @dbos.workflow(name="portableUnserializableErr", serialization="portable")
    async def raises_unserializable() -> None:
        raise AppErrorWithData("boom")

    async with dbos.launched():
        # The caller sees the original error, not a serialization error masking it.
        with SetWorkflowID("wf"), pytest.raises(AppErrorWithData):
            await raises_unserializable()
        handle = await dbos.retrieve_workflow("wf")
        assert (await handle.get_status()).status == "ERROR"  # recorded, not left PENDING
        # Read back: name, message and code kept, the unserializable data as a string.
        with pytest.raises(PortableWorkflowError) as raised:
            await handle.get_result()
        assert raised.value.name == "AppErrorWithData"
        assert raised.value.message == "boom"
        assert raised.value.code == 409
        assert isinstance(raised.value.data, str)


async def test_client_send_serialization(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_serialization.py::test_client_send_serialization"""

    @dbos.workflow()
    async def recv_workflow(topic: str) -> Any:
        return await dbos.recv(topic, timeout_seconds=10)

    async def stored_format(destination: str, topic: str) -> Any:
        [(fmt,)] = await query(
            dbos_url,
            "SELECT serialization FROM {t}notifications WHERE destination_uuid = %s AND topic = %s",
            destination,
            topic,
        )
        return fmt

    async with dbos.launched(), Client(dbos_url) as client:
        with SetWorkflowID("dest-default"):
            default = await dbos.start_workflow(recv_workflow, "default")
        await client.send("dest-default", {"msg": "hello"}, topic="default")
        assert await default.get_result() == {"msg": "hello"}
        assert await stored_format("dest-default", "default") == "py_pickle"
        with SetWorkflowID("dest-portable"):
            portable = await dbos.start_workflow(recv_workflow, "portable")
        await client.send(
            "dest-portable", {"msg": "hello"}, topic="portable", serialization="portable"
        )
        assert await portable.get_result() == {"msg": "hello"}
        assert await stored_format("dest-portable", "portable") == "portable_json"


async def test_custom_serializer_across_restarts(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_serialization.py::test_custom_serializer_across_restarts

    Phase 1 the default (pickle) serializer, phase 2 a custom JSON one, phase 3 the
    default again: every row keeps its format, built-in formats are always read, and one
    whose serializer is not configured raises ``TypeError`` on the paths that must decode
    it while listings show it as its stored string."""

    def app(serializer: Any = None) -> tuple[DBOS, Any]:
        settings: dict[str, Any] = {"app_name": "wf-tests", "database_url": dbos_url}
        if serializer is not None:
            settings["serializer"] = serializer
        instance = DBOS(Config(**settings))

        @instance.step()
        async def ser_restart_step(value: str) -> str:
            return value

        @instance.workflow(name="ser_restart_workflow")
        async def ser_restart_workflow(value: str) -> str:
            step_result = await ser_restart_step(value)
            await instance.set_event("evt_key", {"data": value})
            return f"result_{step_result}"

        return instance, ser_restart_workflow

    async def stored_formats(workflow_id: str) -> tuple[Any, Any]:
        [(workflow_format,)] = await query(
            dbos_url,
            "SELECT serialization FROM {t}workflow_status WHERE workflow_uuid = %s",
            workflow_id,
        )
        [(event_format,)] = await query(
            dbos_url,
            "SELECT serialization FROM {t}workflow_events WHERE workflow_uuid = %s AND key = %s",
            workflow_id,
            "evt_key",
        )
        return workflow_format, event_format

    async def outputs(reader: Any, *ids: str) -> dict[str, Any]:
        return {
            w.workflow_id: w.output for w in await reader.list_workflows(workflow_ids=list(ids))
        }

    raw_phase2 = json.dumps("result_phase2")

    first, workflow = app()
    async with first.launched():
        with SetWorkflowID("phase1"):
            assert await workflow("phase1") == "result_phase1"
        assert await stored_formats("phase1") == ("py_pickle", "py_pickle")
        assert await first.get_event("phase1", "evt_key") == {"data": "phase1"}
        assert await outputs(first, "phase1") == {"phase1": "result_phase1"}
        assert len(await first.list_workflow_steps("phase1")) >= 1
    async with Client(dbos_url) as client:
        assert await outputs(client, "phase1") == {"phase1": "result_phase1"}
        assert await (await client.retrieve_workflow("phase1")).get_result() == "result_phase1"
        assert await client.get_event("phase1", "evt_key") == {"data": "phase1"}
        assert len(await client.list_workflow_steps("phase1")) >= 1

    second, workflow = app(JsonSerializer())
    async with second.launched():
        with SetWorkflowID("phase2"):
            assert await workflow("phase2") == "result_phase2"
        assert await stored_formats("phase2") == ("custom_json", "custom_json")
        assert await (await second.retrieve_workflow("phase1")).get_result() == "result_phase1"
        assert await second.get_event("phase1", "evt_key") == {"data": "phase1"}
        assert await outputs(second, "phase1", "phase2") == {
            "phase1": "result_phase1",
            "phase2": "result_phase2",
        }
    async with Client(dbos_url, serializer=JsonSerializer()) as custom:
        for workflow_id in ("phase1", "phase2"):
            result = await (await custom.retrieve_workflow(workflow_id)).get_result()
            assert result == f"result_{workflow_id}"
            assert await custom.get_event(workflow_id, "evt_key") == {"data": workflow_id}
        assert await outputs(custom, "phase1", "phase2") == {
            "phase1": "result_phase1",
            "phase2": "result_phase2",
        }
    async with Client(dbos_url) as plain:
        assert await (await plain.retrieve_workflow("phase1")).get_result() == "result_phase1"
        assert await plain.get_event("phase1", "evt_key") == {"data": "phase1"}
        with pytest.raises(TypeError, match="custom_json is not available"):
            await (await plain.retrieve_workflow("phase2")).get_result()
        with pytest.raises(TypeError, match="custom_json is not available"):
            await plain.get_event("phase2", "evt_key")
        assert await outputs(plain, "phase1", "phase2") == {
            "phase1": "result_phase1",
            "phase2": raw_phase2,
        }

    third, workflow = app()
    async with third.launched():
        assert await (await third.retrieve_workflow("phase1")).get_result() == "result_phase1"
        assert await third.get_event("phase1", "evt_key") == {"data": "phase1"}
        with pytest.raises(TypeError, match="custom_json is not available"):
            await (await third.retrieve_workflow("phase2")).get_result()
        with pytest.raises(TypeError, match="custom_json is not available"):
            await third.get_event("phase2", "evt_key")
        assert await outputs(third, "phase1", "phase2") == {
            "phase1": "result_phase1",
            "phase2": raw_phase2,
        }
        steps = await third.list_workflow_steps("phase2")
        assert len(steps) >= 1 and isinstance(steps[0].output, str)
        with SetWorkflowID("phase3"):
            assert await workflow("phase3") == "result_phase3"
        assert (await stored_formats("phase3"))[0] == "py_pickle"
    async with Client(dbos_url, serializer=JsonSerializer()) as rescue:
        # A client with the custom serializer still reads what the executor no longer can.
        for workflow_id in ("phase1", "phase2", "phase3"):
            result = await (await rescue.retrieve_workflow(workflow_id)).get_result()
            assert result == f"result_{workflow_id}"
        assert await rescue.get_event("phase2", "evt_key") == {"data": "phase2"}
        assert await outputs(rescue, "phase1", "phase2", "phase3") == {
            "phase1": "result_phase1",
            "phase2": "result_phase2",
            "phase3": "result_phase3",
        }
    async with Client(dbos_url) as plain:
        assert await (await plain.retrieve_workflow("phase3")).get_result() == "result_phase3"
        with pytest.raises(TypeError, match="custom_json is not available"):
            await (await plain.retrieve_workflow("phase2")).get_result()
        steps = await plain.list_workflow_steps("phase2")
        assert len(steps) >= 1 and isinstance(steps[0].output, str)


async def test_portable_default_step_error_not_masked(
    dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_serialization.py::test_portable_default_step_error_not_masked"""
    dbos = DBOS(
        Config(app_name="wf-tests", database_url=dbos_url, serializer=PortableJSONSerializer())
    )

    @dbos.step()
    async def failing_step() -> None:
        raise CustomException("Custom error message")

    @dbos.workflow()
    async def failing_workflow() -> None:
        await failing_step()

    async with dbos.launched():
        with SetWorkflowID("wf"):
            handle = await dbos.start_workflow(failing_workflow)
        # The step's own exception reaches the caller, not an error about serializing it.
        with pytest.raises(CustomException) as raised:
            await handle.get_result()
        assert str(raised.value) == "Custom error message"
    async with dbos.launched():
        # Recorded durably in portable form: read back, the real cause by name.
        with pytest.raises(PortableWorkflowError) as stored:
            await (await dbos.retrieve_workflow("wf")).get_result()
        assert stored.value.name == "CustomException"
        assert stored.value.message == "Custom error message"
