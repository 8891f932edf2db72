"""Names and signatures found different from dbos 3.4 by porting its test suite (issue 32).

Code written against dbos 3.4's signatures runs unchanged: each test calls the official
spelling and checks what it did. The scenarios are written anew for dbos_trio.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
import trio

from dbos_trio import (
    DBOS,
    Client,
    DBOSArgumentTypeError,
    DBOSInvalidArgumentError,
    SendMessage,
    SetEnqueueOptions,
    SetWorkflowID,
)

from support.backends import status_row
from support.waiting import HANG_GUARD

MakeDBOS = Callable[..., DBOS]


def test_a_send_message_is_built_positionally_as_in_dbos_3_4() -> None:
    message = SendMessage("dest", {"n": 1}, "topic", "key-1")
    assert (message.destination_id, message.message) == ("dest", {"n": 1})
    assert (message.topic, message.idempotency_key) == ("topic", "key-1")
    assert SendMessage("dest", "m").topic is None


async def test_send_bulk_delivers_positional_messages_to_forks_too(make_dbos: MakeDBOS) -> None:
    """``send_bulk(..., send_to_forks=True)`` with ``SendMessage(dest, msg, topic)``: the
    destination and its fork each receive the message."""
    dbos = make_dbos()

    @dbos.workflow()
    async def receiver() -> Any:
        return await dbos.recv("t", timeout_seconds=3600)

    async with dbos.launched():
        with trio.fail_after(HANG_GUARD):
            with SetWorkflowID("r"):
                original = await dbos.start_workflow(receiver)
            forked = await dbos.fork_workflow("r", 1)
            await dbos.send_bulk([SendMessage("r", "hello", "t")], send_to_forks=True)
            assert await original.get_result() == "hello"
            assert await forked.get_result() == "hello"


async def test_set_workflow_delay_takes_an_epoch_deadline(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    queue = dbos.register_queue("q")

    @dbos.workflow()
    async def later() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowID("d"), SetEnqueueOptions(delay_seconds=3600):
            await queue.enqueue(later)
        target = (await status_row(dbos_url, "d"))["delay_until_epoch_ms"] + 60_000
        await dbos.set_workflow_delay("d", delay_until_epoch_ms=target)
        assert (await status_row(dbos_url, "d"))["delay_until_epoch_ms"] == target
        with pytest.raises(DBOSInvalidArgumentError, match="either delay_seconds or"):
            await dbos.set_workflow_delay("d", delay_seconds=1, delay_until_epoch_ms=target)


async def test_create_schedule_takes_the_workflow_as_workflow_fn(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    @dbos.workflow(name="tick")
    async def tick(scheduled_time: datetime, context: Any) -> None:
        return None

    async with dbos.launched():
        await dbos.create_schedule(schedule_name="s", workflow_fn=tick, schedule="0 0 1 1 *")
        stored = await dbos.get_schedule("s")
        assert stored is not None and stored.workflow_name == "tick"
        with pytest.raises(DBOSArgumentTypeError, match="workflow_fn="):
            await dbos.create_schedule(schedule_name="t", schedule="0 0 1 1 *")
        with pytest.raises(DBOSArgumentTypeError, match="exactly once"):
            await dbos.create_schedule(
                schedule_name="t", workflow=tick, workflow_fn=tick, schedule="0 0 1 1 *"
            )
        assert [s.schedule_name for s in await dbos.list_schedules()] == ["s"]


async def test_list_workflows_takes_several_id_prefixes(make_dbos: MakeDBOS, dbos_url: str) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        for workflow_id in ("a-1", "a-2", "b-1", "c-1", "ab%"):
            with SetWorkflowID(workflow_id):
                await noop()
        listed = await dbos.list_workflows(workflow_id_prefix=["a-", "c"])
        assert sorted(w.workflow_id for w in listed) == ["a-1", "a-2", "c-1"]
        one = await dbos.list_workflows(workflow_id_prefix=["ab%"])
        assert [w.workflow_id for w in one] == ["ab%"]  # still no wildcards
        assert len(await dbos.list_workflows(workflow_id_prefix=[])) == 5  # as 3.4: no filter
    async with Client(dbos_url) as client:
        listed = await client.list_workflows(workflow_id_prefix=["b-", "c-"])
        assert sorted(w.workflow_id for w in listed) == ["b-1", "c-1"]


async def test_read_stream_takes_a_polling_interval(make_dbos: MakeDBOS, dbos_url: str) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def writer() -> None:
        for n in range(3):
            await dbos.write_stream("k", n)
        await dbos.close_stream("k")

    async with dbos.launched():
        with trio.fail_after(HANG_GUARD):
            with SetWorkflowID("w"):
                await writer()
            read = [v async for v in dbos.read_stream("w", "k", polling_interval_sec=0.05)]
            assert read == [0, 1, 2]
            with pytest.raises(DBOSInvalidArgumentError, match="polling_interval_sec"):
                dbos.read_stream("w", "k", polling_interval_sec=0)
    async with Client(dbos_url) as client:
        with trio.fail_after(HANG_GUARD):
            from_client = client.read_stream("w", "k", offset=1, polling_interval_sec=0.5)
            assert [v async for v in from_client] == [1, 2]


async def test_a_client_of_no_application_answers_the_version_calls(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    """dbos 3.4's client takes no application name for its version calls: the latest is
    the newest of any application, and promoting a version acts for its own."""
    async with make_dbos(app_version="v1").launched():
        pass
    async with make_dbos(app_version="v2").launched():
        pass
    async with Client(dbos_url) as client:
        assert (await client.get_latest_application_version()).version_name == "v2"
        await client.set_latest_application_version("v1")
        latest = await client.get_latest_application_version()
        assert (latest.version_name, latest.application_name) == ("v1", "wf-tests")
        listed = await client.list_application_versions()
        assert [v.version_name for v in listed] == ["v1", "v2"]
