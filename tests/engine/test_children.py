"""Child workflows, ``DBOS.getResult`` checkpoints and ``wait_first``."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from dbos_trio import (
    DBOS,
    DBOSAwaitedWorkflowCancelledError,
    DBOSException,
    SetWorkflowID,
    WorkflowHandle,
)

from support.backends import execute, status_row, steps_of
from support.dbos_fixtures import reexecute
from support.waiting import HANG_GUARD

MakeDBOS = Callable[..., DBOS]


async def test_a_direct_child_call_takes_two_ids_and_links_to_its_parent(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.step()
    async def before() -> None:
        return None

    @dbos.workflow()
    async def child(text: str) -> str:
        return text + "_child"

    @dbos.workflow()
    async def parent() -> str:
        await before()
        return await child("direct")

    async with dbos.launched():
        with SetWorkflowID("parent-1"):
            assert await parent() == "direct_child"

    assert await steps_of(dbos_url, "parent-1") == [
        (1, before.__qualname__, None),
        (2, child.__qualname__, "parent-1-2"),
        (3, "DBOS.getResult", "parent-1-2"),
    ]
    row = await status_row(dbos_url, "parent-1-2")
    assert (row["status"], row["parent_workflow_id"], row["name"]) == (
        "SUCCESS",
        "parent-1",
        child.__qualname__,
    )
    assert (await status_row(dbos_url, "parent-1"))["parent_workflow_id"] is None


async def test_a_started_child_takes_one_id_and_its_awaited_result_adds_a_get_result(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def child(n: int) -> int:
        return n * 10

    @dbos.workflow()
    async def parent() -> tuple[str, int]:
        handle = await dbos.start_workflow(child, 4)
        unawaited = await dbos.start_workflow(child, 5)
        return unawaited.workflow_id, await handle.get_result()

    async with dbos.launched():
        with SetWorkflowID("parent-2"):
            second_id, result = await parent()
        second = await dbos.retrieve_workflow(second_id)
        assert await second.get_result() == 50

    assert (second_id, result) == ("parent-2-2", 40)
    assert await steps_of(dbos_url, "parent-2") == [
        (1, child.__qualname__, "parent-2-1"),
        (2, child.__qualname__, "parent-2-2"),
        (3, "DBOS.getResult", "parent-2-1"),
    ]
    for child_id in ("parent-2-1", "parent-2-2"):
        assert (await status_row(dbos_url, child_id))["parent_workflow_id"] == "parent-2"


async def test_a_replayed_parent_does_not_run_its_children_again(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"child": 0, "started": 0}

    @dbos.workflow()
    async def child(text: str) -> str:
        runs["child"] += 1
        return text.upper()

    @dbos.workflow()
    async def started_child() -> str:
        runs["started"] += 1
        return "started"

    @dbos.workflow()
    async def parent() -> str:
        handle = await dbos.start_workflow(started_child)
        direct = await child("a")
        return direct + await handle.get_result()

    async with dbos.launched():
        with SetWorkflowID("parent-3"):
            assert await parent() == "Astarted"
        assert await reexecute(dbos, dbos_url, parent, "parent-3") == "Astarted"
        # Even with the getResult checkpoints gone, the recorded child ids are reused and
        # the children's stored outcomes awaited: no child runs again.
        await execute(
            dbos_url,
            "DELETE FROM {t}operation_outputs "
            "WHERE workflow_uuid = 'parent-3' AND function_name = 'DBOS.getResult'",
        )
        assert await reexecute(dbos, dbos_url, parent, "parent-3") == "Astarted"

    assert runs == {"child": 1, "started": 1}
    assert [name for _, name, _ in await steps_of(dbos_url, "parent-3")] == [
        started_child.__qualname__,
        child.__qualname__,
        "DBOS.getResult",
        "DBOS.getResult",
    ]


async def test_a_child_error_is_recorded_in_the_parent_and_replayed(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"child": 0}

    @dbos.workflow()
    async def failing_child() -> None:
        runs["child"] += 1
        raise ValueError("child failed")

    @dbos.workflow()
    async def parent() -> str:
        try:
            await failing_child()
        except ValueError as error:
            return f"parent saw {error}"
        return "no error"

    async with dbos.launched():
        with SetWorkflowID("parent-4"):
            assert await parent() == "parent saw child failed"
        assert await reexecute(dbos, dbos_url, parent, "parent-4") == "parent saw child failed"
        steps = await dbos.list_workflow_steps("parent-4")

    assert runs["child"] == 1
    assert steps[1].function_name == "DBOS.getResult"
    assert isinstance(steps[1].error, ValueError)
    assert (await status_row(dbos_url, "parent-4-1"))["status"] == "ERROR"


async def test_a_child_with_an_assigned_id_runs_once_across_parents(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"step": 0}

    @dbos.step()
    async def count(text: str) -> str:
        runs["step"] += 1
        return text + "1"

    @dbos.workflow()
    async def assigned_child(text: str) -> str:
        assert dbos.workflow_id == "assigned-child"
        return await count(text)

    @dbos.workflow()
    async def parent() -> str:
        with SetWorkflowID("assigned-child"):
            first = await assigned_child("first")
        with SetWorkflowID("assigned-child"):
            handle = await dbos.start_workflow(assigned_child, "second")
            second = await handle.get_result()
        return first + second

    async with dbos.launched():
        with SetWorkflowID("parent-5"):
            assert await parent() == "first1first1"
        assert await parent() == "first1first1"

    assert runs["step"] == 1
    assert (await status_row(dbos_url, "assigned-child"))["parent_workflow_id"] == "parent-5"


async def test_children_started_concurrently_are_numbered_in_call_order(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def child(index: int) -> int:
        await trio.sleep((5 - index) * 0.02)
        return index

    @dbos.workflow()
    async def parent() -> None:
        async with trio.open_nursery() as nursery:
            for index in range(5):
                nursery.start_soon(child, index)

    async with dbos.launched():
        with SetWorkflowID("parent-6"):
            await parent()
        results = [
            await (await dbos.retrieve_workflow(f"parent-6-{2 * i + 1}")).get_result()
            for i in range(5)
        ]
    assert results == list(range(5))
    steps = await steps_of(dbos_url, "parent-6")
    assert [s[0] for s in steps] == list(range(1, 11))
    assert [s[2] for s in steps] == [f"parent-6-{2 * (i // 2) + 1}" for i in range(10)]


async def test_starting_a_workflow_inside_a_step_raises(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def child() -> None:
        return None

    @dbos.step()
    async def starts_child() -> None:
        await child()

    @dbos.workflow()
    async def parent() -> None:
        await starts_child()

    async with dbos.launched():
        with pytest.raises(DBOSException, match="inside a step"):
            await parent()


async def test_get_result_inside_a_workflow_on_a_cancelled_workflow_records_the_error(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def target() -> str:
        return "done"

    @dbos.workflow()
    async def waiter(target_id: str) -> str:
        handle = await dbos.retrieve_workflow(target_id)
        try:
            return await handle.get_result()
        except DBOSAwaitedWorkflowCancelledError as error:
            return f"cancelled ({error.dbos_error_code})"

    async with dbos.launched():
        with SetWorkflowID("target-1"):
            await target()
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET status = 'CANCELLED' WHERE workflow_uuid = 'target-1'",
        )
        with SetWorkflowID("waiter-1"):
            assert await waiter("target-1") == "cancelled (13)"
        # The checkpoint wins over the current row on replay.
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET status = 'SUCCESS' WHERE workflow_uuid = 'target-1'",
        )
        assert await reexecute(dbos, dbos_url, waiter, "waiter-1") == "cancelled (13)"
        steps = await dbos.list_workflow_steps("waiter-1")

    assert [(s.function_name, s.child_workflow_id) for s in steps] == [
        ("DBOS.getResult", "target-1")
    ]
    assert isinstance(steps[0].error, DBOSAwaitedWorkflowCancelledError)


# --- wait_first --------------------------------------------------------------------


async def test_wait_first_returns_the_first_handle_whose_workflow_finished(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()
    release = trio.Event()

    @dbos.workflow()
    async def fast() -> str:
        return "fast"

    @dbos.workflow()
    async def slow() -> str:
        await release.wait()
        return "slow"

    async with dbos.launched():
        slow_handle = await dbos.start_workflow(slow)
        fast_handle = await dbos.start_workflow(fast)
        with trio.fail_after(HANG_GUARD):
            winner = await dbos.wait_first([slow_handle, fast_handle])
        assert winner is fast_handle
        assert await winner.get_result() == "fast"
        release.set()
        assert await slow_handle.get_result() == "slow"


async def test_wait_first_is_woken_by_a_workflow_finishing_in_this_process(
    make_dbos: MakeDBOS,
) -> None:
    # A poll interval far longer than the test: only the in-process wakeup can end the wait.
    dbos = make_dbos(outcome_poll_interval=3600)
    release = trio.Event()

    @dbos.workflow()
    async def gated(name: str) -> str:
        await release.wait()
        return name

    @dbos.workflow()
    async def never() -> None:
        await trio.sleep_forever()

    async with dbos.launched():
        waiting = await dbos.start_workflow(never)
        gated_handle = await dbos.start_workflow(gated, "g")
        winner: list[WorkflowHandle[object]] = []
        found = trio.Event()

        async def wait() -> None:
            winner.append(await dbos.wait_first([waiting, gated_handle]))
            found.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.sleep(0.1)
            assert winner == []
            release.set()
            with trio.fail_after(HANG_GUARD):
                await found.wait()
        assert winner == [gated_handle]


async def test_wait_first_rejects_an_empty_or_duplicate_list(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def quick() -> None:
        return None

    async with dbos.launched():
        handle = await dbos.start_workflow(quick)
        with pytest.raises(ValueError, match="must not be empty"):
            await dbos.wait_first([])
        with pytest.raises(ValueError, match="duplicate"):
            await dbos.wait_first([handle, await dbos.retrieve_workflow(handle.workflow_id)])


async def test_wait_first_inside_a_workflow_is_checkpointed_as_wait_first(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    release = trio.Event()

    @dbos.workflow()
    async def fast() -> str:
        return "fast"

    @dbos.workflow()
    async def slow() -> str:
        await release.wait()
        return "slow"

    @dbos.workflow()
    async def caller() -> str:
        slow_handle = await dbos.start_workflow(slow)
        fast_handle = await dbos.start_workflow(fast)
        winner = await dbos.wait_first([slow_handle, fast_handle])
        result: str = await winner.get_result()
        release.set()
        return result + await slow_handle.get_result()

    async with dbos.launched():
        with SetWorkflowID("caller-1"):
            assert await caller() == "fastslow"
        steps = await dbos.list_workflow_steps("caller-1")
        # On replay the recorded winner comes back even though both have finished now.
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET created_at = 0 WHERE workflow_uuid = 'caller-1-1'",
        )
        assert await reexecute(dbos, dbos_url, caller, "caller-1") == "fastslow"

    assert [(s.function_id, s.function_name) for s in steps] == [
        (1, slow.__qualname__),
        (2, fast.__qualname__),
        (3, "DBOS.waitFirst"),
        (4, "DBOS.getResult"),
        (5, "DBOS.getResult"),
    ]
    assert steps[2].output == "caller-1-2"
    assert steps[2].child_workflow_id is None
    assert steps[3].child_workflow_id == "caller-1-2"


async def test_workflow_ids_set_in_concurrent_tasks_stay_in_their_own_task(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def child(i: int) -> int:
        return i

    @dbos.workflow()
    async def parent() -> list[str]:
        ids: dict[int, str] = {}

        async def one(i: int) -> None:
            with SetWorkflowID(f"wanted-{i}"):
                # Every task's block is open before any of them starts its child.
                await trio.sleep(0.01 * (3 - i))
                ids[i] = (await dbos.start_workflow(child, i)).workflow_id

        async with dbos.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(one, i)
        with SetWorkflowID("never-used"):
            pass
        unassigned = await dbos.start_workflow(child, 99)
        return [ids[i] for i in range(3)] + [unassigned.workflow_id]

    async with dbos.launched():
        with SetWorkflowID("ctx-parent"):
            ids = await parent()
    assert ids[:3] == ["wanted-0", "wanted-1", "wanted-2"]
    assert ids[3] == "ctx-parent-4"


async def test_a_direct_child_keeps_going_when_only_its_parent_is_cancelled(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    """The child runs in its parent's task, so cancelling the parent interrupts it too;
    the child itself was not cancelled, so it is handed to the internal queue and finishes
    from its last checkpoint (each of its steps running once), as in dbos 3.4."""
    dbos = make_dbos()
    first_step_runs = 0
    release = trio.Event()
    child_blocked = trio.Event()

    @dbos.step()
    async def first() -> None:
        nonlocal first_step_runs
        first_step_runs += 1

    @dbos.step()
    async def wait_for_release() -> None:
        child_blocked.set()
        await release.wait()

    @dbos.workflow()
    async def child() -> str:
        await first()
        await wait_for_release()
        return "child done"

    @dbos.workflow()
    async def parent() -> str:
        return await child()

    async with dbos.launched():
        with SetWorkflowID("cancelled-parent"):
            parent_handle = await dbos.start_workflow(parent)
        await child_blocked.wait()
        await dbos.cancel_workflow("cancelled-parent")
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await parent_handle.get_result()
        release.set()
        child_handle = await dbos.retrieve_workflow("cancelled-parent-1")
        with trio.fail_after(10):
            assert await child_handle.get_result() == "child done"

    assert first_step_runs == 1
    assert (await status_row(dbos_url, "cancelled-parent"))["status"] == "CANCELLED"
    child_row = await status_row(dbos_url, "cancelled-parent-1")
    assert (child_row["status"], child_row["queue_name"]) == ("SUCCESS", "_dbos_internal_queue")


async def test_a_default_format_child_of_a_portable_parent_is_stored_portable(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def child(n: int) -> int:
        return n + 1

    @dbos.workflow(serialization="portable")
    async def parent(n: int) -> int:
        handle = await dbos.start_workflow(child, n)
        return await handle.get_result() + await child(n)

    async with dbos.launched():
        with SetWorkflowID("portable-parent"):
            assert await parent(1) == 4

    for workflow_id in ("portable-parent", "portable-parent-1", "portable-parent-3"):
        assert (await status_row(dbos_url, workflow_id))["serialization"] == "portable_json"
