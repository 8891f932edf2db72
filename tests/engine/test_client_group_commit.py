"""A Client's concurrent writes share commits, as an executor's do (``group_commit``,
default on), on both backends; each call still returns only with its own row written.

Observed through the backend's group-commit counters (batches flushed, writes they
carried) and the rows: 200 concurrent ``enqueue`` calls leave 200 rows in fewer commits
than calls; with ``group_commit=False`` every start is its own statement.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from dbos_trio import DBOS, Client, DBOSConfigError, EnqueueOptions

from support.backends import count_rows

MakeDBOS = Callable[..., DBOS]
CALLS = 200


async def enqueue_concurrently(client: Client) -> list[str]:
    options = EnqueueOptions(workflow_name="gc.job", queue_name="gcq")
    ids: list[str] = []

    async def one(i: int) -> None:
        ids.append((await client.enqueue(options, i)).workflow_id)

    async with trio.open_nursery() as nursery:
        for i in range(CALLS):
            nursery.start_soon(one, i)
    return ids


async def test_concurrent_client_enqueues_share_commits(make_dbos: MakeDBOS, dbos_url: str) -> None:
    async with make_dbos().launched():  # migrates the database the client reads
        pass
    async with Client(dbos_url) as client:
        ids = await enqueue_concurrently(client)
        commits = client._require("test").sysdb.start_commits
        assert commits is not None
        assert commits.batched_writes > 0 and commits.batches < CALLS
    assert len(set(ids)) == CALLS
    assert await count_rows(dbos_url, "workflow_status") == CALLS


async def test_group_commit_off_writes_each_start_alone(make_dbos: MakeDBOS, dbos_url: str) -> None:
    async with make_dbos().launched():
        pass
    async with Client(dbos_url, group_commit=False) as client:
        await enqueue_concurrently(client)
        assert client._require("test").sysdb.start_commits is None
    assert await count_rows(dbos_url, "workflow_status") == CALLS


def test_group_commit_must_be_a_boolean(dbos_url: str) -> None:
    with pytest.raises(DBOSConfigError, match="group_commit"):
        Client(dbos_url, group_commit="yes")  # type: ignore[arg-type]
