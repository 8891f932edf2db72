"""Workflow starts through group commit, on both backends (issue 21): concurrent
``init_workflow`` calls share commits, and each caller gets exactly what its start alone
would have given it.

Among the concurrent starts are new workflows, an existing finished one (found, with its
outcome), one id started twice at once (made once) and a row with every optional column
set (stored exactly as a single start stores it); apart, a batch with a deduplication
collision (only its caller fails).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

from dbos_trio import DBOSQueueDeduplicatedError
from dbos_trio.sysdb.open import open_system_database
from dbos_trio.sysdb.protocol import SystemDatabase
from dbos_trio.sysdb.records import InitResult, NewWorkflow

from support.backends import count_rows, query, status_row
from support.sysdb_records import T0, queued, workflow

N = 40


@pytest.fixture
def url(system_database_url: str) -> str:
    return system_database_url


@pytest.fixture
async def db(url: str) -> AsyncIterator[SystemDatabase]:
    opened = await open_system_database(url, group_commit=True)
    try:
        yield opened
    finally:
        await opened.close()


async def start_all(db: SystemDatabase, starts: list[NewWorkflow]) -> dict[int, Any]:
    """Start every workflow at once; per start, its InitResult or its error."""
    outcomes: dict[int, Any] = {}

    async def one(index: int, new: NewWorkflow) -> None:
        try:
            outcomes[index] = await db.init_workflow(new, None)
        except Exception as error:
            outcomes[index] = error

    async with trio.open_nursery() as nursery:
        for index, new in enumerate(starts):
            nursery.start_soon(one, index, new)
    return outcomes


def every_field(workflow_id: str) -> NewWorkflow:
    return queued(
        workflow_id,
        deduplication_id=f"dedup-{workflow_id}",
        priority=7,
        queue_partition_key="part",
        timeout_ms=5000,
        deadline_epoch_ms=T0 + 5000,
        delay_until_epoch_ms=T0 + 60,
        status="DELAYED",
        parent_workflow_id="parent",
        authenticated_user="alice",
        authenticated_roles='["admin"]',
        forked_from="origin",
        schedule_name="nightly",
        is_debounced=True,
        debounce_deadline_epoch_ms=T0 + 90,
        attributes='{"team": "core", "n": 1}',
        class_name="Cls",
        config_name="cfg",
        application_id="app-id",
        creator_xid="creator",
    )


async def test_concurrent_starts_share_commits_and_each_gets_its_own_answer(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("done"), None)
    assert await db.record_outcome(
        "done", "owner-done", status="SUCCESS", output="out", error=None, completed_at_ms=T0 + 1
    )
    await db.init_workflow(every_field("single"), None)  # alone: the reference row
    commits = getattr(db, "start_commits", None)
    assert commits is not None
    before = commits.batches

    starts = [workflow(f"w{i}") for i in range(N)]
    starts.append(workflow("done", creator_xid="another-creator"))
    starts.append(workflow("twice", creator_xid="first"))
    starts.append(workflow("twice", creator_xid="second"))
    starts.append(every_field("batched"))
    outcomes = await start_all(db, starts)

    assert all(isinstance(result, InitResult) for result in outcomes.values())
    assert [outcomes[i].created for i in range(N)] == [True] * N
    found = outcomes[N]
    assert (found.created, found.status, found.output) == (False, "SUCCESS", "out")
    assert sorted([outcomes[N + 1].created, outcomes[N + 2].created]) == [False, True]
    assert outcomes[N + 3].created and outcomes[N + 3].status == "DELAYED"
    assert commits.batches > before  # the concurrent starts did share commits

    made = {row[0] for row in await query(url, "SELECT workflow_uuid FROM {t}workflow_status")}
    assert made == {f"w{i}" for i in range(N)} | {"done", "single", "twice", "batched"}
    [(creator,)] = await query(
        url, "SELECT creator_xid FROM {t}workflow_status WHERE workflow_uuid = 'twice'"
    )
    winner = "first" if outcomes[N + 1].created else "second"
    assert creator == winner
    inputs = dict(await query(url, "SELECT workflow_uuid, inputs FROM {t}workflow_input"))
    assert inputs["twice"] == "inputs-of-twice" and inputs["w7"] == "inputs-of-w7"
    assert await count_rows(url, "workflow_input") == len(made)

    single, batched = await status_row(url, "single"), await status_row(url, "batched")
    for column in ("workflow_uuid", "deduplication_id"):
        single.pop(column), batched.pop(column)
    assert batched == single  # every column stored as the single start stores it


async def test_a_failing_batch_leaves_nothing_half_written(db: SystemDatabase, url: str) -> None:
    """The collision fails the shared statement; nothing of that attempt stays, and each
    other start is then made alone, exactly once."""
    await db.init_workflow(queued("holder", deduplication_id="d"), None)
    commits = getattr(db, "start_commits", None)
    assert commits is not None
    starts = [queued(f"q{i}") for i in range(N)] + [queued("collides", deduplication_id="d")]
    outcomes = await start_all(db, starts)
    assert isinstance(outcomes.pop(N), DBOSQueueDeduplicatedError)
    assert all(result.created for result in outcomes.values())
    assert commits.batches == 0  # the one batch failed as a whole: all were made alone
    assert await count_rows(url, "workflow_status") == N + 1
    assert await count_rows(url, "workflow_input") == N + 1
