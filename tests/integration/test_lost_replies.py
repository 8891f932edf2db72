"""Every write survives a lost reply: the statement committed, the client never heard.

Each test makes one write of the system database lose its reply — the statement runs
and commits on the server, then the connection drops before the reply is read
(:func:`dbos_trio.testing.faults.lose_replies`, at the driver boundary) — and checks
that the retry the backend makes lands on the state the first attempt made: nothing
done twice, nothing lost, and the caller sees the answer the write meant.

PostgreSQL only: the SQLite backend runs in-process, where a committed statement's reply
cannot be lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio

from dbos_trio import DBOS, Client, EnqueueOptions, SetWorkflowID
from dbos_trio.testing.faults import LostReplies, lose_replies

from support.backends import count_rows, query, status_row, steps_of

pytestmark = pytest.mark.postgres_only_module(
    "lost replies are a network fault of a PostgreSQL client"
)

MakeDBOS = Callable[..., DBOS]


def assert_lost(faults: LostReplies, *names: str) -> None:
    """The fault did happen (else the test proves nothing)."""
    assert sorted(faults.lost) == sorted(names), faults.lost


async def test_a_start_whose_reply_was_lost_runs_the_workflow_once(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs: list[str] = []

    @dbos.workflow()
    async def once(x: str) -> str:
        runs.append(x)
        return x * 2

    async with dbos.launched():
        with lose_replies("init_workflow") as faults, SetWorkflowID("start-1"):
            assert await once("ab") == "abab"
    assert_lost(faults, "init_workflow")
    assert runs == ["ab"]
    row = await status_row(dbos_url, "start-1")
    assert (row["status"], row["recovery_attempts"]) == ("SUCCESS", 1)
    assert await count_rows(dbos_url, "workflow_input") == 1


async def test_a_child_start_whose_reply_was_lost_starts_one_child(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs: list[str] = []

    @dbos.workflow()
    async def child() -> str:
        runs.append("child")
        return "c"

    @dbos.workflow()
    async def parent() -> str:
        return await child()

    async with dbos.launched():
        with lose_replies("init_child_workflow") as faults, SetWorkflowID("parent-1"):
            assert await parent() == "c"
    assert_lost(faults, "init_child_workflow")
    assert runs == ["child"]
    assert await steps_of(dbos_url, "parent-1") == [
        (1, child.__qualname__, "parent-1-1"),
        (2, "DBOS.getResult", "parent-1-1"),
    ]


async def test_a_step_checkpoint_whose_reply_was_lost_is_recorded_once(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs: list[int] = []

    @dbos.step()
    async def step(i: int) -> int:
        runs.append(i)
        return i + 1

    @dbos.workflow()
    async def flow() -> int:
        return await step(1) + await step(10)

    async with dbos.launched():
        with lose_replies("record_step") as faults, SetWorkflowID("step-1"):
            assert await flow() == 13
    assert_lost(faults, "record_step")
    assert runs == [1, 10]  # no step body ran twice
    assert [s[:2] for s in await steps_of(dbos_url, "step-1")] == [
        (1, step.__qualname__),
        (2, step.__qualname__),
    ]


async def test_an_outcome_whose_reply_was_lost_is_the_outcome_callers_see(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def flow() -> str:
        return "done"

    @dbos.workflow()
    async def failing() -> str:
        raise ValueError("its own error")

    async with dbos.launched():
        with lose_replies("record_outcome", times=2) as faults:
            with SetWorkflowID("outcome-1"):
                assert await flow() == "done"
            with SetWorkflowID("outcome-2"), pytest.raises(ValueError, match="its own error"):
                await failing()
    assert_lost(faults, "record_outcome", "record_outcome")
    assert (await status_row(dbos_url, "outcome-1"))["status"] == "SUCCESS"
    assert (await status_row(dbos_url, "outcome-2"))["status"] == "ERROR"


async def test_sends_whose_replies_were_lost_leave_one_message_each(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def inbox() -> list[Any]:
        return [await dbos.recv("t", timeout_seconds=5) for _ in range(3)]

    @dbos.workflow()
    async def sender(destination: str) -> None:
        await dbos.send(destination, "from a workflow", "t")

    async with dbos.launched():
        with SetWorkflowID("inbox-1"):
            handle = await dbos.start_workflow(inbox)
        with lose_replies("send_message", times=3) as faults:
            await dbos.send("inbox-1", "plain", "t")
            await dbos.send("inbox-1", "keyed", "t", idempotency_key="k1")
            with SetWorkflowID("sender-1"):
                await sender("inbox-1")
        assert sorted(await handle.get_result()) == ["from a workflow", "keyed", "plain"]
    assert_lost(faults, "send_message", "send_message", "send_message")
    assert await count_rows(dbos_url, "notifications") == 3
    assert [s[1] for s in await steps_of(dbos_url, "sender-1")] == ["DBOS.send"]


async def test_a_receive_whose_reply_was_lost_returns_the_message_it_consumed(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def one() -> Any:
        return await dbos.recv("t", timeout_seconds=5)

    @dbos.workflow()
    async def two() -> tuple[Any, Any]:
        return await dbos.recv("t", timeout_seconds=5), await dbos.recv("t", timeout_seconds=5)

    async with dbos.launched():
        with SetWorkflowID("one-1"):
            first = await dbos.start_workflow(one)
        with SetWorkflowID("two-1"):
            second = await dbos.start_workflow(two)
        # Armed before anything is sent: a receiver woken by a send consumes at once.
        with lose_replies("consume_message", times=2) as faults:
            await dbos.send("one-1", "only", "t")
            await dbos.send("two-1", "m1", "t")
            await trio.sleep(0.002)  # m1 strictly older than m2
            await dbos.send("two-1", "m2", "t")
            assert await first.get_result() == "only"
            assert await second.get_result() == ("m1", "m2")
    assert faults.lost, "no reply was lost"
    # Each message consumed once, by the step that received it.
    consumed = await query(
        dbos_url,
        "SELECT destination_uuid, message IS NOT NULL, consumed_by_function_id "
        "FROM {t}notifications WHERE consumed ORDER BY destination_uuid, "
        "consumed_by_function_id",
    )
    assert consumed == [("one-1", True, 1), ("two-1", True, 1), ("two-1", True, 3)]


async def test_events_and_streams_whose_replies_were_lost_are_written_once(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def writer() -> None:
        await dbos.set_event("k", "v1")
        await dbos.write_stream("s", 1)
        await dbos.write_stream("s", 2)
        await dbos.close_stream("s")

    async with dbos.launched():
        with lose_replies("set_event", "write_stream") as faults, SetWorkflowID("writer-1"):
            await writer()
        values = [value async for value in dbos.read_stream("writer-1", "s")]
        assert values == [1, 2]
        assert await dbos.get_event("writer-1", "k", timeout_seconds=0) == "v1"
    assert sorted(faults.lost) == ["set_event", "write_stream"]
    assert await count_rows(dbos_url, "streams") == 3  # two values and the close marker
    assert await count_rows(dbos_url, "workflow_events_history") == 1
    assert [s[1] for s in await steps_of(dbos_url, "writer-1")] == [
        "DBOS.setEvent",
        "DBOS.writeStream",
        "DBOS.writeStream",
        "DBOS.closeStream",
    ]


@pytest.mark.parametrize("consistent", [False, True], ids=["skip-locked", "nowait"])
async def test_a_claim_whose_reply_was_lost_runs_what_it_claimed(
    make_dbos: MakeDBOS, dbos_url: str, consistent: bool
) -> None:
    dbos = make_dbos()
    dbos.register_queue("lost", global_concurrency=10 if consistent else None)
    runs: list[str] = []

    @dbos.workflow()
    async def job(x: str) -> str:
        runs.append(x)
        return x

    claim = "claim_nowait" if consistent else "claim_skip_locked"
    # Enqueued before launch, so the executor's first claim is the one that claims them.
    async with Client(dbos_url) as client:
        for name in ("a", "b"):
            options = EnqueueOptions(
                workflow_name=job.__qualname__, queue_name="lost", workflow_id=f"lost-{name}"
            )
            await client.enqueue(options, name)
    with lose_replies(claim, where=lambda _, params: params["queue_name"] == "lost") as faults:
        async with dbos.launched():
            for name in ("a", "b"):
                assert await (await dbos.retrieve_workflow(f"lost-{name}")).get_result() == name
    assert faults.lost == [claim]
    assert sorted(runs) == ["a", "b"]
    attempts = await query(dbos_url, "SELECT recovery_attempts FROM {t}workflow_status")
    assert attempts == [(1,), (1,)]


async def test_enqueues_whose_replies_were_lost_leave_one_row(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    queue = dbos.register_queue("eq")

    @dbos.workflow()
    async def job(x: int) -> int:
        return x + 1

    async with dbos.launched(), Client(dbos_url) as client:
        with lose_replies("init_workflow", times=2) as faults:
            handle = await queue.enqueue(job, 1)
            other = await client.enqueue(
                EnqueueOptions(workflow_name=job.__qualname__, queue_name="eq"), 2
            )
        assert await handle.get_result() == 2
        assert await other.get_result() == 3
    assert faults.lost == ["init_workflow", "init_workflow"]
    assert await count_rows(dbos_url, "workflow_status") == 2


async def test_a_bulk_insert_whose_reply_was_lost_leaves_each_row_once(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    # The plain rows' multi-row insert committed, its reply lost: the retry meets its own
    # rows (a unique violation, nothing written), and the chunk's rows are then answered
    # one by one as made by this enqueue (the creator token is the insert's).
    dbos = make_dbos()
    dbos.register_queue("bq")

    @dbos.workflow()
    async def job(x: int) -> int:
        return x + 1

    async with dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(workflow_name=job.__qualname__, queue_name="bq")
        with lose_replies("insert_new_workflows") as faults:
            handles = await client.enqueue_many(options, [(i,) for i in range(30)])
        assert [await handle.get_result() for handle in handles] == list(range(1, 31))
    assert_lost(faults, "insert_new_workflows")
    assert await count_rows(dbos_url, "workflow_status") == 30
    assert await count_rows(dbos_url, "workflow_input") == 30
    attempts = await query(dbos_url, "SELECT DISTINCT recovery_attempts FROM {t}workflow_status")
    assert attempts == [(1,)]


async def test_management_writes_whose_replies_were_lost_take_effect_once(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def waiting() -> Any:
        return await dbos.recv("go", timeout_seconds=30)

    @dbos.workflow()
    async def short(x: int) -> int:
        return x

    async with dbos.launched():
        with SetWorkflowID("cancel-me"):
            waiter = await dbos.start_workflow(waiting)
        with SetWorkflowID("short-1"):
            assert await short(7) == 7
        with lose_replies(
            "cancel_workflows", "resume_workflows", "fork_workflow", "delete_workflows"
        ) as faults:
            await dbos.cancel_workflow("cancel-me")
            assert (await waiter.get_status()).status == "CANCELLED"
            resumed = await dbos.resume_workflow("cancel-me")
            with SetWorkflowID("fork-1"):
                forked = await dbos.fork_workflow("short-1", 1)
            assert forked.workflow_id == "fork-1"
            assert await forked.get_result() == 7
            await dbos.delete_workflow("short-1")
        await dbos.send("cancel-me", "now", "go")
        assert await resumed.get_result() == "now"
    assert sorted(faults.lost) == [
        "cancel_workflows",
        "delete_workflows",
        "fork_workflow",
        "resume_workflows",
    ]
    assert await query(
        dbos_url, "SELECT count(*) FROM {t}workflow_status WHERE workflow_uuid = 'short-1'"
    ) == [(0,)]
    assert (await status_row(dbos_url, "fork-1"))["forked_from"] == "short-1"
