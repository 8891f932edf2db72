"""Port of the official SDK's ``tests/test_client.py``: a ``Client`` in the same test
enqueues, sends, reads events, retrieves and forks the workflows a DBOS app serves."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
import trio
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    Client,
    DBOSException,
    DBOSQueueDeduplicatedError,
    EnqueueOptions,
    SendMessage,
    SetWorkflowID,
)


@attrs.define
class Collateral:
    """The upstream ``client_collateral`` app: named workflows a client can target."""

    dbos: DBOS
    order: list[str]


@pytest.fixture
def app(dbos: DBOS) -> Collateral:
    order: list[str] = []
    dbos.register_queue("test_queue")
    dbos.register_queue("inorder_queue", global_concurrency=1)

    @dbos.workflow(name="enqueue_test")
    async def enqueue_test(number: int, text: str, person: dict[str, Any]) -> str:
        return f"{number}-{text}-{json.dumps(person)}"

    @dbos.workflow(name="send_test")
    async def send_test(topic: str | None = None) -> Any:
        return await dbos.recv(topic, 60)

    @dbos.workflow(name="retrieve_test")
    async def retrieve_test(value: str) -> str:
        await dbos.sleep(5)
        order.append(value)
        return value

    @dbos.workflow(name="event_test")
    async def event_test(key: str, value: str, update: float | None = None) -> str:
        await dbos.set_event(key, value)
        if update is not None:
            await dbos.sleep(update)
            await dbos.set_event(key, f"updated-{value}")
        return f"{key}-{value}"

    @dbos.workflow(name="recv_two")
    async def recv_two() -> list[Any]:
        return [await dbos.recv(None, 10), await dbos.recv(None, 10)]

    @dbos.workflow(name="blocked_workflow")
    async def blocked_workflow() -> None:
        while True:
            await dbos.sleep(0.1)

    return Collateral(dbos, order)


JOHN = {"first": "John", "last": "Doe", "age": 30}
JOHN_RESULT = '42-test-{"first": "John", "last": "Doe", "age": 30}'


def enqueue_options(**fields: Any) -> EnqueueOptions:
    return EnqueueOptions(workflow_name="enqueue_test", queue_name="test_queue", **fields)


async def test_client_enqueue_and_get_result(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_enqueue_and_get_result"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        handle = await client.enqueue(enqueue_options(workflow_id="wf"), 42, "test", JOHN)
        assert await handle.get_result() == JOHN_RESULT
        status = await app.dbos.get_workflow_status("wf")
        assert status is not None and status.status == "SUCCESS"
        assert status.name == "enqueue_test"


@pytest.mark.parametrize("bad_id", ["", "   "])
async def test_client_enqueue_rejects_empty_workflow_id(
    app: Collateral, dbos_url: str, bad_id: str
) -> None:
    """upstream: tests/test_client.py::test_client_enqueue_rejects_empty_workflow_id"""
    async with Client(dbos_url) as client:
        with pytest.raises(DBOSException, match="workflow ID"):
            await client.enqueue(enqueue_options(workflow_id=bad_id), 42, "test", JOHN)
        assert await client.list_workflows() == []


@pytest.mark.parametrize("bad_id", ["", "   "])
async def test_set_workflow_id_rejects_empty(bad_id: str) -> None:
    """upstream: tests/test_client.py::test_set_workflow_id_rejects_empty"""
    with pytest.raises(DBOSException, match="workflow ID"):
        SetWorkflowID(bad_id)


async def test_enqueue_with_timeout(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_enqueue_with_timeout"""
    from dbos_trio import DBOSAwaitedWorkflowCancelledError

    async with app.dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(
            workflow_name="blocked_workflow", queue_name="test_queue", workflow_timeout=1.0
        )
        handle = await client.enqueue(options)
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        assert (await handle.get_status()).status == "CANCELLED"


