"""dbos_trio and the official ``dbos`` 3.4 package on one system database, both ways.

The official side runs in its own virtualenv, as a subprocess (``official/driver.py`` and
the ``dbos`` CLI); every test uses one fresh database. The seven checks of issue 6:

1. a database migrated by either side is accepted by the other, which migrates nothing;
2. the official ``DBOSClient`` enqueues onto a queue dbos_trio serves (pickle and portable);
3. dbos_trio's ``Client`` enqueues onto a queue an official executor serves;
4. the SQL functions ``enqueue_workflow`` and ``send_message`` drive a dbos_trio workflow;
5. messages, events and streams written by one side are read by the other;
6. the official CLI lists dbos_trio's workflows and steps;
7. golden strings: portable inputs, output, event and stream values byte for byte.
"""

from __future__ import annotations

import base64
import json
import pickle
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio
from interop_support import official_executor, rows, run_cli, run_official

from dbos_trio import DBOS, Config, PortableWorkflowError
from dbos_trio._client import Client, EnqueueOptions
from dbos_trio._pg.connecting import connect
from dbos_trio._sysdb.migrations import LATEST_VERSION
from dbos_trio._sysdb.postgres import migrate

from support.catalog import dump_catalog

pytestmark = pytest.mark.interop

TRIO_APP = "trio-interop"
TRIO_QUEUE = "trio_q"
OFFICIAL_APP = "official-interop"
OFFICIAL_QUEUE = "official_q"

# The golden strings every official SDK's interop test pins (dbos 3.4 tests/test_interop.py).
GOLDEN_INPUTS_JSON = (
    '{"positionalArgs":["hello-interop",42,"2025-06-15T10:30:00.000Z",'
    '["alpha","beta","gamma"],'
    '{"key1":"value1","key2":99,"nested":{"deep":true}},'
    "true,null]}"
)
GOLDEN_MESSAGE_JSON = '{"sender":"test","payload":[1,2,3]}'
GOLDEN_OUTPUT_JSON = (
    '{"echo_text":"hello-interop","echo_num":42,'
    '"echo_dt":"2025-06-15T10:30:00.000Z",'
    '"items_count":3,"meta_keys":["key1","key2","nested"],'
    '"flag":true,"empty":null,'
    '"received":{"sender":"test","payload":[1,2,3]}}'
)
GOLDEN_EVENT_JSON = '{"text":"hello-interop","num":42,"flag":true}'
GOLDEN_STREAM_JSON = '{"item":"hello-interop"}'
CANONICAL_ARGS: tuple[Any, ...] = (
    "hello-interop",
    42,
    datetime(2025, 6, 15, 10, 30, tzinfo=UTC),
    ["alpha", "beta", "gamma"],
    {"key1": "value1", "key2": 99, "nested": {"deep": True}},
    True,
    None,
)


class TrioApp:
    """The dbos_trio application of these tests (serving ``trio_q``) and its workflows."""

    def __init__(self, dbos: DBOS, workflows: dict[str, Any]) -> None:
        self.dbos = dbos
        self.workflows = workflows

    async def start(self, name: str, *args: Any) -> Any:
        return await self.dbos.start_workflow(self.workflows[name], *args)


