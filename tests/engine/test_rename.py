"""Renaming an application re-owns its rows, in batches, and its work runs on under the
new name; unclaimed rows move only when asked; bad arguments write nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest
import trio

from dbos_trio import DBOS, Client, DBOSException, EnqueueOptions, SetWorkflowID

from support.backends import query

OLD, NEW = "old-app", "new-app"


async def owners(url: str, table: str) -> dict[str | None, int]:
    rows = await query(
        url, f"SELECT application_name, count(*) FROM {{t}}{table} GROUP BY application_name"
    )
    return {row[0]: int(row[1]) for row in rows}


def build(make_dbos: Callable[..., DBOS], app_name: str) -> tuple[DBOS, object]:
    dbos = make_dbos(app_name=app_name, app_version="v1")
    dbos.register_queue("renamed-q")

    @dbos.step(name="add")
    async def add(n: int) -> int:
        return n + 1

    @dbos.workflow(name="job")
    async def job(n: int) -> int:
        return await add(n)

    return dbos, job


async def test_a_rename_moves_every_row_in_batches_and_the_work_runs_under_the_new_name(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    old, job = build(make_dbos, OLD)
    async with old.launched():
        for i in range(5):
            with SetWorkflowID(f"done-{i}"):
                assert await job(i) == i + 1  # type: ignore[operator]
    async with Client(dbos_url, app_name=OLD) as client:
        # Still to run under the old name, and one unclaimed row (a nameless client's).
        await client.enqueue(EnqueueOptions(workflow_name="job", queue_name="renamed-q"), 41)
    async with Client(dbos_url) as nameless:
        await nameless.enqueue(
            EnqueueOptions(workflow_name="job", queue_name="elsewhere", workflow_id="unclaimed"),
            1,
        )
        seen: list[tuple[str, int]] = []
        counts = await nameless.rename_application(
            OLD, NEW, batch_size=2, progress=lambda what, n: seen.append((what, n))
        )
    assert (counts.queues, counts.versions, counts.workflows, counts.steps) == (1, 1, 6, 5)
    assert await owners(dbos_url, "workflow_status") == {NEW: 6, None: 1}
    assert await owners(dbos_url, "operation_outputs") == {NEW: 5}
    assert await owners(dbos_url, "application_versions") == {NEW: 1}
    assert ("finished workflows", 5) in seen and ("finished steps", 5) in seen
    assert len([what for what, _ in seen if what == "finished workflows"]) == 3  # 2 + 2 + 1

    new, _ = build(make_dbos, NEW)
    async with new.launched():
        assert [v.version_name for v in await new.list_application_versions()] == ["v1"]
        (waiting,) = await new.list_workflows(queue_name="renamed-q")
        assert await (await new.retrieve_workflow(waiting.workflow_id)).get_result() == 42


async def test_unclaimed_rows_move_only_when_asked(dbos_url: str) -> None:
    async with Client(dbos_url) as nameless:
        await nameless.enqueue(
            EnqueueOptions(workflow_name="job", queue_name="q", workflow_id="orphan"), 1
        )
        counts = await nameless.rename_application(None, NEW, adopt_unclaimed_rows=True)
    assert counts.workflows == 1
    assert await owners(dbos_url, "workflow_status") == {NEW: 1}


async def test_a_rename_with_nothing_to_move_or_a_bad_name_writes_nothing(dbos_url: str) -> None:
    async with Client(dbos_url) as client:
        await client.enqueue(EnqueueOptions(workflow_name="job", queue_name="q"), 1)
        with pytest.raises(DBOSException, match="nothing to re-own"):
            await client.rename_application(None, NEW)
        with pytest.raises(DBOSException, match="3 to 256 characters"):
            await client.rename_application(OLD, "Bad Name")
        with pytest.raises(DBOSException, match="already has that name"):
            await client.rename_application(NEW, NEW)
        with pytest.raises(DBOSException, match="batch_size"):
            await client.rename_application(OLD, NEW, batch_size=0)
    assert await owners(dbos_url, "workflow_status") == {None: 1}


async def test_the_command_prints_its_progress(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    old, job = build(make_dbos, OLD)
    async with old.launched():
        for i in range(3):
            await job(i)  # type: ignore[operator]
    command = [sys.executable, "-m", "dbos_trio.cli", "rename-application", "-s", dbos_url]
    command += ["--from", OLD, "--to", NEW, "--batch-size", "1"]
    done = await trio.to_thread.run_sync(
        lambda: subprocess.run(command, capture_output=True, text=True, timeout=60)
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.strip() for line in lines if "finished workflows" in line] == [
        "finished workflows: 1 re-owned",
        "finished workflows: 2 re-owned",
        "finished workflows: 3 re-owned",
        "finished workflows: 3 re-owned",
    ]
    assert lines[-1].startswith(f"renamed {OLD} to {NEW}: 1 queues")
    assert await owners(dbos_url, "workflow_status") == {NEW: 3}
