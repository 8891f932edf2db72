"""Group commit on both backends (issue 21): batches really form, and each row keeps its
own fencing and its own outcome.

Steps: many workflows record steps concurrently through one backend opened with
``group_commit=True``; among them are a workflow taken over by another execution, a
cancelled one, a replayed step (the writer's own earlier attempt) and a nondeterministic
one. Each caller must get exactly what a single write would have given it, and every
recorded row must be in the table. Outcomes: won only by their owners.

Starts: among concurrent ``init_workflow`` calls are new workflows, an existing finished
one (found, with its outcome), one id started twice at once (made once) and a row with
every optional column set (stored exactly as a single start stores it); apart, a batch
with a deduplication collision (only its caller fails).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from dbos_trio import (
    DBOSQueueDeduplicatedError,
    DBOSStepNondeterminismError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
)
from dbos_trio._sysdb.open import BackendOptions, open_system_database
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio._sysdb.records import InitResult, NewWorkflow, RecordedStep

from support.backends import backend_of, count_rows, execute, query, status_row
from support.sysdb_records import APP, T0, queued, step, workflow

N = 40


@pytest.fixture
def url(system_database_url: str) -> str:
    return system_database_url


@pytest.fixture
async def db(url: str) -> AsyncIterator[SystemDatabase]:
    opened = await open_system_database(url, BackendOptions(group_commit=True))
    try:
        yield opened
    finally:
        await opened.close()


async def record_all(
    db: SystemDatabase, writes: list[tuple[str, str, RecordedStep]]
) -> dict[int, object]:
    """Record every (workflow, owner, step) at once; per write, None or its error."""
    outcomes: dict[int, object] = {}

    async def one(index: int, workflow_id: str, owner: str, recorded: RecordedStep) -> None:
        try:
            await db.record_step(owner, recorded, workflow_id=workflow_id, application_name=APP)
            outcomes[index] = None
        except (Exception, DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError) as error:
            outcomes[index] = error  # the last two are BaseExceptions: control flow

    async with trio.open_nursery() as nursery:
        for index, (workflow_id, owner, recorded) in enumerate(writes):
            nursery.start_soon(one, index, workflow_id, owner, recorded)
    return outcomes


async def test_each_row_of_a_batch_is_fenced_and_answered_on_its_own(
    db: SystemDatabase, url: str
) -> None:
    for i in range(N):
        await db.init_workflow(workflow(f"w{i}"), None)
    await db.record_step("owner-w3", step(1), workflow_id="w3", application_name=APP)
    await db.record_step("owner-w4", step(1), workflow_id="w4", application_name=APP)
    await execute(
        url, "UPDATE {t}workflow_status SET owner_xid = 'thief' WHERE workflow_uuid = 'w1'"
    )
    assert await db.cancel_workflows(["w2"], T0 + 1) == ["w2"]
    commits = getattr(db, "step_commits", None)
    assert commits is not None
    before = commits.batches

    writes = [(f"w{i}", f"owner-w{i}", step(1)) for i in range(N)]
    writes[4] = ("w4", "owner-w4", step(1, name="other"))  # the same step id, another step
    writes.append(("w5", "owner-w5", step(2)))  # two steps of one workflow in one batch
    outcomes = await record_all(db, writes)

    assert isinstance(outcomes.pop(1), DBOSWorkflowConflictIDError)
    assert isinstance(outcomes.pop(2), DBOSWorkflowCancelledError)
    assert isinstance(outcomes.pop(4), DBOSStepNondeterminismError)
    assert outcomes == dict.fromkeys(outcomes)  # w3 (its own earlier write) and the rest: ok
    assert commits.batches > before  # the concurrent writes did share commits
    rows = await query(url, "SELECT workflow_uuid, function_id FROM {t}operation_outputs")
    expected = {(f"w{i}", 1) for i in range(N) if i not in (1, 2)} | {("w5", 2)}
    assert set(rows) == expected and len(rows) == len(expected)


async def test_a_row_the_backend_refuses_fails_only_its_own_writer(
    db: SystemDatabase, url: str
) -> None:
    if backend_of(url) != "postgres":
        pytest.skip("SQLite stores a NUL character; PostgreSQL text cannot hold one")
    for i in range(N):
        await db.init_workflow(workflow(f"w{i}"), None)
    writes = [(f"w{i}", f"owner-w{i}", step(1)) for i in range(N)]
    writes[7] = ("w7", "owner-w7", attrs.evolve(step(1), output="nul\x00byte"))
    outcomes = await record_all(db, writes)
    assert outcomes.pop(7) is not None
    assert outcomes == dict.fromkeys(outcomes)
    rows = await query(url, "SELECT workflow_uuid FROM {t}operation_outputs")
    assert sorted(r[0] for r in rows) == sorted(f"w{i}" for i in range(N) if i != 7)


async def test_outcomes_of_a_batch_are_won_only_by_their_owners(
    db: SystemDatabase, url: str
) -> None:
    for i in range(N):
        await db.init_workflow(workflow(f"w{i}"), None)
    await execute(
        url, "UPDATE {t}workflow_status SET owner_xid = 'thief' WHERE workflow_uuid = 'w1'"
    )
    assert await db.cancel_workflows(["w2"], T0 + 1) == ["w2"]
    commits = getattr(db, "_outcome_commits", None)
    assert commits is not None
    writers = [(f"w{i}", f"owner-w{i}") for i in range(N)] + [("w5", "stale-owner")]
    won: dict[tuple[str, str], bool] = {}

    async def finish(workflow_id: str, owner: str) -> None:
        won[(workflow_id, owner)] = await db.record_outcome(
            workflow_id,
            owner,
            status="SUCCESS",
            output=f"out-{owner}",
            error=None,
            completed_at_ms=T0 + 5,
        )

    async with trio.open_nursery() as nursery:
        for workflow_id, owner in writers:
            nursery.start_soon(finish, workflow_id, owner)
    losers = {("w1", "owner-w1"), ("w2", "owner-w2"), ("w5", "stale-owner")}
    assert {key for key, value in won.items() if not value} == losers
    assert len(won) == N + 1 and commits.batches >= 1
    rows = dict(await query(url, "SELECT workflow_uuid, status FROM {t}workflow_status"))
    assert rows.pop("w1") == "PENDING" and rows.pop("w2") == "CANCELLED"
    assert set(rows.values()) == {"SUCCESS"}
    [(output,)] = await query(
        url, "SELECT output FROM {t}workflow_output WHERE workflow_uuid = 'w5'"
    )
    assert output == "out-owner-w5"


# --- starts ----------------------------------------------------------------------------


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


async def gather_into(found: dict[int, Any], outcomes: Awaitable[dict[int, Any]]) -> None:
    found.update(await outcomes)


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
        authenticated_roles='["admin"]',
        forked_from="origin",
        schedule_name="nightly",
        is_debounced=True,
        debounce_deadline_epoch_ms=T0 + 90,
        attributes='{"team": "cœur", "n": 1}',
        authenticated_user="zoë ✓ 😀",
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
    # Every start queues behind a flush held open here, so they all go in one batch with
    # the collision, whatever order Trio runs them in (else the colliding start may run
    # first, alone, and the others batch without it).
    commits._flushing += 1
    outcomes: dict[int, Any] = {}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(gather_into, outcomes, start_all(db, starts))
        await trio.testing.wait_all_tasks_blocked()
        assert len(commits._queue) == N + 1
        commits._flushing -= 1
        commits._hand_over()
    assert isinstance(outcomes.pop(N), DBOSQueueDeduplicatedError)
    assert all(result.created for result in outcomes.values())
    assert commits.batches == 0  # the one batch failed as a whole: all were made alone
    assert await count_rows(url, "workflow_status") == N + 1
    assert await count_rows(url, "workflow_input") == N + 1