def trio_app(url: str, **config: Any) -> TrioApp:
    dbos = DBOS(Config(app_name=TRIO_APP, database_url=url, app_version="trio-v1", **config))
    dbos.register_queue(TRIO_QUEUE, polling_interval_sec=0.1)

    @dbos.workflow(name="trio_add")
    async def trio_add(a: int, b: int) -> int:
        return a + b

    @dbos.workflow(name="trio_fail")
    async def trio_fail(text: str) -> None:
        raise ValueError(text)

    @dbos.workflow(name="trio_receiver")
    async def trio_receiver(label: str) -> Any:
        message = await dbos.recv("inbox", timeout_seconds=20)
        return {"label": label, "message": message}

    @dbos.workflow(name="trio_publisher", serialization="portable")
    async def trio_publisher(label: str) -> Any:
        await dbos.set_event("status", {"label": label, "side": "trio"})
        await dbos.write_stream("items", {"n": 1})
        await dbos.write_stream("items", {"n": 2})
        await dbos.close_stream("items")
        message = await dbos.recv("inbox", timeout_seconds=30)
        return {"label": label, "message": message}

    @dbos.step(name="step_one")
    async def step_one(x: int) -> int:
        return x * 2

    @dbos.step(name="step_two")
    def step_two(x: int) -> int:
        return x + 1

    @dbos.workflow(name="trio_steps")
    async def trio_steps(x: int) -> int:
        return await step_two(await step_one(x))

    @dbos.workflow(name="canonicalWorkflow", serialization="portable")
    async def canonical_workflow(
        text: str, num: int, dt: Any, items: list[str], meta: dict[str, Any], flag: bool, empty: Any
    ) -> dict[str, Any]:
        await dbos.set_event("interop_status", {"text": text, "num": num, "flag": flag})
        await dbos.write_stream("interop_stream", {"item": text})
        message = await dbos.recv("interop_topic", timeout_seconds=20)
        return {
            "echo_text": text,
            "echo_num": num,
            "echo_dt": dt,
            "items_count": len(items),
            "meta_keys": sorted(meta.keys()),
            "flag": flag,
            "empty": empty,
            "received": message,
        }

    workflows = [trio_add, trio_fail, trio_receiver, trio_publisher, trio_steps]
    named = {w.__name__: w for w in workflows}
    named["canonicalWorkflow"] = canonical_workflow
    return TrioApp(dbos, named)


@asynccontextmanager
async def serving(url: str, **config: Any) -> AsyncIterator[TrioApp]:
    app = trio_app(url, **config)
    async with app.dbos.launched():
        yield app


async def catalog(url: str) -> tuple[str, list[tuple[Any, ...]]]:
    """Everything the schema holds (as comparable text) and the migration bookkeeping."""

    def run() -> str:
        with psycopg.connect(url) as conn:
            return dump_catalog(conn, "dbos")

    return await trio.to_thread.run_sync(run), await rows(
        url, "SELECT version FROM dbos.dbos_migrations"
    )


def unpickle(text: str) -> Any:
    return pickle.loads(base64.b64decode(text))


# --- 1. migrations ----------------------------------------------------------------------


async def test_official_accepts_a_database_dbos_trio_migrated(
    empty_url: str, official_python: Path
) -> None:
    assert LATEST_VERSION == 125
    async with serving(empty_url):  # migrates the empty database
        pass
    before = await catalog(empty_url)
    assert before[1] == [(125,)]
    verified = await run_official(official_python, "launch", empty_url, "--verify-only")
    assert verified == {"version": 125, "result": "pong from official"}
    migrating = await run_official(official_python, "launch", empty_url)
    assert migrating == {"version": 125, "result": "pong from official"}
    assert await catalog(empty_url) == before  # the official package changed nothing


async def test_dbos_trio_accepts_a_database_official_migrated(
    empty_url: str, official_python: Path
) -> None:
    launched = await run_official(official_python, "launch", empty_url)
    assert launched["version"] == 125
    before = await catalog(empty_url)
    conn = await connect(empty_url, autocommit=True)
    try:
        assert await migrate.verify(conn, "dbos") == 125  # what dbos_trio sees
    finally:
        await conn.close()
    for run_migrations in (False, True):
        async with serving(empty_url, run_migrations=run_migrations) as app:
            handle = await app.start("trio_add", 20, 22)
            assert await handle.get_result() == 42
    async with Client(empty_url) as client:
        assert len(await client.list_workflows(name="official_ping")) == 1
    assert await catalog(empty_url) == before  # dbos_trio changed nothing


# --- 2. the official client, a dbos_trio queue -----------------------------------------


