"""``Client.delete_workflows``: the official 3.4 client's bulk delete, as ``DBOS``'s.

Each test gets a fresh, migrated database on each backend in turn (``system_database_url``);
rows are read back on the test's own connection (:func:`support.backends.query`), never
through the client under test.
"""

from __future__ import annotations

import pytest
import trio

from dbos_trio import DBOS, Config, DBOSArgumentTypeError, DBOSInvalidArgumentError
from dbos_trio._client import Client, EnqueueOptions

from support.backends import query

APP = "client-delete-tests"


async def stored_ids(url: str) -> set[str]:
    return {row[0] for row in await query(url, "SELECT workflow_uuid FROM {t}workflow_status")}


async def enqueued(client: Client, count: int) -> list[str]:
    # On a queue nothing serves: the rows stay ENQUEUED until deleted.
    options = EnqueueOptions(workflow_name="add", queue_name="nobody_serves_this")
    return [(await client.enqueue(options, n, n)).workflow_id for n in range(count)]


async def test_delete_workflows_removes_every_listed_row_and_ignores_missing_ids(
    system_database_url: str,
) -> None:
    url = system_database_url
    async with Client(url) as client:
        first, second, kept = await enqueued(client, 3)
        await client.delete_workflows([first, second, "no-such-workflow"])
        assert await stored_ids(url) == {kept}
        # Deleting again, or nothing, is not an error either.
        await client.delete_workflows([first])
        await client.delete_workflows([])
        assert await stored_ids(url) == {kept}


async def test_delete_workflows_refuses_a_bad_id_before_deleting_anything(
    system_database_url: str,
) -> None:
    url = system_database_url
    async with Client(url) as client:
        ids = await enqueued(client, 2)
        with pytest.raises(DBOSInvalidArgumentError):
            await client.delete_workflows([ids[0], ""])
        with pytest.raises(DBOSArgumentTypeError):
            await client.delete_workflows(ids[0])  # a str is not a list of ids
        with pytest.raises(DBOSArgumentTypeError):
            await client.delete_workflows(ids, delete_children="yes")  # type: ignore[arg-type]
        assert await stored_ids(url) == set(ids)


async def test_delete_workflows_with_delete_children_removes_the_descendants_too(
    system_database_url: str,
) -> None:
    url = system_database_url
    dbos = DBOS(Config(app_name=APP, database_url=url))

    @dbos.workflow(name="leaf")
    async def leaf(n: int) -> int:
        return n

    @dbos.workflow(name="parent")
    async def parent() -> int:
        return await (await dbos.start_workflow(leaf, 7)).get_result()

    async with dbos.launched():
        with trio.fail_after(30):
            first = await dbos.start_workflow(parent)
            second = await dbos.start_workflow(parent)
            assert await first.get_result() == 7 and await second.get_result() == 7
    children = {
        row[0]
        for row in await query(
            url, "SELECT workflow_uuid FROM {t}workflow_status WHERE parent_workflow_id IS NOT NULL"
        )
    }
    assert len(children) == 2
    async with Client(url) as client:
        await client.delete_workflows([first.workflow_id], delete_children=False)
        assert await stored_ids(url) == {second.workflow_id} | children
        await client.delete_workflows([second.workflow_id], delete_children=True)
    # The first parent's child was left (it was deleted without its children); the
    # second's went with it.
    remaining = await stored_ids(url)
    assert len(remaining) == 1 and remaining < children
