"""The ``Client`` on its own: what it writes, what it reads, and how it waits.

Every test gets a fresh, migrated database on each backend in turn (the ``url`` fixture:
``system_database_url``). Rows are read back on a connection of the test's own
(:func:`support.backends.query`), never through the client under test. Workflows that must run are
served by a dbos_trio executor in the same process: the client never runs workflow code
itself.
"""

from __future__ import annotations

import base64
import json
import pickle
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from dbos_trio import (
    DBOS,
    Config,
    DBOSAwaitedWorkflowCancelledError,
    DBOSConflictingWorkflowError,
    DBOSException,
    DBOSInitializationError,
    DBOSNonExistentWorkflowError,
    DBOSQueueDeduplicatedError,
)
from dbos_trio._client import Client, EnqueueOptions
from dbos_trio.errors import DBOSStreamTimeoutError
from dbos_trio.testing import sqlite_url

from support.backends import query, run
from support.waiting import HANG_GUARD

APP = "client-tests"
QUEUE = "client_q"


@pytest.fixture
def url(system_database_url: str) -> str:
    return system_database_url


async def status_row(url: str, workflow_id: str) -> dict[str, Any]:
    """The ``workflow_status`` row, with the inputs of ``workflow_input`` as ``new_inputs``."""
    found = await run(
        url,
        "SELECT ws.*, wi.inputs AS new_inputs FROM {t}workflow_status ws "
        "LEFT JOIN {t}workflow_input wi USING (workflow_uuid) "
        "WHERE workflow_uuid = %s",
        workflow_id,
    )
    assert found.rows, f"no row for {workflow_id}"
    return dict(zip(found.columns, found.rows[0], strict=True))


def unpickle(text: str) -> Any:
    return pickle.loads(base64.b64decode(text))


def opened(url: str, **kwargs: Any) -> Client:
    kwargs.setdefault("outcome_poll_interval", 0.1)
    return Client(url, **kwargs)


# --- an application serving the queue ---------------------------------------------------


def make_app(url: str) -> DBOS:
    dbos = DBOS(Config(app_name=APP, database_url=url, app_version="v1"))
    dbos.register_queue(QUEUE, polling_interval_sec=0.1)

    @dbos.workflow(name="add")
    async def add(a: int, b: int) -> int:
        return a + b

    @dbos.workflow(name="fail")
    async def fail(text: str) -> None:
        raise ValueError(text)

    @dbos.workflow(name="kwargs_echo")
    async def kwargs_echo(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"args": list(args), "kwargs": kwargs}

    @dbos.workflow(name="chatty", serialization="portable")
    async def chatty(label: str) -> Any:
        await dbos.set_event("status", {"label": label, "ready": True})
        await dbos.write_stream("numbers", 1)
        await dbos.write_stream("numbers", 2)
        await dbos.close_stream("numbers")
        message = await dbos.recv("inbox", timeout_seconds=20)
        return {"label": label, "message": message}

    @dbos.workflow(name="waits")
    async def waits() -> Any:
        return await dbos.recv("never", timeout_seconds=30)

    return dbos


@asynccontextmanager
async def serving(url: str) -> AsyncIterator[DBOS]:
    dbos = make_app(url)
    async with dbos.launched():
        yield dbos


# --- schema verification ----------------------------------------------------------------


async def test_an_empty_database_is_refused_and_left_empty(empty_database_url: str) -> None:
    url = empty_database_url
    with pytest.raises(DBOSInitializationError) as raised:
        async with Client(url):
            pass  # pragma: no cover
    message = str(raised.value)
    assert "never creates or migrates" in message and "no schema 'dbos'" in message
    assert await query(url, "SELECT 1 FROM pg_namespace WHERE nspname = 'dbos'") == []


async def test_an_empty_or_missing_sqlite_file_is_refused_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    empty, missing = tmp_path / "empty.sqlite", tmp_path / "missing.sqlite"
    empty.touch()
    for path, problem in ((empty, "at version 0"), (missing, "does not exist")):
        with pytest.raises(DBOSInitializationError) as raised:
            async with Client(sqlite_url(path)):
                pass  # pragma: no cover
        assert "never creates or migrates" in str(raised.value)
        assert problem in str(raised.value)
    with closing(sqlite3.connect(empty)) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchall() == [(0,)]
    assert not missing.exists()