async def test_official_client_enqueues_onto_a_dbos_trio_queue(
    url: str, official_python: Path
) -> None:
    cases = {
        "add-default": ("trio_add", "default", [2, 3]),
        "add-portable": ("trio_add", "portable", [2, 3]),
        "fail-default": ("trio_fail", "default", ["boom"]),
        "fail-portable": ("trio_fail", "portable", ["kaboom"]),
    }
    results: dict[str, Any] = {}
    async with serving(url):

        async def run(case: str, workflow: str, fmt: str, args: list[Any]) -> None:
            results[case] = await run_official(
                official_python, "client-enqueue", url, TRIO_QUEUE, workflow, fmt, json.dumps(args)
            )

        async with trio.open_nursery() as nursery:
            for case, (workflow, fmt, args) in cases.items():
                nursery.start_soon(run, case, workflow, fmt, args)

    assert results["add-default"]["result"] == 5
    assert results["add-portable"]["result"] == 5
    assert results["fail-default"]["error"]["type"] == "ValueError"
    assert results["fail-default"]["error"]["message"] == "boom"
    portable_error = results["fail-portable"]["error"]
    assert portable_error["type"] == "PortableWorkflowError"
    assert portable_error["name"] == "ValueError" and "kaboom" in portable_error["message"]
    stored = {
        case: (
            await rows(
                url,
                "SELECT ws.status, ws.serialization, ws.application_name, wi.inputs, wo.output, "
                "wo.error FROM dbos.workflow_status ws "
                "JOIN dbos.workflow_input wi USING (workflow_uuid) "
                "LEFT JOIN dbos.workflow_output wo USING (workflow_uuid) WHERE workflow_uuid = %s",
                results[case]["workflow_id"],
            )
        )[0]
        for case in cases
    }
    status, fmt, app, inputs, output, _ = stored["add-default"]
    assert (status, fmt, app) == ("SUCCESS", "py_pickle", TRIO_APP)
    assert unpickle(inputs) == {"args": (2, 3), "kwargs": {}}
    assert unpickle(output) == 5
    status, fmt, _, inputs, output, _ = stored["add-portable"]
    assert (status, fmt, output) == ("SUCCESS", "portable_json", "5")
    assert json.loads(inputs)["positionalArgs"] == [2, 3]
    status, fmt, _, _, _, error = stored["fail-portable"]
    assert (status, fmt) == ("ERROR", "portable_json")
    assert json.loads(error)["name"] == "ValueError"
    assert stored["fail-default"][0] == "ERROR"


# --- 3. our client, an official queue --------------------------------------------------


async def test_dbos_trio_client_enqueues_onto_an_official_queue(
    url: str, official_python: Path
) -> None:
    async with (
        official_executor(official_python, url, OFFICIAL_APP),
        Client(url, outcome_poll_interval=0.1) as client,
    ):
        add = await client.enqueue(
            EnqueueOptions(workflow_name="official_add", queue_name=OFFICIAL_QUEUE), 2, 3
        )
        add_portable = await client.enqueue(
            EnqueueOptions(
                workflow_name="official_add", queue_name=OFFICIAL_QUEUE, serialization="portable"
            ),
            4,
            5,
        )
        fail = await client.enqueue(
            EnqueueOptions(workflow_name="official_fail", queue_name=OFFICIAL_QUEUE), "bad"
        )
        fail_portable = await client.enqueue(
            EnqueueOptions(
                workflow_name="official_fail", queue_name=OFFICIAL_QUEUE, serialization="portable"
            ),
            "worse",
        )
        with trio.fail_after(20):
            assert await add.get_result() == 5
            assert await add_portable.get_result() == 9
            with pytest.raises(ValueError, match="bad"):
                await fail.get_result()
            with pytest.raises(PortableWorkflowError) as raised:
                await fail_portable.get_result()
        assert raised.value.name == "ValueError"
        status = await add.get_status()
        assert status.status == "SUCCESS" and status.application_name == OFFICIAL_APP
        assert status.executor_id is not None and status.app_version is not None
    output = await rows(
        url,
        "SELECT output FROM dbos.workflow_output WHERE workflow_uuid = %s",
        add_portable.workflow_id,
    )
    assert output == [("9",)]


# --- 4. the SQL functions --------------------------------------------------------------


