"""Garbage collection, the retention policy and the global timeout, on both backends.

Rows are aged by rewriting their timestamps in SQL (what an old row looks like), then
collected; what is left is read back with the test's own connection. A finished
workflow goes with every row of its own (inputs, outputs, steps, events, messages,
streams); an active one (PENDING, ENQUEUED, DELAYED) stays, however old.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from dbos_trio import (
    DBOS,
    Client,
    Config,
    DBOSConfigError,
    DBOSInvalidArgumentError,
    RetentionPolicy,
    SetEnqueueOptions,
    SetWorkflowID,
)
from dbos_trio._engine.admin.retention import garbage_collect
from dbos_trio.testing import launched, sqlite_url

from support.backends import connected, count_rows, execute, query, status_row

HOUR_MS = 3_600_000
TABLES = (
    "workflow_input",
    "workflow_output",
    "operation_outputs",
    "workflow_events",
    "workflow_events_history",
    "streams",
    "notifications",
)


def now_ms() -> int:
    return int(time.time() * 1000)


async def age(url: str, workflow_id: str, hours: float) -> None:
    """Make a workflow look created and finished ``hours`` ago."""
    when = now_ms() - int(hours * HOUR_MS)
    changed = await execute(
        url,
        "UPDATE {t}workflow_status SET created_at = %s, updated_at = %s, "
        "completed_at = CASE WHEN completed_at IS NULL THEN NULL ELSE %s END "
        "WHERE workflow_uuid = %s",
        when,
        when,
        when,
        workflow_id,
    )
    assert changed == 1


async def rows_of(url: str, workflow_id: str) -> dict[str, int]:
    """How many rows each table holds for the workflow (notifications: as destination)."""
    found = {}
    for table in TABLES:
        column = "destination_uuid" if table == "notifications" else "workflow_uuid"
        [(count,)] = await query(
            url, f"SELECT count(*) FROM {{t}}{table} WHERE {column} = %s", workflow_id
        )
        found[table] = int(count)
    return found


async def ids(url: str) -> set[str]:
    return {row[0] for row in await query(url, "SELECT workflow_uuid FROM {t}workflow_status")}


def app(make_dbos: Callable[..., DBOS]) -> tuple[DBOS, Callable[..., object]]:
    dbos = make_dbos()

    @dbos.step()
    async def one() -> int:
        return 1

    @dbos.workflow()
    async def rich(fail: bool) -> int:
        await dbos.set_event("k", "v")
        await dbos.write_stream("s", 1)
        await dbos.close_stream("s")
        value = await one()
        if fail:
            raise ValueError("asked to fail")
        return value

    @dbos.workflow()
    async def waits() -> object:
        return await dbos.recv("topic", timeout_seconds=0.01)

    return dbos, rich


async def test_a_collection_deletes_finished_workflows_with_all_their_rows_and_never_active_ones(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos, rich = app(make_dbos)
    async with dbos.launched():
        for workflow_id, fail in (("done", False), ("failed", True)):
            with SetWorkflowID(workflow_id):
                handle = await dbos.start_workflow(rich, fail)
            with pytest.raises(ValueError) if fail else _nothing():
                await handle.get_result()
        await dbos.send("done", "late message", "topic")
        # Active rows on a queue nobody serves, and one delayed: as old as the rest.
        for workflow_id in ("queued", "cancelled"):
            with SetWorkflowID(workflow_id):
                await dbos.enqueue_workflow("nobody-serves-this", rich, False)
        with SetWorkflowID("delayed"), SetEnqueueOptions(delay_seconds=3600):
            await dbos.enqueue_workflow("nobody-serves-this", rich, False)
        await dbos.cancel_workflow("cancelled")
        with SetWorkflowID("recent"):
            await (await dbos.start_workflow(rich, False)).get_result()
        for workflow_id in ("done", "failed", "queued", "cancelled", "delayed"):
            await age(dbos_url, workflow_id, 48)
        before = await rows_of(dbos_url, "done")
        assert all(before[t] >= 1 for t in TABLES), before

        result = await dbos.garbage_collect(completed_before=now_ms() - 24 * HOUR_MS)

    assert result.deleted == 3 and result.batches == 1
    assert await ids(dbos_url) == {"queued", "delayed", "recent"}
    for workflow_id in ("done", "failed", "cancelled"):
        assert set((await rows_of(dbos_url, workflow_id)).values()) == {0}
    assert (await status_row(dbos_url, "queued"))["status"] == "ENQUEUED"
    assert (await status_row(dbos_url, "delayed"))["status"] == "DELAYED"
    assert (await rows_of(dbos_url, "recent"))["operation_outputs"] >= 1


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


async def test_keep_newest_keeps_that_many_of_the_newest_and_batches_report_progress(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def quick(n: int) -> int:
        return n

    async with dbos.launched():
        for n in range(7):
            with SetWorkflowID(f"wf-{n}"):
                await quick(n)
            # Distinct, ordered creation times.
            await execute(
                dbos_url,
                "UPDATE {t}workflow_status SET created_at = %s WHERE workflow_uuid = %s",
                1_000_000 + n,
                f"wf-{n}",
            )
        seen: list[int] = []
        result = await dbos.garbage_collect(keep_newest=2, batch_size=2, progress=seen.append)
        assert (result.deleted, result.batches) == (5, 3)
        assert seen == [2, 4, 5]
        assert await ids(dbos_url) == {"wf-5", "wf-6"}
        # A second run finds nothing more to do; keep_newest=0 keeps no finished row.
        assert (await dbos.garbage_collect(keep_newest=2)).deleted == 0
        assert (await dbos.garbage_collect(keep_newest=0)).deleted == 2
    assert await count_rows(dbos_url, "workflow_status") == 0


async def test_a_collection_is_scoped_to_its_application_and_a_client_for_none_sees_all(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    mine, other = make_dbos(), make_dbos(app_name="other-app", app_version="v2")
    for dbos, workflow_id in ((mine, "mine"), (other, "theirs")):

        @dbos.workflow()
        async def quick() -> None:
            return None

        async with dbos.launched():
            with SetWorkflowID(workflow_id):
                await quick()
        await age(dbos_url, workflow_id, 2)
    async with mine.launched():
        assert (await mine.garbage_collect(keep_newest=0)).deleted == 1
    assert await ids(dbos_url) == {"theirs"}
    async with Client(dbos_url, app_name="wf-tests") as client:
        assert (await client.garbage_collect(completed_before=now_ms())).deleted == 0
    async with Client(dbos_url) as client:
        assert (await client.garbage_collect(completed_before=now_ms())).deleted == 1
    assert await ids(dbos_url) == set()


async def test_bad_values_are_refused_before_anything_is_deleted(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def quick() -> None:
        return None

    async with dbos.launched():
        await quick()
        for bad in ({"keep_newest": -1}, {"keep_newest": True}, {"batch_size": 0},
                    {"completed_before": "yesterday"}):  # fmt: skip
            with pytest.raises(DBOSInvalidArgumentError):
                await dbos.garbage_collect(**bad)  # type: ignore[arg-type]
        assert (await dbos.garbage_collect()).deleted == 0  # no bound: nothing to delete
    assert await count_rows(dbos_url, "workflow_status") == 1
    with pytest.raises(DBOSInvalidArgumentError, match="max_age_seconds, keep_newest"):
        RetentionPolicy()
    with pytest.raises(DBOSInvalidArgumentError, match="interval_seconds"):
        RetentionPolicy(keep_newest=1, interval_seconds=0)
    with pytest.raises(DBOSConfigError, match=r"Config\.retention"):
        Config(app_name="bad-retention", retention={"keep_newest": 1})  # type: ignore[arg-type]


async def test_the_global_timeout_cancels_only_active_workflows_created_before_the_cutoff(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()
    release = trio.Event()

    @dbos.workflow()
    async def blocked() -> str:
        await release.wait()
        return "finished"

    @dbos.workflow()
    async def quick() -> str:
        return "done"

    async with dbos.launched():
        with SetWorkflowID("running"):
            running = await dbos.start_workflow(blocked)
        with SetWorkflowID("finished"):
            await quick()
        with SetWorkflowID("old-queued"):
            await dbos.enqueue_workflow("nobody-serves-this", quick)
        for workflow_id in ("running", "finished", "old-queued"):
            await age(dbos_url, workflow_id, 2)
        with SetWorkflowID("new-queued"):
            await dbos.enqueue_workflow("nobody-serves-this", quick)

        execution = dbos._require_executor("test").local["running"]

        cancelled = await dbos.cancel_workflows_created_before(now_ms() - HOUR_MS)

        assert sorted(cancelled) == ["old-queued", "running"]
        assert (await running.get_status()).status == "CANCELLED"
        with trio.fail_after(10):
            # The one running here was stopped at once (it never reaches a checkpoint).
            await execution.done.wait()
        assert execution.cancel_requested
    statuses = dict(await query(dbos_url, "SELECT workflow_uuid, status FROM {t}workflow_status"))
    assert statuses == {
        "running": "CANCELLED",
        "finished": "SUCCESS",
        "old-queued": "CANCELLED",
        "new-queued": "ENQUEUED",
    }


async def test_the_retention_policy_runs_in_the_background_on_the_trio_clock(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    url = sqlite_url(tmp_path / "retention.sqlite")
    policy = RetentionPolicy(max_age_seconds=3600, interval_seconds=600)
    dbos = DBOS(Config(app_name="retention", database_url=url, retention=policy))

    @dbos.workflow()
    async def quick(n: int) -> int:
        return n

    async with launched(dbos):
        with SetWorkflowID("early"):
            await quick(1)
        await trio.sleep(1800)  # virtual: half the age
        with SetWorkflowID("later"):
            await quick(2)
        await trio.sleep(1800 + 700)  # "early" is past the age; a run has happened since
        assert await ids(url) == {"later"}
        await trio.sleep(1800)
        assert await ids(url) == set()


@pytest.mark.postgres_only("the retention lock is a PostgreSQL advisory lock")
async def test_a_policy_run_stops_while_another_process_holds_the_retention_lock(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def quick() -> None:
        return None

    digest = hashlib.sha256(b"dbos_trio.retention.dbos.wf-tests").digest()
    key = int.from_bytes(digest[:8], "big", signed=True)
    async with dbos.launched():
        await quick()
        executor = dbos._require_executor("test")
        async with connected(dbos_url) as holder:
            await holder.execute("SELECT pg_advisory_lock(%s)", (key,))
            held = await garbage_collect(
                executor,
                completed_before_ms=None,
                keep_newest=0,
                application_name="wf-tests",
                leader_only=True,
            )
            assert (held.deleted, held.stopped_early) == (0, True)
            await holder.execute("SELECT pg_advisory_unlock(%s)", (key,))
        free = await garbage_collect(
            executor,
            completed_before_ms=None,
            keep_newest=0,
            application_name="wf-tests",
            leader_only=True,
        )
        assert (free.deleted, free.stopped_early) == (1, False)
    assert await count_rows(dbos_url, "workflow_status") == 0