async def test_a_database_behind_is_refused(url: str) -> None:
    await query(url, "UPDATE {t}dbos_migrations SET version = 100")
    # PostgreSQL says "at migration version 100", SQLite "at version 100".
    with pytest.raises(DBOSInitializationError, match=r"at (migration )?version 100\b"):
        async with Client(url):
            pass  # pragma: no cover
    assert await query(url, "SELECT version FROM {t}dbos_migrations") == [(100,)]


async def test_a_bad_url_fails_before_connecting() -> None:
    with pytest.raises(DBOSInitializationError, match="postgresql://"):
        Client("mysql://nobody:secret@host/db")
    assert "secret" not in repr(Client("postgresql://u:secret@h/db"))


async def test_an_exception_in_the_block_leaves_it_as_itself(url: str) -> None:
    with pytest.raises(DBOSNonExistentWorkflowError):
        async with Client(url) as client:
            await client.fork_workflow("no-such-workflow", 1)
    with pytest.raises(KeyError) as raised:
        async with Client(url):
            raise KeyError("mine")
    assert raised.value.args == ("mine",)
    # A group the body raised itself is its own exception, kept whole.
    with pytest.raises(ExceptionGroup) as grouped:
        async with Client(url):
            raise ExceptionGroup("two", [KeyError("a"), ValueError("b")])
    assert [type(e) for e in grouped.value.exceptions] == [KeyError, ValueError]


async def test_calls_outside_the_block_raise(url: str) -> None:
    client = Client(url)
    with pytest.raises(DBOSException, match="not open"):
        await client.send("x", 1)
    async with client:
        pass
    with pytest.raises(DBOSException, match="not open"):
        await client.list_workflows()


# --- enqueue: the rows it writes --------------------------------------------------------


async def test_a_nameless_client_writes_an_unclaimed_enqueued_row(url: str) -> None:
    async with opened(url) as client:
        handle = await client.enqueue(EnqueueOptions(workflow_name="add", queue_name=QUEUE), 1, 2)
        status = await handle.get_status()
    row = await status_row(url, handle.workflow_id)
    assert row["status"] == "ENQUEUED" == status.status
    assert row["name"] == "add" and row["queue_name"] == QUEUE
    assert row["executor_id"] is None
    assert row["application_version"] is None
    assert row["application_name"] is None
    assert row["recovery_attempts"] == 0
    assert row["owner_xid"] is None
    assert row["serialization"] == "py_pickle"
    assert row["priority"] == 0
    assert row["inputs"] is None  # the payload lives in workflow_input
    assert unpickle(row["new_inputs"]) == {"args": (1, 2), "kwargs": {}}
    assert status.input == {"args": (1, 2), "kwargs": {}}


async def test_application_name_comes_from_the_options_then_the_client(url: str) -> None:
    async with opened(url, app_name="billing") as client:
        own = await client.enqueue(EnqueueOptions(workflow_name="add", queue_name=QUEUE), 1, 1)
        other = await client.enqueue(
            EnqueueOptions(workflow_name="add", queue_name=QUEUE, application_name="shipping"),
            1,
            1,
        )
    assert (await status_row(url, own.workflow_id))["application_name"] == "billing"
    assert (await status_row(url, other.workflow_id))["application_name"] == "shipping"


async def test_every_option_lands_in_its_column(url: str) -> None:
    options = EnqueueOptions(
        workflow_name="add",
        queue_name=QUEUE,
        workflow_id="wf-options",
        app_version="v7",
        workflow_timeout=2.5,
        deduplication_id="dedup-1",
        priority=5,
        queue_partition_key="tenant-1",
        class_name="Billing",
        instance_name="eu",
        authenticated_user="alice",
        authenticated_roles=["admin", "ops"],
    )
    async with opened(url) as client:
        handle = await client.enqueue(options, 3, 4)
        status = await handle.get_status()
    assert handle.workflow_id == "wf-options"
    row = await status_row(url, "wf-options")
    assert row["application_version"] == "v7"
    assert row["workflow_timeout_ms"] == 2500
    assert row["workflow_deadline_epoch_ms"] is None  # armed at dequeue
    assert row["deduplication_id"] == "dedup-1"
    assert row["priority"] == 5
    assert row["queue_partition_key"] == "tenant-1"
    assert row["class_name"] == "Billing" and row["config_name"] == "eu"
    assert row["authenticated_user"] == "alice"
    assert json.loads(row["authenticated_roles"]) == ["admin", "ops"]
    assert status.authenticated_roles == ["admin", "ops"]
    assert status.app_version == "v7"