async def test_client_enqueue_appver_not_set(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_enqueue_appver_not_set"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        await client.enqueue(enqueue_options(workflow_id="wf"), 42, "test", JOHN)
        assert await (await app.dbos.retrieve_workflow("wf")).get_result() == JOHN_RESULT
        status = await app.dbos.get_workflow_status("wf")
        assert status is not None and status.app_version == app.dbos.app_version


async def test_client_enqueue_appver_set(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_enqueue_appver_set"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        options = enqueue_options(workflow_id="wf", app_version=app.dbos.app_version)
        handle = await client.enqueue(options, 42, "test", JOHN)
        assert await handle.get_result() == JOHN_RESULT


async def test_client_enqueue_wrong_appver(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_enqueue_wrong_appver"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        options = enqueue_options(workflow_id="wf", app_version="0123456789abcdef")
        await client.enqueue(options, 42, "test", JOHN)
        await trio.sleep(5)
        status = await app.dbos.get_workflow_status("wf")
        assert status is not None and status.status == "ENQUEUED"
        assert status.app_version == "0123456789abcdef"


async def test_client_enqueue_idempotent(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_enqueue_idempotent"""
    async with Client(dbos_url) as client:
        await client.enqueue(enqueue_options(workflow_id="wf"), 42, "test", JOHN)
        await client.enqueue(enqueue_options(workflow_id="wf"), 42, "test", JOHN)
        assert len(await client.list_workflows()) == 1
    async with app.dbos.launched():
        assert await (await app.dbos.retrieve_workflow("wf")).get_result() == JOHN_RESULT


async def test_client_send_with_topic(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_send_with_topic (and _no_topic)"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        with_topic = await client.enqueue(
            EnqueueOptions(workflow_name="send_test", queue_name="test_queue"), "t"
        )
        no_topic = await client.enqueue(
            EnqueueOptions(workflow_name="send_test", queue_name="test_queue")
        )
        await client.send(with_topic.workflow_id, "hello", "t")
        await client.send(no_topic.workflow_id, "plain")
        assert await with_topic.get_result() == "hello"
        assert await no_topic.get_result() == "plain"


async def test_client_send_bulk(app: Collateral, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_client.py::test_client_send_bulk"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(workflow_name="send_test", queue_name="test_queue")
        first = await client.enqueue(options, "t")
        second = await client.enqueue(options)
        await client.send_bulk(
            [SendMessage(first.workflow_id, "a", "t"), SendMessage(second.workflow_id, "b")]
        )
        assert [await first.get_result(), await second.get_result()] == ["a", "b"]


async def test_client_send_idempotent(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_send_idempotent"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(workflow_name="recv_two", queue_name="test_queue")
        handle = await client.enqueue(options)
        await client.send(handle.workflow_id, "once", idempotency_key="k")
        await client.send(handle.workflow_id, "twice", idempotency_key="k")
        assert await handle.get_result() == ["once", None]


async def test_client_get_event(app: Collateral, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_client.py::test_client_get_event (and _get_event_finished)"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(
            workflow_name="event_test", queue_name="test_queue", workflow_id="wf"
        )
        handle = await client.enqueue(options, "key", "value")
        assert await client.get_event("wf", "key", 10) == "value"
        assert await handle.get_result() == "key-value"
        assert await client.get_event("wf", "key", 10) == "value"  # finished: still there
        assert await client.get_event("wf", "missing", 1) is None


async def test_client_get_event_update(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_get_event_update"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(
            workflow_name="event_test", queue_name="test_queue", workflow_id="wf"
        )
        handle = await client.enqueue(options, "key", "value", 10)
        assert await client.get_event("wf", "key", 10) == "value"
        assert await handle.get_result() == "key-value"
        assert await client.get_event("wf", "key", 10) == "updated-value"


async def test_client_retrieve_wf(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_retrieve_wf (and _retrieve_wf_done)"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(
            workflow_name="retrieve_test", queue_name="test_queue", workflow_id="wf"
        )
        await client.enqueue(options, "abc")
        handle = await client.retrieve_workflow("wf")
        assert (await handle.get_status()).status in ("ENQUEUED", "PENDING")
        assert await handle.get_result() == "abc"
        done = await client.retrieve_workflow("wf")
        assert (await done.get_status()).status == "SUCCESS"
        assert await done.get_result() == "abc"


async def test_client_fork(app: Collateral, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_client.py::test_client_fork"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        handle = await client.enqueue(enqueue_options(workflow_id="wf"), 42, "test", JOHN)
        assert await handle.get_result() == JOHN_RESULT
        forked = await client.fork_workflow("wf", 1)
        assert forked.workflow_id != "wf"
        assert await forked.get_result() == JOHN_RESULT


async def test_enqueue_with_deduplication(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_enqueue_with_deduplication"""
    async with Client(dbos_url) as client:
        await client.enqueue(
            enqueue_options(workflow_id="one", deduplication_id="d"), 42, "test", JOHN
        )
        with pytest.raises(DBOSQueueDeduplicatedError):
            await client.enqueue(
                enqueue_options(workflow_id="two", deduplication_id="d"), 42, "test", JOHN
            )
    async with app.dbos.launched():
        assert await (await app.dbos.retrieve_workflow("one")).get_result() == JOHN_RESULT


async def test_enqueue_with_priority(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_enqueue_with_priority"""
    async with Client(dbos_url) as client:
        options = EnqueueOptions(workflow_name="retrieve_test", queue_name="inorder_queue")
        await client.enqueue(attrs.evolve(options, workflow_id="one"), "abc")
        await client.enqueue(attrs.evolve(options, workflow_id="two", priority=2), "def")
        await client.enqueue(attrs.evolve(options, workflow_id="three", priority=1), "ghi")
        assert (await client.get_workflow_status("three")).priority == 1  # type: ignore[union-attr]
    async with app.dbos.launched():
        for workflow_id in ("one", "two", "three"):
            await (await app.dbos.retrieve_workflow(workflow_id)).get_result()
    assert app.order == ["abc", "ghi", "def"]


async def test_client_no_migrate(empty_database_url: str) -> None:
    """upstream: tests/test_client.py::test_client_no_migrate (PostgreSQL: an empty database)"""
    with pytest.raises(Exception):  # noqa: B017 - any error: the client never creates tables
        async with Client(empty_database_url) as client:
            await client.list_workflows()


async def test_client_send_no_topic(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_send_no_topic"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="send_test", queue_name="test_queue", workflow_id="r")
        )
        await client.send("r", "plain")
        assert await handle.get_result() == "plain"


async def test_client_get_event_finished(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_get_event_finished"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(
            workflow_name="event_test", queue_name="test_queue", workflow_id="wf"
        )
        assert await (await client.enqueue(options, "key", "value")).get_result() == "key-value"
        assert await client.get_event("wf", "key", 10) == "value"


async def test_client_get_event_update_finished(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_get_event_update_finished"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(
            workflow_name="event_test", queue_name="test_queue", workflow_id="wf"
        )
        await (await client.enqueue(options, "key", "value", 1)).get_result()
        assert await client.get_event("wf", "key", 10) == "updated-value"


async def test_client_retrieve_wf_done(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_retrieve_wf_done"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(
            workflow_name="retrieve_test", queue_name="test_queue", workflow_id="wf"
        )
        await (await client.enqueue(options, "abc")).get_result()
        done = await client.retrieve_workflow("wf")
        assert (await done.get_status()).status == "SUCCESS"
        assert await done.get_result() == "abc"


async def test_client_enqueue_with_otel_context(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_enqueue_with_otel_context

    dbos_trio's client records the current span's context (upstream passes it as the
    ``otel_context`` option) as the trace carrier, beside the caller's attributes. A real
    tracer provider: without one there is no valid span context to carry."""
    from support.otel_support import memory_provider

    provider, _ = memory_provider()
    tracer = provider.get_tracer("dbos")
    async with app.dbos.launched(), Client(dbos_url) as client:
        with tracer.start_as_current_span("caller"):
            handle = await client.enqueue(
                enqueue_options(attributes={"customer": "acme"}), 42, "test", JOHN
            )
        assert await handle.get_result() == JOHN_RESULT
        attributes = (
            await (await client.retrieve_workflow(handle.workflow_id)).get_status()
        ).attributes
        assert attributes is not None
        assert attributes["customer"] == "acme"  # the caller's own survive beside the carrier
        assert "traceparent" in attributes["dbos.otelContext"]


async def test_client_enqueue_without_otel_context(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_enqueue_without_otel_context"""
    async with app.dbos.launched(), Client(dbos_url) as client:
        handle = await client.enqueue(
            enqueue_options(attributes={"customer": "acme"}), 42, "test", JOHN
        )
        assert await handle.get_result() == JOHN_RESULT
        status = await (await client.retrieve_workflow(handle.workflow_id)).get_status()
        assert status.attributes == {"customer": "acme"}


async def test_client_enqueue_otel_context_without_active_span(
    app: Collateral, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_client.py::test_client_enqueue_otel_context_without_active_span

    OpenTelemetry is in use (imported, a provider made) but no span is current: nothing
    to propagate, so no carrier is recorded."""
    from support.otel_support import memory_provider

    memory_provider()
    async with app.dbos.launched(), Client(dbos_url) as client:
        handle = await client.enqueue(enqueue_options(), 42, "test", JOHN)
        assert await handle.get_result() == JOHN_RESULT
        status = await (await client.retrieve_workflow(handle.workflow_id)).get_status()
        assert status.attributes is None
