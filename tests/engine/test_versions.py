"""Application versions, and work a version change strands, never silently.

Versions: listed newest first, the latest promoted and rolled back on ``DBOS`` and
``Client``, refusals for a version nobody registered or another application owns. Loud
mismatches: the launch census naming the other versions and the fixes, the waiter on a
row no executor here can run (once per id), the ENQUEUED row naming a workflow nobody
here registers (once per name). Recovering another executor: rows whose owner still
stamps them are left to it; once it is silent they move in one write, and run here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
import trio

from dbos_trio import DBOS, Client, DBOSException, EnqueueOptions, SetWorkflowID

from support.backends import execute, status_row
from support.dbos_fixtures import APP_NAME


def warnings_of(caplog: pytest.LogCaptureFixture, needle: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and needle in r.getMessage()
    ]


async def test_versions_are_listed_newest_first_and_the_latest_can_be_moved(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    async with make_dbos(app_version="v1").launched():
        pass
    other = make_dbos(app_version="v2")
    async with other.launched():
        assert [v.version_name for v in await other.list_application_versions()] == ["v2", "v1"]
        assert (await other.get_latest_application_version()).version_name == "v2"
        await other.set_latest_application_version("v1")  # a rollback
        assert (await other.get_latest_application_version()).version_name == "v1"
        with pytest.raises(DBOSException, match="'nope' is not registered"):
            await other.set_latest_application_version("nope")
    async with Client(dbos_url, app_name=APP_NAME) as client:
        assert (await client.get_latest_application_version()).version_name == "v1"
        await client.set_latest_application_version("v2")
        listed = await client.list_application_versions()
        assert [v.version_name for v in listed] == ["v2", "v1"]
        assert {v.application_name for v in listed} == {APP_NAME}


async def test_a_version_of_another_application_cannot_be_promoted(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    async with make_dbos(app_name="other-app", app_version="theirs").launched():
        pass
    mine = make_dbos(app_version="mine")
    async with mine.launched():
        with pytest.raises(DBOSException, match="registered by application 'other-app'"):
            await mine.set_latest_application_version("theirs")
        assert [v.version_name for v in await mine.list_application_versions()] == ["mine"]
    async with Client(dbos_url) as client:
        # No application named: the client acts for the version's own, as dbos 3.4's.
        await client.set_latest_application_version("theirs")
        latest = await client.get_latest_application_version()
        assert (latest.version_name, latest.application_name) == ("theirs", "other-app")


def register_job(dbos: DBOS) -> Any:
    @dbos.workflow(name="job")
    async def job() -> str:
        return "done"

    return job


async def test_launch_names_the_versions_work_waits_under_and_the_fixes(
    make_dbos: Callable[..., DBOS], caplog: pytest.LogCaptureFixture
) -> None:
    old = make_dbos(app_version="v-old")
    job = register_job(old)
    async with old.launched():
        for i in range(2):
            with SetWorkflowID(f"old-{i}"):
                await old.enqueue_workflow("nobody-serves-this", job)
    caplog.set_level(logging.WARNING, logger="dbos_trio")
    new = make_dbos(app_version="v-new")
    register_job(new)
    async with new.launched():
        pass
    (warning,) = warnings_of(caplog, "wait under application version")
    assert "v-old: 2 ENQUEUED" in warning
    assert "DBOS__APPVERSION" in warning and "--application-version v-new" in warning
    assert "set-latest" in warning


async def test_waiting_on_a_row_of_another_version_warns_once_with_the_fix(
    make_dbos: Callable[..., DBOS], caplog: pytest.LogCaptureFixture
) -> None:
    old = make_dbos(app_version="v-old")
    job = register_job(old)
    async with old.launched():
        with SetWorkflowID("stranded"):
            await old.enqueue_workflow("q-none", job)
    new = make_dbos(app_version="v-new", outcome_poll_interval=0.05)
    new_job = register_job(new)
    async with new.launched():
        caplog.set_level(logging.WARNING, logger="dbos_trio")
        with SetWorkflowID("stranded"):
            handle = await new.start_workflow(new_job)  # an existing id: warned at once
        assert len(warnings_of(caplog, "waiting on workflow stranded")) == 1
        for _ in range(2):
            with trio.move_on_after(0.3):  # it never finishes: that is the point
                await handle.get_result()
    (warning,) = warnings_of(caplog, "waiting on workflow stranded")  # once per id
    assert "'v-old'" in warning and "fork stranded --application-version v-new" in warning


async def test_an_enqueued_name_nobody_registers_is_reported_once_per_name(
    make_dbos: Callable[..., DBOS], dbos_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    dbos = make_dbos()
    register_job(dbos)
    caplog.set_level(logging.WARNING, logger="dbos_trio")
    async with Client(dbos_url, app_name=APP_NAME) as client:
        for _ in range(3):
            await client.enqueue(
                EnqueueOptions(
                    workflow_name="jbo", queue_name="_dbos_internal_queue", app_version="v1"
                ),
            )
    async with dbos.launched():
        pass
    (warning,) = warnings_of(caplog, "'jbo'")
    assert "3 ENQUEUED" in warning and "does not register" in warning and "job" in warning


async def test_recover_executor_leaves_a_live_owners_rows_and_moves_a_silent_ones(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    release = trio.Event()
    ran: list[str] = []
    entered_send, entered = trio.open_memory_channel[str](10)

    def build(executor_id: str) -> tuple[DBOS, Any]:
        dbos = make_dbos(executor_id=executor_id, heartbeat_interval=0.1)

        @dbos.step(name="slow")
        async def slow() -> str:
            ran.append(executor_id)
            await entered_send.send(executor_id)
            await release.wait()
            return executor_id

        @dbos.workflow(name="held")
        async def held() -> str:
            return await slow()

        return dbos, held

    owner, held = build("owner")
    rescuer, _ = build("rescuer")
    async with rescuer.launched():
        async with owner.launched():
            with SetWorkflowID("held-1"):
                await owner.start_workflow(held)
            assert await entered.receive() == "owner"
            # The owner stamps it: recovery leaves it alone, and it finishes there, once.
            assert await rescuer.recover_executor("owner") == []
            release.set()
            assert await (await owner.retrieve_workflow("held-1")).get_result() == "owner"
            release = trio.Event()
            with SetWorkflowID("held-2"):
                await owner.start_workflow(held)
            assert await entered.receive() == "owner"
        # The owner is gone, its row PENDING; make it silent for longer than the window.
        assert (await status_row(dbos_url, "held-2"))["status"] == "PENDING"
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET updated_at = updated_at - 60000 "
            "WHERE workflow_uuid = %s",
            "held-2",
        )
        assert await rescuer.recover_executor("owner") == ["held-2"]
        assert await rescuer.recover_executor("owner") == []  # nothing left to move
        release.set()
        assert await (await rescuer.retrieve_workflow("held-2")).get_result() == "rescuer"
    assert ran == ["owner", "owner", "rescuer"]
    assert (await status_row(dbos_url, "held-2"))["executor_id"] == "rescuer"