async def test_portable_inputs_use_the_cross_language_envelope(url: str) -> None:
    async with opened(url) as client:
        positional = await client.enqueue(
            EnqueueOptions(workflow_name="add", queue_name=QUEUE, serialization="portable"),
            "a",
            [1, 2],
            {"k": None},
        )
        named = await client.enqueue(
            EnqueueOptions(workflow_name="add", queue_name=QUEUE, serialization="portable"),
            1,
            b=2,
        )
    row = await status_row(url, positional.workflow_id)
    assert row["serialization"] == "portable_json"
    assert row["new_inputs"] == '{"positionalArgs":["a",[1,2],{"k":null}]}'
    row = await status_row(url, named.workflow_id)
    assert row["new_inputs"] == '{"positionalArgs":[1],"namedArgs":{"b":2}}'


async def test_native_forces_pickle_even_with_another_serializer(url: str) -> None:
    from dbos_trio import PortableJSONSerializer

    async with opened(url, serializer=PortableJSONSerializer()) as client:
        default = await client.enqueue(EnqueueOptions(workflow_name="add", queue_name=QUEUE), 1, 2)
        native = await client.enqueue(
            EnqueueOptions(workflow_name="add", queue_name=QUEUE, serialization="native"), 1, 2
        )
    assert (await status_row(url, default.workflow_id))["serialization"] == "portable_json"
    assert (await status_row(url, native.workflow_id))["serialization"] == "py_pickle"


async def test_a_delay_writes_a_delayed_row(url: str) -> None:
    async with opened(url) as client:
        before = int(time.time() * 1000)
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="add", queue_name=QUEUE, delay_seconds=30), 1, 2
        )
    row = await status_row(url, handle.workflow_id)
    assert row["status"] == "DELAYED"
    assert before + 29_000 <= row["delay_until_epoch_ms"] <= before + 32_000


async def test_a_delayed_workflow_runs_once_its_delay_passes(url: str) -> None:
    async with serving(url), opened(url) as client:
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="add", queue_name=QUEUE, delay_seconds=0.3), 20, 22
        )
        with trio.fail_after(15):
            assert await handle.get_result() == 42


async def test_deduplication_rejects_or_returns_the_holder(url: str) -> None:
    options = EnqueueOptions(workflow_name="add", queue_name=QUEUE, deduplication_id="once")
    async with opened(url) as client:
        first = await client.enqueue(options, 1, 2)
        with pytest.raises(DBOSQueueDeduplicatedError):
            await client.enqueue(options, 3, 4)
        again = await client.enqueue(
            attrs.evolve(options, duplication_policy="return-existing"), 5, 6
        )
        assert again.workflow_id == first.workflow_id
        # Once the holder leaves the queue the id is free again.
        await client.cancel_workflow(first.workflow_id)
        fresh = await client.enqueue(
            attrs.evolve(options, duplication_policy="return-existing"), 7, 8
        )
    assert fresh.workflow_id != first.workflow_id
    count = await query(url, "SELECT count(*) FROM {t}workflow_status")
    assert count == [(2,)]


async def test_an_existing_workflow_id_is_attached_to_or_refused(url: str) -> None:
    async with opened(url) as client:
        options = EnqueueOptions(workflow_name="add", queue_name=QUEUE, workflow_id="fixed")
        first = await client.enqueue(options, 1, 2)
        second = await client.enqueue(options, 9, 9)
        assert second.workflow_id == first.workflow_id == "fixed"
        with pytest.raises(DBOSConflictingWorkflowError):
            await client.enqueue(attrs.evolve(options, workflow_name="fail"), "x")
    row = await status_row(url, "fixed")
    assert unpickle(row["new_inputs"])["args"] == (1, 2)