async def test_sql_functions_drive_a_dbos_trio_workflow(url: str) -> None:
    workflow_id = f"sql-{uuid.uuid4()}"
    async with serving(url) as app:
        returned = await rows(
            url,
            "SELECT dbos.enqueue_workflow(workflow_name => 'trio_receiver', "
            "queue_name => %s, positional_args => ARRAY[%s]::json[], workflow_id => %s)",
            TRIO_QUEUE,
            json.dumps("from-sql"),
            workflow_id,
        )
        assert returned == [(workflow_id,)]
        await rows(
            url,
            "SELECT dbos.send_message(destination_id => %s, message => %s::json, topic => 'inbox')",
            workflow_id,
            json.dumps({"n": 4}),
        )
        handle = await app.dbos.retrieve_workflow(workflow_id)
        with trio.fail_after(20):
            assert await handle.get_result() == {"label": "from-sql", "message": {"n": 4}}
    row = await rows(
        url,
        "SELECT ws.status, ws.serialization, wo.output FROM dbos.workflow_status ws "
        "JOIN dbos.workflow_output wo USING (workflow_uuid) WHERE workflow_uuid = %s",
        workflow_id,
    )
    assert row == [("SUCCESS", "portable_json", '{"label":"from-sql","message":{"n":4}}')]
    consumed = await rows(
        url,
        "SELECT consumed, serialization FROM dbos.notifications WHERE destination_uuid = %s",
        workflow_id,
    )
    assert consumed == [(True, "portable_json")]


# --- 5. messages, events and streams ---------------------------------------------------


async def _payload_rows(url: str, workflow_id: str) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "event": await rows(
            url,
            "SELECT value, serialization FROM dbos.workflow_events WHERE workflow_uuid = %s",
            workflow_id,
        ),
        "history": await rows(
            url,
            "SELECT value, serialization FROM dbos.workflow_events_history "
            "WHERE workflow_uuid = %s",
            workflow_id,
        ),
        "stream": await rows(
            url,
            'SELECT "offset", value, serialization FROM dbos.streams WHERE workflow_uuid = %s '
            'ORDER BY "offset"',
            workflow_id,
        ),
        "message": await rows(
            url,
            "SELECT message, serialization, consumed FROM dbos.notifications "
            "WHERE destination_uuid = %s",
            workflow_id,
        ),
    }


async def test_official_reads_what_dbos_trio_writes(url: str, official_python: Path) -> None:
    async with serving(url), Client(url) as client:
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="trio_publisher", queue_name=TRIO_QUEUE), "trio"
        )
        peer = await run_official(official_python, "client-peer", url, handle.workflow_id)
    assert peer == {
        "event": {"label": "trio", "side": "trio"},
        "items": [{"n": 1}, {"n": 2}],
        "result": {"label": "trio", "message": {"from": "official", "items": 2}},
    }
    stored = await _payload_rows(url, handle.workflow_id)
    assert stored["event"] == [('{"label":"trio","side":"trio"}', "portable_json")]
    assert stored["history"] == stored["event"]
    assert stored["stream"] == [
        (0, '{"n":1}', "portable_json"),
        (1, '{"n":2}', "portable_json"),
        (2, '"__DBOS_STREAM_CLOSED__"', "portable_json"),
    ]
    assert stored["message"] == [('{"from":"official","items":2}', "portable_json", True)]


async def test_dbos_trio_reads_what_official_writes(url: str, official_python: Path) -> None:
    async with (
        official_executor(official_python, url, OFFICIAL_APP),
        Client(url, outcome_poll_interval=0.1) as client,
    ):
        handle = await client.enqueue(
            EnqueueOptions(
                workflow_name="official_publisher",
                queue_name=OFFICIAL_QUEUE,
                serialization="portable",
            ),
            "py",
        )
        with trio.fail_after(20):
            event = await client.get_event(handle.workflow_id, "status", timeout_seconds=15)
            items = [item async for item in client.read_stream(handle.workflow_id, "items")]
            await client.send(
                handle.workflow_id, {"from": "trio"}, "inbox", serialization="portable"
            )
            result = await handle.get_result()
    assert event == {"label": "py", "side": "official"}
    assert items == [{"n": 1}, {"n": 2}]
    assert result == {"label": "py", "message": {"from": "trio"}}
    stored = await _payload_rows(url, handle.workflow_id)
    assert stored["event"] == [('{"label":"py","side":"official"}', "portable_json")]
    assert stored["history"] == stored["event"]
    assert stored["stream"] == [
        (0, '{"n":1}', "portable_json"),
        (1, '{"n":2}', "portable_json"),
        (2, '"__DBOS_STREAM_CLOSED__"', "portable_json"),
    ]
    assert stored["message"] == [('{"from":"trio"}', "portable_json", True)]


