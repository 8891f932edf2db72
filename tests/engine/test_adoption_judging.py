"""Automatic adoption takes only the work of executors whose silence means something.

A dbos_trio execution's owner token is marked (it stamps its row every heartbeat interval);
an official SDK executor writes version-4 tokens and never stamps, so its rows look silent
however alive it is. Rows are written by hand here, as each kind of writer leaves them.
"""

from __future__ import annotations

from collections.abc import Callable

from dbos_trio import DBOS
from dbos_trio._core.ids import heartbeat_owner_token, random_uuid
from dbos_trio._engine.recovery.adoption import Hearing, adopt_silent

from support.backends import execute, query
from support.dbos_fixtures import APP_NAME


async def _pending_row(url: str, workflow_id: str, executor_id: str, owner_xid: str) -> None:
    # Last stamped at the epoch: silent for as long as anyone can measure.
    await execute(
        url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, executor_id, owner_xid, "
        "application_name, application_version, queue_name, created_at, updated_at) "
        "VALUES (%s, 'PENDING', 'job', %s, %s, %s, 'v1', 'work', 1, 1)",
        workflow_id,
        executor_id,
        owner_xid,
        APP_NAME,
    )


async def _statuses(url: str) -> dict[str, str]:
    rows = await query(url, "SELECT workflow_uuid, status FROM {t}workflow_status")
    return {row[0]: row[1] for row in rows}


async def test_a_silent_dbos_trio_executor_is_adopted_and_a_still_official_one_is_not(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    await _pending_row(dbos_url, "trio-work", "dead-trio", heartbeat_owner_token())
    await _pending_row(dbos_url, "official-work", "live-official", random_uuid())
    dbos = make_dbos(executor_id="judge", adopt_dead_executors_after=30.0)
    async with dbos.launched():
        executor = dbos._slot.executor
        assert executor is not None
        adopted = await adopt_silent(executor)
    assert adopted == {"dead-trio": ["trio-work"]}
    statuses = await _statuses(dbos_url)
    assert statuses["official-work"] == "PENDING"
    assert statuses["trio-work"] in ("ENQUEUED", "PENDING", "ERROR", "SUCCESS")


async def test_an_executor_with_one_unmarked_row_is_not_judged_at_all(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    # One executor id shared by a dbos_trio process and an official one (both "local"):
    # the official half's liveness cannot be read, so neither half's rows are taken.
    await _pending_row(dbos_url, "trio-half", "local-shared", heartbeat_owner_token())
    await _pending_row(dbos_url, "official-half", "local-shared", random_uuid())
    dbos = make_dbos(executor_id="judge", adopt_dead_executors_after=30.0)
    async with dbos.launched():
        executor = dbos._slot.executor
        assert executor is not None
        assert await adopt_silent(executor) == {}
    assert set((await _statuses(dbos_url)).values()) == {"PENDING"}


async def test_a_judge_that_just_reconnected_adopts_nothing_until_it_has_heard_long_enough(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    await _pending_row(dbos_url, "trio-work", "dead-trio", heartbeat_owner_token())
    dbos = make_dbos(executor_id="judge", heartbeat_interval=1.0, adopt_dead_executors_after=5.0)
    async with dbos.launched():
        executor = dbos._slot.executor
        assert executor is not None
        hearing = Hearing(1.0)
        # Back from an outage at t=100: each pass one interval apart.
        for second in range(5):
            assert await adopt_silent(executor, hearing, 100.0 + second) == {}
            assert (await _statuses(dbos_url))["trio-work"] == "PENDING"
        adopted = await adopt_silent(executor, hearing, 105.0)
    assert adopted == {"dead-trio": ["trio-work"]}
