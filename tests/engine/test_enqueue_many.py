"""``Queue.enqueue_many`` and ``Client.enqueue_many``: many rows in few statements, each
validated, deduplicated and idempotent as one ``enqueue`` of it would be; on both
backends. The tests check the rows written and what the handles return."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from dbos_trio import (
    DBOS,
    Client,
    DBOSEnqueueManyError,
    DBOSException,
    DBOSInvalidArgumentError,
    DBOSQueueDeduplicatedError,
    EnqueueCall,
    EnqueueOptions,
    SetEnqueueOptions,
    SetWorkflowID,
)

from support.backends import query, status_row
from support.waiting import HANG_GUARD

MakeDBOS = Callable[..., DBOS]
QUEUE = "many_q"


def app(make_dbos: MakeDBOS) -> tuple[DBOS, object]:
    dbos = make_dbos()
    queue = dbos.register_queue(QUEUE)

    @dbos.workflow(name="many.double")
    async def double(x: int) -> int:
        return 2 * x

    return dbos, (queue, double)


async def ids_on_queue(url: str) -> set[str]:
    rows = await query(
        url, "SELECT workflow_uuid FROM {t}workflow_status WHERE queue_name = %s", QUEUE
    )
    return {row[0] for row in rows}


async def test_many_rows_are_enqueued_and_run_in_order_of_their_handles(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos, (queue, double) = app(make_dbos)
    async with dbos.launched():
        calls = [(i,) for i in range(40)] + [EnqueueCall(args=(100,), workflow_id="many-100")]
        handles = await queue.enqueue_many(double, calls)  # type: ignore[attr-defined]
        assert [h.workflow_id for h in handles][-1] == "many-100"
        with trio.fail_after(HANG_GUARD):
            results = [await h.get_result() for h in handles]
        assert results == [2 * i for i in range(40)] + [200]
        row = await status_row(dbos_url, "many-100")
        assert row["status"] == "SUCCESS" and row["queue_name"] == QUEUE
        # Idempotent by id: again, the same workflow comes back and no row is added.
        again = await queue.enqueue_many(double, [EnqueueCall(args=(1,), workflow_id="many-100")])  # type: ignore[attr-defined]
        assert [h.workflow_id for h in again] == ["many-100"]
        assert await again[0].get_result() == 200
        assert len(await ids_on_queue(dbos_url)) == 41


async def test_a_bad_row_is_refused_by_index_before_anything_is_written(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos, (queue, double) = app(make_dbos)
    async with dbos.launched():
        calls = [
            EnqueueCall(args=(1,), workflow_id="bad-0"),
            EnqueueCall(args=(2,), workflow_id="bad-1"),
            EnqueueCall(args=(lambda: 3,), workflow_id="bad-2"),  # cannot be pickled
        ]
        with pytest.raises(DBOSInvalidArgumentError, match="row 2"):
            await queue.enqueue_many(double, calls)  # type: ignore[attr-defined]
        with pytest.raises(DBOSInvalidArgumentError, match="rows 0 and 1"):
            await queue.enqueue_many(  # type: ignore[attr-defined]
                double, [EnqueueCall(args=(1,), workflow_id="twice")] * 2
            )
        with pytest.raises(DBOSInvalidArgumentError, match=r"row 1: .*not partitioned"):
            await queue.enqueue_many(  # type: ignore[attr-defined]
                double, [(1,), EnqueueCall(args=(2,), queue_partition_key="p")]
            )
        with (
            SetWorkflowID("one-id"),
            pytest.raises(DBOSInvalidArgumentError, match="SetWorkflowID"),
        ):
            await queue.enqueue_many(double, [(1,), (2,)])  # type: ignore[attr-defined]
        assert await ids_on_queue(dbos_url) == set()


async def test_held_deduplication_ids_refuse_their_rows_only_and_every_other_row_is_written(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    queue = dbos.register_queue(QUEUE)
    gate = trio.Event()

    @dbos.workflow(name="many.held")
    async def held(x: int) -> int:
        await gate.wait()
        return x

    async with dbos.launched():
        with SetEnqueueOptions(deduplication_id="d"), SetWorkflowID("holder"):
            holder = await queue.enqueue(held, 0)
        calls = [
            EnqueueCall(args=(1,), workflow_id="r0"),
            EnqueueCall(args=(2,), workflow_id="r1", deduplication_id="d"),  # held
            EnqueueCall(args=(3,), workflow_id="r2", deduplication_id="e"),
            EnqueueCall(args=(4,), workflow_id="r3", deduplication_id="e"),  # held by r2
            EnqueueCall(args=(5,), workflow_id="r4"),
        ]
        with pytest.raises(DBOSEnqueueManyError) as caught:
            await queue.enqueue_many(held, calls)
        error = caught.value
        assert sorted(error.failures) == [1, 3]
        assert all(isinstance(e, DBOSQueueDeduplicatedError) for e in error.failures.values())
        assert error.workflow_ids == ["r0", None, "r2", None, "r4"]
        assert "row 1" in str(error) and "row 3" in str(error)
        assert await ids_on_queue(dbos_url) == {"holder", "r0", "r2", "r4"}

        # return-existing: the refused rows answer with the holders' handles.
        with SetEnqueueOptions(duplication_policy="return-existing"):
            handles = await queue.enqueue_many(
                held,
                [
                    EnqueueCall(args=(6,), workflow_id="r5", deduplication_id="d"),
                    EnqueueCall(args=(7,), workflow_id="r6", deduplication_id="f"),
                ],
            )
        assert [h.workflow_id for h in handles] == ["holder", "r6"]
        gate.set()
        with trio.fail_after(HANG_GUARD):
            assert await holder.get_result() == 0
            assert await handles[1].get_result() == 7


async def test_a_client_enqueues_many_and_an_executor_runs_them(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos, _ = app(make_dbos)
    options = EnqueueOptions(workflow_name="many.double", queue_name=QUEUE, priority=3)
    async with dbos.launched(), Client(dbos_url, app_name=dbos.config.app_name) as client:
        calls = [(i,) for i in range(10)] + [
            EnqueueCall(args=(50,), workflow_id="c-50", priority=1)
        ]
        handles = await client.enqueue_many(options, calls)
        with trio.fail_after(HANG_GUARD):
            assert [await h.get_result() for h in handles] == [2 * i for i in range(10)] + [100]
        assert (await status_row(dbos_url, "c-50"))["priority"] == 1
        assert (await status_row(dbos_url, handles[0].workflow_id))["priority"] == 3
        with pytest.raises(DBOSInvalidArgumentError, match="workflow_id"):
            await client.enqueue_many(
                EnqueueOptions(workflow_name="many.double", queue_name=QUEUE, workflow_id="x"),
                [(1,), (2,)],
            )
        with pytest.raises(DBOSInvalidArgumentError, match="row 1"):
            await client.enqueue_many(options, [(1,), "not a call"])  # type: ignore[list-item]
        with pytest.raises(DBOSInvalidArgumentError, match="row 2: cannot serialize"):
            await client.enqueue_many(options, [(1,), (2,), (lambda: 3,)])
        # Rows after the first share its options: the same row a one-by-one enqueue writes.
        one = await client.enqueue(options, 7)
        many = await client.enqueue_many(options, [(7,), (7,)])
        columns = "name, queue_name, priority, application_name, serialization, inputs IS NULL"
        rows = [
            await query(
                dbos_url,
                f"SELECT {columns} FROM {{t}}workflow_status WHERE workflow_uuid = %s",
                h.workflow_id,
            )
            for h in [one, *many]
        ]
        assert rows[0] == rows[1] == rows[2]


async def test_enqueue_many_is_refused_from_a_workflow_body(make_dbos: MakeDBOS) -> None:
    dbos, (queue, double) = app(make_dbos)

    @dbos.workflow(name="many.parent")
    async def parent() -> None:
        await queue.enqueue_many(double, [(1,)])  # type: ignore[attr-defined]

    async with dbos.launched():
        with pytest.raises(DBOSException, match="workflow body"):
            await (await dbos.start_workflow(parent)).get_result()


async def test_plain_rows_with_ids_that_exist_are_answered_as_one_by_one(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    # Plain rows go in as one multi-row insert; one id of the chunk already exists, so on
    # PostgreSQL that insert writes nothing and the chunk is written row by row instead:
    # the existing workflow comes back, every other row is made, none twice.
    dbos, (queue, double) = app(make_dbos)
    async with dbos.launched():
        [first] = await queue.enqueue_many(double, [EnqueueCall(args=(3,), workflow_id="e-3")])  # type: ignore[attr-defined]
        with trio.fail_after(HANG_GUARD):
            assert await first.get_result() == 6
        calls = [EnqueueCall(args=(i,), workflow_id=f"e-{i}") for i in range(6)]
        handles = await queue.enqueue_many(double, calls)  # type: ignore[attr-defined]
        assert [h.workflow_id for h in handles] == [f"e-{i}" for i in range(6)]
        with trio.fail_after(HANG_GUARD):
            assert [await h.get_result() for h in handles] == [0, 2, 4, 6, 8, 10]
        assert await ids_on_queue(dbos_url) == {f"e-{i}" for i in range(6)}
        row = await status_row(dbos_url, "e-3")
        assert row["recovery_attempts"] == 1  # run once, by the first enqueue


async def test_plain_rows_of_a_big_batch_are_stored_as_one_enqueue_stores_them(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    # 2,500 plain rows: several chunks, written at once; each row the template's columns
    # with its own id and inputs, and its inputs row.
    dbos, (queue, double) = app(make_dbos)
    async with dbos.launched():
        handles = await queue.enqueue_many(double, [(i,) for i in range(2500)])  # type: ignore[attr-defined]
        single = await queue.enqueue(double, 7)  # type: ignore[attr-defined]
        with trio.fail_after(HANG_GUARD):
            results = [await h.get_result() for h in handles]
        assert results == [2 * i for i in range(2500)]
    columns = (
        "name, class_name, config_name, queue_name, priority, application_name, "
        "application_version, serialization, recovery_attempts, status"
    )
    shapes = await query(
        dbos_url,
        f"SELECT DISTINCT {columns} FROM {{t}}workflow_status WHERE queue_name = %s",
        QUEUE,
    )
    alone = await query(
        dbos_url,
        f"SELECT {columns} FROM {{t}}workflow_status WHERE workflow_uuid = %s",
        single.workflow_id,
    )
    assert shapes == alone
    inputs = await query(dbos_url, "SELECT count(*) FROM {t}workflow_input")
    assert inputs == [(2501,)]