def test_enqueue_options_validate_like_dbos() -> None:
    with pytest.raises(DBOSException, match="requires a deduplication_id"):
        EnqueueOptions(workflow_name="w", queue_name="q", duplication_policy="return-existing")
    with pytest.raises(DBOSException, match="Invalid priority"):
        EnqueueOptions(workflow_name="w", queue_name="q", priority=0)
    with pytest.raises(DBOSException, match="workflow_id"):
        EnqueueOptions(workflow_name="w", queue_name="q", workflow_id="  ")
    with pytest.raises(DBOSException, match="Invalid duplication_policy"):
        EnqueueOptions(workflow_name="w", queue_name="q", duplication_policy="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        EnqueueOptions("w", "q")  # type: ignore[misc]
    options = EnqueueOptions(workflow_name="w", queue_name="q", authenticated_roles=["a"])
    assert options.authenticated_roles == ("a",)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        options.priority = 3  # type: ignore[misc]


# --- results ----------------------------------------------------------------------------


async def test_an_enqueued_workflow_runs_and_its_result_or_error_comes_back(url: str) -> None:
    async with serving(url), opened(url) as client:
        added = await client.enqueue(EnqueueOptions(workflow_name="add", queue_name=QUEUE), 2, 3)
        failed = await client.enqueue(
            EnqueueOptions(workflow_name="fail", queue_name=QUEUE), "no luck"
        )
        echoed = await client.enqueue(
            EnqueueOptions(workflow_name="kwargs_echo", queue_name=QUEUE, serialization="portable"),
            1,
            when="now",
        )
        with trio.fail_after(15):
            assert await added.get_result() == 5
            with pytest.raises(ValueError, match="no luck"):
                await failed.get_result()
            assert await echoed.get_result() == {"args": [1], "kwargs": {"when": "now"}}
    row = await status_row(url, added.workflow_id)
    assert row["status"] == "SUCCESS"
    assert row["application_name"] == APP  # claimed by the application that ran it
    assert row["application_version"] == "v1"
    assert (await status_row(url, echoed.workflow_id))["serialization"] == "portable_json"


async def test_retrieve_workflow_needs_an_existing_workflow(url: str) -> None:
    async with opened(url) as client:
        with pytest.raises(DBOSNonExistentWorkflowError):
            await client.retrieve_workflow("nope")
        handle = await client.enqueue(EnqueueOptions(workflow_name="add", queue_name=QUEUE), 1, 2)
        retrieved = await client.retrieve_workflow(handle.workflow_id)
        assert (await retrieved.get_status()).status == "ENQUEUED"
        assert await client.get_workflow_status("nope") is None


# --- messages, events, streams ----------------------------------------------------------


@pytest.mark.parametrize(
    "listen",
    [
        pytest.param(True, id="listen", marks=pytest.mark.postgres_only("LISTEN/NOTIFY")),
        pytest.param(False, id="poll"),
    ],
)
async def test_send_get_event_and_read_stream(url: str, listen: bool) -> None:
    async with serving(url), opened(url, use_listen_notify=listen) as client:
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="chatty", queue_name=QUEUE, serialization="portable"),
            "hi",
        )
        with trio.fail_after(15):
            event = await client.get_event(handle.workflow_id, "status", timeout_seconds=10)
            assert event == {"label": "hi", "ready": True}
            values = [v async for v in client.read_stream(handle.workflow_id, "numbers")]
            assert values == [1, 2]
            tail = [v async for v in client.read_stream(handle.workflow_id, "numbers", offset=1)]
            assert tail == [2]
            await client.send(
                handle.workflow_id,
                {"n": 1},
                "inbox",
                idempotency_key="k1",
                serialization="portable",
            )
            await client.send(
                handle.workflow_id,
                {"n": 2},
                "inbox",
                idempotency_key="k1",
                serialization="portable",
            )
            assert await handle.get_result() == {"label": "hi", "message": {"n": 1}}
    messages = await query(
        url,
        "SELECT message, serialization, consumed FROM {t}notifications WHERE destination_uuid = %s",
        handle.workflow_id,
    )
    assert messages == [('{"n":1}', "portable_json", True)]
    # Nothing the client did was checkpointed: only the workflow's own steps are recorded.
    names = await query(
        url,
        "SELECT function_name FROM {t}operation_outputs WHERE workflow_uuid = %s "
        "ORDER BY function_id",
        handle.workflow_id,
    )
    recorded = [n for (n,) in names]
    assert recorded[:4] == [
        "DBOS.setEvent",
        "DBOS.writeStream",
        "DBOS.writeStream",
        "DBOS.closeStream",
    ]
    # recv records its deadline (DBOS.sleep) only if it had to wait.
    assert sorted(recorded[4:]) in (["DBOS.recv"], ["DBOS.recv", "DBOS.sleep"])


