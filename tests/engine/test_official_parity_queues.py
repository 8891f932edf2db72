"""Queue behaviour found different from dbos 3.4 by porting its test suite (issue 32).

Each test states the dbos 3.4 behaviour it checks; the scenarios are written anew for
dbos_trio.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from dbos_trio import DBOS, SetEnqueueOptions, SetWorkflowID

from support.waiting import HANG_GUARD

MakeDBOS = Callable[..., DBOS]


async def test_an_enqueue_that_attaches_to_an_existing_workflow_is_replayed_by_a_fork(
    make_dbos: MakeDBOS,
) -> None:
    """Inside a workflow, ``duplication_policy="return-existing"`` attaching to the holder
    of the deduplication id records the step with the holder as its child: a fork from the
    next step replays it and waits for the same child, as dbos 3.4 does, instead of
    enqueueing a new one once the holder has freed the id."""
    dbos = make_dbos()
    queue = dbos.register_queue("q")
    release, attached = trio.Event(), trio.Event()

    @dbos.workflow()
    async def child(tag: str) -> str:
        await release.wait()
        return f"{tag}-done"

    @dbos.step()
    async def after() -> None:
        return None

    @dbos.workflow()
    async def parent(tag: str) -> str:
        with SetEnqueueOptions(deduplication_id="d", duplication_policy="return-existing"):
            handle = await queue.enqueue(child, tag)
        attached.set()
        await after()
        result: str = await handle.get_result()
        return result

    async with dbos.launched():
        with trio.fail_after(HANG_GUARD):
            with SetWorkflowID("holder"), SetEnqueueOptions(deduplication_id="d"):
                await queue.enqueue(child, "first")
            with SetWorkflowID("parent"):
                started = await dbos.start_workflow(parent, "second")
            await attached.wait()  # the holder still holds the id when the parent attaches
            release.set()
            assert await started.get_result() == "first-done"
            steps = await dbos.list_workflow_steps("parent")
            assert (steps[0].function_id, steps[0].child_workflow_id) == (1, "holder")

            forked = await dbos.fork_workflow("parent", 2)
            assert await forked.get_result() == "first-done"
            fork_steps = await dbos.list_workflow_steps(forked.workflow_id)
            assert fork_steps[0].child_workflow_id == "holder"
        children = await dbos.list_workflows(name=child.__qualname__)
        assert [w.workflow_id for w in children] == ["holder"]
