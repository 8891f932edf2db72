"""An enqueue that attached to a deduplication id's holder replays across SDKs (issue 32).

Inside a workflow, ``duplication_policy="return-existing"`` attaching to the holder is
recorded as the step, with the holder as its child, by both SDKs. So a fork from the
next step waits for the same holder whichever SDK wrote the record and whichever forks:

* the official CLI forks a dbos_trio workflow that attached, and dbos_trio runs the fork;
* dbos_trio forks a workflow the official package ran (it attached), and runs the fork
  with its own functions of the same names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from interop_support import rows, run_official

from dbos_trio import DBOS, Config, SetEnqueueOptions, SetWorkflowID

from support.waiting import HANG_GUARD

pytestmark = pytest.mark.interop

ATTACH_DRIVER = Path(__file__).resolve().parent / "official" / "attach_driver.py"


@attrs.define
class AttachingApp:
    dbos: DBOS
    queue: Any
    child: Any
    parent: Any
    attached: trio.Event
    release: trio.Event


def attaching_app(url: str, app_name: str) -> AttachingApp:
    """``attach_parent`` / ``attach_child`` as the official driver's, in dbos_trio: the
    parent enqueues the child with return-existing and waits for its result."""
    dbos = DBOS(Config(app_name=app_name, database_url=url, app_version="trio-v1"))
    queue = dbos.register_queue("attach_q", polling_interval_sec=0.1)
    attached, release = trio.Event(), trio.Event()

    @dbos.workflow(name="attach_child")
    async def attach_child(tag: str) -> str:
        await release.wait()
        return f"{tag}-done"

    @dbos.workflow(name="attach_parent")
    async def attach_parent(tag: str) -> str:
        with SetEnqueueOptions(deduplication_id="d", duplication_policy="return-existing"):
            handle = await queue.enqueue(attach_child, tag)
        attached.set()
        result: str = await handle.get_result()
        return result

    return AttachingApp(dbos, queue, attach_child, attach_parent, attached, release)


async def children(url: str) -> list[str]:
    found = await rows(
        url,
        "SELECT workflow_uuid FROM dbos.workflow_status WHERE name = 'attach_child' "
        "ORDER BY workflow_uuid",
    )
    return [row[0] for row in found]


async def test_the_official_cli_forks_a_dbos_trio_workflow_that_attached(
    url: str, official_cli: Path
) -> None:
    app = attaching_app(url, "trio-attach")
    dbos = app.dbos
    async with dbos.launched():
        with trio.fail_after(HANG_GUARD):
            with SetWorkflowID("holder"), SetEnqueueOptions(deduplication_id="d"):
                await app.queue.enqueue(app.child, "first")
            with SetWorkflowID("parent"):
                parent = await dbos.start_workflow(app.parent, "second")
            await app.attached.wait()  # the holder still holds the id when the parent attaches
            app.release.set()
            assert await parent.get_result() == "first-done"

            done = await trio.run_process(
                [
                    str(official_cli),
                    "workflow",
                    "fork",
                    "parent",
                    "--step",
                    "2",
                    "--forked-workflow-id",
                    "forked",
                    "--sys-db-url",
                    url,
                ],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            assert done.returncode == 0, done.stderr.decode()
            forked = await dbos.retrieve_workflow("forked")
            assert await forked.get_result() == "first-done"
    assert await children(url) == ["holder"]


async def test_dbos_trio_forks_a_workflow_the_official_package_ran_that_attached(
    url: str, official_python: Path
) -> None:
    official = await run_official(
        official_python, "attach", url, "official-attach", driver=ATTACH_DRIVER, timeout=120
    )
    assert official["result"] == "first-done"
    assert official["steps"][0] == [1, "attach_child", "holder"]

    app = attaching_app(url, "official-attach")
    dbos = app.dbos
    app.release.set()
    async with dbos.launched():
        with trio.fail_after(HANG_GUARD):
            forked = await dbos.fork_workflow("parent", 2)
            assert await forked.get_result() == "first-done"
            steps = await dbos.list_workflow_steps(forked.workflow_id)
            assert (steps[0].function_name, steps[0].child_workflow_id) == (
                "attach_child",
                "holder",
            )
    assert await children(url) == ["holder"]
