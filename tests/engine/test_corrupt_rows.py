"""Corrupt rows are contained, not fatal: never a crash loop, never a silent hang.

The system database is shared with other SDKs, tools and people with a SQL prompt, so
its rows may hold what no DBOS SDK writes. Each test plants one such row with SQL and
checks that the executor launches and keeps running everything else, and that whatever
waits on the row is told (an error naming the workflow and the column, or a warning)
instead of waiting forever.
"""

from __future__ import annotations

import base64
import logging
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from dbos_trio import (
    DBOS,
    Client,
    DBOSCorruptRowError,
    DBOSPayloadError,
    EnqueueOptions,
    PortableJSONSerializer,
    SetWorkflowID,
)

from support.backends import backend_of, execute, status_row

MakeDBOS = Callable[..., DBOS]


def register(dbos: DBOS) -> dict[str, Any]:
    @dbos.workflow()
    async def job(x: int) -> int:
        return x * 2

    @dbos.workflow(serialization="portable")
    async def not_a_number() -> float:
        return float("nan")

    queue = dbos.register_queue("healthy")
    return {"job": job, "queue": queue, "not_a_number": not_a_number}


async def test_a_queued_row_without_a_recovery_count_runs_and_nothing_crashes(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    workflows = register(dbos)
    inputs = base64.b64encode(pickle.dumps({"args": (21,), "kwargs": {}})).decode()
    await execute(
        dbos_url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, queue_name, created_at, "
        "updated_at, application_version, recovery_attempts, inputs, serialization) "
        "VALUES ('no-count', 'ENQUEUED', %s, '_dbos_internal_queue', 1, 1, 'v1', NULL, %s, "
        "'py_pickle')",
        workflows["job"].__qualname__,
        inputs,
    )
    async with dbos.launched():
        handle = await dbos.retrieve_workflow("no-count")
        with trio.fail_after(30):
            assert await handle.get_result() == 42
        assert await workflows["job"](1) == 2
    assert (await status_row(dbos_url, "no-count"))["recovery_attempts"] == 1


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("rate_limit_period_sec", float("inf")),
        ("rate_limit_period_sec", float("nan")),
        ("polling_interval_sec", float("nan")),
        ("worker_concurrency", -1),
    ],
)
async def test_a_queue_row_with_an_impossible_limit_is_reported_and_the_rest_runs(
    make_dbos: MakeDBOS,
    dbos_url: str,
    caplog: pytest.LogCaptureFixture,
    column: str,
    value: float,
) -> None:
    if backend_of(dbos_url) == "sqlite" and value != value:
        pytest.skip("SQLite stores a NaN as NULL: the row it makes is not corrupt")
    dbos = make_dbos()
    workflows = register(dbos)
    row: dict[str, Any] = {
        "rate_limit_max": 5,
        "rate_limit_period_sec": 1.0,
        "polling_interval_sec": 1.0,
        "worker_concurrency": None,
    }
    row[column] = value
    await execute(
        dbos_url,
        "INSERT INTO {t}queues (queue_id, name, rate_limit_max, rate_limit_period_sec, "
        "polling_interval_sec, worker_concurrency, created_at, updated_at) "
        "VALUES ('broken-id', 'broken', %s, %s, %s, %s, 1, 1)",
        *row.values(),
    )
    caplog.set_level(logging.WARNING, logger="dbos_trio")
    async with dbos.launched():
        handle = await workflows["queue"].enqueue(workflows["job"], 4)
        with trio.fail_after(30):
            assert await handle.get_result() == 8
        await trio.sleep(1.5)  # a supervisor sweep has read the queues table
    reports = [r.getMessage() for r in caplog.records if "queue broken is not served" in r.message]
    assert len(reports) == 1, reports
    assert column in reports[0] or "must be" in reports[0]


@pytest.mark.parametrize("status", ["BOGUS", None])
async def test_waiting_on_a_row_with_an_unknown_status_raises_instead_of_hanging(
    make_dbos: MakeDBOS, dbos_url: str, status: str | None
) -> None:
    dbos = make_dbos()
    register(dbos)
    await execute(
        dbos_url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, created_at, updated_at) "
        "VALUES ('bogus', %s, 'job', 1, 1)",
        status,
    )
    async with dbos.launched():
        handle = await dbos.retrieve_workflow("bogus")
        with trio.fail_after(30), pytest.raises(DBOSCorruptRowError, match="bogus: status"):
            await handle.get_result()


async def test_a_delayed_row_without_a_time_is_released_and_runs(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    workflows = register(dbos)
    inputs = base64.b64encode(pickle.dumps({"args": (5,), "kwargs": {}})).decode()
    await execute(
        dbos_url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, queue_name, created_at, "
        "updated_at, application_version, recovery_attempts, inputs, serialization, "
        "delay_until_epoch_ms) VALUES ('no-delay', 'DELAYED', %s, '_dbos_internal_queue', 1, "
        "1, 'v1', 0, %s, 'py_pickle', NULL)",
        workflows["job"].__qualname__,
        inputs,
    )
    async with dbos.launched():
        handle = await dbos.retrieve_workflow("no-delay")
        with trio.fail_after(30):
            assert await handle.get_result() == 10


async def test_an_unreadable_output_raises_a_payload_error_naming_the_workflow(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    workflows = register(dbos)
    async with dbos.launched():
        with SetWorkflowID("garbled"):
            assert await workflows["job"](3) == 6
    await execute(
        dbos_url,
        "UPDATE {t}workflow_output SET output = 'not base64 at all!' WHERE workflow_uuid = %s",
        "garbled",
    )
    async with dbos.launched():
        handle = await dbos.retrieve_workflow("garbled")
        with pytest.raises(DBOSPayloadError, match="output of workflow garbled"):
            await handle.get_result()
    async with Client(dbos_url) as client:
        with pytest.raises(DBOSPayloadError, match="output of workflow garbled"):
            await (await client.retrieve_workflow("garbled")).get_result()


async def test_portable_json_refuses_nan_with_a_clear_error(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    workflows = register(dbos)
    async with dbos.launched():
        with SetWorkflowID("nan"), pytest.raises(Exception, match="NaN or infinity"):
            await workflows["not_a_number"]()
    assert (await status_row(dbos_url, "nan"))["status"] == "ERROR"


class Planted:
    """A pickle that, when loaded, writes a file: what a planted payload could do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.marker, "code ran"))


async def test_portable_only_mode_never_unpickles_a_planted_payload(
    make_dbos: MakeDBOS, dbos_url: str, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    dbos = make_dbos(serializer=PortableJSONSerializer(), allow_pickle=False)
    workflows = register(dbos)
    planted = base64.b64encode(pickle.dumps({"args": (Planted(marker),), "kwargs": {}}))
    async with Client(dbos_url, serializer=PortableJSONSerializer(), allow_pickle=False) as c:
        handle = await c.enqueue(
            EnqueueOptions(workflow_name=workflows["job"].__qualname__, queue_name="healthy"), 1
        )
        await execute(
            dbos_url,
            "UPDATE {t}workflow_input SET inputs = %s WHERE workflow_uuid = %s",
            planted.decode(),
            handle.workflow_id,
        )
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET serialization = 'py_pickle' WHERE workflow_uuid = %s",
            handle.workflow_id,
        )
        async with dbos.launched():
            with trio.fail_after(30), pytest.raises(Exception, match="refused"):
                await (await dbos.retrieve_workflow(handle.workflow_id)).get_result()
        statuses = await c.list_workflows()  # listing decodes inputs: refused there too
        assert any(s.workflow_id == handle.workflow_id for s in statuses)
    assert not marker.exists()
