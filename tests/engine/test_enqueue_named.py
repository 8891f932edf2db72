"""``dbos.enqueue(EnqueueOptions(...), *args)``: enqueue by name from inside the app, on
both backends; the tests check the rows written and the results the handles return."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dbos_trio import (
    DBOS,
    DBOSException,
    DBOSWorkflowIDInUseError,
    EnqueueOptions,
    SetEnqueueOptions,
    SetWorkflowAttributes,
    SetWorkflowID,
)

from support.backends import status_row, steps_of

MakeDBOS = Callable[..., DBOS]


async def test_enqueue_by_name_writes_the_row_a_client_would_and_runs_it(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow(name="named_double")
    async def double(x: int) -> int:
        return 2 * x

    dbos.register_queue("named_q")
    async with dbos.launched():
        with SetEnqueueOptions(priority=5), SetWorkflowAttributes({"via": "enqueue"}):
            handle = await dbos.enqueue(
                EnqueueOptions(
                    workflow_name="named_double", queue_name="named_q", workflow_id="n-1"
                ),
                21,
            )
        assert handle.workflow_id == "n-1"
        assert await handle.get_result() == 42
        with pytest.raises(DBOSWorkflowIDInUseError):
            await dbos.enqueue(
                EnqueueOptions(
                    workflow_name="named_double",
                    queue_name="named_q",
                    workflow_id="n-1",
                    workflow_id_reuse_policy="reject",
                ),
                1,
            )
        with SetWorkflowID("n-2"):
            other = await dbos.enqueue(
                EnqueueOptions(
                    workflow_name="named_double", queue_name="named_q", workflow_timeout=30
                ),
                1,
            )
        assert other.workflow_id == "n-2"
        assert await other.get_result() == 2
        with pytest.raises(DBOSException, match="EnqueueOptions"):
            await dbos.enqueue({"workflow_name": "named_double"}, 1)  # type: ignore[arg-type]
    row = await status_row(dbos_url, "n-1")
    assert (row["priority"], row["queue_name"], row["application_name"]) == (
        5,
        "named_q",
        "wf-tests",
    )
    attributes = row["attributes"]
    assert attributes in ({"via": "enqueue"}, '{"via":"enqueue"}')
    assert (await status_row(dbos_url, "n-2"))["workflow_timeout_ms"] == 30000


async def test_enqueue_by_name_from_a_workflow_is_a_checkpointed_child(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"parent": 0}

    @dbos.workflow(name="named_child")
    async def child(text: str) -> str:
        return text.upper()

    @dbos.workflow()
    async def parent() -> str:
        runs["parent"] += 1
        handle = await dbos.enqueue(
            EnqueueOptions(workflow_name="named_child", queue_name="named_q2"), "hi"
        )
        return str(await handle.get_result())

    dbos.register_queue("named_q2")
    async with dbos.launched():
        with SetWorkflowID("np-1"):
            assert await parent() == "HI"
    steps = await steps_of(dbos_url, "np-1")
    assert [(s[0], s[1], s[2]) for s in steps] == [
        (1, "named_child", "np-1-1"),
        (2, "DBOS.getResult", "np-1-1"),
    ]
    child_row = await status_row(dbos_url, "np-1-1")
    assert (child_row["parent_workflow_id"], child_row["status"]) == ("np-1", "SUCCESS")
