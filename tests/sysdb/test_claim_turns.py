"""Turn-taking under a global limit (both backends): an executor that finds the limit spent by
another asks for a turn, and the next slot freed is its own.

Driven through the protocol, as two executors' workers would: each step is a claim or a
turn request with made-up times, and finishing a workflow is a plain write. Without
turns, the executor holding the limit (whose worker wakes the moment one of its slots
frees) claims every freed slot again and a later executor never runs anything.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
import trio

from dbos_trio._sysdb.open import open_system_database
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio._sysdb.records import TURN_TOKEN, ClaimRequest

from support.backends import execute, status_row
from support.sysdb_records import T0, claim_request, queued
from support.waiting import HANG_GUARD

WINDOW_MS = 3_000


@pytest.fixture
async def sysdb(system_database_url: str) -> AsyncIterator[SystemDatabase]:
    """A fresh, migrated system database on this run's backend, opened as ``DBOS`` does."""
    opened = await open_system_database(system_database_url)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def url(system_database_url: str) -> str:
    return system_database_url


def request(executor: str, now_ms: int, **fields: Any) -> ClaimRequest:
    """A claim of ``executor`` on queue ``q`` with a global limit of 2 and turns on."""
    values: dict[str, Any] = {
        "owner_xid": f"claim-{executor}-{now_ms}",
        "executor_id": executor,
        "now_ms": now_ms,
        "global_concurrency": 2,
        "consistent": True,
        "turn_window_ms": WINDOW_MS,
    }
    values.update(fields)
    return claim_request("q", **values)


async def fill_queue(sysdb: SystemDatabase, count: int) -> None:
    for n in range(count):
        await sysdb.init_workflow(queued(f"wf-{n:02}", created_at_ms=T0 + n), None)


async def finish(url: str, workflow_id: str) -> None:
    await execute(
        url,
        "UPDATE {t}workflow_status SET status = 'SUCCESS', owner_xid = NULL "
        "WHERE workflow_uuid = %s",
        workflow_id,
    )


async def row(url: str, workflow_id: str) -> tuple[Any, ...]:
    found = await status_row(url, workflow_id)
    return tuple(found[c] for c in ("status", "owner_xid", "executor_id", "started_at_epoch_ms"))


async def ids(sysdb: SystemDatabase, claim: ClaimRequest) -> list[str]:
    return [claimed.workflow_id for claimed in await sysdb.claim(claim)]


async def test_a_waiting_executor_gets_the_next_freed_slot(sysdb: SystemDatabase, url: str) -> None:
    await fill_queue(sysdb, 6)
    now = T0 + 1_000
    assert await ids(sysdb, request("a", now)) == ["wf-00", "wf-01"]

    # b finds the limit spent, and asks for a turn: the head row waits for it, still
    # ENQUEUED for every other reader.
    assert await ids(sysdb, request("b", now + 10)) == []
    assert await sysdb.request_turn(request("b", now + 10))
    assert await row(url, "wf-02") == ("ENQUEUED", TURN_TOKEN, "b", now + 10)

    # a frees a slot and claims again at once: nothing, for the slot is b's turn.
    await finish(url, "wf-00")
    assert await ids(sysdb, request("a", now + 20)) == []
    # b's next claim takes the row it waited on.
    assert await ids(sysdb, request("b", now + 30)) == ["wf-02"]
    assert (await row(url, "wf-02"))[:3] == ("PENDING", "claim-b-" + str(now + 30), "b")

    # b now runs its fair share (1 of 2): it asks for no further turn, and the next
    # slot a frees is a's again.
    assert not await sysdb.request_turn(request("b", now + 40))
    await finish(url, "wf-01")
    assert await ids(sysdb, request("a", now + 50)) == ["wf-03"]


async def test_a_claim_keeps_to_its_fair_share_while_a_turn_waits(
    sysdb: SystemDatabase, url: str
) -> None:
    await fill_queue(sysdb, 8)
    now = T0 + 1_000
    four = {"global_concurrency": 4}
    assert await ids(sysdb, request("a", now, **four)) == ["wf-00", "wf-01", "wf-02", "wf-03"]
    assert await sysdb.request_turn(request("b", now + 10, **four))
    # a frees two slots: its fair share of 4 between two executors is 2, it runs 2.
    await finish(url, "wf-00")
    await finish(url, "wf-01")
    assert await ids(sysdb, request("a", now + 20, **four)) == []
    # b claims both freed slots, its turn row first in queue order.
    assert await ids(sysdb, request("b", now + 30, **four)) == ["wf-04", "wf-05"]