async def test_default_messages_are_pickled_and_topicless(url: str) -> None:
    async with opened(url) as client:
        handle = await client.enqueue(EnqueueOptions(workflow_name="waits", queue_name=QUEUE))
        await client.send(handle.workflow_id, ("a", 1))
        with pytest.raises(DBOSNonExistentWorkflowError):
            await client.send("missing-destination", 1)
    (message, topic, fmt), *_ = await query(
        url, "SELECT message, topic, serialization FROM {t}notifications"
    )
    assert unpickle(message) == ("a", 1)
    assert topic == "__null__topic__" and fmt == "py_pickle"


async def test_get_event_times_out_with_none(url: str) -> None:
    async with opened(url, use_listen_notify=False) as client:
        handle = await client.enqueue(EnqueueOptions(workflow_name="waits", queue_name=QUEUE))
        # Nothing ever sets the event: only the timeout ends the wait within the guard.
        with trio.fail_after(HANG_GUARD):
            found = await client.get_event(handle.workflow_id, "nothing", timeout_seconds=0.3)
        assert found is None


async def test_read_stream_of_a_missing_workflow_or_a_silent_stream(url: str) -> None:
    async with opened(url) as client:
        with pytest.raises(DBOSNonExistentWorkflowError):
            async for _ in client.read_stream("missing", "k"):
                pass  # pragma: no cover
        handle = await client.enqueue(EnqueueOptions(workflow_name="waits", queue_name=QUEUE))
        with pytest.raises(DBOSStreamTimeoutError):
            async for _ in client.read_stream(handle.workflow_id, "k", timeout_seconds=0.2):
                pass  # pragma: no cover
        # An unserved workflow cancelled: its (empty) stream ends instead of waiting.
        await client.cancel_workflow(handle.workflow_id)
        assert [v async for v in client.read_stream(handle.workflow_id, "k")] == []


# --- management -------------------------------------------------------------------------


async def test_cancel_and_resume(url: str) -> None:
    async with opened(url) as client:
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="add", queue_name="nobody_serves_this"), 1, 2
        )
        await client.cancel_workflow(handle.workflow_id)
        row = await status_row(url, handle.workflow_id)
        assert row["status"] == "CANCELLED" and row["queue_name"] is None
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        resumed = await client.resume_workflow(handle.workflow_id)
        assert resumed.workflow_id == handle.workflow_id
        row = await status_row(url, handle.workflow_id)
        assert row["status"] == "ENQUEUED" and row["queue_name"] == "_dbos_internal_queue"
        assert row["recovery_attempts"] == 0
        with pytest.raises(DBOSNonExistentWorkflowError):
            await client.resume_workflow("missing")
    # The application picks the resumed workflow up from the internal queue.
    async with serving(url), opened(url) as client:
        with trio.fail_after(15):
            assert await (await client.retrieve_workflow(handle.workflow_id)).get_result() == 3


async def test_cancel_a_running_workflow_from_the_client(url: str) -> None:
    async with serving(url), opened(url) as client:
        handle = await client.enqueue(EnqueueOptions(workflow_name="waits", queue_name=QUEUE))
        with trio.fail_after(15):
            for _ in range(300):
                if (await handle.get_status()).status == "PENDING":
                    break
                await trio.sleep(0.05)
            await client.cancel_workflow(handle.workflow_id)
            with pytest.raises(DBOSAwaitedWorkflowCancelledError):
                await handle.get_result()


# --- listing ----------------------------------------------------------------------------


async def test_listing_is_scoped_like_the_official_client(url: str) -> None:
    async with (
        opened(url) as nameless,
        opened(url, app_name="alpha") as alpha,
        opened(url, app_name="beta") as beta,
    ):
        options = EnqueueOptions(workflow_name="add", queue_name=QUEUE)

        async def enqueue(client: Client, n: int) -> str:
            handle = await client.enqueue(options, n, n)
            # Listings are ordered by created_at, a millisecond clock (ties by workflow
            # id): one millisecond apart, "oldest" and "newest" below are defined.
            await trio.sleep(0.002)
            return handle.workflow_id

        unclaimed = await enqueue(nameless, 0)
        mine = await enqueue(alpha, 1)
        theirs = await enqueue(beta, 2)

        def ids(statuses: list[Any]) -> set[str]:
            return {s.workflow_id for s in statuses}

        assert ids(await nameless.list_workflows()) == {unclaimed, mine, theirs}
        assert ids(await alpha.list_workflows()) == {unclaimed, mine}
        assert ids(await alpha.list_workflows(application_name="beta")) == {unclaimed, theirs}
        assert ids(await alpha.list_workflows(workflow_ids=[theirs])) == {theirs}
        assert ids(await nameless.list_queued_workflows()) == {unclaimed, mine, theirs}
        assert ids(await nameless.list_queued_workflows(status="SUCCESS")) == set()
        assert ids(await nameless.list_workflows(name="add", limit=1)) == {unclaimed}
        newest = await nameless.list_workflows(sort_desc=True, limit=1, load_input=False)
        assert ids(newest) == {theirs} and newest[0].input is None
        listed = {s.workflow_id: s for s in await nameless.list_workflows()}
        assert listed[mine].input == {"args": (1, 1), "kwargs": {}}
        assert listed[mine].application_name == "alpha"


