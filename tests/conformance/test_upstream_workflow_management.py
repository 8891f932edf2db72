"""Port of the official SDK's ``tests/test_workflow_management.py``: cancel, resume,
fork, delete, garbage collection and the all-events listing."""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    DBOSAwaitedWorkflowCancelledError,
    DBOSNonExistentWorkflowError,
    SetEnqueueOptions,
    SetWorkflowID,
)
from dbos_trio.testing import VIRTUAL_BACKGROUND_INTERVAL


async def test_cancel_resume(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_cancel_resume"""
    done = {"steps": 0}
    reached, proceed = trio.Event(), trio.Event()

    @dbos.step()
    async def count() -> None:
        done["steps"] += 1

    @dbos.workflow()
    async def a_workflow(value: int) -> int:
        await count()
        reached.set()
        await proceed.wait()
        await count()
        return value

    async with dbos.launched():
        with SetWorkflowID("wf"):
            cancelled = await dbos.start_workflow(a_workflow, 5)
        await reached.wait()
        await dbos.cancel_workflow("wf")
        proceed.set()
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await cancelled.get_result()
        assert done["steps"] == 1
        resumed = await dbos.resume_workflow("wf")
        status = await resumed.get_status()
        assert status.app_version == dbos.app_version
        assert status.queue_name == "_dbos_internal_queue"
        assert await resumed.get_result() == 5
        assert done["steps"] == 2
        assert await cancelled.get_result() == 5  # the old handle sees the resumed run
        again = await dbos.resume_workflow("wf")
        assert await again.get_result() == 5
        assert done["steps"] == 2


async def test_delete_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_delete_workflow"""

    @dbos.workflow()
    async def child(value: int) -> int:
        return value * 2

    @dbos.workflow()
    async def parent(value: int) -> int:
        return await (await dbos.start_workflow(child, value)).get_result()

    async with dbos.launched():
        with SetWorkflowID("p1"):
            assert await parent(5) == 10
        await dbos.delete_workflow("p1")
        assert await dbos.get_workflow_status("p1") is None
        assert await dbos.get_workflow_status("p1-1") is not None
        with SetWorkflowID("p2"):
            assert await parent(7) == 14
        await dbos.delete_workflow("p2", delete_children=True)
        assert await dbos.get_workflow_status("p2") is None
        assert await dbos.get_workflow_status("p2-1") is None


async def test_bulk_cancel(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_bulk_cancel"""
    done = {"steps": 0}
    proceed, all_reached = trio.Event(), trio.Event()

    @dbos.step()
    async def count() -> None:
        done["steps"] += 1
        if done["steps"] == 3:
            all_reached.set()

    @dbos.workflow()
    async def blocking() -> None:
        await count()
        await proceed.wait()
        await count()

    async with dbos.launched():
        handles = []
        for index in range(3):
            with SetWorkflowID(f"wf{index}"):
                handles.append(await dbos.start_workflow(blocking))
        await all_reached.wait()
        await dbos.cancel_workflows([h.workflow_id for h in handles])
        proceed.set()
        for handle in handles:
            with pytest.raises(DBOSAwaitedWorkflowCancelledError):
                await handle.get_result()
        assert done["steps"] == 3


async def test_cancel_workflow_children(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_cancel_workflow_children"""

    child_started = trio.Event()

    @dbos.workflow()
    async def child() -> None:
        child_started.set()
        await dbos.sleep(3600)

    @dbos.workflow()
    async def parent() -> None:
        await (await dbos.start_workflow(child)).get_result()

    async with dbos.launched():
        with SetWorkflowID("parent"):
            await dbos.start_workflow(parent)
        await child_started.wait()
        await dbos.cancel_workflow("parent", cancel_children=True)
        for workflow_id in ("parent", "parent-1"):
            status = await dbos.get_workflow_status(workflow_id)
            assert status is not None and status.status == "CANCELLED"


async def test_bulk_resume(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_bulk_resume"""

    @dbos.workflow()
    async def sleeper(value: int) -> int:
        await dbos.sleep(3600)
        return value

    async with dbos.launched():
        ids = []
        for index in range(3):
            with SetWorkflowID(f"wf{index}"):
                ids.append((await dbos.start_workflow(sleeper, index)).workflow_id)
        await dbos.cancel_workflows(ids)
        handles = await dbos.resume_workflows(ids)
        assert [await h.get_result() for h in handles] == [0, 1, 2]


async def test_resume_nonexistent_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_resume_nonexistent_workflow"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    async with dbos.launched():
        with pytest.raises(DBOSNonExistentWorkflowError):
            await dbos.resume_workflow("missing")
        with SetWorkflowID("done"):
            assert await echo(5) == 5
        assert await (await dbos.resume_workflow("done")).get_result() == 5
        with pytest.raises(DBOSNonExistentWorkflowError):
            await dbos.resume_workflows(["done", "missing"])
        status = await dbos.get_workflow_status("done")
        assert status is not None and status.status == "SUCCESS"


async def test_fork_nonexistent_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_fork_nonexistent_workflow"""
    async with dbos.launched():
        with pytest.raises(DBOSNonExistentWorkflowError):
            await dbos.fork_workflow("missing", 1)


async def test_bulk_delete(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_bulk_delete"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    async with dbos.launched():
        for index in range(3):
            with SetWorkflowID(f"wf{index}"):
                await echo(index)
        await dbos.delete_workflows(["wf0", "wf1", "wf2"])
        assert await dbos.list_workflows() == []


async def test_fork_steps(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_fork_steps"""
    counts = [0] * 5

    def make_step(index: int):  # type: ignore[no-untyped-def]
        @dbos.step(name=f"step{index}")
        async def a_step(value: int) -> int:
            counts[index] += 1
            return value + index + 1

        return a_step

    steps = [make_step(i) for i in range(5)]

    @dbos.workflow()
    async def five_steps(value: int) -> int:
        total = 0
        for a_step in steps:
            total += await a_step(value)
        return total

    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await five_steps(1) == 20
        assert counts == [1] * 5
        with SetWorkflowID("fork"):
            forked = await dbos.fork_workflow("wf", 3)
        assert forked.workflow_id == "fork"
        assert await forked.get_result() == 20
        assert counts == [1, 1, 2, 2, 2]
        from_zero = await dbos.fork_workflow("wf", 0)  # 0 forks as 1, as dbos 3.4
        assert await from_zero.get_result() == 20
        assert counts == [2, 2, 3, 3, 3]
        status = await forked.get_status()
        assert status.forked_from == "wf"


async def test_restart_fromsteps_childwf(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_restart_fromsteps_childwf"""
    runs = {"child": 0}

    @dbos.workflow()
    async def child(value: int) -> int:
        runs["child"] += 1
        return value + 1

    @dbos.step()
    async def a_step(value: int) -> int:
        return value * 10

    @dbos.workflow()
    async def parent(value: int) -> int:
        return await a_step(value) + await child(value)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await parent(1) == 12
        kept = await dbos.fork_workflow("wf", 2)  # from the child: it runs again
        assert await kept.get_result() == 12
        replayed = await dbos.fork_workflow("wf", 3)  # the child's result is copied
        assert await replayed.get_result() == 12
        assert runs["child"] == 2


async def test_fork_version(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_fork_version"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await echo(1)
        forked = await dbos.fork_workflow("wf", 1, application_version="other")
        status = await forked.get_status()
        assert status.app_version == "other" and status.status == "ENQUEUED"
        await dbos.cancel_workflow(forked.workflow_id)
        mine = await dbos.fork_workflow("wf", 1, application_version=dbos.app_version)
        assert await mine.get_result() == 1


async def test_fork_timeout(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_fork_timeout"""

    @dbos.workflow()
    async def forever() -> None:
        while True:
            await dbos.sleep(0.1)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            handle = await dbos.start_workflow(forever)
        await dbos.cancel_workflow("wf")
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        forked = await dbos.fork_workflow("wf", 1, timeout_seconds=0.1)
        assert (await forked.get_status()).workflow_timeout_ms == 100
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await forked.get_result()
        untimed = await dbos.fork_workflow("wf", 1)
        assert (await untimed.get_status()).workflow_timeout_ms is None
        await dbos.cancel_workflow(untimed.workflow_id)
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await untimed.get_result()


async def test_resume_and_fork_to_queue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_resume_and_fork_to_queue"""
    dbos.register_queue("target")

    @dbos.workflow()
    async def sleeper() -> str:
        await dbos.sleep(3600)
        return "done"

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await dbos.start_workflow(sleeper)
        await dbos.cancel_workflow("wf")
        resumed = await dbos.resume_workflow("wf", queue_name="target")
        assert (await resumed.get_status()).queue_name == "target"
        assert await resumed.get_result() == "done"
        forked = await dbos.fork_workflow("wf", 1, queue_name="target")
        assert (await forked.get_status()).queue_name == "target"
        assert await forked.get_result() == "done"


async def test_garbage_collection(dbos: DBOS) -> None:
    """upstream: tests/test_workflow_management.py::test_garbage_collection

    On the real clock: rows are stamped in epoch milliseconds, and the workflows are
    spaced a few milliseconds apart so "the newest" is one row (upstream skips SQLite's
    imprecise time for the same reason)."""
    proceed = trio.Event()

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    @dbos.workflow()
    async def blocked() -> None:
        await proceed.wait()

    async with dbos.launched():
        with SetWorkflowID("pending"):
            pending = await dbos.start_workflow(blocked)
        for index in range(10):
            await trio.sleep(0.003)
            with SetWorkflowID(f"wf{index}"):
                await echo(index)
        await dbos.garbage_collect(keep_newest=1)
        remaining = await dbos.list_workflows()
        # The newest finished one and every pending one are kept.
        assert {w.status for w in remaining} == {"SUCCESS", "PENDING"}
        assert sorted(w.workflow_id for w in remaining) == ["pending", "wf9"]
        await trio.sleep(0.003)
        await dbos.garbage_collect(completed_before=int(await dbos.now() * 1000))
        assert [w.workflow_id for w in await dbos.list_workflows()] == ["pending"]
        proceed.set()
        await pending.get_result()
        await trio.sleep(0.003)
        await dbos.garbage_collect(completed_before=int(await dbos.now() * 1000))
        assert await dbos.list_workflows() == []


async def test_fork_events(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_fork_events"""

    @dbos.step()
    async def noop() -> None:
        return None

    @dbos.workflow()
    async def setter() -> None:
        await dbos.set_event("a", 1)
        await noop()
        await dbos.set_event("b", 2)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await setter()
        forked = await dbos.fork_workflow("wf", 2)
        await forked.get_result()
        assert await dbos.get_all_events(forked.workflow_id) == {"a": 1, "b": 2}


async def test_fork_streams(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_fork_streams"""

    @dbos.step()
    async def noop() -> None:
        return None

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", "one")
        await noop()
        await dbos.write_stream("s", "two")
        await dbos.close_stream("s")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await writer()
        forked = await dbos.fork_workflow("wf", 2)
        await forked.get_result()
        values = [v async for v in dbos.read_stream(forked.workflow_id, "s")]
        assert values == ["one", "two"]


async def test_fork_from_failure(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_fork_from_failure"""
    fail = {"now": True}

    @dbos.step()
    async def first() -> int:
        return 1

    @dbos.step()
    async def flaky() -> int:
        if fail["now"]:
            raise RuntimeError("boom")
        return 2

    @dbos.workflow()
    async def a_workflow() -> int:
        return await first() + await flaky()

    async with dbos.launched():
        with SetWorkflowID("wf"), pytest.raises(RuntimeError, match="boom"):
            await a_workflow()
        fail["now"] = False
        forked = await dbos.fork_workflow("wf", 2)
        assert await forked.get_result() == 3


async def test_get_all_events(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_get_all_events"""

    @dbos.workflow()
    async def setter() -> None:
        await dbos.set_event("k1", "v1")
        await dbos.set_event("k2", {"x": 1})
        await dbos.set_event("k1", "v1b")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await setter()
        assert await dbos.get_all_events("wf") == {"k1": "v1b", "k2": {"x": 1}}
        assert await dbos.get_all_events("nonexistent") == {}


async def test_global_timeout(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_global_timeout"""

    @dbos.workflow()
    async def sleeper() -> None:
        await dbos.sleep(3600)

    async with dbos.launched():
        ids = []
        for index in range(3):
            with SetWorkflowID(f"wf{index}"):
                ids.append((await dbos.start_workflow(sleeper)).workflow_id)
        await trio.sleep(1)
        cutoff = await dbos.now()
        cancelled = await dbos.cancel_workflows_created_before(int(cutoff * 1000))
        assert sorted(cancelled) == ids
        for workflow_id in ids:
            status = await dbos.get_workflow_status(workflow_id)
            assert status is not None and status.status == "CANCELLED"


async def test_cancel_after_final_step(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_cancel_after_final_step"""
    done = {"steps": 0}
    reached, proceed = trio.Event(), trio.Event()

    @dbos.step()
    async def only_step() -> None:
        done["steps"] += 1

    @dbos.workflow()
    async def a_workflow(value: int) -> int:
        await only_step()
        reached.set()
        await proceed.wait()
        return value

    async with dbos.launched():
        with SetWorkflowID("wf"):
            handle = await dbos.start_workflow(a_workflow, 5)
        await reached.wait()
        await dbos.cancel_workflow("wf")
        proceed.set()
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        status = await dbos.get_workflow_status("wf")
        assert status is not None and status.status == "CANCELLED"
        resumed = await dbos.resume_workflow("wf")
        assert await resumed.get_result() == 5
        assert done["steps"] == 1  # recorded before the cancel: not run again


async def test_cancel_resume_queue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_cancel_resume_queue"""
    queue = dbos.register_queue("q")
    done = {"steps": 0}
    reached, proceed = trio.Event(), trio.Event()

    @dbos.step()
    async def count() -> None:
        done["steps"] += 1

    @dbos.workflow()
    async def a_workflow(value: int) -> int:
        await count()
        reached.set()
        await proceed.wait()
        await count()
        return value

    async with dbos.launched():
        with SetWorkflowID("wf"):
            handle = await queue.enqueue(a_workflow, 5)
        await reached.wait()
        await dbos.cancel_workflow("wf")
        proceed.set()
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        resumed = await dbos.resume_workflow("wf")
        assert await resumed.get_result() == 5
        assert done["steps"] == 2
        assert await dbos.list_queued_workflows() == []


async def test_fork_replacement_children(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_fork_replacement_children"""
    factor = {"k": 2}

    @dbos.step()
    async def child_step(value: int) -> int:
        return value * factor["k"]

    @dbos.workflow()
    async def child(value: int) -> int:
        return await child_step(value)

    @dbos.step()
    async def combine(results: list[int]) -> int:
        return sum(results)

    @dbos.workflow()
    async def parent() -> int:
        handles = [await dbos.start_workflow(child, v) for v in (10, 20, 30, 40, 50)]
        return await combine([await h.get_result() for h in handles])

    async with dbos.launched():
        with SetWorkflowID("parent"):
            assert await parent() == 300
        originals = [f"parent-{i}" for i in range(1, 6)]
        factor["k"] = 10
        forks = {}
        for index in (0, 2, 4):
            forked = await dbos.fork_workflow(originals[index], 1)
            assert await forked.get_result() == (10, 20, 30, 40, 50)[index] * 10
            forks[originals[index]] = forked.workflow_id
        # From step 6, after the five starts: they replay with the replaced child ids, and
        # the results are read again from the children the fork now refers to.
        replaced = await dbos.fork_workflow("parent", 6, replacement_children=forks)
        # 100 + 40 + 300 + 80 + 500: the replaced children's new results are read.
        assert await replaced.get_result() == 1020


async def test_client_delete_workflow(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_client_delete_workflow"""
    from dbos_trio import Client

    @dbos.workflow()
    async def child() -> None:
        return None

    @dbos.workflow()
    async def parent() -> None:
        await child()

    async with dbos.launched(), Client(dbos_url) as client:
        with SetWorkflowID("p"):
            await parent()
        await client.delete_workflow("p", delete_children=True)
        assert await dbos.get_workflow_status("p") is None
        assert await dbos.get_workflow_status("p-1") is None


async def test_garbage_collection_batch_size_validation(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_workflow_management.py::test_garbage_collection_batch_size_validation"""
    from dbos_trio import DBOSException

    async with dbos.launched():
        for bad in (0, -1):
            with pytest.raises(DBOSException):
                await dbos.garbage_collect(keep_newest=1, batch_size=bad)


@pytest.mark.parametrize("batch_size", [3, 5, 20])
async def test_garbage_collection_batched(
    dbos: DBOS, autojump_clock: MockClock, batch_size: int
) -> None:
    """upstream: tests/test_workflow_management.py::test_garbage_collection_batched

    Batches are counted by ``garbage_collect``'s progress callback (upstream counts DELETE
    statements on its engine). Upstream also collects the SQLAlchemy application
    database's transaction outputs; dbos_trio has no application database."""
    proceed = trio.Event()
    queue = dbos.register_queue("gc_batched_test_queue")

    @dbos.workflow()
    async def workflow(value: int) -> int:
        return value

    @dbos.workflow()
    async def blocked() -> str | None:
        await proceed.wait()
        return dbos.workflow_id

    @dbos.workflow()
    async def gc_test_workflow() -> None:
        return None

    async with dbos.launched():
        handle = await dbos.start_workflow(blocked)
        for index in range(10):
            assert await workflow(index) == index
            await trio.sleep(0.005)  # created_at apart, so batches split deterministically
        seen: list[int] = []
        result = await dbos.garbage_collect(
            completed_before=int(await dbos.now() * 1000),
            batch_size=batch_size,
            progress=seen.append,
        )
        # Full batches, then the remainder (an empty one when the count divides).
        assert result.batches == len(seen) == 10 // batch_size + 1
        assert result.deleted == seen[-1] == 10
        assert [w.workflow_id for w in await dbos.list_workflows()] == [handle.workflow_id]
        await dbos.pause_queue("gc_batched_test_queue")  # keeps the next one ENQUEUED
        await trio.sleep(VIRTUAL_BACKGROUND_INTERVAL + 1)  # the pause's sweep
        enqueued = await queue.enqueue(gc_test_workflow)
        await trio.sleep(0.005)
        with SetEnqueueOptions(delay_seconds=60.0):
            delayed = await queue.enqueue(gc_test_workflow)
        proceed.set()
        assert await handle.get_result() == handle.workflow_id
        await trio.sleep(0.005)
        await dbos.garbage_collect(completed_before=int(await dbos.now() * 1000), batch_size=1)
        remaining = {w.workflow_id for w in await dbos.list_workflows()}
        assert remaining == {enqueued.workflow_id, delayed.workflow_id}  # never unfinished ones
        await dbos.cancel_workflow(enqueued.workflow_id)
        await dbos.cancel_workflow(delayed.workflow_id)
        await dbos.garbage_collect(keep_newest=1, batch_size=batch_size)
        await dbos.garbage_collect(keep_newest=1, batch_size=batch_size)
        assert len(await dbos.list_workflows()) == 1


async def test_garbage_collection_batched_rows_threshold(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_workflow_management.py::test_garbage_collection_batched_rows_threshold"""  # noqa: E501

    @dbos.workflow()
    async def workflow(value: int) -> int:
        return value

    async with dbos.launched():
        ids = []
        for index in range(10):
            handle = await dbos.start_workflow(workflow, index)
            assert await handle.get_result() == index
            ids.append(handle.workflow_id)
            await trio.sleep(0.005)
        await dbos.garbage_collect(keep_newest=4, batch_size=3)
        assert {w.workflow_id for w in await dbos.list_workflows()} == set(ids[-4:])


async def test_garbage_collection_batched_resumable(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_management.py::test_garbage_collection_batched_resumable

    The failure is injected after the first batch through the progress callback
    (upstream fails the second DELETE statement on its engine)."""

    class Injected(Exception):
        pass

    @dbos.workflow()
    async def workflow(value: int) -> int:
        return value

    def fail_after_first_batch(deleted: int) -> None:
        raise Injected("injected garbage collection failure")

    async with dbos.launched():
        for index in range(10):
            assert await workflow(index) == index
            await trio.sleep(0.005)
        cutoff = int(await dbos.now() * 1000)
        with pytest.raises(Injected, match="injected garbage collection failure"):
            await dbos.garbage_collect(
                completed_before=cutoff, batch_size=3, progress=fail_after_first_batch
            )
        # The first batch committed before the failure and stays deleted.
        assert len(await dbos.list_workflows()) == 10 - 3
        await dbos.garbage_collect(completed_before=cutoff, batch_size=3)
        assert await dbos.list_workflows() == []
