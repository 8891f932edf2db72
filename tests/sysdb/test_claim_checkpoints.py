"""A PostgreSQL claim brings each claimed row's checkpoints, so a dequeued or recovered
execution starts without a ``load_steps`` read.

What comes back must be exactly what ``load_steps`` reads after the claim; the engine
falls back to reading them itself when the claim brings none (the column is NULL when the
row changed between the claim's snapshot and its lock; the SQLite backend never brings
them).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from dbos_trio import DBOS, Config
from dbos_trio._sysdb.postgres.backend import PostgresSystemDatabase
from dbos_trio._sysdb.records import ClaimRequest, NewWorkflow, RecordedStep

from support.pg_support import fresh_database

SCHEMA = "dbos"
APP = "claim-checkpoints"


@asynccontextmanager
async def backend() -> AsyncIterator[tuple[PostgresSystemDatabase, str]]:
    with fresh_database("claimsteps") as url:
        sysdb = await PostgresSystemDatabase.open(
            url,
            schema=SCHEMA,
            max_connections=2,
            connect_timeout=10,
            run_migrations=True,
            use_listen_notify=False,
        )
        try:
            yield sysdb, url
        finally:
            await sysdb.close()


def new_row(workflow_id: str, token: str) -> NewWorkflow:
    return NewWorkflow(
        workflow_id=workflow_id,
        status="PENDING",
        name="wf",
        class_name=None,
        config_name=None,
        inputs="inputs",
        serialization="py_pickle",
        creator_xid=token,
        owner_xid=token,
        recovery_attempts=1,
        created_at_ms=1_000,
        executor_id="local",
        application_version="v1",
        application_name=APP,
    )


def claim_request(queue: str) -> ClaimRequest:
    return ClaimRequest(
        queue_name=queue,
        partition_key=None,
        owner_xid=str(uuid.uuid4()),
        executor_id="local",
        application_version="v1",
        application_name=APP,
        runs_latest_version=True,
        workflow_names=("wf",),
        now_ms=2_000,
        local_budget=None,
        global_concurrency=None,
        rate_limit_max=None,
        rate_limit_period_ms=None,
        partition_concurrency=None,
        partition_rate_limit_max=None,
        partition_rate_limit_period_ms=None,
        consistent=False,
        rate_limited=False,
    )


async def requeue(sysdb: PostgresSystemDatabase, workflow_id: str, queue: str) -> None:
    async with sysdb.pool.connection() as conn:
        await conn.execute(
            f"UPDATE {SCHEMA}.workflow_status SET status = 'ENQUEUED', owner_xid = NULL, "
            "queue_name = %s WHERE workflow_uuid = %s",
            (queue, workflow_id),
        )


async def test_a_claim_brings_the_checkpoints_load_steps_would_read() -> None:
    async with backend() as (sysdb, _url):
        token = str(uuid.uuid4())
        await sysdb.init_workflow(new_row("with-steps", token), None)
        steps = [
            RecordedStep(
                function_id=1,
                function_name="step \u00e9\u4e2d",
                output='{"a": "\\"quoted\\"\\n"}',
                error=None,
                serialization="portable_json",
                started_at_ms=1_700_000_000_123,
                completed_at_ms=2**53 + 1,
            ),
            RecordedStep(
                function_id=2,
                function_name="DBOS.getResult",
                output=None,
                error="gASV" * 50,
                serialization="py_pickle",
                child_workflow_id="child-\u00e9",
                started_at_ms=5,
                completed_at_ms=6,
            ),
            RecordedStep(
                function_id=4,
                function_name="DBOS.sleep",
                output=None,
                error=None,
                serialization=None,
                started_at_ms=None,
                completed_at_ms=None,
            ),
        ]
        for step in steps:
            await sysdb.record_step(token, step, workflow_id="with-steps", application_name=APP)
        await sysdb.init_workflow(new_row("without-steps", str(uuid.uuid4())), None)
        await requeue(sysdb, "with-steps", "q")
        await requeue(sysdb, "without-steps", "q")

        claimed = {row.workflow_id: row for row in await sysdb.claim(claim_request("q"))}

        assert claimed["with-steps"].steps == await sysdb.load_steps("with-steps")
        assert claimed["with-steps"].steps == {step.function_id: step for step in steps}
        assert claimed["without-steps"].steps == {}


async def test_a_recovered_workflow_runs_from_its_checkpoints_without_reading_them_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with fresh_database("claimsteps") as url:
        runs: list[int] = []
        loads: list[str] = []
        original_load_steps = PostgresSystemDatabase.load_steps

        async def counting_load_steps(self: PostgresSystemDatabase, workflow_id: str) -> Any:
            loads.append(workflow_id)
            return await original_load_steps(self, workflow_id)

        monkeypatch.setattr(PostgresSystemDatabase, "load_steps", counting_load_steps)
        dbos = DBOS(Config(app_name=APP, database_url=url))

        @dbos.step()
        async def first(i: int) -> int:
            runs.append(i)
            return i + 1

        @dbos.workflow()
        async def two_steps(i: int) -> int:
            return await first(i) + await first(i + 10)

        async with dbos.launched():
            handle = await dbos.start_workflow(two_steps, 1)
            assert await handle.get_result() == 14
            assert runs == [1, 11]
            # Forget the second checkpoint and hand the row back to the internal queue,
            # as a crash before step 2's commit and a recovery would.
            sysdb = dbos._require_executor("test").sysdb
            assert isinstance(sysdb, PostgresSystemDatabase)
            async with sysdb.pool.connection() as conn:
                await conn.execute(
                    f"DELETE FROM {SCHEMA}.operation_outputs "
                    "WHERE workflow_uuid = %s AND function_id = 2",
                    (handle.workflow_id,),
                )
                await conn.execute(
                    f"UPDATE {SCHEMA}.workflow_status SET status = 'ENQUEUED', "
                    "owner_xid = NULL, queue_name = '_dbos_internal_queue', output = NULL "
                    "WHERE workflow_uuid = %s",
                    (handle.workflow_id,),
                )
                await conn.execute(
                    f"DELETE FROM {SCHEMA}.workflow_output WHERE workflow_uuid = %s",
                    (handle.workflow_id,),
                )
            with trio.fail_after(10):
                again = await dbos.retrieve_workflow(handle.workflow_id)
                assert await again.get_result() == 14
        assert runs == [1, 11, 11]  # step 1 replayed from the claim's checkpoints
        assert loads == []
