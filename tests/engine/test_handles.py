"""Workflow handles: status, results for every terminal status, and the launched() exit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio

from dbos_trio import (
    DBOS,
    DBOSAwaitedWorkflowCancelledError,
    DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded,
    DBOSNonExistentWorkflowError,
    SetWorkflowID,
)
from dbos_trio._serialization import PickleSerializer

from support.backends import execute, status_row
from support.waiting import HANG_GUARD

MakeDBOS = Callable[..., DBOS]


async def test_handles_return_or_raise_what_each_terminal_status_means(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def succeed(x: int) -> dict[str, int]:
        return {"x": x}

    @dbos.workflow()
    async def fail() -> None:
        raise ValueError("x")

    async with dbos.launched():
        with SetWorkflowID("ok-1"):
            await succeed(3)
        with SetWorkflowID("err-1"), pytest.raises(ValueError):
            await fail()
        for workflow_id, status in (
            ("cancelled-1", "CANCELLED"),
            ("dead-1", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"),
        ):
            with SetWorkflowID(workflow_id):
                await succeed(0)
            await execute(
                dbos_url,
                "UPDATE {t}workflow_status SET status = %s WHERE workflow_uuid = %s",
                status,
                workflow_id,
            )

        ok = await dbos.retrieve_workflow("ok-1")
        assert await ok.get_result() == {"x": 3}
        err = await dbos.retrieve_workflow("err-1")
        with pytest.raises(ValueError) as raised:
            await err.get_result()
        assert type(raised.value) is ValueError and raised.value.args == ("x",)
        cancelled = await dbos.retrieve_workflow("cancelled-1")
        with pytest.raises(DBOSAwaitedWorkflowCancelledError) as was_cancelled:
            await cancelled.get_result()
        dead = await dbos.retrieve_workflow("dead-1")
        with pytest.raises(DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded) as was_dead:
            await dead.get_result()
        statuses = [(await h.get_status()).status for h in (ok, err, cancelled, dead)]

    assert was_cancelled.value.dbos_error_code == 13
    assert "cancelled-1" in str(was_cancelled.value)
    assert was_dead.value.dbos_error_code == 14
    assert statuses == ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]


async def test_retrieving_a_missing_workflow_raises_non_existent_workflow_error(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()
    async with dbos.launched():
        with pytest.raises(DBOSNonExistentWorkflowError) as raised:
            await dbos.retrieve_workflow("nobody")
        assert await dbos.get_workflow_status("nobody") is None
    assert raised.value.dbos_error_code == 5
    assert "nobody" in str(raised.value)


async def test_a_handle_reports_the_status_row_of_its_workflow(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def described(a: int, *, b: str) -> str:
        return f"{a}{b}"

    async with dbos.launched():
        with SetWorkflowID("described-1"):
            handle = await dbos.start_workflow(described, 1, b="z")
        assert handle.workflow_id == handle.get_workflow_id() == "described-1"
        assert await handle.get_result() == "1z"
        status = await handle.get_status()

    assert status.workflow_id == "described-1"
    assert status.status == "SUCCESS"
    assert status.name == described.__qualname__
    assert status.input == {"args": (1,), "kwargs": {"b": "z"}}
    assert status.output == "1z"
    assert status.error is None
    assert status.executor_id == "local"
    assert status.app_version == "v1"
    assert status.application_name == "wf-tests"
    assert status.recovery_attempts == 1
    assert status.serialization == "py_pickle"
    assert status.queue_name is None
    assert status.parent_workflow_id is None
    assert status.created_at is not None and status.completed_at is not None
    assert status.completed_at >= status.created_at
    assert (status.attributes, status.schedule_name, status.shard_key) == (None, None, None)


async def test_exiting_launched_cancels_a_started_workflow_and_leaves_it_pending(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    events: list[str] = []
    sleeping = trio.Event()

    @dbos.step()
    async def first() -> str:
        events.append("first step")
        return "one"

    @dbos.workflow()
    async def forever() -> None:
        await first()
        sleeping.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            events.append("cancelled")
            raise

    async with dbos.launched():
        with SetWorkflowID("forever-1"):
            handle = await dbos.start_workflow(forever)
        await sleeping.wait()
        assert (await handle.get_status()).status == "PENDING"

    assert events == ["first step", "cancelled"]
    row = await status_row(dbos_url, "forever-1")
    assert row["status"] == "PENDING"
    assert row["owner_xid"] is not None  # still this (dead) execution's: recovery claims it
    assert row["completed_at"] is None


async def test_an_error_in_the_launched_block_propagates_as_itself(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def forever() -> None:
        await trio.sleep_forever()

    with pytest.raises(KeyError, match="boom"):
        async with dbos.launched():
            await dbos.start_workflow(forever)
            raise KeyError("boom")
    assert not dbos.is_launched


async def test_a_result_produced_in_this_process_is_delivered_without_polling(
    make_dbos: MakeDBOS,
) -> None:
    # A poll interval far longer than the test: only the in-process event can deliver.
    dbos = make_dbos(outcome_poll_interval=3600)
    release = trio.Event()

    @dbos.workflow()
    async def gated() -> str:
        await release.wait()
        return "released"

    async with dbos.launched():
        with SetWorkflowID("gated-1"):
            started = await dbos.start_workflow(gated)
        retrieved = await dbos.retrieve_workflow("gated-1")
        results: list[Any] = []

        async def wait(handle: Any) -> None:
            results.append(await handle.get_result())

        with trio.fail_after(HANG_GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait, started)
                nursery.start_soon(wait, retrieved)
                await trio.sleep(0.05)
                release.set()
    assert results == ["released", "released"]


async def test_a_result_recorded_elsewhere_is_found_by_polling(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos(outcome_poll_interval=0.05)

    @dbos.workflow()
    async def remote() -> str:
        return "never run here"

    async with dbos.launched():
        # A PENDING row owned by another executor, as if that process were running it.
        await execute(
            dbos_url,
            "INSERT INTO {t}workflow_status (workflow_uuid, status, name, executor_id, "
            "owner_xid, created_at, updated_at) VALUES ('remote-1', 'PENDING', %s, 'other', "
            "'other-token', 0, 0)",
            remote.__qualname__,
        )
        handle = await dbos.retrieve_workflow("remote-1")
        results: list[Any] = []

        async def wait() -> None:
            results.append(await handle.get_result())

        with trio.fail_after(HANG_GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait)
                await trio.sleep(0.2)
                assert results == []
                await execute(
                    dbos_url,
                    "INSERT INTO {t}workflow_output (workflow_uuid, output) "
                    "VALUES ('remote-1', %s)",
                    PickleSerializer().serialize("from elsewhere"),
                )
                await execute(
                    dbos_url,
                    "UPDATE {t}workflow_status SET status = 'SUCCESS', "
                    "serialization = 'py_pickle' WHERE workflow_uuid = 'remote-1'",
                )
        # Calling it by id waits on the same stored outcome instead of running it.
        with SetWorkflowID("remote-1"):
            assert await remote() == "from elsewhere"
    assert results == ["from elsewhere"]