async def test_list_workflow_steps(url: str) -> None:
    async with serving(url), opened(url) as client:
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="chatty", queue_name=QUEUE, serialization="portable"),
            "steps",
        )
        await client.send(handle.workflow_id, "m", "inbox", serialization="portable")
        with trio.fail_after(15):
            await handle.get_result()
        steps = await client.list_workflow_steps(handle.workflow_id)
        assert [s.function_id for s in steps][:5] == [1, 2, 3, 4, 5]
        assert [s.function_name for s in steps][:5] == [
            "DBOS.setEvent",
            "DBOS.writeStream",
            "DBOS.writeStream",
            "DBOS.closeStream",
            "DBOS.recv",
        ]
        assert steps[4].output == "m"
        page = await client.list_workflow_steps(
            handle.workflow_id, limit=2, offset=1, load_output=False
        )
        assert [s.function_id for s in page] == [2, 3]
        assert await client.list_workflow_steps(str(uuid.uuid4())) == []


async def test_a_portable_workflow_enqueued_with_pickle_publishes_portable(url: str) -> None:
    """As dbos 3.4: the outcome keeps the row's format, while events, streams and sends use
    the workflow's registered format unless the row itself is portable."""
    async with serving(url), opened(url) as client:
        handle = await client.enqueue(EnqueueOptions(workflow_name="chatty", queue_name=QUEUE), "p")
        await client.send(handle.workflow_id, "hello", "inbox")
        with trio.fail_after(15):
            assert await handle.get_result() == {"label": "p", "message": "hello"}
    row = await status_row(url, handle.workflow_id)
    assert row["serialization"] == "py_pickle"
    output = await query(
        url, "SELECT output FROM {t}workflow_output WHERE workflow_uuid = %s", handle.workflow_id
    )
    assert unpickle(output[0][0]) == {"label": "p", "message": "hello"}
    event = await query(
        url,
        "SELECT value, serialization FROM {t}workflow_events WHERE workflow_uuid = %s",
        handle.workflow_id,
    )
    assert event == [('{"label":"p","ready":true}', "portable_json")]
    streams = await query(
        url,
        "SELECT DISTINCT serialization FROM {t}streams WHERE workflow_uuid = %s",
        handle.workflow_id,
    )
    assert streams == [("portable_json",)]


async def test_set_workflow_delay_fork_and_wait_first(url: str) -> None:
    async with opened(url) as client:
        delayed = await client.enqueue(
            EnqueueOptions(workflow_name="add", queue_name=QUEUE, delay_seconds=3600), 1, 2
        )
        with pytest.raises(DBOSException, match="either"):
            await client.set_workflow_delay(delayed.workflow_id)
        with pytest.raises(DBOSException, match=">= 0"):
            await client.set_workflow_delay(delayed.workflow_id, delay_seconds=-1)
        await client.set_workflow_delay(delayed.workflow_id, delay_until_epoch_ms=1234)
        assert (await status_row(url, delayed.workflow_id))["delay_until_epoch_ms"] == 1234
    async with serving(url), opened(url) as client:
        with trio.fail_after(15):
            first = await client.wait_first([await client.retrieve_workflow(delayed.workflow_id)])
            assert await first.get_result() == 3
            forked = await client.fork_workflow(delayed.workflow_id, 1, queue_name=QUEUE)
            assert forked.workflow_id != delayed.workflow_id
            assert await forked.get_result() == 3
        row = await status_row(url, forked.workflow_id)
        assert row["forked_from"] == delayed.workflow_id
        with pytest.raises(ValueError, match="empty"):
            await client.wait_first([])