# --- 6. the official CLI ---------------------------------------------------------------


async def test_official_cli_lists_dbos_trio_workflows(url: str, official_cli: Path) -> None:
    async with serving(url) as app, Client(url, outcome_poll_interval=0.1) as client:
        steps = await app.start("trio_steps", 5)
        assert await steps.get_result() == 11
        failed = await app.start("trio_fail", "listed")
        with pytest.raises(ValueError):
            await failed.get_result()
        waiting = await client.enqueue(
            EnqueueOptions(workflow_name="trio_add", queue_name="nobody_serves_this"), 1, 2
        )
    listed = await run_cli(official_cli, "workflow", "list", "--sys-db-url", url)
    by_id = {w["workflow_id"]: w for w in listed}
    assert by_id[steps.workflow_id]["name"] == "trio_steps"
    assert by_id[steps.workflow_id]["status"] == "SUCCESS"
    assert by_id[steps.workflow_id]["output"] == 11
    assert by_id[steps.workflow_id]["app_version"] == "trio-v1"
    assert by_id[steps.workflow_id]["application_name"] == TRIO_APP
    assert by_id[failed.workflow_id]["name"] == "trio_fail"
    assert by_id[failed.workflow_id]["status"] == "ERROR"
    assert by_id[waiting.workflow_id]["status"] == "ENQUEUED"
    assert by_id[waiting.workflow_id]["queue_name"] == "nobody_serves_this"
    listed_steps = await run_cli(
        official_cli, "workflow", "steps", steps.workflow_id, "--sys-db-url", url
    )
    assert [(s["function_id"], s["function_name"]) for s in listed_steps] == [
        (1, "step_one"),
        (2, "step_two"),
    ]
    assert [s["output"] for s in listed_steps] == [10, 11]
    got = await run_cli(official_cli, "workflow", "get", failed.workflow_id, "--sys-db-url", url)
    assert got["status"] == "ERROR" and got["name"] == "trio_fail"


# --- 7. golden strings -----------------------------------------------------------------


async def test_golden_strings(url: str) -> None:
    async with serving(url) as app:
        handle = await app.start("canonicalWorkflow", *CANONICAL_ARGS)
        await rows(
            url,
            "SELECT dbos.send_message(destination_id => %s, message => %s::json, "
            "topic => 'interop_topic')",
            handle.workflow_id,
            GOLDEN_MESSAGE_JSON,
        )
        with trio.fail_after(20):
            await handle.get_result()
    (inputs, output, fmt, status, name), *_ = await rows(
        url,
        "SELECT wi.inputs, wo.output, ws.serialization, ws.status, ws.name "
        "FROM dbos.workflow_status ws JOIN dbos.workflow_input wi USING (workflow_uuid) "
        "JOIN dbos.workflow_output wo USING (workflow_uuid) WHERE workflow_uuid = %s",
        handle.workflow_id,
    )
    assert inputs == GOLDEN_INPUTS_JSON
    assert output == GOLDEN_OUTPUT_JSON
    assert (fmt, status, name) == ("portable_json", "SUCCESS", "canonicalWorkflow")
    stored = await _payload_rows(url, handle.workflow_id)
    assert stored["event"] == [(GOLDEN_EVENT_JSON, "portable_json")]
    assert stored["history"] == [(GOLDEN_EVENT_JSON, "portable_json")]
    assert stored["stream"] == [(0, GOLDEN_STREAM_JSON, "portable_json")]
