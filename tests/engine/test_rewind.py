"""Rewind, fork options, bulk management and step listing, on both backends.

A rewind keeps the workflow's id, discards its history from a step on (exactly the
deletions of dbos 3.4, reference §3.15) and re-enqueues it; the tests look at the rows a
rewind leaves, then relaunch and check what re-runs. Fork options and the bulk calls are
checked by the rows they write.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from dbos_trio import (
    DBOS,
    DBOSException,
    DBOSNonExistentWorkflowError,
    SetWorkflowID,
)
from dbos_trio._client import Client

from support.backends import query, status_row, steps_of

MakeDBOS = Callable[..., DBOS]
UNSERVED = "nobody_serves_this_q"


async def test_a_rewind_discards_history_from_the_step_and_reruns_from_there(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"first": 0, "second": 0}

    @dbos.step()
    async def first() -> str:
        runs["first"] += 1
        return f"first{runs['first']}"

    @dbos.step()
    async def second() -> str:
        runs["second"] += 1
        return f"second{runs['second']}"

    @dbos.workflow()
    async def story() -> str:
        a = await first()  # 1
        await dbos.set_event("k", "early")  # 2
        await dbos.write_stream("s", "v1")  # 3
        await dbos.set_event("k", "late")  # 4
        message = await dbos.recv("t", timeout_seconds=30)  # 5 (and its sleep, 6)
        await dbos.close_stream("s")  # 7
        b = await second()  # 8
        return f"{a}-{b}-{message}"

    async with dbos.launched():
        with SetWorkflowID("story"):
            handle = await dbos.start_workflow(story)
        await dbos.send("story", "hello", "t")
        assert await handle.get_result() == "first1-second1-hello"

    async with Client(dbos_url, app_name="wf-tests") as client:
        rewound = await client.rewind_workflow("story", start_step=4)
        assert rewound.workflow_id == "story"
        # The event published at step 4 is rolled back to its step-2 value.
        assert await client.get_event("story", "k", timeout_seconds=0) == "early"
    row = await status_row(dbos_url, "story")
    assert (row["status"], row["queue_name"], row["recovery_attempts"]) == (
        "ENQUEUED",
        "_dbos_internal_queue",
        0,
    )
    assert [step[0] for step in await steps_of(dbos_url, "story")] == [1, 2, 3]
    # The event history follows.
    events = await query(
        dbos_url, "SELECT key FROM {t}workflow_events WHERE workflow_uuid = %s", "story"
    )
    assert [e[0] for e in events] == ["k"]
    history = await query(
        dbos_url,
        "SELECT function_id FROM {t}workflow_events_history WHERE workflow_uuid = %s "
        "ORDER BY function_id",
        "story",
    )
    assert [h[0] for h in history] == [2]
    # The stream keeps its value but loses the close marker written at step 7.
    stream = await query(
        dbos_url,
        'SELECT "offset", function_id FROM {t}streams WHERE workflow_uuid = %s ORDER BY "offset"',
        "story",
    )
    assert stream == [(0, 3)]
    # The message consumed at step 5 is gone, and so is the stored output.
    assert (
        await query(dbos_url, "SELECT 1 FROM {t}notifications WHERE destination_uuid = %s", "story")
        == []
    )
    assert (
        await query(dbos_url, "SELECT 1 FROM {t}workflow_output WHERE workflow_uuid = %s", "story")
        == []
    )

    async with dbos.launched():
        await dbos.send("story", "again", "t")
        handle = await dbos.retrieve_workflow("story")
        assert await handle.get_result() == "first1-second2-again"
        assert [v async for v in dbos.read_stream("story", "s")] == ["v1"]
        assert await dbos.get_event("story", "k", timeout_seconds=0) == "late"
    assert runs == {"first": 1, "second": 2}


async def test_only_a_finished_workflow_can_be_rewound(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def parked() -> str:
        return "never runs here"

    async with dbos.launched():
        with SetWorkflowID("parked-1"):
            await dbos.enqueue_workflow(UNSERVED, parked)
        with pytest.raises(DBOSException, match="only a workflow in a terminal state"):
            await dbos.rewind_workflow("parked-1")
        with pytest.raises(DBOSNonExistentWorkflowError):
            await dbos.rewind_workflow("no-such-workflow")
        with pytest.raises(DBOSException, match="start_step"):
            await dbos.rewind_workflow("parked-1", start_step=0)
        # Cancelled is terminal: it can be rewound, onto another queue.
        await dbos.cancel_workflow("parked-1")
        handle = await dbos.rewind_workflow("parked-1", queue_name=UNSERVED)
        status = await handle.get_status()
        assert (status.status, status.queue_name) == ("ENQUEUED", UNSERVED)


async def test_a_rewind_from_a_workflow_body_is_one_checkpoint(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def target() -> str:
        return "done"

    @dbos.workflow()
    async def operator(workflow_id: str) -> str:
        handle = await dbos.rewind_workflow(workflow_id, queue_name=UNSERVED)
        return handle.workflow_id

    async with dbos.launched():
        with SetWorkflowID("rw-target"):
            await target()
        with SetWorkflowID("rw-operator"):
            assert await operator("rw-target") == "rw-target"
        steps = await dbos.list_workflow_steps("rw-operator")
        assert [(s.function_id, s.function_name) for s in steps] == [(1, "DBOS.rewindWorkflow")]


async def test_fork_takes_partition_key_timeout_and_replacement_children(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def child() -> int:
        return 7

    @dbos.workflow()
    async def parent() -> int:
        with SetWorkflowID("fork-child"):
            handle = await dbos.start_workflow(child)
        return await handle.get_result() + 1

    async with dbos.launched():
        with SetWorkflowID("fork-parent"):
            assert await parent() == 8
        with SetWorkflowID("forked-1"):
            forked = await dbos.fork_workflow(
                "fork-parent",
                2,
                queue_name=UNSERVED,
                queue_partition_key="p-1",
                timeout_seconds=5,
                replacement_children={"fork-child": "other-child"},
            )
        assert forked.workflow_id == "forked-1"
        with pytest.raises(DBOSException, match="replacement_children"):
            await dbos.fork_workflow("fork-parent", 2, replacement_children=["x"])  # type: ignore[arg-type]
        forks = await dbos.list_workflows(is_fork=True)
        assert [s.workflow_id for s in forks] == ["forked-1"]
        originals = await dbos.list_workflows(is_fork=False)
        assert "forked-1" not in [s.workflow_id for s in originals]
    row = await status_row(dbos_url, "forked-1")
    assert (row["queue_name"], row["queue_partition_key"], row["workflow_timeout_ms"]) == (
        UNSERVED,
        "p-1",
        5000,
    )
    assert row["forked_from"] == "fork-parent"
    assert await steps_of(dbos_url, "forked-1") == [(1, child.__qualname__, "other-child")]

    async with Client(dbos_url, app_name="wf-tests") as client:
        via_client = await client.fork_workflow(
            "fork-parent", 2, queue_name=UNSERVED, replacement_children={"fork-child": "c2"}
        )
    assert await steps_of(dbos_url, via_client.workflow_id) == [(1, child.__qualname__, "c2")]


async def test_bulk_cancel_resume_and_delete_act_on_every_listed_workflow(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def parked(n: int) -> int:
        return n

    async with dbos.launched():
        ids = []
        for n in range(3):
            with SetWorkflowID(f"bulk-{n}"):
                ids.append((await dbos.enqueue_workflow(UNSERVED, parked, n)).workflow_id)

        async def statuses() -> list[str]:
            found = await dbos.list_workflows(workflow_ids=ids)
            return [s.status for s in found]

        await dbos.cancel_workflows(ids[:2])
        assert await statuses() == ["CANCELLED", "CANCELLED", "ENQUEUED"]
        handles = await dbos.resume_workflows(ids[:2], queue_name=UNSERVED)
        assert [h.workflow_id for h in handles] == ids[:2]
        assert await statuses() == ["ENQUEUED", "ENQUEUED", "ENQUEUED"]
        with pytest.raises(DBOSNonExistentWorkflowError):
            await dbos.resume_workflows(["bulk-0", "missing"])
        with pytest.raises(DBOSException, match="list of str"):
            await dbos.cancel_workflows("bulk-0")
        await dbos.delete_workflows([*ids[1:], "missing"])
        assert [s.workflow_id for s in await dbos.list_workflows(workflow_ids=ids)] == ["bulk-0"]


async def test_list_workflow_steps_pages_and_can_leave_outputs_out(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    @dbos.step()
    async def numbered(n: int) -> int:
        return n * 10

    @dbos.workflow()
    async def five() -> None:
        for n in range(5):
            await numbered(n)

    async with dbos.launched():
        with SetWorkflowID("steps-5"):
            await five()
        every = await dbos.list_workflow_steps("steps-5")
        assert [s.output for s in every] == [0, 10, 20, 30, 40]
        page = await dbos.list_workflow_steps("steps-5", limit=2, offset=1)
        assert [(s.function_id, s.output) for s in page] == [(2, 10), (3, 20)]
        bare = await dbos.list_workflow_steps("steps-5", load_output=False, offset=3)
        assert [(s.function_id, s.output) for s in bare] == [(4, None), (5, None)]
        with pytest.raises(DBOSException, match="limit"):
            await dbos.list_workflow_steps("steps-5", limit=-1)


async def test_listing_filters_are_typed_keywords_and_unknown_ones_are_refused(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def noop() -> None:
        await trio.lowlevel.checkpoint()

    async with dbos.launched():
        with SetWorkflowID("typed-1"):
            await noop()
        found = await dbos.list_workflows(name=noop.__qualname__, status="SUCCESS", limit=5)
        assert [s.workflow_id for s in found] == ["typed-1"]
        assert await dbos.list_workflows(schedule_name="no-schedule") == []
        assert await dbos.list_queued_workflows(workflow_ids=["typed-1"]) == []
        with pytest.raises(TypeError):
            await dbos.list_workflows(no_such_filter=1)  # type: ignore[call-arg]