async def test_a_stale_turn_no_longer_holds_anyone_back(sysdb: SystemDatabase, url: str) -> None:
    await fill_queue(sysdb, 4)
    now = T0 + 1_000
    assert await ids(sysdb, request("a", now)) == ["wf-00", "wf-01"]
    assert await sysdb.request_turn(request("b", now))
    await finish(url, "wf-00")
    # b never came back (a crash, a shutdown): once its turn is older than the window,
    # a claims freed slots again, the stale turn's row first.
    later = now + WINDOW_MS + 1
    assert await ids(sysdb, request("a", later)) == ["wf-02"]


async def test_without_a_global_limit_nobody_takes_turns(sysdb: SystemDatabase, url: str) -> None:
    await fill_queue(sysdb, 3)
    no_limit = request("b", T0, global_concurrency=None, consistent=False)
    assert not await sysdb.request_turn(attrs.evolve(no_limit, turn_window_ms=None))
    assert (await row(url, "wf-00"))[1] is None


async def test_an_executor_alone_uses_the_whole_limit(sysdb: SystemDatabase, url: str) -> None:
    await fill_queue(sysdb, 4)
    now = T0 + 1_000
    assert await ids(sysdb, request("a", now)) == ["wf-00", "wf-01"]
    # a alone asks for a turn (as its worker does after an empty claim): it already
    # runs the whole limit, more than a fair share of one executor's... which is all
    # of it, so no turn is marked and nothing is held back.
    assert not await sysdb.request_turn(request("a", now + 10))
    await finish(url, "wf-00")
    assert await ids(sysdb, request("a", now + 20)) == ["wf-02"]


@pytest.mark.postgres_only("two claims side by side on row locks (NOWAIT)")
async def test_a_claim_still_locks_the_row_another_executor_waits_on(
    sysdb: SystemDatabase, url: str
) -> None:
    # Two claims that spend one budget must conflict: each locks the head rows NOWAIT, so
    # the second backs off. A claim that skipped a turn's row would lock the next one
    # instead, and both would spend the last slot (a fleet run saw 4 PENDING under a
    # global limit of 3). Here the turn's row is held by b's claim in flight, as a lock.
    import psycopg

    from dbos_trio._sysdb.protocol import QueueContention

    await fill_queue(sysdb, 4)
    now = T0 + 1_000
    limit = {"global_concurrency": 3}
    assert await ids(sysdb, request("a", now, local_budget=1, **limit)) == ["wf-00"]
    assert await sysdb.request_turn(request("b", now + 10, **limit))
    with psycopg.connect(url) as held:
        held.execute("SELECT 1 FROM dbos.workflow_status WHERE workflow_uuid = 'wf-01' FOR UPDATE")
        with pytest.raises(QueueContention):
            await sysdb.claim(request("a", now + 20, **limit))
    assert (await row(url, "wf-02"))[0] == "ENQUEUED"  # not claimed past the held row


async def test_an_idle_queue_asks_for_no_turn_and_takes_no_write_lock(
    sysdb: SystemDatabase, url: str
) -> None:
    # A worker asks for a turn after every empty claim on a globally limited queue; on an
    # empty queue that must stay a read. On SQLite a write would take the file's one write
    # lock at every idle poll of every executor (here another process holds it: a write
    # would wait behind it and fail busy).
    import sqlite3

    from support.backends import backend_of, sqlite_path

    if backend_of(url) != "sqlite":
        assert not await sysdb.request_turn(request("b", T0))  # nothing to mark
        return
    holder = sqlite3.connect(sqlite_path(url), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with trio.fail_after(HANG_GUARD):
            assert not await sysdb.request_turn(request("b", T0))
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.postgres_only("a lost reply (the driver's fault injection)")
async def test_a_turn_request_whose_reply_was_lost_marks_one_turn(
    sysdb: SystemDatabase, url: str
) -> None:
    # The mark committed, its reply was lost, the statement ran again: it renews the turn
    # it already has (its own row first), so the executor still waits on exactly one row.
    from dbos_trio.testing.faults import lose_replies

    from support.backends import query

    await fill_queue(sysdb, 4)
    now = T0 + 1_000
    assert await ids(sysdb, request("a", now)) == ["wf-00", "wf-01"]
    with lose_replies("request_turn") as faults:
        assert await sysdb.request_turn(request("b", now + 10))
    assert faults.lost == ["request_turn"]
    turns = await query(
        url, "SELECT workflow_uuid FROM {t}workflow_status WHERE owner_xid = %s", TURN_TOKEN
    )
    assert turns == [("wf-02",)]
